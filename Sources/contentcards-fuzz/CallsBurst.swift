// The `calls` target's burst: logging calls from 2 to 4 threads at once on one controller, so
// that calls share transactions (group commit, Feed/LogBatch.swift) under AddressSanitizer,
// beside whatever the input's callbacks do meanwhile (close, refresh, log again). The oracle:
// no event id is handed to two calls.
import CContentCardsABI
import ContentCardsC
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

/// One thread's calls: (action, card id or nil), made in order on `controller`.
private final class BurstThread: @unchecked Sendable {
    let controller: OpaquePointer?
    let calls: [(String, String?)]
    var eventIDs: [String] = []

    init(_ controller: OpaquePointer?, _ calls: [(String, String?)]) {
        self.controller = controller
        self.calls = calls
    }

    func run() {
        for (action, id) in calls {
            var out: UnsafeMutablePointer<CChar>?
            let rc = status(id.withOptionalCString { cc_controller_log(&out, controller, action, $0) }, "log(\(action)) in a burst")
            if let out {
                let key = #""eventId":""#
                if rc == CC_OK, let at = strstr(out, key) {
                    eventIDs.append(String(String(cString: at + key.utf8.count).prefix { $0 != "\"" }))
                }
                mustBeJSON(out, "a log result")
            }
            cc_string_free(out)
        }
    }
}

/// Reads the burst from the script (threads, then each one's calls) and runs it.
func burst(_ c: OpaquePointer?, _ s: inout Script) {
    let actions = ["impression", "click", "dismissal", "feed_displayed"]
    let threads = (0..<(2 + s.byte() % 3)).map { _ in
        BurstThread(c, (0..<(1 + s.byte() % 4)).map { _ in
            let action = s.pick(actions)
            return (action, action == "feed_displayed" ? nil : s.pick(cardIDs))
        })
    }
    var handles: [pthread_t] = []
    for t in threads {
        var handle = pthread_t()
        let box = Unmanaged.passRetained(t).toOpaque()
        if pthread_create(&handle, nil, { p in
            Unmanaged<BurstThread>.fromOpaque(p!).takeRetainedValue().run()
            return nil
        }, box) == 0 {
            handles.append(handle)
        } else {
            Unmanaged<BurstThread>.fromOpaque(box).release()
            t.run()
        }
    }
    for h in handles { pthread_join(h, nil) }
    let ids = threads.flatMap(\.eventIDs)
    if Set(ids).count != ids.count { finding("a burst of log calls handed one event id to two calls: \(ids)") }
}
