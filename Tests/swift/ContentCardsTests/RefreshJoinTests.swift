import Foundation
import Testing
@testable import ContentCards

/// Which refresh a refresh joins, and which answers are merged (docs/BEHAVIOUR.md, "Refresh"
/// and "Merge", rule 1): a blocking refresh that joins a background one not yet begun runs it
/// instead of waiting for the queue it may itself be running on, and the answer of a refresh
/// started before a change of user is discarded even when the user changed back. Real threads;
/// a host transport that answers from memory.
@Suite struct RefreshJoinTests {
    /// The users the transport was asked for, in order, and a gate the first request of a
    /// chosen user waits at.
    final class Server: @unchecked Sendable {
        private let lock = NSLock()
        private var asked: [String] = []
        let gate = DispatchSemaphore(value: 0)
        let gatedUser: String?
        /// Seconds the second request waits before it answers.
        let secondDelay: Double
        init(gating user: String? = nil, secondDelay: Double = 0) { gatedUser = user; self.secondDelay = secondDelay }

        /// The request's number for its user (1 for the first).
        func note(_ user: String) -> Int {
            lock.lock(); defer { lock.unlock() }
            asked.append(user)
            return asked.filter { $0 == user }.count
        }
        var requests: [String] { lock.lock(); defer { lock.unlock() }; return asked }

        /// A full sync of one card named for the user and the request's number.
        var transport: ClosureTransport {
            ClosureTransport { [self] request in
                let body = String(decoding: request.body, as: UTF8.self)
                let user = body.range(of: #""user_id":""#).map { r in
                    String(body[r.upperBound...].prefix { $0 != "\"" })
                } ?? "?"
                let n = note(user)
                if n == 1, user == gatedUser { _ = gate.wait(timeout: .now() + 20) }
                if n == 2, secondDelay > 0 { usleep(UInt32(secondDelay * 1_000_000)) }
                let payload = Fixtures.payload([Fixtures.wire("\(user)-\(n)")], full: true, user: user)
                return .success(TransportResponse(status: 200, body: Array(payload.utf8)))
            }
        }
    }

    final class Outcome: @unchecked Sendable {
        private let lock = NSLock()
        private var value: Result<SyncSummary, ContentCardsError>?
        private var took = 0.0
        let done = DispatchSemaphore(value: 0)
        func set(_ r: Result<SyncSummary, ContentCardsError>, took t: Double = 0) {
            lock.lock(); value = r; took = t; lock.unlock(); done.signal()
        }
        var result: Result<SyncSummary, ContentCardsError>? { lock.lock(); defer { lock.unlock() }; return value }
        var seconds: Double { lock.lock(); defer { lock.unlock() }; return took }
    }

    static func controller(_ server: Server) throws -> ContentCardsController {
        try ContentCardsController(json: #"{"userId":"a","source":{"callback":true},"refreshTokens":0}"#,
                                   transport: server.transport)
    }

    /// A completion of a background refresh (which runs on the refresh queue) that starts
    /// another background refresh and then refreshes blocking: the blocking one joins the
    /// second, whose run was queued behind the completion itself. It waited its whole timeout
    /// (5 s) and failed with `timeout`, the request never sent; now it runs the joined refresh.
    @Test func aBlockingRefreshJoiningAQueuedOneRunsIt() throws {
        let server = Server()
        let c = try Self.controller(server)
        defer { c.close() }
        let outcome = Outcome()
        try c.refreshInBackground { _ in
            _ = try? c.refreshInBackground()
            let started = Date()
            let r = Result { () throws(ContentCardsError) in try c.refresh(timeout: 5) }
            outcome.set(r, took: Date().timeIntervalSince(started))
        }
        #expect(outcome.done.wait(timeout: .now() + 20) == .success)
        if case .failure(let e) = outcome.result { Issue.record("the joined refresh failed: \(e)") }
        #expect(server.requests == ["a", "a"])
        #expect(try c.cards().map(\.id) == ["a-2"])
    }

    /// A refresh for user a, slow to answer; meanwhile the user changes to b (refreshed) and
    /// back to a (refreshed, answered at once). The slow answer, older than the second
    /// refresh's, is discarded: it was merged before (the user id matched), and as a full
    /// sync it removed the card the later refresh had brought.
    @Test func anAnswerFromBeforeAChangeAwayAndBackIsDiscarded() throws {
        let server = Server(gating: "a")
        let c = try Self.controller(server)
        defer { c.close() }
        let slow = Outcome()
        try c.refreshInBackground { slow.set($0) }
        #expect(BackgroundWorkTests.waitUntil { server.requests == ["a"] })
        try c.changeUser("b")
        _ = try c.refresh(timeout: 5)
        try c.changeUser("a")
        _ = try c.refresh(timeout: 5)
        #expect(try c.cards().map(\.id) == ["a-2"])
        server.gate.signal()
        #expect(slow.done.wait(timeout: .now() + 20) == .success)
        guard case .failure(let e)? = slow.result else {
            Issue.record("the slow answer was merged: \(String(describing: slow.result))")
            return
        }
        #expect(e.code == .wrongUser)
        #expect(try c.cards().map(\.id) == ["a-2"])
    }

    /// An answer for another user is discarded whole: the cards it left out are not the
    /// current user's diagnostics (they replaced them before).
    @Test func anAnswerForAnotherUserLeavesTheDiagnosticsAlone() throws {
        let c = try ContentCardsController(
            json: #"{"userId":"a","source":{"callback":true},"refreshTokens":0}"#,
            transport: ClosureTransport { _ in
                let payload = Fixtures.payload([Fixtures.wire("x"), "{}"], full: true, user: "someone-else")
                return .success(TransportResponse(status: 200, body: Array(payload.utf8)))
            })
        defer { c.close() }
        #expect(throws: ContentCardsError.self) { try c.refresh(timeout: 5) }
        #expect(c.diagnostics().leftOut.isEmpty)
    }

    /// A short blocking refresh that joins a background one not yet begun starts it with the
    /// background refresh's own bound: the blocking call times out alone, and the background
    /// refresh (0.5 s to answer, 10 s allowed) succeeds. The request was sent with the blocking
    /// call's 0.2 s, and every waiter of the background refresh got `timeout`.
    @Test func aShortJoinerDoesNotCutTheRefreshItStarts() throws {
        let server = Server(secondDelay: 0.5)
        let c = try Self.controller(server)
        defer { c.close() }
        let joiner = Outcome(), background = Outcome()
        try c.refreshInBackground { _ in
            _ = try? c.refreshInBackground(timeout: 10) { background.set($0) }
            joiner.set(Result { () throws(ContentCardsError) in try c.refresh(timeout: 0.2) })
        }
        #expect(joiner.done.wait(timeout: .now() + 20) == .success)
        if case .failure(let e)? = joiner.result { #expect(e.code == .timeout) }
        #expect(background.done.wait(timeout: .now() + 20) == .success)
        guard case .success? = background.result else {
            Issue.record("the background refresh failed: \(String(describing: background.result))")
            return
        }
        #expect(try c.cards().map(\.id) == ["a-2"])
    }

    /// A user whose only cards were handed in (no sync stored) refreshes, and meanwhile an
    /// empty full sync is handed in: nothing of the user is left, but no forget happened, and
    /// the refresh's answer is merged. It was discarded as "forgotten by another controller".
    @Test func anEmptiedFeedIsNotAForget() throws {
        let server = Server(gating: "a")
        let c = try Self.controller(server)
        defer { c.close() }
        _ = try c.apply(Fixtures.payload([Fixtures.wire("handed")], full: true))
        let slow = Outcome()
        try c.refreshInBackground { slow.set($0) }
        #expect(BackgroundWorkTests.waitUntil { server.requests == ["a"] })
        _ = try c.apply(#"{"cards":[],"full_sync":true}"#)
        server.gate.signal()
        #expect(slow.done.wait(timeout: .now() + 20) == .success)
        if case .failure(let e)? = slow.result { Issue.record("the refresh was discarded: \(e)") }
        #expect(try c.cards().map(\.id) == ["a-1"])
    }
}
