import Foundation
import Testing
@testable import ContentCards

/// Many threads refreshing, reading, logging and subscribing at once, on one controller and on
/// several sharing a store. Run under ThreadSanitizer by `make tsan`.
@Suite struct ConcurrencyTests {
    @Test func manyThreadsMixingEveryCall() throws {
        let dir = Fixtures.temporaryDirectory("concurrency")
        defer { Fixtures.removeTree(dir) }
        let shared = try makeController(storage: dir)
        let other = try makeController(storage: dir)
        try shared.refresh()
        let updates = UpdateLog()
        let errors = UpdateLog()
        try shared.subscribe { updates.add($0) }
        let ids = ["tile-1", "tile-2", "tile-3", "msg-1", "msg-2", "msg-3", "coupon-1", "coupon-control"]
        TestThreads.run(8) { worker in
            for round in 0..<60 {
                let c = (worker + round) % 3 == 0 ? other : shared
                let id = ids[(worker + round) % ids.count]
                do {
                    switch (worker * 7 + round) % 9 {
                    case 0: try c.refresh()
                    case 1: try c.refreshInBackground()
                    case 2: _ = try c.cards(ClassTypeFilter(["home_tile"]))
                    case 3: _ = try c.counts()
                    case 4: try c.logImpression(cardID: id)
                    case 5: _ = try? c.logClick(cardID: id)
                    case 6: _ = try? c.logDismissal(cardID: id)
                    case 7:
                        let s = try c.subscribe { _ in }
                        s.cancel()
                    default:
                        _ = c.diagnostics()
                        try c.logFeedDisplayed()
                    }
                } catch {
                    errors.add(FeedUpdate(reason: .refresh, error: error as? ContentCardsError, cardID: nil, counts: FeedCounts(), sync: nil))
                }
            }
        }
        #expect(errors.all.isEmpty, "\(errors.all.compactMap(\.error?.message).prefix(3))")
        #expect(!updates.all.isEmpty)
        let feed = try shared.cards()
        #expect(try shared.counts().total == feed.count)
        #expect(try other.counts() == (try shared.counts()))
    }

    @Test func closeWhileOtherThreadsWork() throws {
        for _ in 0..<5 {
            let c = try makeController()
            try c.refresh()
            TestThreads.run(4) { worker in
                if worker == 0 { usleep(2000); c.close(); return }
                for _ in 0..<100 {
                    _ = try? c.cards()
                    _ = try? c.logImpression(cardID: "tile-1")
                    _ = try? c.refresh()
                }
            }
            #expect(c.isClosed)
        }
    }
}
