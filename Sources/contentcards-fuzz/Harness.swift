// Fuzz targets for the C ABI. Each feeds arbitrary bytes to the @_cdecl entry points, the very
// code C and Python callers reach; the only failure is a crash (or a sanitizer report).
//
//   make fuzz            builds with -sanitize=fuzzer,address and runs each target briefly
//   make fuzz-long       the long run (FUZZ_SECONDS per target)
//
// CC_FUZZ_TARGET picks the target: payload, config, filter, calls or decoders (the payload
// decoder's stream path against its parsed-value path, and the stored form's round trip: a
// difference is a crash, as a trap would be). Built without CC_FUZZ (the
// ordinary build), the same harness replays files given on the command line, so the corpus in
// fuzz/corpus runs as a regression test without libFuzzer.
import CContentCardsABI
import ContentCardsC
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

enum Target: String, CaseIterable {
    case payload, config, filter, calls, decoders
}

let target: Target = {
    guard let raw = getenv("CC_FUZZ_TARGET").map({ String(cString: $0) }), let t = Target(rawValue: raw) else {
        return .payload
    }
    return t
}()

/// Absolute: the harness works in a scratch directory.
let sampleFeed: String = {
    if let path = getenv("CC_SAMPLE_FEED") { return String(cString: path) }
    var buffer = [CChar](repeating: 0, count: 4096)
    let cwd = getcwd(&buffer, buffer.count).map { String(cString: $0) } ?? "."
    return cwd + "/examples/data/sample_feed.json"
}()

/// One controller reused across inputs (opening one per input would measure SQLite, not us);
/// reopened every so often so the store does not grow without bound.
var shared: OpaquePointer?
var uses = 0

func controller() -> OpaquePointer? {
    uses += 1
    if shared == nil || uses % 500 == 0 {
        if shared != nil { _ = cc_controller_close(shared) }
        var c: OpaquePointer?
        _ = cc_controller_open(&c, #"{"userId":"fuzz","refreshTokens":0,"source":{"file":"\#(sampleFeed)"}}"#)
        _ = cc_controller_refresh(nil, c, 5)
        shared = c
    }
    return shared
}

/// The input as a NUL-terminated C string (a NUL inside ends it, as in C).
func withCString<R>(_ data: UnsafeRawBufferPointer, _ body: (UnsafePointer<CChar>) -> R) -> R {
    var bytes = Array(data.bindMemory(to: CChar.self))
    bytes.append(0)
    return bytes.withUnsafeBufferPointer { buffer in
        guard let base = buffer.baseAddress else { return body("") }   // never empty: it holds the NUL
        return body(base)
    }
}

func freeing(_ p: UnsafeMutablePointer<CChar>?) { cc_string_free(p) }

func runPayload(_ data: UnsafeRawBufferPointer) {
    let c = controller()
    withCString(data) { s in
        var summary: UnsafeMutablePointer<CChar>?
        _ = cc_controller_apply(&summary, c, s)
        freeing(summary)
    }
    var feed: UnsafeMutablePointer<CChar>?
    _ = cc_controller_feed(&feed, c, nil)
    // Whatever went in, what comes out is JSON (cards are written from their stored bytes).
    if let feed, (try? JSONReader.parse(String(cString: feed))) == nil {
        finding("the feed is not JSON: \(String(cString: feed).prefix(400))")
    }
    freeing(feed)
}

/// A finding of the fuzz oracles below: the harness (an executable of its own, never part of
/// the library a host loads) stops so that libFuzzer keeps the input, as it does on a crash.
func finding(_ message: String) -> Never {
    fputs("contentcards-fuzz: \(message)\n", stderr)
    abort()
}

/// The two ways a payload is read must agree: the token stream (what sync and apply use) and a
/// parsed `JSONValue`. Every card read must encode to JSON that parses back to it, and survive
/// the store's form.
func runDecoders(_ data: UnsafeRawBufferPointer) {
    let bytes = Array(data.bindMemory(to: UInt8.self))
    // The input as a record whose sum matched (someone who rewrote both on purpose): whatever
    // it reads as must be safe to use, field by field and encoded.
    if let forged = bytes.withUnsafeBufferPointer({ StoredCard.decodeSummed($0, id: "f", knownClassTypes: ["x"]) }) {
        _ = (forged.url, forged.openURLInWebView, forged.extras, forged.content, forged.classType)
        _ = CardJSON.encode(forged)
        _ = StoredCard.encode(forged)
    }
    let decoder = PayloadDecoder()
    let streamed = try? decoder.decode(bytes)
    let parsed = (try? JSONReader.parse(bytes)).flatMap { try? decoder.decode($0) }
    if (streamed == nil) != (parsed == nil) {
        finding("one decoder refused what the other read: stream \(streamed == nil ? "refused" : "read"), parsed \(parsed == nil ? "refused" : "read")")
    }
    guard let streamed, let parsed else { return }
    if streamed != parsed { finding("the decoders disagree:\n\(streamed)\n\(parsed)") }
    for server in streamed.cards {
        let json = CardJSON.encode(server.card)
        guard let back = try? CardJSON.decode(json) else { finding("a card's JSON does not parse: \(json)") }
        if back != server.card { finding("a card's JSON reads back different: \(json)") }
        guard let stored = StoredCard.encode(server.card) else { continue }
        let again = stored.withUnsafeBufferPointer { StoredCard.decode($0, id: server.card.id, knownClassTypes: nil) }
        if again != server.card { finding("a card's stored form reads back different: \(json)") }
        // Read as a record whose sum matched: the same card as the full check, under any
        // configuration (or nil, left to the full check: an escaped class type, 19 digits).
        for known in [nil, Set([server.card.classType]), Set(["x"])] {
            let full = stored.withUnsafeBufferPointer { StoredCard.decode($0, id: server.card.id, knownClassTypes: known) }
            let summed = stored.withUnsafeBufferPointer { StoredCard.decodeSummed($0, id: server.card.id, knownClassTypes: known) }
            if let summed, summed != full { finding("a summed record reads back different: \(json)") }
        }
    }
}

func runConfig(_ data: UnsafeRawBufferPointer) {
    // The fuzzer runs as whoever runs it (root in CI): a storage path or an event file could
    // create or append to any file. Inputs that could spell a path outside the scratch
    // directory (a '/' or an escape that might decode to one) are skipped.
    if data.contains(0x2F) || data.contains(0x5C) { return }
    withCString(data) { s in
        var c: OpaquePointer?
        if cc_controller_open(&c, s) == CC_OK {
            // A config that opens must give a working controller (no network: refresh is bounded).
            var total: Int64 = 0
            _ = cc_controller_counts(&total, nil, c, nil)
            _ = cc_controller_close(c)
        }
    }
}

func runFilter(_ data: UnsafeRawBufferPointer) {
    let c = controller()
    withCString(data) { s in
        var feed: UnsafeMutablePointer<CChar>?
        _ = cc_controller_feed(&feed, c, s)
        freeing(feed)
        var total: Int64 = 0, unviewed: Int64 = 0, unread: Int64 = 0
        _ = cc_controller_counts(&total, &unviewed, c, s)
        _ = cc_controller_all_counts(&total, &unviewed, &unread, c, s)
        _ = cc_controller_unread_count(c, s)
        _ = cc_controller_mark_all_read(&total, c, s)
        var snap: OpaquePointer?
        if cc_controller_snapshot(&snap, c, s) == CC_OK {
            var n = 0
            _ = cc_snapshot_count(&n, snap)
            for i in 0..<n {
                var v: UnsafePointer<CChar>?
                _ = cc_snapshot_string(&v, snap, i, "id")
                _ = cc_snapshot_extra(&v, snap, i, s)
            }
            _ = cc_snapshot_close(snap)
        }
    }
}

/// A sequence of calls: each byte picks a call, the next bytes its arguments.
func runCalls(_ data: UnsafeRawBufferPointer) {
    let ids = ["tile-1", "tile-2", "msg-1", "msg-2", "coupon-1", "coupon-control", "nope", ""]
    let c = controller()
    var i = 0
    func next() -> Int { defer { i += 1 }; return i < data.count ? Int(data[i]) : 0 }
    while i < data.count {
        let op = next() % 16
        let id = ids[next() % ids.count]
        switch op {
        case 0: _ = cc_controller_log_impression(c, id)
        case 1: _ = cc_controller_log_click(c, id)
        case 2: _ = cc_controller_log_dismissal(c, id)
        case 3: _ = cc_controller_log_feed_displayed(c)
        case 4: _ = cc_controller_refresh(nil, c, 1)
        case 5:
            var t: Int64 = 0, u: Int64 = 0
            _ = cc_controller_counts(&t, &u, c, #"["home_tile"]"#)
            _ = cc_controller_unread_count(c, nil)
        case 6: _ = cc_controller_change_user(c, id)
        case 7: var s: UnsafeMutablePointer<CChar>?; _ = cc_controller_card(&s, c, id); freeing(s)
        case 8: var s: UnsafeMutablePointer<CChar>?; _ = cc_controller_diagnostics(&s, c); freeing(s)
        case 9:
            var n: Int64 = 0, changed: Int32 = 0
            _ = cc_controller_pending_events(&n, c)
            _ = cc_controller_mark_read(&changed, c, id, Int32(next() % 2))   // read state both ways
        case 10:
            var sub: UInt64 = 0
            _ = cc_controller_subscribe(&sub, c, { _, _ in }, nil, nil)
            _ = cc_controller_unsubscribe(c, sub &+ UInt64(next() % 2))
        case 11: _ = cc_controller_apply(nil, c, #"[{"id":"\#(id)x","tp":"control","ca":\#(next())}]"#)
        case 12: _ = cc_controller_flush_events(nil, c, 0.01)
        case 13:
            // A forged handle next to the real one.
            let forged = OpaquePointer(bitPattern: UInt(next() + 1) << UInt(next() % 60))
            _ = cc_controller_log_impression(forged, id)
        case 14: var s: OpaquePointer?; _ = cc_controller_snapshot(&s, c, nil); _ = cc_snapshot_close(s); _ = cc_snapshot_close(s)
        default: var s: UnsafeMutablePointer<CChar>?; _ = cc_controller_feed(&s, c, nil); freeing(s)
        }
    }
}

func runOne(_ data: UnsafeRawBufferPointer) {
    switch target {
    case .payload: runPayload(data)
    case .config: runConfig(data)
    case .filter: runFilter(data)
    case .calls: runCalls(data)
    case .decoders: runDecoders(data)
    }
}

/// Relative storage paths of the config target land here, never in the working directory.
let scratch: Void = {
    var template = Array("/tmp/cc-fuzz-XXXXXX".utf8CString)
    template.withUnsafeMutableBufferPointer { buf in
        if let base = buf.baseAddress, let dir = mkdtemp(base) { chdir(dir) }
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    _ = scratch
    runOne(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}

#if CC_FUZZ
/// libFuzzer's driver, called from our main (SwiftPM links executables with their own main).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

@main
struct Fuzz {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) })
    }
}
#else
/// Without libFuzzer: replay the files given as arguments (the corpus as a regression test).
@main
struct Replay {
    static func main() {
        // Read every file first: the harness works in a scratch directory once it runs.
        var inputs: [[UInt8]] = []
        for path in CommandLine.arguments.dropFirst() {
            guard let f = fopen(path, "rb") else {
                fputs("cannot open \(path)\n", stderr)
                exit(2)
            }
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&buffer, 1, buffer.count, f)
                if n <= 0 { break }
                bytes += buffer[0..<n]
            }
            fclose(f)
            inputs.append(bytes)
        }
        _ = scratch
        for input in inputs { input.withUnsafeBytes { runOne($0) } }
        let count = inputs.count
        print("replayed \(count) inputs for target \(target.rawValue): 0 crashes")
        if let c = shared { _ = cc_controller_close(c) }
    }
}
#endif
