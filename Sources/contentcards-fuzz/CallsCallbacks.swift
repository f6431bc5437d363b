// The `calls` target's callbacks: their userdata (`Hook`), what each does when called (a deed:
// close, unsubscribe, refresh, log...), and the C functions the library calls.
import CContentCardsABI
import ContentCardsC
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

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

/// How the token provider of `calls` answers (case 42 sets it): 0 a token for the user, 1 a
/// failure, 2 a token that cannot be sent, 3 CC_OK with no answer. Read on library threads.
let tokenModeLock = Lock()
nonisolated(unsafe) private var tokenModeValue = 0
var tokenMode: Int {
    get { tokenModeLock.withLock { tokenModeValue } }
    set { tokenModeLock.withLock { tokenModeValue = newValue } }
}

/// The token provider of `calls`: its answers must be taken or refused, never crash, and a
/// request never goes out with a bad header (the host transport would see it).
let provideToken: cc_token_fn = { _, user, response in
    switch tokenMode {
    case 0:
        let name = user.map { String(cString: $0) } ?? ""
        let token = "tok-" + name.utf8.map { String($0, radix: 16) }.joined()
        return cc_token_response_set(response, token, Double(time(nil) + 60))
    case 1:
        _ = cc_token_response_fail(response, "no token in the fuzzer")
        return CC_E_AUTH
    case 2:
        let rc = cc_token_response_set(response, "bad token\r\n", 0)
        if rc != CC_E_INVALID_ARGUMENT { finding("a token with CR LF was taken: \(rc)") }
        return rc
    default:
        return CC_OK
    }
}
