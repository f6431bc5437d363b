import Foundation
import Testing
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

/// The library is a guest in a host process and never hangs, deadlocks or recurses
/// without bound, whatever its sources and callbacks do. Real threads, bounded in time: a test
/// that would hang fails instead (the stuck threads are left behind). Run under ThreadSanitizer
/// by `make tsan`.
@Suite struct HangTests {
    /// A door the test opens: host callbacks block on it (at most `max` seconds).
    final class Gate: @unchecked Sendable {
        private let condition = NSCondition()
        private var isOpen = false
        func wait(max: Double = 60) {
            condition.lock()
            let until = Date(timeIntervalSinceNow: max)
            while !isOpen { if !condition.wait(until: until) { break } }
            condition.unlock()
        }
        func open() { condition.lock(); isOpen = true; condition.broadcast(); condition.unlock() }
    }

    /// A counter for any thread.
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        func add(_ k: Int = 1) { lock.lock(); n += k; lock.unlock() }
        var value: Int { lock.lock(); defer { lock.unlock() }; return n }
    }

    /// A late-bound controller reference for callbacks made before the controller exists.
    final class Ref: @unchecked Sendable {
        private let lock = NSLock()
        private var c: ContentCardsController?
        var controller: ContentCardsController? {
            get { lock.lock(); defer { lock.unlock() }; return c }
            set { lock.lock(); c = newValue; lock.unlock() }
        }
    }

    /// Runs `body` on a thread of its own; false when it has not finished within `seconds`.
    static func finishes(within seconds: Double, _ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread { body(); done.signal() }
        return done.wait(timeout: .now() + seconds) == .success
    }

    static let syncBody = Array(Fixtures.payload([Fixtures.wire("h1")], full: true).utf8)

    static func hostController(_ extra: String = "", _ send: @escaping @Sendable (TransportRequest) -> Result<TransportResponse, ContentCardsError>) throws -> ContentCardsController {
        var json = #"{"userId":"u-1","source":{"callback":true},"refreshTokens":0"#
        if !extra.isEmpty { json += "," + extra }
        return try ContentCardsController(json: json + "}", transport: ClosureTransport(send))
    }

    // MARK: Item 1: every refresh returns by its timeout

    @Test func aFIFOSourceIsRefusedAtOnce() throws {
        let dir = Fixtures.temporaryDirectory("fifo")
        defer { Fixtures.removeTree(dir) }
        let fifo = dir + "/feed.json"
        #expect(mkfifo(fifo, 0o600) == 0)
        let c = try ContentCardsController(json: #"{"source":{"file":"\#(fifo)"},"refreshTokens":0}"#)
        defer { c.close() }
        final class Box: @unchecked Sendable { var error: ContentCardsError? }
        let box = Box()
        // Opening a FIFO with no writer blocks: a refresh that opened it would never return.
        #expect(Self.finishes(within: 2 + 2) {
            do throws(ContentCardsError) { try c.refresh(timeout: 2) } catch { box.error = error }
        })
        #expect(box.error?.code == .sourceFile)
        #expect(box.error?.message.contains("FIFO") == true, "\(String(describing: box.error))")
    }

    /// Every function that takes a timeout returns by it, whatever the event sink does: a FIFO
    /// with no reader (refused at once: only a regular file can take a batch whole or not at
    /// all), and a sink that blocks (a stalled mount, a host transport that never returns).
    @Test func aFIFOEventsFileIsRefusedAtOnceAndTheEventsStayPending() throws {
        let dir = Fixtures.temporaryDirectory("fifo-events")
        defer { Fixtures.removeTree(dir) }
        let fifo = dir + "/events.jsonl"
        #expect(mkfifo(fifo, 0o600) == 0)
        let c = try ContentCardsController(json: #"{"events":{"file":"\#(fifo)"},"eventFlushIntervalSeconds":0}"#)
        defer { c.close() }
        try c.logFeedDisplayed()
        final class Box: @unchecked Sendable { var error: ContentCardsError? }
        let box = Box()
        #expect(Self.finishes(within: 1 + 2) {
            do throws(ContentCardsError) { try c.flushEvents(timeout: 1) } catch { box.error = error }
        })
        #expect(box.error?.code == .storage, "\(String(describing: box.error))")
        #expect(box.error?.message.contains("FIFO") == true, "\(String(describing: box.error))")
        #expect(try c.pendingEvents() == 1)
    }

    @Test func anEventSinkThatBlocksIsAbandonedAtTheFlushTimeout() throws {
        let gate = Gate()
        let calls = Counter()
        let c = try ContentCardsController(json: #"{"events":{"callback":true},"eventFlushIntervalSeconds":0,"timeoutSeconds":30}"#,
                                           transport: ClosureTransport { _ in
            calls.add()
            gate.wait(max: 30)                  // a stalled mount, a host that never returns
            return .success(TransportResponse(status: 200, body: []))
        })
        defer { gate.open(); c.close() }
        try c.logFeedDisplayed()
        final class Box: @unchecked Sendable { var error: ContentCardsError?; var elapsed = 0.0 }
        let box = Box()
        #expect(Self.finishes(within: 1 + 3) {
            let start = monotonicSeconds()
            do throws(ContentCardsError) { try c.flushEvents(timeout: 1) } catch { box.error = error }
            box.elapsed = monotonicSeconds() - start
        })
        #expect(box.error?.code == .timeout, "\(String(describing: box.error))")
        #expect(box.elapsed < 2.5, "flush took \(box.elapsed) s")
        #expect(try c.pendingEvents() == 1)
        // Stuck sink calls are bounded: later flushes fail at once instead of piling up threads.
        for _ in 0..<(Background.maxFetches + 2) { _ = try? c.flushEvents(timeout: 0.2) }
        #expect(calls.value <= Background.maxFetches, "\(calls.value) sink calls running")
        gate.open()
        // Once the sink answers again, the event goes (at least once).
        #expect(Self.finishes(within: 10) {
            for _ in 0..<50 {
                if (try? c.flushEvents(timeout: 2))?.pending == 0 { return }
                usleep(50_000)
            }
        })
        #expect(try c.pendingEvents() == 0)
    }

    @Test func aHostTransportThatSleepsPastTheTimeoutIsAbandoned() throws {
        let c = try Self.hostController { _ in
            sleep(3)
            return .success(TransportResponse(status: 200, body: Self.syncBody))
        }
        defer { c.close() }
        let start = monotonicSeconds()
        do {
            try c.refresh(timeout: 1)
            Issue.record("the refresh succeeded after \(monotonicSeconds() - start) s")
        } catch {
            #expect(error.code == .timeout, "\(error.message)")
        }
        #expect(monotonicSeconds() - start < 1 + 2)
        // The late answer is discarded: the cache stays as it was.
        sleep(3)
        #expect(try c.counts().total == 0)
    }

    @Test func aSourceThatNeverAnswersCannotPileUpThreads() throws {
        let gate = Gate()
        let c = try Self.hostController(#""timeoutSeconds":0.2"#) { _ in
            gate.wait()
            return .success(TransportResponse(status: 200, body: Self.syncBody))
        }
        defer { gate.open(); c.close() }
        for _ in 0..<Background.maxFetches {
            #expect(throws: ContentCardsError.self) { try c.refresh(timeout: 5) }
        }
        let start = monotonicSeconds()
        do { try c.refresh(timeout: 5) } catch {
            #expect(error.code == .timeout && error.message.contains("still blocked"), "\(error.message)")
        }
        #expect(monotonicSeconds() - start < 1)
        gate.open()
        let until = monotonicSeconds() + 10
        var summary: SyncSummary?
        while summary == nil && monotonicSeconds() < until {
            summary = try? c.refresh(timeout: 5)
            if summary == nil { usleep(50_000) }
        }
        #expect(summary?.added == 1)
    }

    // MARK: Item 2: one controller's trouble never delays another

    @Test func blockedControllersNeverDelayAnothersBackgroundWork() throws {
        let gate = Gate()
        defer { gate.open() }
        var stuck: [ContentCardsController] = []
        defer { for c in stuck { c.close() } }
        // Six background refreshes that block in their host transport...
        for _ in 0..<6 {
            let c = try Self.hostController(#""timeoutSeconds":60"#) { _ in
                gate.wait()
                return .failure(ContentCardsError(.network, "closed by the test"))
            }
            try c.refreshInBackground()
            stuck.append(c)
        }
        // ...and eight slow event endpoints delivering in the background.
        for _ in 0..<8 {
            let c = try Self.hostController(#""events":{"callback":true},"eventFlushIntervalSeconds":0.01,"timeoutSeconds":60"#) { _ in
                gate.wait()
                return .failure(ContentCardsError(.network, "closed by the test"))
            }
            try c.apply(Fixtures.payload([Fixtures.wire("e1")]))
            try c.logImpression(cardID: "e1")
            stuck.append(c)
        }
        usleep(300_000)
        let healthy = try makeController()
        defer { healthy.close() }
        let done = DispatchSemaphore(value: 0)
        try healthy.subscribe { update in if update.reason == .refresh { done.signal() } }
        let start = monotonicSeconds()
        try healthy.refreshInBackground()
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(monotonicSeconds() - start < 5)
        #expect(try healthy.counts().total > 0)
    }

    // MARK: Item 3: subscribe, unsubscribe, close and callbacks never deadlock

    @Test func subscribersUnsubscribingEachOtherFromTwoThreads() throws {
        let finished = Self.finishes(within: 60) {
            for _ in 0..<100 {
                do { try Self.unsubscribeEachOtherOnce() } catch { Issue.record("\(error)") }
            }
        }
        #expect(finished, "deadlock: two subscribers unsubscribing each other")
    }

    static func unsubscribeEachOtherOnce() throws {
        let c = try makeController()
        defer { c.close() }
        try c.apply(Fixtures.payload([Fixtures.wire("a"), Fixtures.wire("b")]))
        let both = DispatchGroup()
        both.enter(); both.enter()
        let removed = Counter()
        final class IDs: @unchecked Sendable { var a: UInt64 = 0; var b: UInt64 = 0 }
        let subscriptionIDs = IDs()
        let a = try c.subscribe({ update in
            guard update.cardID == "a" else { return }
            both.leave()
            _ = both.wait(timeout: .now() + 1)
            c.unsubscribe(subscriptionIDs.b)
        }, onRemove: { removed.add() })
        let b = try c.subscribe({ update in
            guard update.cardID == "b" else { return }
            both.leave()
            _ = both.wait(timeout: .now() + 1)
            c.unsubscribe(subscriptionIDs.a)
        }, onRemove: { removed.add() })
        subscriptionIDs.a = a.id
        subscriptionIDs.b = b.id
        let done = DispatchSemaphore(value: 0)
        let t1 = Thread { _ = try? c.logImpression(cardID: "a"); done.signal() }
        let t2 = Thread { _ = try? c.logImpression(cardID: "b"); done.signal() }
        t1.start(); t2.start()
        _ = done.wait(timeout: .now() + 10)
        _ = done.wait(timeout: .now() + 10)
        // Whatever the interleaving, both end up removed (each at most once) by close.
        c.close()
        #expect(removed.value == 2)
    }

    @Test func everyInterleavingOfSubscribeUnsubscribeCloseAndCallbacks() throws {
        let finished = Self.finishes(within: 90) {
            for round in 0..<60 {
                do { try Self.interleaveOnce(seed: round) } catch { Issue.record("\(error)") }
            }
        }
        #expect(finished, "deadlock among subscribe/unsubscribe/close/callbacks")
    }

    static func interleaveOnce(seed: Int) throws {
        let c = try makeController()
        try c.apply(Fixtures.payload([Fixtures.wire("a"), Fixtures.wire("b"), Fixtures.wire("c")]))
        let subscribed = Counter(), removed = Counter()
        final class IDs: @unchecked Sendable {
            let lock = NSLock(); var all: [UInt64] = []
            func add(_ id: UInt64) { lock.lock(); all.append(id); lock.unlock() }
            func random() -> UInt64? { lock.lock(); defer { lock.unlock() }; return all.randomElement() }
        }
        let ids = IDs()
        @Sendable func add() {
            subscribed.add()   // onRemove runs once per attempt, also for one refused (closed)
            guard let s = try? c.subscribe({ _ in
                switch Int.random(in: 0..<10) {
                case 0, 1, 2: if let id = ids.random() { c.unsubscribe(id) }
                case 3: add()
                case 4: if Int.random(in: 0..<8) == 0 { c.close() }
                case 5: _ = try? c.refresh(timeout: 1)
                default: break
                }
            }, onRemove: { removed.add() }) else { return }
            ids.add(s.id)
        }
        for _ in 0..<4 { add() }
        TestThreads.run(4) { worker in
            for i in 0..<20 {
                switch (worker + i + seed) % 5 {
                case 0: _ = try? c.logImpression(cardID: ["a", "b", "c"][i % 3])
                case 1: if let id = ids.random() { c.unsubscribe(id) }
                case 2: add()
                case 3: _ = try? c.refresh(timeout: 1)
                default: if worker == 3 && i == 15 { c.close() }
                }
            }
        }
        c.close()
        // free_userdata may still be pending for a call that was running when a callback
        // unsubscribed it; it runs when that call returns. That call may be on one of the
        // controller's own threads (a refresh started from a callback delivers its update
        // there), still running after close() returned: waited for, bounded, so a lost
        // onRemove still fails here. (Seen once in CI under load: 20 removed of 21.)
        let deadline = Date().addingTimeInterval(10)
        while removed.value != subscribed.value && Date() < deadline { usleep(1_000) }
        #expect(removed.value == subscribed.value)
    }

    /// A subscribe that crosses a close on another thread is either removed by that close or
    /// refused: its onRemove runs exactly once either way. (The cause of a lost onRemove that
    /// `everyInterleaving…` above saw in 6 of 60 rounds under ThreadSanitizer: subscribe
    /// checked "open", close emptied the list, then subscribe added to it.)
    @Test func aSubscriberListThatCloseEmptiedRefusesNewSubscribers() {
        let subscribers = Subscribers()
        subscribers.removeAll()
        let removed = Counter()
        let id: UInt64? = subscribers.add({ _ in }, onRemove: { removed.add() })
        #expect(id == nil)
        #expect(subscribers.count == 0)
    }

    @Test func subscribeRacingCloseNeverLosesAnOnRemove() throws {
        for _ in 0..<200 {
            let c = try makeController()
            let attempts = Counter(), removed = Counter()
            TestThreads.run(3) { worker in
                if worker == 0 {
                    usleep(UInt32.random(in: 0...300))
                    c.close()
                    return
                }
                while true {
                    attempts.add()
                    do { _ = try c.subscribe({ _ in }, onRemove: { removed.add() }) } catch { break }
                }
            }
            // Every subscribe has returned: each onRemove has run (close's or the refusal's).
            #expect(removed.value == attempts.value)
        }
    }

    // MARK: Item 4: no callback pattern recurses without bound

    @Test func aSubscriberThatRefreshesOnEveryUpdate() throws {
        let c = try ContentCardsController(json: #"{"userId":"u-1","source":{"file":"\#(Fixtures.sampleFeedPath)"}}"#)
        let calls = Counter()
        try c.subscribe { _ in
            calls.add()
            _ = try? c.refresh(timeout: 2)
        }
        #expect(Self.finishes(within: 30) { _ = try? c.refresh(timeout: 2) })
        usleep(200_000)
        #expect(Self.finishes(within: 10) { c.close() })
        #expect(calls.value > Subscribers.maxCascade)
    }

    // MARK: Item 11: callbacks calling back

    @Test func refreshFromInsideItsOwnTransportFailsAtOnce() throws {
        let ref = Ref()
        final class Box: @unchecked Sendable { var error: ContentCardsError?; var elapsed = 0.0 }
        let inner = Box()
        let c = try Self.hostController { _ in
            let start = monotonicSeconds()
            do throws(ContentCardsError) { try ref.controller?.refresh(timeout: 5) } catch { inner.error = error }
            inner.elapsed = monotonicSeconds() - start
            return .success(TransportResponse(status: 200, body: Self.syncBody))
        }
        defer { c.close() }
        ref.controller = c
        let summary = try c.refresh(timeout: 10)
        #expect(summary.added == 1)
        #expect(inner.error?.code == .refused, "\(String(describing: inner.error))")
        #expect(inner.elapsed < 1)
    }

    @Test func closeFromInsideTheTransportEndsTheRefreshWithClosed() throws {
        let ref = Ref()
        let c = try Self.hostController { _ in
            ref.controller?.close()
            return .success(TransportResponse(status: 200, body: Self.syncBody))
        }
        ref.controller = c
        do {
            try c.refresh(timeout: 5)
            Issue.record("the refresh succeeded on a closed controller")
        } catch {
            #expect(error.code == .closed, "\(error.message)")
        }
        #expect(c.isClosed)
    }
}
