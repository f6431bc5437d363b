import Foundation
import Testing
@testable import ContentCards

/// A controller on the sample feed with a manual clock at the sample's time.
func makeController(_ extra: String = "", clock: ManualClock = ManualClock(1_763_800_000),
                    storage: String? = nil, user: String = "u-1") throws(ContentCardsError) -> ContentCardsController {
    var json = #"{"userId":"\#(user)","source":{"file":"\#(Fixtures.sampleFeedPath)"},"refreshTokens":0"#
    if let storage { json += #","storagePath":"\#(storage)""# }
    if !extra.isEmpty { json += "," + extra }
    json += "}"
    return try ContentCardsController(json: json, clock: clock, eventIDs: SequentialEventIDs())
}

/// Collects subscriber updates from any thread.
final class UpdateLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [FeedUpdate] = []
    func add(_ u: FeedUpdate) { lock.lock(); items.append(u); lock.unlock() }
    var all: [FeedUpdate] { lock.lock(); defer { lock.unlock() }; return items }
    var reasons: [FeedUpdate.Reason] { all.map(\.reason) }
}

@Suite struct FeedTests {
    @Test func refreshFromTheSampleFeed() throws {
        let c = try makeController()
        let summary = try c.refresh()
        #expect(summary.added == 11 && summary.fullSync)
        #expect(summary.leftOut.count == 3)
        #expect(try c.cards().map(\.id) == ["tile-2", "banner-noclass", "test-1", "coupon-control", "coupon-1",
                                            "msg-3", "msg-2", "msg-1", "tile-3", "tile-1"])
        #expect(try c.counts() == FeedCounts(total: 10, unviewed: 9, unread: 9))
    }

    /// `cardsJSON` is written straight from the published cards, not from `cards()`:
    /// the two must agree for every filter, after dismissals, expiry and read state too.
    @Test func cardsJSONIsTheCardsAsJSON() throws {
        let clock = ManualClock(1_763_800_000)
        let c = try makeController(clock: clock)
        #expect(try c.cardsJSON() == "[]")
        try c.refresh()
        let filters = [ClassTypeFilter.all, ClassTypeFilter(["home_tile"]), ClassTypeFilter(["coupon_code", "message_webview"]),
                       ClassTypeFilter(["no_such_type"])]
        func check() throws {
            for filter in filters {
                let json = try c.cardsJSON(filter)
                #expect(json == CardJSON.encode(try c.cards(filter)))
                #expect(try CardJSON.decodeList(json) == (try c.cards(filter)))
            }
        }
        try check()
        _ = try c.logDismissal(cardID: "tile-2")
        _ = try c.logImpression(cardID: "msg-1")
        try c.apply("[\(Fixtures.wire("soon", created: 2_000_000_000, extra: #""ea":1763800010"#))]")
        #expect(try c.cards().first?.id == "soon")
        try check()
        clock.set(1_763_800_010)
        #expect(try !c.cards().contains { $0.id == "soon" || $0.id == "tile-2" })
        try check()
    }

    @Test func orderIsPinnedThenNewestThenIdDescending() throws {
        let c = try makeController()
        try c.apply(Fixtures.payload([Fixtures.wire("a", created: 5), Fixtures.wire("b", created: 5),
                                      Fixtures.wire("c", created: 9), Fixtures.wire("p", created: 1, extra: #""p":true"#)]))
        #expect(try c.cards().map(\.id) == ["p", "c", "b", "a"])
    }

    @Test func expiryIsDecidedAtReadTime() throws {
        let clock = ManualClock(1000)
        let c = try makeController(clock: clock)
        try c.apply("[\(Fixtures.wire("soon", created: 1, extra: #""ea":1010"#)),\(Fixtures.wire("never", created: 1))]")
        #expect(try c.cards().map(\.id) == ["soon", "never"])
        clock.set(1010)
        #expect(try c.cards().map(\.id) == ["never"])
        #expect(try c.counts().total == 1)
        // Still stored: readable by id.
        #expect(try c.card(id: "soon").id == "soon")
    }

    @Test func countsWithControlAndDismissedCards() throws {
        let c = try makeController()
        try c.apply("[\(Fixtures.wire("k", type: "control")),\(Fixtures.wire("a", extra: #""db":true"#)),\(Fixtures.wire("b"))]")
        #expect(try c.counts() == FeedCounts(total: 3, unviewed: 2, unread: 2))
        try c.logDismissal(cardID: "a")
        #expect(try c.counts() == FeedCounts(total: 2, unviewed: 1, unread: 1))
        try c.logImpression(cardID: "b")
        try c.logImpression(cardID: "b")
        #expect(try c.counts() == FeedCounts(total: 2, unviewed: 0, unread: 1))
        try c.logImpression(cardID: "k")
        #expect(try c.counts() == FeedCounts(total: 2, unviewed: 0, unread: 1))
    }

    @Test func countsAndFeedPerClassType() throws {
        let c = try makeController()
        try c.refresh()
        #expect(try c.counts(ClassTypeFilter(["coupon_code"])) == FeedCounts(total: 2, unviewed: 1, unread: 1))
        #expect(try c.counts(ClassTypeFilter(["home_tile"])) == FeedCounts(total: 3, unviewed: 3, unread: 3))
        #expect(try c.cards(ClassTypeFilter([""])).map(\.id) == ["banner-noclass", "test-1"])
        #expect(try c.cards(ClassTypeFilter(["MESSAGE_WEBVIEW"])).map(\.id) == ["msg-3", "msg-2"])
    }
}

@Suite struct LoggingTests {
    @Test func impressionMarksViewedOnceAndRecordsEveryEvent() throws {
        let c = try makeController()
        try c.refresh()
        let first = try c.logImpression(cardID: "tile-1")
        let second = try c.logImpression(cardID: "tile-1")
        #expect(first.stateChanged && !second.stateChanged)
        #expect(first.eventID != second.eventID)
        #expect(try c.card(id: "tile-1").viewed)
        #expect(try c.pendingEvents() == 2)
        #expect(try c.unviewedCount() == 8)
    }

    @Test func controlImpressionIsItsOwnEventType() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(#""events":{"file":"\#(dir)/events.jsonl"},"eventFlushIntervalSeconds":0"#)
        try c.refresh()
        try c.logImpression(cardID: "coupon-control")
        try c.flushEvents()
        let line = String(decoding: try Files.read(dir + "/events.jsonl", limit: 1 << 20), as: UTF8.self)
        #expect(line.contains(#""type":"control_impression","card_id":"coupon-control","class_type":"coupon_code","user_id":"u-1""#))
    }

    @Test func clickNeedsAValidURL() throws {
        let c = try makeController()
        try c.refresh()
        #expect(try c.logClick(cardID: "coupon-1").stateChanged)
        #expect(try c.card(id: "coupon-1").clicked)
        // A refusal is a result, not an error: the same fields as Python's.
        let noURL = try c.logClick(cardID: "msg-2")
        #expect(!noURL.recorded && noURL.eventID == nil && !noURL.stateChanged)
        #expect(noURL.reason?.contains("has no url") == true)
        try c.apply("[\(Fixtures.wire("js", extra: #""u":"javascript:alert(1)""#))]")
        let js = try c.logClick(cardID: "js")
        #expect(!js.recorded && js.reason?.contains("no valid url") == true)
        #expect(try c.pendingEvents() == 1)
        #expect(try !c.card(id: "msg-2").clicked)
    }

    @Test func dismissalRules() throws {
        let c = try makeController()
        try c.refresh()
        #expect(try c.logDismissal(cardID: "msg-1").reason?.contains("not dismissible") == true)
        let first = try c.logDismissal(cardID: "tile-1")
        #expect(first.recorded && first.stateChanged && first.reason == nil && first.eventID != nil)
        #expect(try !c.cards().map(\.id).contains("tile-1"))
        let again = try c.logDismissal(cardID: "tile-1")
        #expect(!again.recorded && again.reason?.contains("already dismissed") == true)
        do { try c.logDismissal(cardID: "nope"); Issue.record("an unknown card is an error") } catch {
            #expect(error.code == .notFound)
        }
        #expect(try c.pendingEvents() == 1)
        // Stays out after a refresh that lists it as not dismissed.
        try c.refresh()
        #expect(try !c.cards().map(\.id).contains("tile-1"))
    }

    @Test func unknownCardIdIsAnErrorAndRecordsNothing() throws {
        let c = try makeController()
        try c.refresh()
        for log in [c.logImpression, c.logClick, c.logDismissal] {
            do { _ = try log("nope"); Issue.record("logged an unknown card") } catch {
                #expect(error.code == .notFound && error.message.contains("\"nope\""))
            }
        }
        #expect(throws: ContentCardsError.self) { try c.card(id: "nope") }
        #expect(try c.pendingEvents() == 0)
    }

    @Test func feedDisplayedIsRecorded() throws {
        let c = try makeController()
        let r = try c.logFeedDisplayed()
        #expect(r.eventID == "event-1" && !r.stateChanged)
        #expect(try c.pendingEvents() == 1)
    }

    @Test func stickyFlagsSurviveARefresh() throws {
        let c = try makeController()
        try c.refresh()
        try c.logImpression(cardID: "tile-1")
        try c.logClick(cardID: "tile-1")
        try c.refresh()
        let card = try c.card(id: "tile-1")
        #expect(card.viewed && card.clicked)
    }
}

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

@Suite struct SubscriptionTests {
    @Test func subscribersAreToldWithReasons() throws {
        let c = try makeController()
        let log = UpdateLog()
        try c.subscribe { log.add($0) }
        try c.refresh()
        try c.logImpression(cardID: "tile-1")
        try c.logClick(cardID: "tile-1")
        try c.logDismissal(cardID: "tile-1")
        try c.apply("[\(Fixtures.wire("x"))]")
        try c.changeUser("other")
        _ = try? c.apply("{")
        #expect(log.reasons == [.refresh, .impression, .click, .dismissal, .cardsApplied, .userChanged, .cardsApplied])
        #expect(log.all[0].counts == FeedCounts(total: 10, unviewed: 9, unread: 9))
        #expect(log.all[1].cardID == "tile-1" && log.all[1].counts.unviewed == 8)
        #expect(log.all[3].counts.total == 9)
        #expect(log.all.last?.error?.code == .parse)
    }

    @Test func aFailedRefreshIsToldToo() throws {
        let c = try ContentCardsController(json: #"{"source":{"file":"/nonexistent/feed.json"}}"#)
        let log = UpdateLog()
        try c.subscribe { log.add($0) }
        _ = try? c.refresh()
        #expect(log.all.count == 1 && log.all[0].reason == .refresh && log.all[0].error?.code == .sourceFile)
    }

    @Test func unsubscribeIsImmediateAndOnRemoveRunsOnce() throws {
        let c = try makeController()
        let log = UpdateLog()
        let removed = UpdateLog()
        let sub = try c.subscribe({ log.add($0) }, onRemove: { removed.add(FeedUpdate(reason: .refresh, counts: FeedCounts())) })
        try c.refresh()
        #expect(sub.cancel())
        #expect(!sub.cancel())
        try c.logImpression(cardID: "tile-1")
        #expect(log.all.count == 1)
        #expect(removed.all.count == 1)
    }

    @Test func aSubscriberMayCallBackIntoTheController() throws {
        let c = try makeController()
        let seen = UpdateLog()
        try c.subscribe { update in
            // Reads, logging and unsubscribing from inside a callback must not deadlock.
            if update.reason == .refresh, let first = try? c.cards().first {
                _ = try? c.logImpression(cardID: first.id)
            }
            seen.add(update)
        }
        try c.refresh()
        // The impression's update is not delivered on the callback's stack: it waits until the
        // callback returns, then comes on the same thread.
        #expect(seen.reasons == [.refresh, .impression])
        #expect(try c.card(id: "tile-2").viewed)
    }

    @Test func unsubscribeFromInsideTheCallback() throws {
        let c = try makeController()
        let log = UpdateLog()
        final class Box: @unchecked Sendable { var sub: Subscription? }
        let box = Box()
        box.sub = try c.subscribe { update in
            log.add(update)
            box.sub?.cancel()
        }
        try c.refresh()
        try c.refresh()
        #expect(log.all.count == 1)
    }

    @Test func closeRemovesSubscribers() throws {
        let c = try makeController()
        let removed = UpdateLog()
        try c.subscribe({ _ in }, onRemove: { removed.add(FeedUpdate(reason: .refresh, counts: FeedCounts())) })
        c.close()
        c.close()
        #expect(removed.all.count == 1)
        let late = UpdateLog()
        #expect(throws: ContentCardsError.self) {
            try c.subscribe({ _ in }, onRemove: { late.add(FeedUpdate(reason: .refresh, counts: FeedCounts())) })
        }
        #expect(late.all.count == 1)
    }

    @Test func backgroundRefreshReachesSubscribers() async throws {
        let c = try makeController()
        let log = UpdateLog()
        try c.subscribe { log.add($0) }
        #expect(try c.refreshInBackground())
        for _ in 0..<200 where log.all.isEmpty { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(log.reasons == [.refresh])
        #expect(try c.counts().total == 10)
    }
}

extension FeedUpdate {
    init(reason: Reason, counts: FeedCounts) {
        self.init(reason: reason, error: nil, cardID: nil, counts: counts, sync: nil)
    }
}
