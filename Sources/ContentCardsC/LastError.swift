import CContentCardsABI
import CContentCardsFast
import ContentCards
/// The last error of each thread (docs/C-API.md, "Errors": "the message of the last failing call on this thread"),
/// kept in C thread-local storage (Sources/CContentCardsFast): clearing it on entry to every
/// call is then a load and a compare, and the message is freed when the thread ends.
enum LastError {
    @inline(__always)
    static func clear() { ccint_error_clear() }

    static func set(_ error: ContentCardsError) {
        let retryAfter = error.retryAfter.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil } ?? -1
        ccint_error_set(error.code.rawValue, error.message, retryAfter)
    }

    static var code: Int32 { ccint_error_code() }
    static var retryAfter: Double { ccint_error_retry_after() }

    static var message: UnsafePointer<CChar>? { ccint_error_message() }
}

/// Runs an entry point's body: clears the thread's error, maps a thrown error to its status
/// code and message. Every exported function that can fail goes through here.
@inline(__always)
func entry(_ body: () throws(ContentCardsError) -> Void) -> Int32 {
    LastError.clear()
    do {
        try body()
        // A callback run by this call may have made a failing cc_ call on this thread; the
        // thread's error must describe this call, which succeeded.
        LastError.clear()
        return CC_OK
    } catch {
        LastError.set(error)
        return error.code.rawValue
    }
}

@_cdecl("cc_last_error_message")
public func cc_last_error_message() -> UnsafePointer<CChar>? {
    LastError.message
}

@_cdecl("cc_last_error_retry_after")
public func cc_last_error_retry_after() -> Double {
    LastError.retryAfter
}

@_cdecl("cc_last_error_code")
public func cc_last_error_code() -> Int32 {
    LastError.code
}

private let statusNames: [Int32: UnsafePointer<CChar>?] = {
    var names: [Int32: UnsafePointer<CChar>?] = [CC_OK: StaticCString.pointer("CC_OK")]
    for code in ContentCardsError.Code.allCases {
        names[code.rawValue] = StaticCString.pointer(code.statusName)
    }
    return names
}()
private let unknownStatus = StaticCString.pointer("CC_E_UNKNOWN")

@_cdecl("cc_status_name")
public func cc_status_name(_ status: Int32) -> UnsafePointer<CChar>? {
    statusNames[status] ?? unknownStatus
}
