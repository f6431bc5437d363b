import Foundation
import Testing
@testable import ContentCards

/// Background work (docs/BEHAVIOUR.md, "Threads" and "Automatic refresh"): work that could not
/// start a thread waits and is retried, a closed controller leaves nothing in the process-wide
/// scheduler, and a user change refreshes the new user whatever else is scheduled. Real
/// threads and the real scheduler; a host transport that answers from memory.
@Suite struct BackgroundWorkTests {
    /// The users the host transport was asked to sync, in order.
    final class Requests: @unchecked Sendable {
        private let lock = NSLock()
        private var users: [String] = []
        func add(_ user: String) { lock.lock(); users.append(user); lock.unlock() }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return users }
    }

    static func hostController(_ extra: String, requests: Requests) throws -> ContentCardsController {
        let json = #"{"userId":"u-1","source":{"callback":true},"refreshTokens":0,\#(extra)}"#
        return try ContentCardsController(json: json, transport: ClosureTransport { request in
            let body = String(decoding: request.body, as: UTF8.self)
            let user = body.range(of: #""user_id":""#).map { r in
                String(body[r.upperBound...].prefix { $0 != "\"" })
            } ?? "?"
            requests.add(user)
            let payload = Fixtures.payload([Fixtures.wire("\(user)-card")], full: true, user: user)
            return .success(TransportResponse(status: 200, body: Array(payload.utf8)))
        })
    }

    static func waitUntil(seconds: Double = 10, _ done: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !done() {
            if Date() >= deadline { return false }
            usleep(10_000)
        }
        return true
    }

    // MARK: A thread refused for a moment

    @Test func aPeriodicRefreshWhoseThreadIsRefusedIsRetriedNotDropped() throws {
        let requests = Requests()
        let c = try Self.hostController(#""refreshPeriodSeconds":0.1,"refreshPeriodJitter":0"#, requests: requests)
        defer { c.close() }
        let refusedBefore = ThreadStarts.refused.count
        // The first periodic tick finds no thread, nor do the first retries.
        c.refresher.queue.refuseStartsForTesting = 3
        #expect(Self.waitUntil { requests.all.count >= 2 }, "the periodic refresh stopped after a refused thread: \(requests.all)")
        #expect(c.refresher.queue.refuseStartsForTesting == 0)
        #expect(c.diagnostics().threadStartsRefused >= refusedBefore + 3)
    }

    @Test func backgroundDeliveryWhoseThreadIsRefusedIsRetried() throws {
        let dir = Fixtures.temporaryDirectory("refused-delivery")
        defer { Fixtures.removeTree(dir) }
        let c = try ContentCardsController(json: #"{"userId":"u-1","events":{"file":"\#(dir)/events.jsonl"},"eventFlushIntervalSeconds":0.05}"#)
        defer { c.close() }
        try c.apply(Fixtures.payload([Fixtures.wire("a")]))
        c.delivery.queue.refuseStartsForTesting = 2
        try c.logImpression(cardID: "a")
        #expect(Self.waitUntil { (try? c.pendingEvents()) == 0 }, "the event stayed pending after a refused thread")
    }

    // MARK: Close removes a controller's timers

    @Test func closeRemovesTheControllersTimersAtOnce() throws {
        let requests = Requests()
        // A year's period: the tick's deadline is a year away.
        let c = try Self.hostController(#""refreshPeriodSeconds":31536000"#, requests: requests)
        let queues = c.timerQueues
        #expect(Scheduler.shared.pending(on: queues) == 1)
        c.close()
        #expect(Scheduler.shared.pending(on: queues) == 0)
    }

    @Test func theSchedulerDoesNotGrowWithClosedControllers() throws {
        let before = Scheduler.shared.pending
        for _ in 0..<500 {
            let c = try ContentCardsController(json: #"{"source":{"file":"\#(Fixtures.sampleFeedPath)"},"refreshPeriodSeconds":31536000}"#)
            c.close()
        }
        // Other suites run beside this one and set short timers of their own: a bound, not 0.
        #expect(Scheduler.shared.pending < before + 100, "\(Scheduler.shared.pending - before) timers left by 500 closed controllers")
    }

    // MARK: A user change refreshes the new user

    @Test func aUserChangeRefreshesTheNewUserWhileAPeriodicTickIsScheduled() throws {
        let requests = Requests()
        let c = try Self.hostController(#""refreshOnOpenAfterSeconds":0,"refreshPeriodSeconds":3600"#, requests: requests)
        defer { c.close() }
        // The refresh on open, then the periodic tick an hour away.
        #expect(Self.waitUntil { requests.all == ["u-1"] && c.diagnostics().lastSuccessfulRefreshAt != nil })
        #expect(Self.waitUntil { Scheduler.shared.pending(on: c.timerQueues) == 1 })
        try c.changeUser("u-2")
        #expect(Self.waitUntil { requests.all.contains("u-2") }, "no refresh of the new user: \(requests.all)")
        #expect(Self.waitUntil { (try? c.cards().map(\.id)) == ["u-2-card"] })
    }

    @Test func aUserChangeDuringARefreshOfTheOldUserStartsTheNewUsersOwn() throws {
        let requests = Requests()
        let gate = HangTests.Gate()
        let c = try ContentCardsController(json: #"{"userId":"u-1","source":{"callback":true},"refreshTokens":0}"#,
                                           transport: ClosureTransport { request in
            let body = String(decoding: request.body, as: UTF8.self)
            let user = body.contains(#""user_id":"u-1""#) ? "u-1" : "u-2"
            requests.add(user)
            if user == "u-1" { gate.wait(max: 10) }      // the old user's refresh hangs
            let payload = Fixtures.payload([Fixtures.wire("\(user)-card")], full: true, user: user)
            return .success(TransportResponse(status: 200, body: Array(payload.utf8)))
        })
        defer { c.close(); gate.open() }
        try c.refreshInBackground()
        #expect(Self.waitUntil { requests.all == ["u-1"] })
        try c.changeUser("u-2")
        // Not joined to the old user's refresh (which would end in "the user changed").
        let summary = try c.refresh(timeout: 5)
        #expect(summary.added == 1)
        #expect(try c.cards().map(\.id) == ["u-2-card"])
        gate.open()
    }
}
