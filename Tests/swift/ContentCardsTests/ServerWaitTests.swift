import Foundation
import Testing
@testable import ContentCards

/// The server's `Retry-After` on a sync (docs/BEHAVIOUR.md, "Refresh"): the wait is bounded to
/// an hour whatever the wall clock does, and a wait of 0 is not a reason to ask again at once.
/// A host transport that answers from memory.
@Suite struct ServerWaitTests {
    final class Count: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        func add() { lock.lock(); n += 1; lock.unlock() }
        var value: Int { lock.lock(); defer { lock.unlock() }; return n }
    }

    static func controller(status: Int, retryAfter: Double, clock: Clock = SystemClock(),
                           count: Count) throws -> ContentCardsController {
        try ContentCardsController(
            json: #"{"userId":"u","source":{"callback":true},"refreshTokens":0}"#, clock: clock,
            transport: ClosureTransport { _ in
                count.add()
                return .success(TransportResponse(status: status, body: [], retryAfter: retryAfter))
            })
    }

    /// A 429 asking for 60 s, then the wall clock set back a day: the refreshes are refused for
    /// at most the hour the wait is bounded to. They were refused for a day and 60 s, and said
    /// so ("retry after 86460 s").
    @Test func theWaitStaysBoundedWhenTheClockGoesBack() throws {
        let clock = ManualClock()
        let count = Count()
        let c = try Self.controller(status: 429, retryAfter: 60, clock: clock, count: count)
        defer { c.close() }
        #expect(throws: ContentCardsError.self) { try c.refresh(timeout: 5) }
        clock.advance(-86_400)
        do { try c.refresh(timeout: 5); Issue.record("refreshed") } catch {
            #expect(error.code == .rateLimited)
            #expect((error.retryAfter ?? 0) <= RetryAfter.maxSeconds)
        }
        clock.advance(RetryAfter.maxSeconds)
        #expect(throws: ContentCardsError.self) { try c.refresh(timeout: 5) }
        #expect(count.value == 2)       // the first request, and the one an hour later
    }

    /// A hint's refresh answered 503 with `Retry-After: 0`, every time: the hint is not asked
    /// again at once. It was, in a loop, as fast as the server answered (with `refreshTokens`
    /// 0 nothing else bounded it).
    @Test func aHintAnsweredWithNoWaitIsNotAskedAgainAtOnce() throws {
        let count = Count()
        let c = try Self.controller(status: 503, retryAfter: 0, count: count)
        defer { c.close() }
        try c.hint()
        #expect(BackgroundWorkTests.waitUntil { count.value >= 1 })
        // Whatever the wait, no request can follow: nothing is scheduled after the answer.
        usleep(300_000)
        #expect(count.value == 1)
    }

    /// A sync refused 401 twice (the token, then a new one) with `Retry-After: 120`: the wait is
    /// kept, and the next refresh is refused locally without a request. It was lost with the
    /// second 401, and every refresh asked again at once.
    @Test func aSecond401KeepsItsRetryAfter() throws {
        let count = Count()
        let c = try Self.controller(status: 401, retryAfter: 120, count: count)
        defer { c.close() }
        try c.setTokenProvider { user in .success(AuthToken("token-\(user)")) }
        do { try c.refresh(timeout: 5); Issue.record("refreshed") } catch {
            #expect(error.code == .auth && error.retryAfter == 120)
        }
        #expect(count.value == 2)
        do { try c.refresh(timeout: 5); Issue.record("refreshed") } catch {
            #expect(error.code == .rateLimited)
        }
        #expect(count.value == 2)
    }
}
