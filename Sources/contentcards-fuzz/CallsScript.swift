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

/// cc_controller_feed_indexed with `filter`: its text is JSON and its offsets bound each card
/// (each begins with `{"id":` and is followed by the `,` before the next or the closing `]`,
/// and the last offset is the length). Its text is not compared with a feed taken before: a
/// refresh on a library thread may change the feed between the two calls.
func checkIndexedFeed(_ c: OpaquePointer?, _ filter: String?) {
    var text: UnsafeMutablePointer<CChar>?, length = 0, count = 0
    var offsets: UnsafePointer<Int>?
    let rc = status(filter.withOptionalCString { cc_controller_feed_indexed(&text, &length, &offsets, &count, c, $0) },
                    "feed_indexed")
    defer { cc_string_free(text) }
    guard rc == CC_OK else {
        if text != nil || offsets != nil || length != 0 || count != 0 { finding("feed_indexed failed but left an output set") }
        return
    }
    guard let text, let offsets else { finding("feed_indexed succeeded without a text or offsets") }
    mustBeJSON(text, "the indexed feed")
    let bytes = UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self)
    guard strlen(text) == length, offsets[count] == length else { finding("feed_indexed: a length that is not the text's") }
    for i in 0..<count {
        let start = offsets[i], next = offsets[i + 1]
        guard start >= 1, start + 7 < next, next <= length,
              memcmp(bytes + start, "{\"id\":", 6) == 0, bytes[start - 1] == (i == 0 ? 0x5B : 0x2C),
              bytes[next - 1] == (i + 1 == count ? 0x5D : 0x2C), bytes[next - 2] == 0x7D else {
            finding("feed_indexed: the offsets of card \(i) of \(count) do not bound it")
        }
    }
}
