// The `calls` target: a byte-driven grammar of calls over the C ABI. The first byte chooses the
// configuration of an in-memory controller opened for the input (a host transport for sync,
// events and images, automatic refresh, background delivery, rate limit); every further byte
// picks a call and the bytes after it its arguments. The calls reach the whole header: logging,
// read state, counts and filters, snapshots, refresh (blocking, in the background, from inside
// callbacks), apply, change_user, flush through the host events transport, subscriptions
// whose callbacks close, unsubscribe, refresh or log, the log handler, and the image cache of a
// second controller (a file store in the scratch directory, opened once per process: images
// need one) whose images the host transport serves from memory. Nothing leaves the process: the
// transport answers from tables and from the input itself.
//
// At the end of each input the controller is closed (if a callback has not closed it already),
// the log handler removed and every snapshot closed, so an input starts from the same state
// whatever ran before it (the image controller aside: its store and cache persist, bounded).
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
    if rc == CC_E_INTERNAL || rc > 0 || (rc < -18 && rc != CC_E_INTERNAL) {
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

// MARK: - Tables

let cardIDs = ["tile-1", "tile-2", "msg-1", "msg-2", "coupon-1", "coupon-control", "img-1", "img-2", "gone", "nope", "", "tile-1\u{301}", "test-1"]
let userIDs = ["fuzz", "other", "", "ü-3"]
let filters: [String?] = [nil, #"["home_tile"]"#, "[]", #"["message_center","coupon_code"]"#, #"["HOME_TILE"," x "]"#, "[1]", #""home_tile""#, "{", "null"]
let actions = ["impression", "click", "dismissal", "feed_displayed", "read", "unread", "bogus", ""]
let stringFields = ["id", "type", "url", "classType", "image", "imageAltText", "title", "cardDescription", "domain", "imagePath", "created", "nope"]
let intFields = ["created", "expiresAt", "id"]
let boolFields = ["viewed", "clicked", "dismissed", "read", "dismissible", "pinned", "isTest", "isControl", "openURLInWebView", "url"]

/// Cards of the tables below: every kind, images (served from memory), read state, a control.
let now = Int64(time(nil))
func card(_ id: String, _ extra: String) -> String {
    #"{"id":"\#(id)","ca":\#(now - 100),"tp":"short_news","ds":"d","db":true,"u":"https://e.example/\#(id)",\#(extra)}"#
}
let fullSync = """
    {"cards":[\(card("tile-1", #""e":{"class_type":"home_tile"},"i":"http://img.test/1.png""#)),
    \(card("tile-2", #""p":true,"e":{"class_type":"home_tile"},"i":"http://img.test/2.png""#)),
    \(card("msg-1", #""e":{"class_type":"message_center"},"rd":true"#)),
    \(card("msg-2", #""e":{"class_type":"message_center"}"#)),
    {"id":"coupon-1","ca":\(now - 50),"tp":"captioned_image","i":"https://img.test/c.png","tt":"t","ds":"d","e":{"class_type":"coupon_code","discount":"5"}},
    {"id":"coupon-control","ca":\(now - 40),"tp":"control","e":{"class_type":"coupon_code"}},
    {"id":"img-1","ca":\(now - 30),"tp":"banner_image","i":"http://img.test/big.png"},
    {"id":"img-2","ca":\(now - 20),"tp":"banner_image","i":"ftp://img.test/x.png","ea":\(now + 1)}],
    "full_sync":true,"last_full_sync_at":\(now),"last_card_updated_at":\(now),"user_id":null}
    """
let incremental = """
    {"cards":[\(card("tile-1", #""v":true,"rd":false,"e":{"class_type":"home_tile","n":1.50}"#)),
    {"id":"msg-2","ca":\(now),"r":true},{"id":"gone","ca":\(now),"r":true},
    \(card("img-2", #""i":"http://img.test/3.png","d":true"#)),
    \(card("new-\(now)", #""i":"http://img.test/4.png","ea":\(now - 1)"#))],
    "full_sync":false,"last_card_updated_at":\(now + 1)}
    """
let payloads: [String] = [
    fullSync, incremental, "[]", #"{"cards":[],"full_sync":true}"#, #"{"cards":[],"user_id":"someone else"}"#,
    #"[{"id":"tile-1","ca":1,"tp":"control"},{"id":"tile-1","ca":2,"tp":"control"}]"#,
    #"{"cards":[{"id":"x","ca":1.5}],"full_sync":"yes"}"#, "not json", "",
    "[\(card("test-1", #""t":true,"e":{"class_type":"message_center"}"#))]",   // a test card: a full sync keeps it
]

/// What the host transport answers to a sync, in the order the grammar queued them.
enum SyncAnswer: Int, CaseIterable {
    case full, incremental, notModified, tooMany, unavailable, serverError, fail, noAnswer, garbage, wrongUser,
         slow, badValidator, misuse, fuzzed
}

/// What it answers to an event batch and an image.
enum EventsAnswer: Int, CaseIterable { case ok, accepted, badRequest, unsupported, tooMany, serverError, fail, noAnswer }
enum ImageAnswer: Int, CaseIterable { case ok, notFound, empty, tooLarge, fail }

/// What a callback does besides its job (a subscriber, a transport, a done callback, the log
/// handler), at most `budget` times, so that a callback that refreshes on every update cannot
/// keep the process busy past the input.
enum Deed: Int, CaseIterable {
    case nothing, close, unsubscribeSelf, refresh, refreshInBackground, logImpression, markRead, apply, changeUser,
         snapshot, subscribe, flush, counts, removeTransport, removeLogHandler
}

// MARK: - Callback state

/// The userdata of every callback: the controller it acts on, what it does, how often. Passed
/// retained; its free_userdata releases it, so a callback after free_userdata or a second
/// free_userdata is a use after free that AddressSanitizer reports, and a free_userdata that
/// never runs is a leak that LeakSanitizer reports.
final class Hook: @unchecked Sendable {
    let controller: OpaquePointer?
    let deed: Deed
    let lock = Lock()
    var budget: Int
    var subscription: UInt64 = 0
    var calls = 0
    var freed = false
    /// For a refresh done callback: the status the registering call returned, once it has.
    var registered: Int32? = nil
    let isDone: Bool

    init(_ controller: OpaquePointer?, _ deed: Deed, budget: Int = 2, isDone: Bool = false) {
        self.controller = controller; self.deed = deed; self.budget = budget; self.isDone = isDone
    }

    var userdata: UnsafeMutableRawPointer { Unmanaged.passRetained(self).toOpaque() }
    static func of(_ p: UnsafeMutableRawPointer?) -> Hook { Unmanaged<Hook>.fromOpaque(p!).takeUnretainedValue() }

    /// Counts a call; true while the budget lasts.
    func called() -> Bool {
        lock.withLock {
            calls += 1
            if isDone && calls > 1 { finding("a refresh done callback ran twice") }
            if budget <= 0 { return false }
            budget -= 1
            return true
        }
    }

    /// The done callback's promise: exactly once when the call returned CC_OK, never otherwise.
    /// Checked when both the status and free_userdata are known, whichever comes last.
    func checkDone() {
        guard isDone, freed, let rc = registered else { return }
        if rc == CC_OK && calls != 1 { finding("refresh_in_background returned CC_OK but its callback ran \(calls) times") }
        if rc != CC_OK && calls != 0 { finding("refresh_in_background returned \(rc) but its callback ran") }
    }

    func register(_ rc: Int32) { lock.withLock { registered = rc; checkDone() } }
}

let freeHook: @convention(c) (UnsafeMutableRawPointer?) -> Void = { p in
    let hook = Hook.of(p)
    hook.lock.withLock {
        if hook.freed { finding("free_userdata ran twice") }
        hook.freed = true
        hook.checkDone()
    }
    Unmanaged<Hook>.fromOpaque(p!).release()
}

/// Set by the deeds after which a controller cannot be brought back to its state at open
/// (a subscription nobody tracks, another user, work left running): see `CallsController`.
let deedsLock = Lock()
var lastingDeeds = false

/// The deed, done from inside a callback.
func perform(_ hook: Hook) {
    guard hook.called(), hook.deed != .nothing else { return }
    let c = hook.controller
    switch hook.deed {
    case .close, .subscribe, .changeUser, .refreshInBackground: deedsLock.withLock { lastingDeeds = true }
    default: break
    }
    switch hook.deed {
    case .nothing: break
    case .close: status(cc_controller_close(c), "close from a callback")
    case .unsubscribeSelf:
        let id = hook.lock.withLock { hook.subscription }
        status(cc_controller_unsubscribe(c, id), "unsubscribe from a callback")
    case .refresh: status(cc_controller_refresh(nil, c, 0.05), "refresh from a callback")
    case .refreshInBackground: status(cc_controller_refresh_in_background(c, 0.05, nil, nil, nil), "refresh_in_background from a callback")
    case .logImpression: status(cc_controller_log_impression(c, "tile-1"), "log_impression from a callback")
    case .markRead: status(cc_controller_mark_read(nil, c, "msg-1", 0), "mark_read from a callback")
    case .apply: status(cc_controller_apply(nil, c, incremental), "apply from a callback")
    case .changeUser: status(cc_controller_change_user(c, "other"), "change_user from a callback")
    case .snapshot:
        var s: OpaquePointer?
        if status(cc_controller_snapshot(&s, c, nil), "snapshot from a callback") == CC_OK { status(cc_snapshot_close(s), "snapshot_close") }
    case .subscribe:
        let inner = Hook(c, .unsubscribeSelf, budget: 1)
        var id: UInt64 = 0
        status(cc_controller_subscribe(&id, c, onUpdate, inner.userdata, freeHook), "subscribe from a callback")
        inner.lock.withLock { inner.subscription = id }
    case .flush: status(cc_controller_flush_events(nil, c, 0.05), "flush from a callback")
    case .counts:
        var t: Int64 = 0, u: Int64 = 0, r: Int64 = 0
        status(cc_controller_all_counts(&t, &u, &r, c, nil), "all_counts from a callback")
    case .removeTransport: status(cc_controller_set_transport(c, nil, nil, nil), "set_transport(NULL) from a callback")
    case .removeLogHandler: status(cc_set_log_handler(nil, 0, nil, nil), "cc_set_log_handler(NULL) from a callback")
    }
}

let onUpdate: cc_update_fn = { userdata, json in
    mustBeJSON(json, "an update")
    perform(Hook.of(userdata))
}

let onDone: cc_refresh_done_fn = { userdata, rc, json in
    status(rc, "a refresh done callback's status")
    mustBeJSON(json, "a refresh done callback's result")
    perform(Hook.of(userdata))
}

let onLog: cc_log_fn = { userdata, level, message in
    if let message { _ = strlen(message) }
    perform(Hook.of(userdata))
}

// MARK: - The host transport

/// The server, in memory: the answers the grammar queued, and a deed done from inside the
/// callback. One per controller; the transport's userdata.
final class Server: @unchecked Sendable {
    let lock = Lock()
    var syncAnswers: [SyncAnswer] = []
    var fuzzedBody: [UInt8] = []
    var events: EventsAnswer = .ok
    var image: ImageAnswer = .ok
    var inside: Hook?

    func answer(_ request: cc_transport_request, _ response: OpaquePointer?) -> Int32 {
        let kind = request.kind.map { String(cString: $0) } ?? ""
        // Touch what the library handed over: every header, the whole body.
        for h in 0..<request.header_count { if let line = request.headers?[h] { _ = strlen(line) } }
        if let url = request.url { _ = strlen(url) }
        if request.body_len > 0, let body = request.body {
            let bytes = UnsafeRawBufferPointer(start: body, count: request.body_len)
            if kind != "image", (try? JSONReader.parse(Array(bytes))) == nil {
                finding("a \(kind) request's body is not JSON: \(String(decoding: bytes.prefix(400), as: UTF8.self))")
            }
        }
        let (sync, fuzzed, events, image, inside): (SyncAnswer, [UInt8], EventsAnswer, ImageAnswer, Hook?) = lock.withLock {
            let s = kind == "sync" && !syncAnswers.isEmpty ? syncAnswers.removeFirst() : .full
            return (s, fuzzedBody, self.events, self.image, self.inside)
        }
        if let inside {
            perform(inside)
            // A refresh from inside this controller's own sync callback must not wait for it.
            if kind == "sync" && inside.deed == .refresh {
                let rc = cc_controller_refresh(nil, inside.controller, 0.05)
                if rc == CC_OK { finding("refresh from inside its own sync transport succeeded") }
            }
        }
        switch kind {
        case "sync": return Self.sync(sync, fuzzed, response)
        case "events":
            switch events {
            case .ok: return set(response, 200, "{}")
            case .accepted: return set(response, 202, "")
            case .badRequest: return set(response, 400, "no")
            case .unsupported: return set(response, 415, "")
            case .tooMany: return set(response, 429, "", retryAfter: 0)
            case .serverError: return set(response, 500, "")
            case .fail: _ = cc_transport_response_fail(response, "down"); return CC_E_NETWORK
            case .noAnswer: return CC_OK
            }
        default:
            switch image {
            case .ok:
                let size = request.url.map { strstr($0, "big") != nil ? 1500 : 300 } ?? 300
                return set(response, 200, String(repeating: "\u{89}PNG", count: size / 4))
            case .notFound: return set(response, 404, "")
            case .empty: return set(response, 200, "")
            case .tooLarge: return set(response, 200, String(repeating: "x", count: 5000))
            case .fail: return CC_E_NETWORK
            }
        }
    }

    static func sync(_ answer: SyncAnswer, _ fuzzed: [UInt8], _ response: OpaquePointer?) -> Int32 {
        switch answer {
        case .full:
            status(cc_transport_response_set_etag(response, "\"v1\""), "set_etag")
            return set(response, 200, fullSync)
        case .incremental: return set(response, 200, incremental)
        case .notModified: return set(response, 304, "")
        case .tooMany: return set(response, 429, "slow down", retryAfter: 0.01)
        case .unavailable: return set(response, 503, "", retryAfter: -1)
        case .serverError: return set(response, 500, String(repeating: "\u{1b}[31m", count: 100))
        case .fail:
            status(cc_transport_response_fail(response, "no route\r\n"), "response_fail")
            return CC_E_NETWORK
        case .noAnswer: return CC_OK
        case .garbage: return set(response, 200, "{\"cards\":[")
        case .wrongUser: return set(response, 200, #"{"cards":[],"user_id":"someone else"}"#)
        case .slow:
            usleep(4_000)   // past the 2 ms refresh timeout the grammar may use
            return set(response, 200, incremental)
        case .badValidator:
            status(cc_transport_response_set_etag(response, "\"a\r\nb\""), "set_etag")
            status(cc_transport_response_set_etag(response, String(repeating: "e", count: 300)), "set_etag")
            return set(response, 200, "[]")
        case .misuse:
            if cc_transport_response_set(response, 42, nil, 0, -1) == CC_OK { finding("status 42 was accepted") }
            if cc_transport_response_set(response, 200, nil, 5, -1) == CC_OK { finding("a NULL body of 5 bytes was accepted") }
            if cc_transport_response_set(OpaquePointer(bitPattern: 0x40), 200, nil, 0, -1) == CC_OK { finding("a forged response was accepted") }
            _ = set(response, 200, "[]")
            return set(response, 200, incremental)   // a second answer replaces the first
        case .fuzzed:
            return fuzzed.withUnsafeBufferPointer { b in
                b.withMemoryRebound(to: CChar.self) { status(cc_transport_response_set(response, 200, $0.baseAddress, $0.count, -1), "response_set") }
            }
        }
    }
}

@discardableResult
func set(_ response: OpaquePointer?, _ code: Int32, _ body: String, retryAfter: Double = -1) -> Int32 {
    var body = body
    return body.withUTF8 { b in
        b.withMemoryRebound(to: CChar.self) { status(cc_transport_response_set(response, code, $0.baseAddress, $0.count, retryAfter), "response_set") }
    }
}

let onTransport: cc_transport_fn = { userdata, request, response in
    guard let request else { finding("a transport request is NULL") }
    return Unmanaged<Server>.fromOpaque(userdata!).takeUnretainedValue().answer(request.pointee, response)
}

let freeServer: @convention(c) (UnsafeMutableRawPointer?) -> Void = { p in
    Unmanaged<Server>.fromOpaque(p!).release()
}

func install(_ server: Server, on c: OpaquePointer?) {
    status(cc_controller_set_transport(c, onTransport, Unmanaged.passRetained(server).toOpaque(), freeServer), "set_transport")
}

// MARK: - The controllers

/// The configuration of the input's in-memory controller, from its first byte: bit 0 an events
/// sink (the host transport), bit 4 a rate limit, bit 5 known class types; with bits 6 and 7
/// both set, background work from bits 1-3 (delivery on a schedule, a refresh at open, a
/// periodic refresh), else bits 1-3 are a device id, small event batches, a short timeout.
func callsConfiguration(_ bits: Int) -> String {
    var c = [#""userId":"fuzz""#, #""source":{"callback":true}"#, #""retryBaseSeconds":0.001"#, #""retryMaxSeconds":0.005"#]
    if bits & 1 != 0 { c.append(#""events":{"callback":true}"#) }
    if bits & 0xC0 == 0xC0 {
        c.append(#""timeoutSeconds":0.5"#)
        c.append(bits & 2 != 0 ? #""eventFlushIntervalSeconds":0.001"# : #""eventFlushIntervalSeconds":0"#)
        if bits & 4 != 0 { c.append(#""refreshOnOpenAfterSeconds":0"#) }
        if bits & 8 != 0 { c.append(#""refreshPeriodSeconds":0.002,"refreshPeriodJitter":0.5"#) }
    } else {
        c.append(#""eventFlushIntervalSeconds":0"#)
        if bits & 2 != 0 { c.append(#""deviceId":"d-1""#) }
        if bits & 4 != 0 { c.append(#""eventBatchSize":2,"eventBatchBytes":1024"#) }
        c.append(bits & 8 != 0 ? #""timeoutSeconds":0.05"# : #""timeoutSeconds":0.5"#)
    }
    c.append(bits & 16 != 0 ? #""refreshTokens":2,"refreshIntervalSeconds":0.01"# : #""refreshTokens":0"#)
    if bits & 32 != 0 { c.append(#""knownClassTypes":["home_tile","coupon_code"]"#) }
    return "{" + c.joined(separator: ",") + "}"
}

/// The image controller: a file store in the scratch directory (the image cache needs one),
/// opened at first use and reused by the inputs that switch to it. At each input's first use
/// it is brought back to the same user and transport; it is replaced by a new one in a new
/// directory when a callback closed it and every 2,000 inputs, so its store and cache stay
/// small.
var imageController: OpaquePointer?
let imageServer = Server()
var imageInputs = 0
var imageGeneration = 0

func imageStore() -> OpaquePointer? {
    imageInputs += 1
    if imageController == nil || imageInputs % 2_000 == 0
        || cc_controller_counts(nil, nil, imageController, nil) == CC_E_INVALID_HANDLE {
        _ = cc_controller_close(imageController)
        removeTree("image-store-\(imageGeneration)")
        imageGeneration += 1
        var c: OpaquePointer?
        let config = #"{"userId":"fuzz","storagePath":"image-store-\#(imageGeneration)","source":{"callback":true},"events":{"callback":true},"refreshTokens":0,"eventFlushIntervalSeconds":0,"timeoutSeconds":0.5,"images":{"maxBytes":4096,"maxCount":3,"maxImageBytes":2048}}"#
        if cc_controller_open(&c, config) != CC_OK {
            finding("the image controller does not open: \(String(cString: cc_last_error_message()))")
        }
        imageController = c
    }
    imageServer.lock.withLock {
        imageServer.syncAnswers = []; imageServer.events = .ok; imageServer.image = .ok; imageServer.inside = nil
    }
    install(imageServer, on: imageController)
    status(cc_controller_change_user(imageController, "fuzz"), "change_user")
    return imageController
}

// MARK: - The input's controller, reused

/// The in-memory controller of `calls`, kept for the next input when it can be brought back to
/// the state of a new one (opening costs about a millisecond under AddressSanitizer, mostly
/// SQLite creating its schema): the same configuration byte, and nothing of the input lasting:
/// no background work (automatic refresh, background delivery, refresh_in_background, a fetch
/// left to time out), no subscription made from a callback. Then, after the input: its
/// subscriptions go, its transport is a new server, each user the input switched to gets a full
/// sync that lists nothing (and must be left without a card, test cards included), the events
/// are delivered, and the user is "fuzz" again. Anything else, or any step failing: closed, and
/// the next input opens a new one.
enum CallsController {
    static var cached: OpaquePointer?
    static var cachedBits = -1
    static var reused = 0
    static var opened = 0

    static func take(_ bits: Int) -> OpaquePointer? {
        _ = statsAtExit
        if let c = cached, bits == cachedBits {
            cached = nil
            reused += 1
            return c
        }
        if cached != nil { _ = cc_controller_close(cached); cached = nil }
        var c: OpaquePointer?
        if status(cc_controller_open(&c, callsConfiguration(bits)), "open") != CC_OK {
            finding("the calls controller does not open: \(String(cString: cc_last_error_message()))")
        }
        opened += 1
        return c
    }

    /// CC_FUZZ_STATS=1: how often the controller was reused, printed at exit.
    static let statsAtExit: Void = {
        guard getenv("CC_FUZZ_STATS") != nil else { return }
        atexit {
            fputs("contentcards-fuzz: calls: \(CallsController.reused) inputs on a reused controller, \(CallsController.opened) opened one; not kept: \(CallsController.notKept.sorted { $0.key < $1.key })\n", stderr)
        }
    }()

    /// No background work in the configuration (see `callsConfiguration`).
    static func quiet(_ bits: Int) -> Bool { bits & 0xC0 != 0xC0 || bits & 0x0E == 0 }

    static func putBack(_ c: OpaquePointer?, bits: Int, users: Set<String>, subscriptions: [UInt64]) {
        guard reset(c, bits: bits, users: users, subscriptions: subscriptions) else {
            _ = cc_controller_close(c)
            return
        }
        cached = c
        cachedBits = bits
    }

    /// Why controllers were not kept (CC_FUZZ_STATS).
    static var notKept: [String: Int] = [:]

    private static func reset(_ c: OpaquePointer?, bits: Int, users: Set<String>, subscriptions: [UInt64]) -> Bool {
        func no(_ why: String) -> Bool { notKept[why, default: 0] += 1; return false }
        guard quiet(bits) else { return no("background configuration") }
        guard !deedsLock.withLock({ lastingDeeds }) else { return no("a callback's deed") }
        var user: UnsafeMutablePointer<CChar>?
        guard cc_controller_user(&user, c) == CC_OK else { return no("closed") }
        cc_string_free(user)
        for id in subscriptions { _ = cc_controller_unsubscribe(c, id) }
        install(Server(), on: c)
        for u in users.subtracting(["fuzz"]).sorted() + ["fuzz"] {
            guard cc_controller_change_user(c, u) == CC_OK, cc_controller_apply(nil, c, emptyFullSync) == CC_OK else { return no("reset failed") }
            guard storeIsEmpty(c) else { return no("cards left (test cards)") }
        }
        if bits & 1 != 0 { _ = cc_controller_flush_events(nil, c, 0.5) }
        var pending: Int64 = -1
        guard cc_controller_pending_events(&pending, c) == CC_OK, pending == 0 else { return no("events pending") }
        var diagnostics: UnsafeMutablePointer<CChar>?
        defer { cc_string_free(diagnostics) }
        guard cc_controller_diagnostics(&diagnostics, c) == CC_OK, let diagnostics,
              strstr(diagnostics, "\"subscribers\":0") != nil else { return no("subscribers left") }
        return true
    }
}

// MARK: - The grammar

func runCalls(_ data: UnsafeRawBufferPointer) {
    var s = Script(data)
    var bits = s.byte()
    var opened = CallsController.take(bits)
    deedsLock.withLock { lastingDeeds = false }
    var users: Set<String> = ["fuzz"]
    var lasting = false            // work started that may outlive the input
    var server = Server()
    install(server, on: opened)
    var c = opened             // the controller the calls go to: this one or the image controller
    var server0 = server
    var snapshots: [OpaquePointer?] = []
    var subscriptions: [UInt64] = []
    var imageSubscriptions: [UInt64] = []
    var imageReady = false
    var steps = 0

    while s.more && steps < 200 {
        steps += 1
        let op = s.byte()
        switch op % 40 {
        case 0: status(cc_controller_log_impression(c, s.pick(cardIDs)), "log_impression")
        case 1: status(cc_controller_log_click(c, s.pick(cardIDs)), "log_click")
        case 2: status(cc_controller_log_dismissal(c, s.pick(cardIDs)), "log_dismissal")
        case 3: status(cc_controller_log_feed_displayed(c), "log_feed_displayed")
        case 4:
            var out: UnsafeMutablePointer<CChar>?
            let action = s.pick(actions), id: String? = s.byte() % 4 == 0 ? nil : s.pick(cardIDs)
            let rc = status(id.withOptionalCString { cc_controller_log(&out, c, action, $0) }, "log(\(action))")
            if (rc == CC_OK || rc == CC_E_REFUSED) && out == nil { finding("log(\(action)) gave no result with \(rc)") }
            mustBeJSON(out, "a log result"); cc_string_free(out)
        case 5:
            var changed: Int32 = -1
            status(cc_controller_mark_read(&changed, c, s.pick(cardIDs), Int32(s.byte() % 3) - 1), "mark_read")
        case 6:
            var changed: Int64 = -1
            status(s.pick(filters).withOptionalCString { cc_controller_mark_all_read(&changed, c, $0) }, "mark_all_read")
        case 7:
            let f = s.pick(filters)
            var t: Int64 = 0, u: Int64 = 0, r: Int64 = 0
            f.withOptionalCString { f in
                status(cc_controller_counts(&t, &u, c, f), "counts")
                status(cc_controller_all_counts(&t, nil, &r, c, f), "all_counts")
                count(cc_controller_total_count(c, f), "total_count")
                count(cc_controller_unviewed_count(c, f), "unviewed_count")
                count(cc_controller_unread_count(c, f), "unread_count")
            }
        case 8:
            let timeout = s.pick([0.2, 0.002, 0, -1, .nan, .infinity])
            withOutput(s.byte() % 2 == 0, "refresh") { cc_controller_refresh($0, c, timeout) }
        case 9:
            lasting = true
            let hook = Hook(c, s.pick(Deed.allCases), isDone: true)
            let fn: cc_refresh_done_fn? = s.byte() % 4 == 0 ? nil : onDone
            let rc = status(cc_controller_refresh_in_background(c, s.pick([0.2, 0.002, 0]), fn, hook.userdata, freeHook), "refresh_in_background")
            if fn != nil { hook.register(rc) }
        case 10: lasting = true; status(cc_controller_refresh_async(c), "refresh_async")
        case 11:
            let answers = (0..<(1 + s.byte() % 3)).map { _ in s.pick(SyncAnswer.allCases) }
            if answers.contains(.slow) { lasting = true }   // a fetch left to time out
            server0.lock.withLock { server0.syncAnswers += answers }
        case 12:
            let body = s.bytes(max: 255)
            server0.lock.withLock { server0.fuzzedBody = body; server0.syncAnswers.append(.fuzzed) }
        case 13: let e = s.pick(EventsAnswer.allCases); server0.lock.withLock { server0.events = e }
        case 14: let i = s.pick(ImageAnswer.allCases); server0.lock.withLock { server0.image = i }
        case 15:
            let hook: Hook? = s.byte() % 3 == 0 ? nil : Hook(c, s.pick(Deed.allCases), budget: 1)
            server0.lock.withLock { server0.inside = hook }
        case 16:
            switch s.byte() % 3 {
            case 0: status(cc_controller_set_transport(c, nil, nil, nil), "set_transport(NULL)")
            case 1: install(server0, on: c)
            default:   // a new server in place of the old one (whose free_userdata runs when no request uses it)
                let fresh = Server()
                server0.lock.withLock { fresh.syncAnswers = server0.syncAnswers }
                install(fresh, on: c)
                if c == opened { server = fresh; server0 = fresh }
            }
        case 17:
            let hook = Hook(c, s.pick(Deed.allCases), budget: 1 + s.byte() % 3)
            var id: UInt64 = 0
            let rc = status(cc_controller_subscribe(&id, c, onUpdate, hook.userdata, freeHook), "subscribe")
            if rc == CC_OK {
                if id == 0 { finding("a subscription id is 0") }
                hook.lock.withLock { hook.subscription = id }
                subscriptions.append(id)
                if c == imageController { imageSubscriptions.append(id) }
            }
        case 18:
            let id = subscriptions.isEmpty ? UInt64(s.byte()) : subscriptions[s.byte() % subscriptions.count] &+ UInt64(s.byte() % 2)
            status(cc_controller_unsubscribe(c, id), "unsubscribe")
        case 19:
            let p = s.pick(payloads)
            withOutput(s.byte() % 2 == 0, "apply") { cc_controller_apply($0, c, p) }
        case 20:
            var out: UnsafeMutablePointer<CChar>?
            let body = s.bytes(max: 255) + [0]
            status(body.withUnsafeBufferPointer { b in b.withMemoryRebound(to: CChar.self) { cc_controller_apply(&out, c, $0.baseAddress) } }, "apply")
            mustBeJSON(out, "an apply summary"); cc_string_free(out)
        case 21:
            let u = s.pick(userIDs)
            if c == opened { users.insert(u) }
            status(cc_controller_change_user(c, u), "change_user")
        case 22:
            var out: UnsafeMutablePointer<CChar>?
            status(cc_controller_user(&out, c), "user"); cc_string_free(out)
        case 23:
            var out: UnsafeMutablePointer<CChar>?
            status(cc_controller_card(&out, c, s.pick(cardIDs)), "card")
            mustBeJSON(out, "a card"); cc_string_free(out)
        case 24:
            var out: UnsafeMutablePointer<CChar>?
            status(s.pick(filters).withOptionalCString { cc_controller_feed(&out, c, $0) }, "feed")
            mustBeJSON(out, "the feed"); cc_string_free(out)
        case 25:
            var snap: OpaquePointer?
            if status(s.pick(filters).withOptionalCString { cc_controller_snapshot(&snap, c, $0) }, "snapshot") == CC_OK {
                snapshots.append(snap)
            }
        case 26:
            guard !snapshots.isEmpty else { break }
            read(snapshots[s.byte() % snapshots.count], &s)
        case 27:
            guard !snapshots.isEmpty else { status(cc_snapshot_close(nil), "snapshot_close(NULL)"); break }
            let i = s.byte() % snapshots.count
            status(cc_snapshot_close(snapshots[i]), "snapshot_close")
            if s.byte() % 2 == 0 { snapshots.remove(at: i) }   // or kept: a second close, refused
        case 28:
            let wanted = s.byte() % 2 == 0, timeout = s.pick([0.2, 0.002, 0])
            withOutput(wanted, "flush_events") { cc_controller_flush_events($0, c, timeout) }
        case 29:
            var n: Int64 = 0, out: UnsafeMutablePointer<CChar>?
            status(cc_controller_pending_events(&n, c), "pending_events")
            status(cc_controller_pending_events_json(&out, c, s.byte() % 4), "pending_events_json")
            mustBeJSON(out, "the pending events"); cc_string_free(out)
        case 30:
            var out: UnsafeMutablePointer<CChar>?
            status(cc_controller_diagnostics(&out, c), "diagnostics")
            mustBeJSON(out, "the diagnostics"); cc_string_free(out)
        case 31:
            let wanted = s.byte() % 2 == 0, timeout = s.pick([0.2, 0.002])
            withOutput(wanted, "wait_images") { cc_controller_wait_images($0, c, timeout) }
        case 32:
            // The image controller and back: its store, cache and transport persist between inputs.
            if c == opened {
                if !imageReady { _ = imageStore(); imageReady = true }
                c = imageController; server0 = imageServer
            } else {
                c = opened; server0 = server
            }
        case 33: status(cc_controller_close(c), "close")
        case 34:
            // A forged handle, or one of another kind (a snapshot), beside the real ones.
            let forged = snapshots.first ?? OpaquePointer(bitPattern: UInt(s.byte() + 1) << UInt(s.byte() % 60))
            status(cc_controller_log_impression(forged, "tile-1"), "log_impression(forged)")
            var n = 0
            status(cc_snapshot_count(&n, c), "snapshot_count(controller)")
        case 35:
            if s.byte() % 2 == 0 {
                status(cc_set_log_handler(nil, 0, nil, nil), "cc_set_log_handler(NULL)")
            } else {
                let hook = Hook(c, s.pick([Deed.nothing, .counts, .removeLogHandler, .logImpression, .close]), budget: 2)
                status(cc_set_log_handler(onLog, s.pick([10, 20, 30, 40, 0, 99]), hook.userdata, freeHook), "cc_set_log_handler")
            }
        case 36:
            // What the thread's last error says, after whatever ran last.
            _ = strlen(cc_last_error_message())
            _ = ContentCardsC.cc_last_error_code()
            _ = ContentCardsC.cc_last_error_retry_after()
            _ = strlen(cc_status_name(Int32(truncatingIfNeeded: s.byte() - 128)))
        case 37:
            // An id the fuzzer writes: logged, read, looked up.
            let id = s.bytes(max: 16) + [0]
            if c == opened { lasting = true }   // a user named by the fuzzer
            id.withUnsafeBufferPointer { b in b.withMemoryRebound(to: CChar.self) { id in
                status(cc_controller_log_impression(c, id.baseAddress), "log_impression")
                status(cc_controller_mark_read(nil, c, id.baseAddress, 1), "mark_read")
                var out: UnsafeMutablePointer<CChar>?
                status(cc_controller_card(&out, c, id.baseAddress), "card"); cc_string_free(out)
                status(cc_controller_change_user(c, id.baseAddress), "change_user")
            } }
        case 38:
            // Calls with NULL where the header forbids it: refused, never followed.
            status(cc_controller_log_impression(c, nil), "log_impression(NULL)")
            status(cc_controller_mark_read(nil, c, nil, 1), "mark_read(NULL)")
            status(cc_controller_feed(nil, c, nil), "feed(NULL out)")
            status(cc_controller_subscribe(nil, c, onUpdate, nil, nil), "subscribe(NULL out)")
            status(cc_controller_apply(nil, c, nil), "apply(NULL)")
            status(cc_controller_change_user(c, nil), "change_user(NULL)")
        default:
            // Reopen the input's controller with another configuration (the old one closed).
            if c == opened {
                status(cc_controller_close(opened), "close")
                bits = s.byte()
                if cc_controller_open(&opened, callsConfiguration(bits)) != CC_OK {
                    finding("the calls controller does not reopen: \(String(cString: cc_last_error_message()))")
                }
                users = ["fuzz"]
                c = opened
                server = Server()
                server0 = server
                install(server, on: c)
            }
        }
    }
    for snap in snapshots { _ = cc_snapshot_close(snap) }
    _ = cc_set_log_handler(nil, 0, nil, nil)
    // Kept for the next input, or closed (CC_E_INVALID_HANDLE when a callback closed it already).
    if lasting {
        CallsController.notKept["work started by a call", default: 0] += 1
        _ = cc_controller_close(opened)
    } else {
        CallsController.putBack(opened, bits: bits, users: users, subscriptions: subscriptions)
    }
    // The image controller outlives the input: its subscribers do not.
    for id in imageSubscriptions { _ = cc_controller_unsubscribe(imageController, id) }
}

/// A call with a `char **` output, or NULL in its place when `wanted` is false; the output
/// must be JSON.
func withOutput(_ wanted: Bool, _ what: String, _ call: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32) {
    var out: UnsafeMutablePointer<CChar>?
    if wanted { status(call(&out), what) } else { status(call(nil), what) }
    mustBeJSON(out, "the result of \(what)")
    cc_string_free(out)
}

/// Every accessor of a snapshot, with indices and fields in and out of range.
func read(_ snap: OpaquePointer?, _ s: inout Script) {
    var n = 0
    guard status(cc_snapshot_count(&n, snap), "snapshot_count") == CC_OK else { return }
    let i = s.byte() % (n + 2)   // past the end too
    var str: UnsafePointer<CChar>?
    status(cc_snapshot_string(&str, snap, i, s.pick(stringFields)), "snapshot_string")
    if let str { _ = strlen(str) }
    var v: Int64 = 0
    status(cc_snapshot_int(&v, snap, i, s.pick(intFields)), "snapshot_int")
    var b: Int32 = 0
    status(cc_snapshot_bool(&b, snap, i, s.pick(boolFields)), "snapshot_bool")
    var d = 0.0, present: Int32 = 0
    status(cc_snapshot_double(&d, &present, snap, i, s.pick(["imageAspectRatio", "created"])), "snapshot_double")
    var extras = 0
    if status(cc_snapshot_extras_count(&extras, snap, i), "snapshot_extras_count") == CC_OK {
        var key: UnsafePointer<CChar>?, value: UnsafePointer<CChar>?
        let e = s.byte() % (extras + 1)
        if status(cc_snapshot_extra_at(&key, &value, snap, i, e), "snapshot_extra_at") == CC_OK, let key {
            _ = strlen(key)
            var again: UnsafePointer<CChar>?
            status(cc_snapshot_extra(&again, snap, i, key), "snapshot_extra")
            if again == nil { finding("extra \(String(cString: key)) of card \(i) is listed but not found") }
        }
    }
    status(cc_snapshot_extra(&str, snap, i, "class_type"), "snapshot_extra")
}

extension Optional where Wrapped == String {
    func withOptionalCString<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        switch self {
        case .none: return body(nil)
        case .some(let s): return s.withCString { body($0) }
        }
    }
}
