// The `calls` target's input (`Script`: the bytes the grammar reads its calls and arguments
// from) and the checks every call's result goes through (a status the header does not have,
// CC_E_INTERNAL, JSON that is not JSON: findings).
import CContentCardsABI
import ContentCardsC
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

/// The input, read front to back; past its end every byte reads as 0.
struct Script {
    let data: UnsafeRawBufferPointer
    var at = 0
    init(_ data: UnsafeRawBufferPointer) { self.data = data }
    var more: Bool { at < data.count }
    mutating func byte() -> Int { defer { at += 1 }; return at < data.count ? Int(data[at]) : 0 }
    mutating func pick<T>(_ choices: [T]) -> T { choices[byte() % choices.count] }
    /// Up to `max` bytes of the input, taken as they are (for bodies and ids the fuzzer writes).
    mutating func bytes(max: Int) -> [UInt8] {
        let wanted = byte() % (max + 1)
        let start = min(at, data.count), n = min(wanted, data.count - start)
        at = start + n
        return Array(data[start..<(start + n)])
    }
}

/// Every status a call returns goes through here: CC_E_INTERNAL is the library saying it has a
/// bug, and a code that is not in the header is one too.
@discardableResult
func status(_ rc: Int32, _ call: @autoclosure () -> String) -> Int32 {
    if rc == CC_E_INTERNAL || rc > 0 || (rc < CC_E_AUTH && rc != CC_E_INTERNAL) {
        finding("\(call()) returned \(rc) (\(String(cString: cc_status_name(rc)))): \(String(cString: cc_last_error_message()))")
    }
    return rc
}

/// The same for the calls that return a count or a negative status.
func count(_ n: Int64, _ call: @autoclosure () -> String) {
    if n < 0 { status(Int32(truncatingIfNeeded: n), call()) }
}

/// JSON the library hands out (results, updates, request bodies) must be JSON.
func mustBeJSON(_ text: UnsafePointer<CChar>?, _ what: String) {
    guard let text else { return }
    let s = String(cString: text)
    if (try? JSONReader.parse(s)) == nil { finding("\(what) is not JSON: \(s.prefix(400))") }
}

func mustBeJSON(_ text: UnsafeMutablePointer<CChar>?, _ what: String) {
    mustBeJSON(UnsafePointer(text), what)
}
