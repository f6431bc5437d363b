import Foundation
import Testing
@testable import ContentCards

/// Group commit (LogBatch.swift): log calls made while another is written share the next
/// transaction, and each still returns only once its own event is stored.
@Suite struct GroupCommitTests {
    static func waitUntil(_ done: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while !done() {
            if Date() > deadline { return false }
            usleep(200)
        }
        return true
    }

    /// One batch of `calls`, made in this order: with the controller's lock held, a first call
    /// ("first", an impression of msg-1) becomes the writer and waits for the lock, and each
    /// call is queued behind it before the next is made; then the lock is let go. The outcomes
    /// by name.
    static func queuedBehindAWriter(_ c: ContentCardsController,
                                    _ calls: [(String, () throws -> LogResult)]) -> [String: Result<LogResult, Error>] {
        c.lock.lock()
        let outcomes = LogOutcomes()
        let group = DispatchGroup()
        TestThreads.start(in: group) { outcomes.add("first", Result { try c.logImpression(cardID: "msg-1") }) }
        #expect(waitUntil { c.logBatch.state.writing })
        for (i, call) in calls.enumerated() {
            TestThreads.start(in: group) { outcomes.add(call.0, Result { try call.1() }) }
            #expect(waitUntil { c.logBatch.state.queued == i + 1 })   // in this order
        }
        c.lock.unlock()
        #expect(group.wait(timeout: .now() + 10) == .success)
        return outcomes.all
    }

    /// A trigger, made through another connection, that makes the insert of any event fail.
    static func refuseEventWrites(_ dir: String) throws {
        let other = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        defer { other.close() }
        try other.execute("CREATE TRIGGER no_events BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'no events (test)'); END")
    }

    @Test func callsQueuedBehindAWriterShareOneTransaction() throws {
        let dir = Fixtures.temporaryDirectory("group-commit")
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(storage: dir)
        try c.refresh()
        let before = c.logBatch.state.batches
        // The controller's lock held (as a sync's apply would): the first call becomes the
        // writer and waits for it; the next two queue behind it.
        c.lock.lock()
        let results = UpdateLog()
        let group = DispatchGroup()
        func log(_ id: String) {
            TestThreads.start(in: group) {
                if let r = try? c.logImpression(cardID: id), r.recorded {
                    results.add(FeedUpdate(reason: .impression, error: nil, cardID: id, counts: FeedCounts(), sync: nil))
                }
            }
        }
        log("tile-1")
        #expect(Self.waitUntil { c.logBatch.state.writing })
        log("tile-2")
        log("tile-3")
        #expect(Self.waitUntil { c.logBatch.state.queued == 2 })
        #expect(results.all.isEmpty)   // nothing returns before it is written
        c.lock.unlock()
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(Set(results.all.compactMap(\.cardID)) == ["tile-1", "tile-2", "tile-3"])
        #expect(c.logBatch.state.batches - before == 2)   // tile-1 alone, then tile-2 and tile-3
        #expect(try c.pendingEvents() == 3)
        #expect(try ["tile-1", "tile-2", "tile-3"].allSatisfy { try c.card(id: $0).viewed })
        c.close()
        // Stored: a new controller on the file sees the three.
        let again = try makeController(storage: dir)
        #expect(try again.pendingEvents() == 3)
        #expect(try ["tile-1", "tile-2", "tile-3"].allSatisfy { try again.card(id: $0).viewed })
    }

    /// Calls in one batch are decided one after another: the second dismissal of a card in the
    /// batch is refused, the second impression changes no state, an unknown card fails alone.
    @Test func callsInOneBatchAreDecidedInOrder() throws {
        let c = try makeController()
        try c.refresh()
        let o = Self.queuedBehindAWriter(c, [
            ("dismiss", { try c.logDismissal(cardID: "tile-1") }),
            ("impression", { try c.logImpression(cardID: "tile-1") }),
            ("dismiss again", { try c.logDismissal(cardID: "tile-1") }),
            ("impression again", { try c.logImpression(cardID: "tile-1") }),
            ("unknown", { try c.logImpression(cardID: "no-such-card") }),
            ("feed", { try c.logFeedDisplayed() }),
        ])
        #expect(try o["dismiss"]?.get().stateChanged == true)
        #expect(try o["impression"]?.get().stateChanged == true)
        #expect(try o["dismiss again"]?.get().recorded == false)
        #expect(try o["impression again"]?.get().stateChanged == false)
        #expect((try? o["unknown"]?.get()) == nil)
        #expect(try o["feed"]?.get().recorded == true)
        // first, dismiss, impression, impression again, feed: five events.
        #expect(try c.pendingEvents() == 5)
        #expect(try c.card(id: "tile-1").dismissed && c.card(id: "tile-1").viewed)
    }

    /// A batch whose write fails after its calls were decided: every call it would have
    /// recorded fails with the store's error, a call refused on its own keeps its refusal, and
    /// nothing of the batch is recorded (a trigger of another connection's makes the insert of
    /// any event fail).
    @Test func aWriteThatFailsFailsTheRecordedCallsAndRecordsNothing() throws {
        let dir = Fixtures.temporaryDirectory("batch-fails")
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(storage: dir)
        defer { c.close() }
        try c.refresh()
        try Self.refuseEventWrites(dir)
        let o = Self.queuedBehindAWriter(c, [
            ("impression", { try c.logImpression(cardID: "tile-1") }),
            ("refused click", { try c.logClick(cardID: "msg-2") }),
            ("unknown", { try c.logImpression(cardID: "no-such-card") }),
        ])
        for name in ["first", "impression"] {
            do { _ = try o[name]?.get(); Issue.record("\(name) was recorded") } catch {
                let e = error as? ContentCardsError
                #expect(e?.code == .storage && e?.message.contains("no events (test)") == true, "\(name): \(error)")
            }
        }
        #expect(try o["refused click"]?.get() == .refused("click not logged: card \"msg-2\" has no url"))
        do { _ = try o["unknown"]?.get(); Issue.record("an unknown card was recorded") } catch {
            #expect((error as? ContentCardsError)?.code == .notFound)
        }
        #expect(try c.pendingEvents() == 0)
        #expect(try !c.card(id: "tile-1").viewed && !c.card(id: "msg-1").viewed)
    }

    /// A call refused for what an earlier call of its batch did (a second dismissal), in a batch
    /// whose write fails: it fails with the write's error too. Its refusal ("already
    /// dismissed") described a state the rollback undid: the card was not dismissed.
    @Test func aRefusalThatRestedOnAFailedWriteFailsWithIt() throws {
        let dir = Fixtures.temporaryDirectory("batch-fails-dependent")
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(storage: dir)
        defer { c.close() }
        try c.refresh()
        try Self.refuseEventWrites(dir)
        let o = Self.queuedBehindAWriter(c, [
            ("dismiss", { try c.logDismissal(cardID: "tile-1") }),
            ("dismiss again", { try c.logDismissal(cardID: "tile-1") }),
        ])
        for name in ["dismiss", "dismiss again"] {
            do { let r = try o[name]?.get(); Issue.record("\(name): \(String(describing: r))") } catch {
                #expect((error as? ContentCardsError)?.code == .storage, "\(name): \(error)")
            }
        }
        #expect(try !c.card(id: "tile-1").dismissed)
    }

    /// Two cards whose ids are canonically equivalent ("é" as one code point, and "e" + U+0301)
    /// seen in one batch: two cards, both viewed. The batch's own changes were keyed by
    /// `String`, so the second call was decided against the first card (no state changed, the
    /// event named the first card) and the second card stayed unviewed.
    @Test func cardsOfEquivalentIdsInOneBatchAreTwoCards() throws {
        let c = try makeController()
        try c.refresh()
        _ = try c.apply(Fixtures.payload([Fixtures.wire("caf\u{E9}"), Fixtures.wire("cafe\u{301}")]))
        let o = Self.queuedBehindAWriter(c, [
            ("composed", { try c.logImpression(cardID: "caf\u{E9}") }),
            ("decomposed", { try c.logImpression(cardID: "cafe\u{301}") }),
        ])
        #expect(try o["composed"]?.get().stateChanged == true)
        #expect(try o["decomposed"]?.get().stateChanged == true)
        #expect(try c.card(id: "caf\u{E9}").viewed && c.card(id: "cafe\u{301}").viewed)
    }

    /// Many threads at once, every kind of call on a file store: each recorded call's event is
    /// stored once, each card's state is what its calls say, and a new controller reads the same.
    @Test func manyThreadsLoggingAtOnceLoseNothing() throws {
        let dir = Fixtures.temporaryDirectory("group-commit-many")
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(storage: dir)
        let ids = (0..<16).map { "g\($0)" }
        try c.apply("[" + ids.map { Fixtures.wire($0, extra: #""db":true,"u":"https://example.com/\#($0)""#) }.joined(separator: ",") + "]")
        let outcomes = LogOutcomes()
        TestThreads.run(8) { worker in
            for round in 0..<40 {
                let id = ids[(worker * 5 + round) % ids.count]
                let key = "\(worker)-\(round)"
                switch round % 4 {
                case 0, 1: outcomes.add(key, Result { try c.logImpression(cardID: id) })
                case 2: outcomes.add(key, Result { try c.logClick(cardID: id) })
                default: outcomes.add(key, Result { try c.logDismissal(cardID: id) })
                }
            }
        }
        let all = outcomes.all.values.compactMap { try? $0.get() }
        #expect(all.count == 8 * 40)
        let recorded = all.filter(\.recorded)
        #expect(Set(recorded.compactMap(\.eventID)).count == recorded.count)
        #expect(try c.pendingEvents() == recorded.count)
        // Each card dismissed at most once, and every card was dismissed by someone.
        #expect(all.filter { $0.recorded && $0.stateChanged }.count <= ids.count * 3)
        c.close()
        let again = try makeController(storage: dir)
        #expect(try again.pendingEvents() == recorded.count)
        for id in ids {
            let card = try again.card(id: id)
            #expect(card.viewed && card.clicked && card.dismissed, "\(id)")
        }
    }

    /// Closing while batches are being written: every call returns (recorded, or closed), and
    /// exactly the recorded ones are in the file.
    @Test func closeWhileThreadsLogEndsEveryCall() throws {
        for round in 0..<5 {
            let dir = Fixtures.temporaryDirectory("group-commit-close")
            defer { Fixtures.removeTree(dir) }
            let c = try makeController(storage: dir)
            try c.refresh()
            let outcomes = LogOutcomes()
            TestThreads.run(6) { worker in
                if worker == 0 {
                    usleep(UInt32(500 + round * 700))
                    c.close()
                    return
                }
                for i in 0..<200 {
                    outcomes.add("\(worker)-\(i)", Result { try c.logImpression(cardID: ["tile-1", "tile-2", "msg-1"][i % 3]) })
                }
            }
            let all = outcomes.all.values
            #expect(all.count == 5 * 200)
            for r in all {
                if case .failure(let e) = r { #expect((e as? ContentCardsError)?.code == .closed, "\(e)") }
            }
            let recorded = all.compactMap { try? $0.get() }.filter(\.recorded).count
            let again = try makeController(storage: dir)
            #expect(try again.pendingEvents() == recorded)
            again.close()
        }
    }

    /// A subscriber that logs from its callback while other threads log: no call waits for
    /// itself, every event is stored once.
    @Test func loggingFromASubscriberWhileOthersLog() throws {
        let c = try makeController()
        try c.refresh()
        let fromCallbacks = LogOutcomes()
        let counter = UpdateLog()
        let sub = try c.subscribe { update in
            guard update.reason == .impression else { return }
            // Its own number, from the add itself: counting after the add, two callbacks could
            // read the same number, and the second one's outcome replaced the first's.
            let n = counter.add(update)
            if n % 7 == 0 { fromCallbacks.add("cb-\(n)", Result { try c.logFeedDisplayed() }) }
        }
        let outcomes = LogOutcomes()
        TestThreads.run(4) { worker in
            for i in 0..<100 { outcomes.add("\(worker)-\(i)", Result { try c.logImpression(cardID: "tile-\(1 + i % 3)") }) }
        }
        sub.cancel()
        let made = outcomes.all.values.compactMap { try? $0.get() }.filter(\.recorded).count
            + fromCallbacks.all.values.compactMap { try? $0.get() }.filter(\.recorded).count
        #expect(outcomes.all.count == 400)
        #expect(try c.pendingEvents() == made)
    }
}

/// The writer's wait for the threads of the last session (LogBatch.gatherLastSession): what
/// makes calls of several threads share transactions when a transaction is shorter than a
/// wake-up. Tested on a batch of its own, with a `write` that records each batch's calls.
@Suite struct GatherTests {
    /// Each batch's call names, in order; a call named "hold" is written only once `gate` opens.
    final class Writes: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [[String]] = []
        let gate = DispatchSemaphore(value: 0)
        var all: [[String]] { lock.lock(); defer { lock.unlock() }; return items }
        func write(_ calls: [PendingLog]) -> [Result<(LogResult, UpdateState), ContentCardsError>] {
            let names = calls.map { $0.cardID ?? "" }
            lock.lock(); items.append(names); lock.unlock()
            if names.contains("hold") { gate.wait() }
            return calls.map { _ in .success((.recorded(eventID: "e", stateChanged: false), UpdateState(counts: FeedCounts(), sequence: 0))) }
        }
    }

    /// A call on a thread of its own; `as` stands in for the calling thread (nil: its own).
    static func call(_ batch: LogBatch, _ writes: Writes, _ name: String, as thread: pthread_t? = nil,
                     in group: DispatchGroup) {
        TestThreads.start(in: group) {
            _ = batch.submit(PendingLog(cardID: name, decide: nil, thread: thread ?? pthread_self()), write: writes.write)
        }
    }

    /// A session of three calls: "hold" written alone, then "b" and "c", queued behind it, in
    /// the writer's next batch; "b" and "c" made as if by `thread` (nil: each by its own).
    static func sessionOfThree(_ batch: LogBatch, _ writes: Writes, as thread: pthread_t? = nil) {
        let group = DispatchGroup()
        call(batch, writes, "hold", in: group)
        #expect(GroupCommitTests.waitUntil { batch.state.writing })
        call(batch, writes, "b", as: thread, in: group)
        #expect(GroupCommitTests.waitUntil { batch.state.queued == 1 })
        call(batch, writes, "c", as: thread, in: group)
        #expect(GroupCommitTests.waitUntil { batch.state.queued == 2 })
        writes.gate.signal()
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(writes.all.map { $0.sorted() } == [["hold"], ["b", "c"]])
    }

    /// A session of three calls (`sessionOfThree`, "b" and "c" as if by `thread`) on a batch
    /// that waits up to 30 s, then "d" alone: returned once d's writer is waiting for others.
    static func writerAfterSession(as thread: pthread_t? = nil) -> (LogBatch, Writes, DispatchGroup) {
        let batch = LogBatch(gatherWindow: 30)
        let writes = Writes()
        sessionOfThree(batch, writes, as: thread)
        let group = DispatchGroup()
        call(batch, writes, "d", in: group)
        #expect(GroupCommitTests.waitUntil { batch.state.writing && batch.state.queued == 1 })
        return (batch, writes, group)
    }

    /// After a writer wrote three threads' calls, the next writer waits for three calls
    /// before it writes (before: it wrote its own call alone, at once).
    @Test func theNextWriterWaitsForACallOfEachThread() {
        let (batch, writes, group) = Self.writerAfterSession()
        Self.call(batch, writes, "e", in: group)
        #expect(GroupCommitTests.waitUntil { batch.state.queued == 2 })
        #expect(writes.all.count == 2)   // still nothing written: it waits for a third
        Self.call(batch, writes, "f", in: group)
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(writes.all.count == 3)
        #expect(writes.all.last?.sorted() == ["d", "e", "f"])
        #expect(batch.state.gathered == 1 && batch.state.gaveUp == 0)
    }

    /// The writer waits for threads, not calls: after a session whose three calls came from
    /// two threads, the next writer writes once two calls are queued (counting calls, it
    /// would wait for a third that no thread is left to make).
    @Test func theNextWriterWaitsForThreadsNotCalls() {
        let (batch, writes, group) = Self.writerAfterSession(as: pthread_self())   // "hold"'s thread and this one
        #expect(writes.all.count == 2)
        Self.call(batch, writes, "e", in: group)
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(writes.all.last?.sorted() == ["d", "e"])
        #expect(batch.state.gathered == 1 && batch.state.gaveUp == 0)
    }

    /// A writer waits at most its window: a lone call after a session of three threads
    /// returns, written alone, after giving up (or, on a machine so slow that it came later
    /// than the window after the session, without waiting at all); the session after it (one
    /// thread) makes the next writer wait for nothing.
    @Test func aWriterWaitsNoLongerThanItsWindow() {
        let batch = LogBatch(gatherWindow: 0.2)
        let writes = Writes()
        Self.sessionOfThree(batch, writes)
        let group = DispatchGroup()
        Self.call(batch, writes, "d", in: group)
        #expect(group.wait(timeout: .now() + 10) == .success)
        let afterD = batch.state
        #expect(afterD.gathered == 0 && afterD.gaveUp + afterD.stale == 1)
        Self.call(batch, writes, "e", in: group)
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(writes.all.suffix(2) == [["d"], ["e"]])
        let afterE = batch.state
        #expect(afterE.gathered == 0 && afterE.gaveUp == afterD.gaveUp && afterE.stale == afterD.stale)
    }

    /// One thread logging: every batch holds one call, and no writer ever waits.
    @Test func aThreadLoggingAloneNeverWaits() throws {
        let c = try makeController()
        try c.refresh()
        let before = c.logBatch.state
        for i in 0..<200 { _ = try c.logImpression(cardID: "tile-\(1 + i % 3)") }
        let after = c.logBatch.state
        #expect(after.batches - before.batches == 200)
        #expect(after.gathered == before.gathered && after.gaveUp == before.gaveUp)
    }
}


/// The outcomes of log calls made on several threads, by name.
final class LogOutcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String: Result<LogResult, Error>] = [:]
    /// A key given twice is the test's own mistake (an outcome would be lost from the count),
    /// recorded as one.
    func add(_ key: String, _ r: Result<LogResult, Error>) {
        lock.lock()
        let replaced = items.updateValue(r, forKey: key) != nil
        lock.unlock()
        if replaced { Issue.record("two outcomes under the key \(key)") }
    }
    var all: [String: Result<LogResult, Error>] { lock.lock(); defer { lock.unlock() }; return items }
}
