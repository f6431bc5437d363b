import CContentCardsABI
import ContentCards
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The last error of each thread (ABI.md: "the message of the last failing call on this
/// thread"), kept in pthread thread-local storage as a malloc'ed C string that the thread's
/// destructor frees.
enum LastError {
    private final class Slot {
        var code: Int32 = CC_OK
        var message: UnsafeMutablePointer<CChar>?
        var retryAfter: Double = -1
        deinit { free(message) }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { raw in
            if let raw { Unmanaged<AnyObject>.fromOpaque(raw).release() }
        }
        return key
    }()

    private static var slot: Slot {
        if let raw = pthread_getspecific(key) {
            return Unmanaged<Slot>.fromOpaque(raw).takeUnretainedValue()
        }
        let slot = Slot()
        pthread_setspecific(key, Unmanaged.passRetained(slot).toOpaque())
        return slot
    }

    static func clear() {
        let s = slot
        s.code = CC_OK
        s.retryAfter = -1
        if s.message != nil {
            free(s.message)
            s.message = nil
        }
    }

    static func set(_ error: ContentCardsError) {
        let s = slot
        s.code = error.code.rawValue
        s.retryAfter = error.retryAfter.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil } ?? -1
        free(s.message)
        s.message = strdup(error.message)
    }

    static var code: Int32 { slot.code }
    static var retryAfter: Double { slot.retryAfter }

    static let empty = StaticCString.pointer("")

    static var message: UnsafePointer<CChar>? {
        if let m = slot.message { return UnsafePointer(m) }
        return empty
    }
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
