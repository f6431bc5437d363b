// contentcards-tool fork-calls: a controller inherited by a child of fork() refuses every call
// at once (Controller+Fork.swift), whatever the parent's threads held at the fork: a log
// call's batch, a merge, a reader, a subscriber list. The Swift tests run it (ForkTests).
import ContentCards
#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
/// A flag the forking thread sets when it is done.
private final class Flag: @unchecked Sendable {
    private let lock = Lock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

/// Every entry point of an inherited controller, in a child: the name of the first that did
/// not refuse as it should, or nil. The parent runs it once first on a controller of its own
/// (whose calls are not refused), so that the child runs no code of this tool the parent
/// never ran: the Swift runtime's first look-ups take locks that a parent thread may hold at
/// the fork (Controller+Fork.swift, ForkSafety.swift).
private func firstNotRefused(_ c: ContentCardsController, parentSubscription: Subscription?, openedUser: String) -> String? {
    typealias Call = () throws(ContentCardsError) -> Void
    func refused(_ call: Call) -> Bool {
        do throws(ContentCardsError) { try call(); return false } catch {
            return error.code == .storage && error.message.hasPrefix("the store was opened before fork()")
        }
    }
    func entry(_ name: String, _ call: @escaping Call) -> (String, Call) { (name, call) }
    let entries: [(String, Call)] = [
        entry("logImpression") { () throws(ContentCardsError) in _ = try c.logImpression(cardID: "tile-1") },
        entry("logClick") { () throws(ContentCardsError) in _ = try c.logClick(cardID: "tile-1") },
        entry("logDismissal") { () throws(ContentCardsError) in _ = try c.logDismissal(cardID: "tile-1") },
        entry("logFeedDisplayed") { () throws(ContentCardsError) in _ = try c.logFeedDisplayed() },
        entry("markRead") { () throws(ContentCardsError) in _ = try c.markRead(cardID: "tile-1") },
        entry("markUnread") { () throws(ContentCardsError) in _ = try c.markUnread(cardID: "tile-1") },
        entry("markAllRead") { () throws(ContentCardsError) in _ = try c.markAllRead() },
        entry("unreadCount") { () throws(ContentCardsError) in _ = try c.unreadCount() },
        entry("cards") { () throws(ContentCardsError) in _ = try c.cards() },
        entry("cardsJSON") { () throws(ContentCardsError) in _ = try c.cardsJSON() },
        entry("card") { () throws(ContentCardsError) in _ = try c.card(id: "tile-1") },
        entry("counts") { () throws(ContentCardsError) in _ = try c.counts() },
        entry("unviewedCount") { () throws(ContentCardsError) in _ = try c.unviewedCount() },
        entry("totalCount") { () throws(ContentCardsError) in _ = try c.totalCount() },
        entry("currentUpdate") { () throws(ContentCardsError) in _ = try c.currentUpdate() },
        entry("subscribe") { () throws(ContentCardsError) in _ = try c.subscribe({ _ in }) },
        entry("apply") { () throws(ContentCardsError) in _ = try c.apply("{\"cards\":[]}") },
        entry("applyBytes") { () throws(ContentCardsError) in
            let bytes: [UInt8] = [0x5B, 0x5D]
            _ = try bytes.withUnsafeBufferPointer { (b) throws(ContentCardsError) in try c.apply(bytes: b) }
        },
        entry("refresh") { () throws(ContentCardsError) in _ = try c.refresh(timeout: 1) },
        entry("refreshInBackground") { () throws(ContentCardsError) in _ = try c.refreshInBackground(timeout: 1) },
        entry("flushEvents") { () throws(ContentCardsError) in _ = try c.flushEvents(timeout: 1) },
        entry("pendingEvents") { () throws(ContentCardsError) in _ = try c.pendingEvents() },
        entry("listPendingEvents") { () throws(ContentCardsError) in _ = try c.listPendingEvents() },
        entry("exportUser") { () throws(ContentCardsError) in _ = try c.exportUser() },
        entry("forgetUser") { () throws(ContentCardsError) in _ = try c.forgetUser(pending: .discard, timeout: 1) },
        entry("waitForImages") { () throws(ContentCardsError) in _ = try c.waitForImages(timeout: 1) },
        entry("changeUser") { () throws(ContentCardsError) in try c.changeUser("someone-else") },
        entry("setTokenProvider") { () throws(ContentCardsError) in try c.setTokenProvider(nil) },
        entry("setTransport") { () throws(ContentCardsError) in try c.setTransport(nil) },
        entry("hint") { () throws(ContentCardsError) in try c.hint() },
    ]
    var i = 0
    while i < entries.count {
        if !refused(entries[i].1) { return entries[i].0 }
        i += 1
    }
    if !c.isClosed { return "isClosed" }
    if c.currentUserID != openedUser { return "currentUserID" }
    let d = c.diagnostics()
    if !d.closed || d.lastError?.code != .storage { return "diagnostics" }
    c.observeBadge(nil)
    if let parentSubscription {
        if c.unsubscribe(parentSubscription.id) { return "unsubscribe" }
        if parentSubscription.cancel() { return "Subscription.cancel" }
    }
    c.close()
    return nil
}

/// Thread 0 forks `forks` times while the others log, refresh, apply, read and subscribe;
/// each child checks every entry point and exits 0, or prints the one that did not refuse.
func forkCalls(_ controller: ContentCardsController, forks: Int, threads: Int) {
    _ = try? controller.refresh()
    let user = controller.currentUserID
    guard let ids = try? controller.cards().map(\.id), !ids.isEmpty else { fail("no cards to log") }
    let feed = (try? controller.cardsJSON()).map { "{\"cards\":\($0)}" } ?? "{\"cards\":[]}"
    guard let subscription = try? controller.subscribe({ _ in }) else { fail("cannot subscribe") }
    // The child's code, run once here (see firstNotRefused).
    guard let warm = try? ContentCardsController(configuration: Configuration()) else { fail("cannot open") }
    _ = firstNotRefused(warm, parentSubscription: nil, openedUser: user)
    let stop = Flag()
    runThreads(threads + 1) { t in
        if t > 0 {
            var i = 0
            while !stop.isSet {
                switch (t + i) % 4 {
                case 0: _ = try? controller.refresh(timeout: 1)
                case 1: _ = try? controller.apply(feed)
                case 2: _ = try? controller.counts(); _ = controller.diagnostics()
                        if let s = try? controller.subscribe({ _ in }) { s.cancel() }
                default: _ = try? controller.logImpression(cardID: ids[i % ids.count])
                }
                i += 1
            }
            return
        }
        defer { stop.set() }
        for i in 0..<forks {
            usleep(UInt32(200 + (i * 397) % 2000))
            let pid = fork()
            if pid == 0 {
                if let name = firstNotRefused(controller, parentSubscription: subscription, openedUser: user) {
                    say("child \(i): \(name) did not refuse")
                    _exit(3)
                }
                _exit(0)
            }
            guard pid > 0 else { fail("fork failed") }
            var status: Int32 = 0
            let deadline = monotonicSeconds() + 10
            while waitpid(pid, &status, WNOHANG) == 0 {
                if monotonicSeconds() > deadline {
                    kill(pid, SIGKILL)
                    _ = waitpid(pid, &status, 0)
                    say("child \(i) hung")
                    fail("child \(i) hung on the inherited controller")
                }
                usleep(1000)
            }
            let signal = status & 0x7f, code = (status >> 8) & 0xff
            guard signal == 0 && code == 0 else {
                say("child \(i) ended with " + (signal != 0 ? "signal \(signal)" : "code \(code)"))
                fail("child \(i) did not pass")
            }
        }
    }
    subscription.cancel()
    say("forks \(forks): ok")
}
#endif
