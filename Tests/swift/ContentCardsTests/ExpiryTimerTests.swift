import Foundation
import Testing
@testable import ContentCards

/// The expiry timer against the wall clock (docs/BEHAVIOUR.md, "Users, subscriptions, threads,
/// processes"): an expiry is a wall-clock time, the timer's wait a monotonic one.
@Suite struct ExpiryTimerTests {
    /// The wall clock set forward past an expiry (here a manual clock: the first NTP answer
    /// after a boot at 1970 does this): the subscribers hear of it within the timer's recheck,
    /// shortened here from 60 s. The timer waited the old difference on the monotonic clock
    /// (1,000 s here, decades after such a boot), and no other timer could be set meanwhile.
    @Test func anExpiryReachedByAClockSetForwardIsToldWithinTheRecheck() async throws {
        let clock = ManualClock()
        let c = try ContentCardsController(json: #"{"userId":"u","refreshTokens":0}"#, clock: clock)
        defer { c.close() }
        c.expiryRecheckSeconds = 0.05
        let later = Int64(clock.now()) + 1000
        try c.apply(Fixtures.payload([Fixtures.wire("later", extra: #""ea":\#(later)"#), Fixtures.wire("stays")]))
        let log = UpdateLog()
        try c.subscribe { log.add($0) }
        #expect(try c.counts().total == 2)
        clock.advance(2000)
        for _ in 0..<500 where !log.all.contains(where: { $0.reason == .expired }) {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        let update = try #require(log.all.first { $0.reason == .expired }, "no update after the clock passed the expiry")
        #expect(update.counts == FeedCounts(total: 1, unviewed: 1, unread: 1))
    }
}
