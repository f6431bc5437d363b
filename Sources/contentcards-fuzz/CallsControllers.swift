// The `calls` target's controllers: the configuration of the input's in-memory controller, the
// second controller with a file store for images, and the input's controller kept for the next
// input when it can be brought back to a new one's state (`CallsController`).
import CContentCardsABI
import ContentCardsC
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

// MARK: - The controllers

/// The configuration of the input's in-memory controller, from its first byte: bit 0 an events
/// sink (the host transport), bit 4 a rate limit, bit 5 known class types; with bits 6 and 7
/// both set, background work from bits 1-3 (delivery on a schedule, a refresh at open, a
/// periodic refresh), else bits 1-3 are a device id, small event batches, a short timeout.
func callsConfiguration(_ bits: Int) -> String {
    var c = [#""userId":"fuzz""#, #""source":{"callback":true}"#, #""retryBaseSeconds":0.001"#, #""retryMaxSeconds":0.005"#]
    if bits & 1 != 0 { c.append(#""events":{"callback":true}"#) }
    if bits & 0xC0 == 0xC0 {
        c.append(#""timeoutSeconds":0.01"#)
        c.append(bits & 2 != 0 ? #""eventFlushIntervalSeconds":0.001"# : #""eventFlushIntervalSeconds":0"#)
        if bits & 4 != 0 { c.append(#""refreshOnOpenAfterSeconds":0"#) }
        if bits & 8 != 0 { c.append(#""refreshPeriodSeconds":0.002,"refreshPeriodJitter":0.5"#) }
    } else {
        c.append(#""eventFlushIntervalSeconds":0"#)
        if bits & 2 != 0 { c.append(#""deviceId":"d-1""#) }
        if bits & 4 != 0 { c.append(#""eventBatchSize":2,"eventBatchBytes":1024"#) }
        c.append(bits & 8 != 0 ? #""timeoutSeconds":0.003"# : #""timeoutSeconds":0.01"#)
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
        let config = #"{"userId":"fuzz","storagePath":"image-store-\#(imageGeneration)","source":{"callback":true},"events":{"callback":true},"refreshTokens":0,"eventFlushIntervalSeconds":0,"timeoutSeconds":0.01,"images":{"maxBytes":4096,"maxCount":3,"maxImageBytes":2048}}"#
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
        _ = cc_controller_set_token_provider(c, nil, nil, nil)
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
