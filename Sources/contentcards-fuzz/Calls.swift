// The `calls` target: a byte-driven grammar of calls over the C ABI. The first byte chooses the
// configuration of an in-memory controller opened for the input (a host transport for sync,
// events and images, automatic refresh, background delivery, rate limit); every further byte
// picks a call and the bytes after it its arguments. The calls reach the whole header: logging,
// read state, counts and filters, snapshots, refresh (blocking, in the background, from inside
// callbacks), apply, change_user, flush through the host events transport, subscriptions
// whose callbacks close, unsubscribe, refresh or log, the log handler, and the image cache of a
// second controller (a file store in the scratch directory, opened once per process: images
// need one) whose images the host transport serves from memory; hints, exporting and forgetting
// users, and a token provider that answers as the input says. Nothing leaves the process: the
// transport answers from tables and from the input itself.
//
// At the end of each input the controller is closed (if a callback has not closed it already),
// the log handler removed and every snapshot closed, so an input starts from the same state
// whatever ran before it (the image controller aside: its store and cache persist, bounded).
//
// The grammar is here (`runCalls`); its input and checks, tables, callbacks, host transport and
// controllers are in the Calls*.swift files beside it.
import CContentCardsABI
import ContentCardsC
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

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
        switch op % 45 {
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
            let timeout = s.pick([0.005, 0.002, 0, -1, .nan, .infinity])
            withOutput(s.byte() % 2 == 0, "refresh") { cc_controller_refresh($0, c, timeout) }
        case 9:
            lasting = true
            let hook = Hook(c, s.pick(Deed.allCases), isDone: true)
            let fn: cc_refresh_done_fn? = s.byte() % 4 == 0 ? nil : onDone
            let rc = status(cc_controller_refresh_in_background(c, s.pick([0.005, 0.002, 0]), fn, hook.userdata, freeHook), "refresh_in_background")
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
            let filter = s.pick(filters)
            status(filter.withOptionalCString { cc_controller_feed(&out, c, $0) }, "feed")
            mustBeJSON(out, "the feed"); cc_string_free(out)
            checkIndexedFeed(c, filter)   // the same feed with its cards' offsets (no byte read)
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
            let wanted = s.byte() % 2 == 0, timeout = s.pick([0.005, 0.002, 0])
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
            out = nil
            status(cc_controller_current_update(&out, c), "current_update")
            mustBeJSON(out, "the current update"); cc_string_free(out)
        case 31:
            let wanted = s.byte() % 2 == 0, timeout = s.pick([0.005, 0.002])
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
        case 39:
            // A hint: answered by a refresh in the background.
            if c == opened { lasting = true }
            status(s.pick(userIDs + [nil]).withOptionalCString { cc_controller_hint(c, $0) }, "hint")
        case 40:
            let user = s.pick(userIDs + [nil])
            withOutput(s.byte() % 4 != 0, "export_user") { out in user.withOptionalCString { cc_controller_export_user(out, c, $0) } }
        case 41:
            // Forgetting a user, its events delivered first or discarded, with timeouts of
            // every kind; users = their ids (the reset must see they are empty).
            let user = s.pick(userIDs + [nil])
            let pending = s.pick([CC_PENDING_FLUSH, CC_PENDING_DISCARD, 7, -1])
            let timeout = s.pick([0.005, 0.002, 0, -1, .nan])
            withOutput(s.byte() % 2 == 0, "forget_user") { out in user.withOptionalCString { cc_controller_forget_user(out, c, $0, pending, timeout) } }
        case 42:
            // A token provider answering as the input says (a token for the user, a failure, a
            // token that cannot be sent, no answer), or none.
            tokenMode = s.byte() % 5
            if tokenMode == 4 {
                status(cc_controller_set_token_provider(c, nil, nil, nil), "set_token_provider(NULL)")
            } else {
                status(cc_controller_set_token_provider(c, provideToken, nil, nil), "set_token_provider")
            }
        case 43:
            // Logging from several threads at once: group commit (CallsBurst.swift).
            burst(c, &s)
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
