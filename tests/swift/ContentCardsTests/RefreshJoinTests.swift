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
        init(gating user: String? = nil) { gatedUser = user }

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
}
