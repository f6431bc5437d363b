import Foundation
import Testing
@testable import ContentCards

@Suite struct ControllerStateTests {
    @Test func refreshFailureKeepsTheCache() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let feed = dir + "/feed.json"
        try Fixtures.payload([Fixtures.wire("a"), Fixtures.wire("b")]).write(toFile: feed, atomically: true, encoding: .utf8)
        let c = try ContentCardsController(json: #"{"source":{"file":"\#(feed)"},"refreshTokens":0}"#)
        try c.refresh()
        try #"{"cards":[{"id":"a""#.write(toFile: feed, atomically: true, encoding: .utf8)
        do { try c.refresh(); Issue.record("refreshed from garbage") } catch {
            #expect(error.code == .parse)
            #expect(error.message.contains("truncated"))
        }
        try FileManager.default.removeItem(atPath: feed)
        do { try c.refresh(); Issue.record("refreshed from nothing") } catch {
            #expect(error.code == .sourceFile)   // a local problem, not the network
        }
        #expect(try c.cards().map(\.id) == ["b", "a"])
        let d = c.diagnostics()
        #expect(d.lastRefresh?.error?.code == .sourceFile)
    }

    @Test func noSourceIsReported() throws {
        let c = try ContentCardsController(configuration: Configuration())
        do { try c.refresh(); Issue.record("refreshed") } catch { #expect(error.code == .noSource) }
    }

    @Test func rateLimitWithAnInjectedClock() throws {
        let clock = ManualClock(1_763_800_000)
        let c = try ContentCardsController(json: #"{"source":{"file":"\#(Fixtures.sampleFeedPath)"},"refreshTokens":2,"refreshIntervalSeconds":60}"#, clock: clock)
        try c.refresh()
        try c.refresh()
        do { try c.refresh(); Issue.record("third refresh allowed") } catch {
            #expect(error.code == .rateLimited)
            #expect(error.retryAfter == 60)
        }
        #expect(try c.counts().total == 10)     // the cache stays readable
        #expect(c.diagnostics().rateLimit.tokens == 0)
        clock.advance(59)
        #expect(throws: ContentCardsError.self) { try c.refresh() }
        clock.advance(1)
        #expect(throws: Never.self) { try c.refresh() }
        clock.advance(600)
        #expect(c.diagnostics().rateLimit.tokens == 2)
    }

    @Test func handedInPayloadForAnotherUserIsDiscarded() throws {
        let c = try makeController()
        do { try c.apply(Fixtures.payload([Fixtures.wire("a")], user: "someone-else")); Issue.record("applied") } catch {
            #expect(error.code == .wrongUser)
        }
        #expect(try c.counts().total == 0)
        try c.apply(Fixtures.payload([Fixtures.wire("a")], user: "u-1"))
        #expect(try c.counts().total == 1)
    }

    @Test func changingUserSwapsStateAndKeepsBoth() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(storage: dir, user: "alice")
        try c.refresh()
        try c.logImpression(cardID: "tile-1")
        try c.changeUser("bob")
        #expect(c.currentUserID == "bob")
        #expect(try c.counts().total == 0)
        try c.apply("[\(Fixtures.wire("bob-card"))]")
        try c.changeUser("alice")
        #expect(try c.counts() == FeedCounts(total: 10, unviewed: 8, unread: 9))
        #expect(try c.card(id: "tile-1").viewed)
        c.close()
        let again = try makeController(storage: dir, user: "bob")
        #expect(try again.cards().map(\.id) == ["bob-card"])
        #expect(try again.pendingEvents() == 1)
    }

    /// An in-memory store keeps only events in SQLite; the other users' cards, dismissals and
    /// cursors are kept by the controller, and come back as they were.
    @Test func changingUserKeepsBothInMemory() throws {
        let c = try makeController(user: "alice")
        try c.refresh()
        try c.logImpression(cardID: "tile-1")
        try c.logDismissal(cardID: "tile-2")
        try c.changeUser("bob")
        #expect(try c.counts().total == 0)
        try c.apply(Fixtures.payload([Fixtures.wire("bob-card")], lastFull: 42))
        try c.changeUser("alice")
        #expect(try c.counts() == FeedCounts(total: 9, unviewed: 7, unread: 8))
        #expect(try c.card(id: "tile-1").viewed && c.card(id: "tile-2").dismissed)
        try c.changeUser("bob")
        #expect(try c.cards().map(\.id) == ["bob-card"])
        #expect(c.diagnostics().unreadableStoredCards == 0)
        #expect(try c.pendingEvents() == 2)
    }

    @Test func stateSurvivesReopening() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        do {
            let c = try makeController(storage: dir)
            try c.refresh()
            try c.logDismissal(cardID: "tile-1")
            try c.logClick(cardID: "coupon-1")
            c.close()
        }
        let c = try makeController(storage: dir)
        #expect(try c.counts().total == 9)
        #expect(try c.card(id: "coupon-1").clicked)
        #expect(try c.pendingEvents() == 2)
        // The dismissal still holds after the next full sync.
        try c.refresh()
        #expect(try !c.cards().map(\.id).contains("tile-1"))
    }

    @Test func storagePermissions() throws {
        let parent = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(parent) }
        let dir = parent + "/nested/store"
        let c = try makeController(storage: dir)
        try c.refresh()
        let dirMode = try FileManager.default.attributesOfItem(atPath: dir)[.posixPermissions] as? Int
        let fileMode = try FileManager.default.attributesOfItem(atPath: dir + "/contentcards.sqlite")[.posixPermissions] as? Int
        #expect(dirMode == 0o700)
        #expect(fileMode == 0o600)
    }

    @Test func aCorruptStoreIsAnErrorAndIsLeftAlone() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let garbage = String(repeating: "this is not a database ", count: 200)
        try garbage.write(toFile: dir + "/contentcards.sqlite", atomically: true, encoding: .utf8)
        do { _ = try makeController(storage: dir); Issue.record("opened a corrupt store") } catch {
            #expect(error.code == .storage)
            #expect(error.message.contains("corrupt") || error.message.contains("not a database"), "\(error.message)")
        }
        #expect(try String(contentsOfFile: dir + "/contentcards.sqlite", encoding: .utf8) == garbage)
    }

    @Test func aStoreFromANewerSchemaIsAnError() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        do {
            let c = try makeController(storage: dir)
            try c.refresh()
            c.close()
        }
        let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        try db.execute("PRAGMA user_version = 7")
        db.close()
        do { _ = try makeController(storage: dir); Issue.record("opened a newer store") } catch {
            #expect(error.code == .storage && error.message.contains("schema version 7"))
        }
    }

    @Test func closedControllerRefusesEverything() throws {
        let c = try makeController()
        try c.refresh()
        c.close()
        c.close()
        #expect(c.isClosed)
        #expect(throws: ContentCardsError(.closed, "the controller is closed")) { try c.cards() }
        #expect(throws: ContentCardsError.self) { try c.logImpression(cardID: "tile-1") }
        #expect(throws: ContentCardsError.self) { try c.refresh() }
        #expect(throws: ContentCardsError.self) { try c.changeUser("x") }
        #expect(c.diagnostics().closed)
    }

    @Test func twoControllersOnOneStoreSeeEachOthersChanges() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let a = try makeController(storage: dir)
        let b = try makeController(storage: dir)
        try a.refresh()
        #expect(try b.counts().total == 10)
        try b.logImpression(cardID: "tile-1")
        #expect(try a.card(id: "tile-1").viewed)
    }

    @Test func diagnosticsReportLeftOutCards() throws {
        let c = try makeController()
        try c.refresh()
        let d = c.diagnostics()
        #expect(d.leftOut.count == 3)
        #expect(d.lastRefresh?.error == nil && d.lastRefresh?.summary?.added == 11)
        #expect(d.counts == FeedCounts(total: 10, unviewed: 9, unread: 9))
        #expect(d.userID == "u-1")
    }
}
