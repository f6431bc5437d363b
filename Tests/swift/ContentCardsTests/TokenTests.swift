import Foundation
import Testing
@testable import ContentCards

/// Per-user tokens (docs/WIRE.md, "Per-user tokens") against the reference server started with
/// a secret: the provider is asked for each request's own user, again after a 401 (then the
/// request is sent once more), and a provider that fails or hangs is an `.auth` error bounded
/// by the request's timeout, with the events kept.
@Suite(.serialized) struct TokenTests {
    final class Asked: @unchecked Sendable {
        private let lock = NSLock()
        private var users: [String] = []
        func add(_ user: String) { lock.lock(); users.append(user); lock.unlock() }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return users }
    }

    func controller(_ server: ReferenceServer, user: String, timeout: Double = 5) throws -> ContentCardsController {
        try ContentCardsController(json: #"""
            {"userId":"\#(user)","refreshTokens":0,"timeoutSeconds":\#(timeout),
             "source":{"url":"\#(server.url)"},"events":{"url":"\#(server.url)"},"eventFlushIntervalSeconds":0}
            """#)
    }

    /// A provider minting tokens through the server's admin API, for `as` when given (another
    /// user's token), else for the user asked about.
    func minting(_ server: ReferenceServer, asked: Asked, as other: String? = nil, ttl: Int = 3600) -> TokenProvider {
        { user in
            asked.add(user)
            guard let answer = try? server.admin("POST", "/_admin/token", #"{"user_id":"\#(other ?? user)","ttl":\#(ttl)}"#),
                  case .string(let token)? = answer["token"], case .number(let exp)? = answer["exp"] else {
                return .failure(ContentCardsError(.auth, "the server minted no token"))
            }
            return .success(AuthToken(token, expiresAt: Double(exp)))
        }
    }

    @Test func eachRequestCarriesItsUsersToken() throws {
        let server = try ReferenceServer(secret: "swift-secret")
        let c = try controller(server, user: "alice")
        let asked = Asked()
        try c.setTokenProvider(minting(server, asked: asked))
        _ = try c.refresh()
        _ = try c.logImpression(cardID: "tile-1")
        try c.changeUser("bob")
        _ = try c.refresh()
        _ = try c.logImpression(cardID: "tile-1")
        let flushed = try c.flushEvents(timeout: 5)
        #expect(flushed.delivered == 2)
        #expect(asked.all == ["alice", "bob"])
        guard case .array(let rejected)? = try server.admin("GET", "/_admin/auth")["rejected"] else { Issue.record("no report"); return }
        #expect(rejected.isEmpty)
        #expect(c.diagnostics().tokens.reused >= 2)
    }

    @Test func anotherUsersTokenIsAskedForAgainOnceThenRefused() throws {
        let server = try ReferenceServer(secret: "swift-secret")
        let c = try controller(server, user: "alice")
        let asked = Asked()
        try c.setTokenProvider(minting(server, asked: asked, as: "mallory"))
        #expect(throws: ContentCardsError.self) { _ = try c.refresh() }
        do { _ = try c.refresh() } catch { #expect(error.code == .auth && error.message.contains("401")) }
        #expect(asked.all.count == 4)
        #expect(c.diagnostics().tokens.retriedAfter401 == 2)
    }

    @Test func aProviderThatThrowsOrHangsIsBoundedAndKeepsTheEvents() throws {
        let server = try ReferenceServer(secret: "swift-secret")
        let c = try controller(server, user: "alice", timeout: 1)
        let asked = Asked()
        try c.setTokenProvider(minting(server, asked: asked))
        _ = try c.refresh()
        _ = try c.logImpression(cardID: "tile-1")
        try c.setTokenProvider { _ in .failure(ContentCardsError(.auth, "vault sealed")) }
        do { _ = try c.flushEvents(timeout: 1); Issue.record("flushed") } catch {
            #expect(error.code == .auth && error.message.contains("vault sealed"))
        }
        try c.setTokenProvider { _ in sleep(3); return .success(AuthToken("late")) }
        let start = Date()
        do { _ = try c.flushEvents(timeout: 1); Issue.record("flushed") } catch {
            #expect(error.code == .auth)
        }
        #expect(Date().timeIntervalSince(start) < 2.5)
        #expect(try c.pendingEvents() == 1)
        try c.setTokenProvider(minting(server, asked: asked))
        // Delivered by this flush, or already by the background retry the failures scheduled.
        #expect(try c.flushEvents(timeout: 5).pending == 0)
        #expect(try server.events().count == 1)
    }

    /// A user forgotten while the provider is being asked for its token: the request waiting
    /// gets the answer, and the token is not kept (kept, it put the forgotten user's token back
    /// into the cache, and the next request for that user reused it without asking).
    @Test func aTokenAskedForAUserForgottenMeanwhileIsNotKept() throws {
        final class Calls: @unchecked Sendable {
            let lock = NSCondition()
            var count = 0, released = false
        }
        let calls = Calls()
        let slot = TokenSlot()
        slot.set { user in
            calls.lock.lock()
            calls.count += 1
            let first = calls.count == 1
            calls.lock.broadcast()
            while first && !calls.released { calls.lock.wait() }
            calls.lock.unlock()
            return .success(AuthToken("token-\(user)"))
        }
        let done = DispatchSemaphore(value: 0)
        Thread {
            _ = slot.token(for: "alice", deadline: monotonicSeconds() + 10)
            done.signal()
        }.start()
        calls.lock.lock()
        while calls.count == 0 { calls.lock.wait() }
        calls.lock.unlock()
        slot.forget("alice")
        calls.lock.lock()
        calls.released = true
        calls.lock.broadcast()
        calls.lock.unlock()
        #expect(done.wait(timeout: .now() + 10) == .success)
        guard case .success(let again)? = slot.token(for: "alice", deadline: monotonicSeconds() + 10) else {
            Issue.record("no token")
            return
        }
        #expect(again.token == "token-alice")
        #expect(calls.count == 2)
    }

    /// Every event batch is one user's, with or without a token provider: a provider set
    /// between a batch's cut and its send gave all of its events the first user's token.
    @Test func everyEventBatchIsOneUsers() throws {
        final class Batches: @unchecked Sendable {
            let lock = NSLock()
            var users: [[String]] = []
        }
        let batches = Batches()
        let c = try ContentCardsController(
            json: #"{"userId":"ann","refreshTokens":0,"source":{"callback":true},"events":{"callback":true},"eventFlushIntervalSeconds":3600}"#,
            transport: ClosureTransport { r in
                if r.kind == .events, let doc = try? JSONReader.parse(r.body), case .array(let events)? = doc["events"] {
                    batches.lock.lock()
                    batches.users.append(events.compactMap { $0["user_id"]?.stringValue })
                    batches.lock.unlock()
                }
                return .success(TransportResponse(status: 200, body: Array(#"{"cards":[],"full_sync":true}"#.utf8)))
            })
        defer { c.close() }
        for user in ["ann", "ben"] {
            if user != "ann" { try c.changeUser(user) }
            _ = try c.apply(Fixtures.payload([Fixtures.wire("card-1")], full: true, user: user))
            _ = try c.logImpression(cardID: "card-1")
        }
        #expect(try c.flushEvents(timeout: 5).delivered == 2)
        batches.lock.lock()
        defer { batches.lock.unlock() }
        #expect(batches.users.flatMap { $0 }.sorted() == ["ann", "ben"])
        #expect(batches.users.allSatisfy { Set($0).count == 1 }, "\(batches.users)")
    }

    /// A provider or a transport set in the moment a close runs (after the set's check that
    /// the controller is open) is refused, not installed on the closed controller (whose C
    /// callbacks' free_userdata then ran only when the controller object went, if ever).
    @Test func aClosedSlotRefusesANewProviderOrTransport() {
        let tokens = TokenSlot()
        #expect(tokens.set { _ in .success(AuthToken("t")) })
        tokens.close()
        #expect(!tokens.set { _ in .success(AuthToken("t")) })
        #expect(!tokens.isSet)
        let transports = HostTransportSlot()
        #expect(transports.set(ClosureTransport { _ in .success(TransportResponse(status: 200, body: [])) }))
        transports.close()
        #expect(!transports.set(ClosureTransport { _ in .success(TransportResponse(status: 200, body: [])) }))
        if case .success = transports.get() { Issue.record("a transport after close") }
    }

    @Test func tokensThatCannotGoInAHeaderAreRefused() {
        #expect(TokenSlot.invalidity("ok.token-1_~") == nil)
        #expect(TokenSlot.invalidity("") != nil)
        #expect(TokenSlot.invalidity("a b") != nil)
        #expect(TokenSlot.invalidity("a\r\nX: 1")?.contains("0xD at offset 1") == true)
        #expect(TokenSlot.invalidity("é") != nil)
        #expect(TokenSlot.invalidity(String(repeating: "a", count: 8193)) != nil)
    }

    /// A provider that refreshes or flushes its own controller (the request asking for the
    /// token waits for the provider): refused at once. The inner call waited for its own
    /// provider's answer until its deadline, then failed, and the outer request with it.
    @Test func aCallFromInsideTheProviderThatWouldWaitForItIsRefused() throws {
        let server = try ReferenceServer(secret: "swift-secret")
        let c = try controller(server, user: "alice")
        defer { c.close() }
        let asked = Asked()
        let mint = minting(server, asked: asked)
        final class Inner: @unchecked Sendable {
            let lock = NSLock()
            var codes: [ContentCardsError.Code] = []
            var seconds: [Double] = []
        }
        let inner = Inner()
        try c.setTokenProvider { user in
            func note(_ started: Double, _ error: ContentCardsError) {
                inner.lock.lock(); inner.codes.append(error.code); inner.seconds.append(monotonicSeconds() - started); inner.lock.unlock()
            }
            var started = monotonicSeconds()
            do throws(ContentCardsError) { _ = try c.refresh(timeout: 3) } catch { note(started, error) }
            started = monotonicSeconds()
            do throws(ContentCardsError) { _ = try c.flushEvents(timeout: 3) } catch { note(started, error) }
            return mint(user)
        }
        _ = try c.refresh(timeout: 5)
        inner.lock.lock(); defer { inner.lock.unlock() }
        #expect(inner.codes == [.refused, .refused], "\(inner.codes)")
        #expect(inner.seconds.allSatisfy { $0 < 1 }, "\(inner.seconds)")
    }

    /// A request that began before its user was forgotten (a sync still out for a user no
    /// longer current, answered 401 after the forget) asked the provider for the forgotten
    /// user again, and the answer went back into the cache. It now asks nothing.
    @Test func aRequestFromBeforeAForgetAsksNoTokenForTheForgottenUser() {
        let slot = TokenSlot()
        let asked = Asked()
        slot.set { user in asked.add(user); return .success(AuthToken("token-\(user)")) }
        let mark = slot.forgetMark
        slot.forget("gone")
        let late = slot.token(for: "gone", deadline: monotonicSeconds() + 2, since: mark)
        guard case .failure(let e)? = late else { Issue.record("a token: \(String(describing: late))"); return }
        #expect(e.code == .auth && e.message.contains("forgotten"))
        #expect(asked.all.isEmpty)
        // Another user's request from before the forget, and the user's own from after it, ask.
        #expect((try? slot.token(for: "kept", deadline: monotonicSeconds() + 2, since: mark)?.get())?.token == "token-kept")
        #expect((try? slot.token(for: "gone", deadline: monotonicSeconds() + 2, since: slot.forgetMark)?.get())?.token == "token-gone")
    }

    /// Two requests wait for one call of the provider; the one with the shorter deadline
    /// gives up. The call was abandoned then: the answer the other request still got was not
    /// kept (the next request asked again) and the call counted against the limit of 4. Only
    /// the last request to give up abandons it now.
    @Test func aCallIsAbandonedOnlyWhenItsLastWaiterGivesUp() {
        let slot = TokenSlot()
        let asked = Asked()
        let called = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        slot.set { user in
            asked.add(user)
            called.signal()
            _ = release.wait(timeout: .now() + 10)     // answers once the test lets it
            return .success(AuthToken("token-\(user)"))
        }
        let results = LockedBox<[String]>([])
        func request(_ wait: Double, _ done: DispatchGroup) {
            done.enter()
            Thread.detachNewThread {
                let r = slot.token(for: "u", deadline: monotonicSeconds() + wait)
                let text: String
                switch r {
                case .success(let t)?: text = t.token
                case .failure(let e)?: text = "failed: \(e.message)"
                case nil: text = "none"
                }
                results.mutate { $0.append(text) }
                done.leave()
            }
        }
        // The patient request starts the call; the hasty one joins it (the provider is held,
        // so it can only wait) and gives up first; then the provider answers.
        let patient = DispatchGroup(), hasty = DispatchGroup()
        request(5.0, patient)
        #expect(called.wait(timeout: .now() + 5) == .success)
        request(0.2, hasty)
        #expect(hasty.wait(timeout: .now() + 5) == .success)
        release.signal()
        #expect(patient.wait(timeout: .now() + 10) == .success)
        #expect(results.value.contains("token-u") && results.value.contains { $0.hasPrefix("failed") }, "\(results.value)")
        #expect((try? slot.token(for: "u", deadline: monotonicSeconds() + 2)?.get())?.token == "token-u")
        #expect(asked.all == ["u"])
        #expect(slot.diagnostics.abandoned == 0)
    }
}
