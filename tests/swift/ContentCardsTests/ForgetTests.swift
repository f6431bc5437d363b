import Foundation
import Testing
@testable import ContentCards

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
}

/// Checkpoints of a file store run on the store's own thread (Store/Checkpointer.swift), never
/// inside a logging call: the WAL stays bounded and nothing logged is lost.
@Suite struct CheckpointerTests {
    /// A frame of the WAL: a page of a file store (4 KiB) and its 24-byte header.
    static let frameBytes = 4096 + 24

    @Test func checkpointsRunOffTheWritersThreadAndTheWALStaysBounded() throws {
        let dir = Fixtures.temporaryDirectory("checkpoint")
        defer { Fixtures.removeTree(dir) }
        let c = try ContentCardsController(json: #"{"userId":"u","storagePath":"\#(dir)","refreshTokens":0}"#)
        _ = try c.apply(Fixtures.payload((0..<50).map { Fixtures.wire("c\($0)") }, full: true, user: "u"))
        for i in 0..<4000 { _ = try c.logImpression(cardID: "c\(i % 50)") }
        let deadline = Date().addingTimeInterval(10)
        while (c.lock.withLock { c.store?.checkpointer?.runs ?? 0 }) == 0 && Date() < deadline { usleep(10_000) }
        let (runs, copied) = c.lock.withLock { (c.store?.checkpointer?.runs ?? 0, c.store?.checkpointer?.framesCopied ?? 0) }
        #expect(runs > 0)
        // A run that copies nothing is no checkpoint: SQLite answers a checkpoint asked of a
        // connection that has not read the file yet as one of a database not in WAL mode.
        #expect(copied > 0, "background checkpoints copied no frame")
        // Asked for once per 1,000 more frames, not at every commit past the mark: 4,000
        // impressions write some 4,000 frames (a run queued at every commit was about 2,500).
        #expect(runs <= 30, "\(runs) checkpoint runs")
        var st = stat()
        #expect(stat(dir + "/contentcards.sqlite-wal", &st) == 0)
        #expect(st.st_size <= (Int(Checkpointer.highWater) + 1000) * Self.frameBytes)
        c.close()
        let again = try ContentCardsController(json: #"{"userId":"u","storagePath":"\#(dir)","refreshTokens":0}"#)
        #expect(try again.pendingEvents() == 4000)
        again.close()
    }

    /// The WAL that the writer's own checkpoint (at `highWater`) lets start over is reused as it
    /// is: the size limit is above it, and no call pays for cutting the file back.
    @Test func theWALSizeLimitIsAboveItsSizeAtHighWater() throws {
        let dir = Fixtures.temporaryDirectory("checkpoint-limit")
        defer { Fixtures.removeTree(dir) }
        let store = try CardStore(directory: dir)
        defer { store.close() }
        let pageSize = Int(try store.pragmaInt("PRAGMA page_size"))
        #expect(pageSize + 24 == Self.frameBytes)
        #expect(Int(try store.pragmaInt("PRAGMA journal_size_limit")) == Checkpointer.walSizeLimit)
        #expect(Checkpointer.walSizeLimit > Int(Checkpointer.highWater) * (pageSize + 24))
    }
}
