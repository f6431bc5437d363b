import Foundation
import Testing
@testable import ContentCards

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
        for _ in 0..<3000 where log.all.isEmpty { try await Task.sleep(nanoseconds: 10_000_000) }     // up to 30 s: a bound, not a timing
        #expect(log.reasons == [.refresh])
        #expect(try c.counts().total == 10)
    }

    /// Updates made on several threads carry their state's number with their counts: unique,
    /// by number the unread count falls one card at a time (whatever order they arrived in),
    /// and the current update is numbered after them (the C and Python tests of the same name).
    @Test func updatesAreNumberedInTheOrderOfTheirStates() throws {
        let threads = 4, cards = 8
        let c = try ContentCardsController(json: #"{"userId":"u","refreshTokens":0}"#)
        defer { c.close() }
        try c.apply(Fixtures.payload((0..<threads * cards).map { Fixtures.wire("c\($0)") }, full: true))
        let log = UpdateLog()
        let sub = try c.subscribe { log.add($0) }
        TestThreads.run(threads) { t in
            for i in t * cards..<(t + 1) * cards { _ = try? c.markRead(cardID: "c\(i)") }
        }
        sub.cancel()
        let numbers = log.all.map(\.sequence)
        #expect(numbers.count == threads * cards && Set(numbers).count == numbers.count && numbers.min() ?? 0 >= 1)
        let byNumber = log.all.sorted { $0.sequence < $1.sequence }
        #expect(byNumber.map(\.counts.unread) == Array((0..<threads * cards).reversed()))
        let current = try c.currentUpdate()
        #expect(current.reason == .current && current.counts == FeedCounts(total: 32, unviewed: 32, unread: 0))
        #expect(current.sequence > numbers.max() ?? 0)
    }

    /// An update heard between the stream's subscription and its current update follows the
    /// current update. Before, the current update was taken first and the subscription made
    /// after it: a change between the two reached the stream in neither.
    @Test func anUpdateHeardBeforeTheCurrentOneFollowsIt() async throws {
        var continuation: AsyncStream<FeedUpdate>.Continuation!
        let stream = AsyncStream<FeedUpdate> { continuation = $0 }
        let start = StreamStart(continuation)
        start.deliver(FeedUpdate(reason: .impression, counts: FeedCounts(total: 1, unviewed: 0, unread: 1), sequence: 2))
        start.begin(with: FeedUpdate(reason: .current, counts: FeedCounts(total: 1, unviewed: 1, unread: 1), sequence: 1))
        start.deliver(FeedUpdate(reason: .click, counts: FeedCounts(total: 1, unviewed: 0, unread: 1), sequence: 3))
        continuation.finish()
        var seen: [UInt64] = []
        for await update in stream { seen.append(update.sequence) }
        #expect(seen == [1, 2, 3])
    }
}
