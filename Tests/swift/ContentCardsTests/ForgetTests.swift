import Foundation
import Testing
@testable import ContentCards
import CSQLite

/// Forgetting and exporting a user (docs/BEHAVIOUR.md, "Forgetting and exporting a user"): the
/// export holds every part of the user's state, and after `forgetUser` no byte of the user's
/// ids or titles is left in any file under the storage path, while other users' data stays.
@Suite struct ForgetTests {
    static let secret = "SWIFT-FORGET-TITLE-91c2"

    func open(_ dir: String, user: String) throws -> ContentCardsController {
        try ContentCardsController(json: #"{"userId":"\#(user)","storagePath":"\#(dir)","refreshTokens":0}"#)
    }

    /// Occurrences of `needle` in the regular files under `dir`.
    func occurrences(of needle: String, under dir: String) -> Int {
        guard let walker = FileManager.default.enumerator(atPath: dir) else { return 0 }
        var found = 0
        let pattern = Data(needle.utf8)
        for case let name as String in walker {
            guard let data = FileManager.default.contents(atPath: dir + "/" + name) else { continue }
            var start = data.startIndex
            while let r = data.range(of: pattern, in: start..<data.endIndex) { found += 1; start = r.upperBound }
        }
        return found
    }

    @Test func exportHoldsEveryPartAndForgetLeavesNoBytes() throws {
        let dir = Fixtures.temporaryDirectory("forget")
        defer { Fixtures.removeTree(dir) }
        let c = try open(dir, user: "erin")
        _ = try c.apply(Fixtures.payload([
            Fixtures.wire("erin-card-1", extra: #""tt":"\#(Self.secret)""#),
            Fixtures.wire("erin-card-2", extra: #""db":true"#),
        ], full: true, user: "erin", lastFull: 1_763_700_000, lastUpdated: 1_763_700_000))
        _ = try c.logImpression(cardID: "erin-card-1")
        _ = try c.logDismissal(cardID: "erin-card-2")
        try c.changeUser("frank")
        _ = try c.apply(Fixtures.payload([Fixtures.wire("frank-card")], full: true, user: "frank"))
        try c.changeUser("erin")

        let doc = try JSONReader.parse(Array(try c.exportUser().utf8))
        #expect(doc["format"] == .number("1"))
        #expect(doc["user_id"] == .string("erin"))
        guard case .array(let cards)? = doc["cards"], case .array(let events)? = doc["pending_events"] else {
            Issue.record("no cards or events"); return
        }
        #expect(cards.count == 2)
        #expect(events.count == 2)
        #expect(doc["dismissed"] == .array([.string("erin-card-2")]))
        #expect(doc["sync"]?["last_full_sync_at"] == .number("1763700000"))
        // The same state exported twice: the same bytes but for the time.
        #expect(try c.exportUser("frank").contains("frank-card"))

        #expect(occurrences(of: Self.secret, under: dir) > 0)
        let receipt = try c.forgetUser(pending: .discard)
        #expect(receipt.cards == 2 && receipt.dismissals == 1 && receipt.eventsDiscarded == 2)
        #expect(receipt.syncState && receipt.walTruncated)
        #expect(try c.cards().isEmpty)
        #expect(occurrences(of: Self.secret, under: dir) == 0)
        #expect(occurrences(of: "erin-card-1", under: dir) == 0)
        #expect(occurrences(of: "frank-card", under: dir) > 0)
        c.close()
        let again = try open(dir, user: "frank")
        #expect(try again.cards().map(\.id) == ["frank-card"])
        again.close()
    }

    /// Forgetting with `flush` delivers the user's own events: another user's that cannot be
    /// delivered (here refused by the sink with 503, as when a provider has no token for a user
    /// who logged out) no longer keep the user from being forgotten.
    @Test func flushDeliversTheUsersOwnEventsOnly() throws {
        let c = try ContentCardsController(
            json: #"{"userId":"ben","refreshTokens":0,"source":{"callback":true},"events":{"callback":true},"eventFlushIntervalSeconds":3600}"#,
            transport: ClosureTransport { r in
                if r.kind == .events, String(decoding: r.body, as: UTF8.self).contains(#""user_id":"ben""#) {
                    return .success(TransportResponse(status: 503, body: []))
                }
                return .success(TransportResponse(status: 200, body: Array(#"{"cards":[],"full_sync":true}"#.utf8)))
            })
        defer { c.close() }
        for user in ["ben", "ann"] {
            if user != "ben" { try c.changeUser(user) }
            _ = try c.apply(Fixtures.payload([Fixtures.wire("card-1")], full: true, user: user))
            _ = try c.logImpression(cardID: "card-1")
        }
        let receipt = try c.forgetUser(pending: .flush, timeout: 5)
        #expect(receipt.eventsDelivered == 1)
        #expect(receipt.cards == 1)
        #expect(try c.pendingEvents() == 1)      // ben's, still waiting
    }

    /// A forget whose rewrite of the store fails after the rows were deleted (here another
    /// connection takes the write lock the moment the delete commits, and holds it past the
    /// busy timeout) is still a forget: the receipt comes back, the user has nothing stored.
    /// It threw before, with the rows gone, and the controller took it for an erase that had
    /// not happened (a refresh in flight merged the cards back, the token and images stayed).
    @Test func aForgetWhoseRewriteFailsStillForgets() throws {
        let dir = Fixtures.temporaryDirectory("forget-vacuum")
        defer { Fixtures.removeTree(dir) }
        let c = try open(dir, user: "erin")
        defer { c.close() }
        _ = try c.apply(Fixtures.payload([Fixtures.wire("erin-card-1")], full: true, user: "erin"))
        let writer = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        defer { writer.close() }
        ForgetTests.writer = writer
        let store = try openStore(c)
        // After the next commit of the store's connection (the erase's delete), with its write
        // lock released: the writer takes it, and gives it back 6 s later.
        sqlite3_wal_hook(store.db.handle, { _, _, _, _ in
            guard let writer = ForgetTests.writer else { return SQLITE_OK }
            ForgetTests.writer = nil
            try? writer.execute("BEGIN IMMEDIATE")
            Thread.detachNewThread {
                sleep(6)
                try? writer.execute("ROLLBACK")
                ForgetTests.released.signal()
            }
            return SQLITE_OK
        }, nil)
        let receipt = try c.forgetUser(pending: .discard)
        ForgetTests.released.wait()
        #expect(receipt.cards == 1)
        #expect(try c.cards().isEmpty)
    }
    nonisolated(unsafe) static var writer: SQLiteDatabase?
    static let released = DispatchSemaphore(value: 0)

    @Test func flushWithoutASinkRemovesNothing() throws {
        let c = try ContentCardsController(json: #"{"userId":"u","refreshTokens":0}"#)
        _ = try c.apply(Fixtures.payload([Fixtures.wire("c1")], full: true, user: "u"))
        _ = try c.logImpression(cardID: "c1")
        do { try c.forgetUser(); Issue.record("forgot") } catch {
            #expect(error.code == .noSource && error.message.contains("nothing was removed"))
        }
        #expect(try c.cards().count == 1)
        #expect(try c.pendingEvents() == 1)
        try c.forgetUser(pending: .discard)
        #expect(try c.cards().isEmpty)
        #expect(try c.pendingEvents() == 0)
    }

    /// A store where "u" holds two cards synced at cursors 100, and `transport`'s controller
    /// opened on it beside `a` (which applied them).
    func twoControllers(_ dir: String, transport: @escaping @Sendable (ContentCardsController, TransportRequest)
                            -> Result<TransportResponse, ContentCardsError>) throws -> (a: ContentCardsController, b: ContentCardsController) {
        let a = try open(dir, user: "u")
        _ = try a.apply(Fixtures.payload([Fixtures.wire("c1"), Fixtures.wire("c2")], full: true, user: "u",
                                         lastFull: 100, lastUpdated: 100))
        let b = try hostController(dir, transport: ClosureTransport { transport(a, $0) })
        return (a, b)
    }

    func hostController(_ dir: String, transport: ClosureTransport) throws -> ContentCardsController {
        try ContentCardsController(
            json: #"{"userId":"u","storagePath":"\#(dir)","refreshTokens":0,"source":{"callback":true}}"#,
            transport: transport)
    }

    /// A second controller on the same store, which loaded the user's cursors before another
    /// forgot the user: its refresh asks from the store's cursors (none now), so the server's
    /// full sync comes back. It asked from its own memory before, got a delta, and merged it
    /// onto nothing: the feed held the delta's one card, with the old cursors, until the
    /// server chose to send a full sync.
    @Test func aRefreshAfterAnotherControllerForgotAsksForAFullSync() throws {
        let dir = Fixtures.temporaryDirectory("forget-other")
        defer { Fixtures.removeTree(dir) }
        let (a, b) = try twoControllers(dir) { _, r in Self.deltaUnlessAskedFromNothing.send(r) }
        defer { a.close(); b.close() }
        #expect(try b.cards().count == 2)
        _ = try a.forgetUser(pending: .discard)
        let summary = try b.refresh(timeout: 5)
        #expect(summary.fullSync)
        #expect(try b.cards().map(\.id).sorted() == ["c1", "c2", "c3"])
    }

    /// A forget by another controller while a refresh is out (here from inside the refresh's
    /// own transport call): the answer, a delta asked from the forgotten cursors, is discarded
    /// and nothing of the user is stored again. Before, the delta was merged onto the erased
    /// user, with new cursors.
    @Test func aRefreshCrossingAnotherControllersForgetIsDiscarded() throws {
        let dir = Fixtures.temporaryDirectory("forget-crossing")
        defer { Fixtures.removeTree(dir) }
        let (a, b) = try twoControllers(dir) { a, r in
            _ = try? a.forgetUser(pending: .discard)
            return Self.deltaUnlessAskedFromNothing.send(r)
        }
        defer { a.close(); b.close() }
        #expect(throws: ContentCardsError.self) { try b.refresh(timeout: 5) }
        #expect(try b.cards().isEmpty)
        // No cursors were stored: the next refresh, from a third controller, asks from none.
        let c = try hostController(dir, transport: Self.deltaUnlessAskedFromNothing)
        defer { c.close() }
        #expect(try c.cards().isEmpty)
        #expect(try c.refresh(timeout: 5).fullSync)
    }

    /// A delivery of the user's events running when the user is forgotten with `discard`: the
    /// forget waits for it, and the receipt counts the events as delivered, not discarded.
    /// It erased them at once and said so, and the delivery then sent them to the server
    /// after the forget had returned.
    @Test func aForgetWaitsForTheDeliveryRunning() throws {
        let held = try Self.deliveryHeld()
        defer { held.controller.close() }
        // The gate opens shortly after the forget has begun to wait for the delivery (opened
        // before it, the delivery ends first and the receipt is the same: the test cannot
        // fail by a slow start, only pass without the wait in it).
        TestThreads.start(in: held.threads) { usleep(300_000); held.gate.signal() }
        let receipt = try held.controller.forgetUser(pending: .discard, timeout: 10)
        #expect(receipt.eventsDiscarded == 0)
        #expect(held.controller.diagnostics().deliveredEvents == 1)
    }

    /// Another user's batch out (its sink slow) when a user is forgotten: not waited for. A
    /// forget waited for any delivery (a drain of the whole outbox, another user's slow
    /// sink) and failed with `timeout`, nothing removed.
    @Test func aForgetDoesNotWaitForAnotherUsersDelivery() throws {
        let held = try Self.deliveryHeld()
        defer { held.controller.close() }
        defer { held.gate.signal() }
        let receipt = try held.controller.forgetUser("ann", pending: .discard, timeout: 2)
        #expect(receipt.userID == "ann")
    }

    /// A controller of user "ben" with one impression pending, its delivery started on a
    /// thread of its own (not libdispatch's pool, which may start it seconds later on a busy
    /// machine: `TestThreads`) and held in the events request until `gate` is signalled.
    static func deliveryHeld() throws -> (controller: ContentCardsController, gate: DispatchSemaphore, threads: DispatchGroup) {
        let started = DispatchSemaphore(value: 0), gate = DispatchSemaphore(value: 0)
        let c = try ContentCardsController(
            json: #"{"userId":"ben","refreshTokens":0,"source":{"callback":true},"events":{"callback":true},"eventFlushIntervalSeconds":3600}"#,
            transport: ClosureTransport { r in
                if r.kind == .events {
                    started.signal()
                    _ = gate.wait(timeout: .now() + 20)
                }
                return .success(TransportResponse(status: 200, body: Array(#"{"cards":[],"full_sync":true}"#.utf8)))
            })
        _ = try c.apply(Fixtures.payload([Fixtures.wire("card-1")], full: true, user: "ben"))
        _ = try c.logImpression(cardID: "card-1")
        let threads = DispatchGroup()
        TestThreads.start(in: threads) { _ = try? c.flushEvents(timeout: 20) }
        #expect(started.wait(timeout: .now() + 10) == .success)
        return (c, gate, threads)
    }

    /// A server that answers a request from no cursors with a full sync of three cards, and
    /// any other with a delta of the third card.
    static let deltaUnlessAskedFromNothing = ClosureTransport { r in
        let asked = String(decoding: r.body, as: UTF8.self)
        let body = asked.contains(#""last_full_sync_at":0"#)
            ? Fixtures.payload(["c1", "c2", "c3"].map { Fixtures.wire($0) }, full: true, user: "u", lastFull: 200, lastUpdated: 200)
            : Fixtures.payload([Fixtures.wire("c3")], user: "u", lastFull: 200, lastUpdated: 200)
        return .success(TransportResponse(status: 200, body: Array(body.utf8)))
    }
}
