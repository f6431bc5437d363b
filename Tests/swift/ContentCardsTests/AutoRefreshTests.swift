import Foundation
import Testing
@testable import ContentCards

/// Backoff with full jitter, and the automatic refresh policies, against the
/// reference server over real HTTP on 127.0.0.1 (the policies) or as arithmetic (the backoff).
@Suite(.serialized) struct AutoRefreshTests {
    // MARK: The backoff

    @Test func fullJitterSpansTheWholeExponentialWindow() {
        let b = Backoff(base: 1, cap: 60)
        #expect(b.window(attempt: 1) == 1 && b.window(attempt: 2) == 2 && b.window(attempt: 4) == 8)
        #expect(b.window(attempt: 7) == 60 && b.window(attempt: 10_000) == 60)   // capped, no overflow
        #expect(b.delay(attempt: 5, retryAfter: nil, random: 0) == 0)
        #expect(b.delay(attempt: 5, retryAfter: nil, random: 1) == 16)
        // Uniform: the mean of many draws is half the window, and the draws cover it.
        let draws = (0..<4000).map { _ in b.delay(attempt: 5, retryAfter: nil, random: Double.random(in: 0...1)) }
        let mean = draws.reduce(0, +) / Double(draws.count)
        #expect(abs(mean - 8) < 0.6, "mean \(mean)")
        #expect(draws.min()! < 0.5 && draws.max()! > 15.5)
    }

    @Test func retryAfterIsWaitedFirstAndBounded() {
        let b = Backoff(base: 1, cap: 60)
        #expect(b.delay(attempt: 1, retryAfter: 30, random: 0) == 30)
        #expect(b.delay(attempt: 3, retryAfter: 30, random: 1) == 34)
        #expect(b.delay(attempt: 1, retryAfter: 1e12, random: 0) == RetryAfter.maxSeconds)
        #expect(b.delay(attempt: 2, retryAfter: -5, random: 0.5) == 1)
        #expect(b.delay(attempt: 2, retryAfter: .nan, random: 0.5) == 1)
    }

    @Test func theKeysAreCheckedWithReasons() {
        func error(_ json: String) -> String? {
            do { _ = try ConfigurationJSON.decode(json); return nil } catch { return error.message }
        }
        #expect(error(#"{"refreshPeriodJitter":1.5}"#)?.contains("0 to 1") == true)
        #expect(error(#"{"retryBaseSeconds":10,"retryMaxSeconds":5}"#)?.contains("less than") == true)
        #expect(error(#"{"retryBaseSeconds":0}"#) != nil)
        #expect(error(#"{"refreshPeriodSecond":5}"#)?.contains("did you mean \"refreshPeriodSeconds\"") == true)
        let c = try? ConfigurationJSON.decode(#"{"refreshOnOpenAfterSeconds":0,"refreshPeriodSeconds":60,"refreshPeriodJitter":0,"retryBaseSeconds":0.5,"retryMaxSeconds":30}"#)
        #expect(c?.refreshOnOpenAfterSeconds == 0 && c?.refreshPeriodSeconds == 60 && c?.retryMaxSeconds == 30)
    }

    // MARK: The policies, against the reference server

    func syncCount(_ server: ReferenceServer) throws -> Int {
        let wire = try server.admin("GET", "/_admin/transfer")["wire"]
        return Int(wire?["/content_cards/sync"]?["requests"]?.int64Value ?? 0)
    }

    /// Polls `done` every 50 ms for at most 5 s.
    func waitUntil(_ done: () throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(5)
        while try !done(), Date() < deadline { try await Task.sleep(nanoseconds: 50_000_000) }
    }

    func open(_ server: ReferenceServer, user: String, storage: String? = nil, _ extra: String) throws -> ContentCardsController {
        let path = storage.map { #","storagePath":"\#($0)""# } ?? ""
        return try ContentCardsController(json: #"{"userId":"\#(user)","source":{"url":"\#(server.url)"}\#(path),\#(extra)}"#)
    }

    @Test func aPeriodicRefreshRunsWithJitterAndStopsAtClose() async throws {
        let server = try ReferenceServer()
        let opened = Date()
        let c = try open(server, user: "per", #""refreshTokens":0,"refreshPeriodSeconds":0.25,"refreshPeriodJitter":0.2"#)
        try await Task.sleep(nanoseconds: 2_000_000_000)
        c.close()
        let open = Date().timeIntervalSince(opened)   // 2 s, or more on a loaded machine
        let atClose = try syncCount(server)
        // open / (0.25 s ± 20 %), and a refresh in flight at close may still land; a loaded
        // machine may run late (fewer), never early (more than one per 0.2 s).
        #expect(atClose >= 3 && Double(atClose) <= open / 0.2 + 1, "\(atClose) syncs in \(open) s")
        try await Task.sleep(nanoseconds: 800_000_000)
        #expect(try syncCount(server) <= atClose + 1, "refreshes went on after close")
    }

    @Test func thePeriodicRefreshStaysWithinTheRateLimit() async throws {
        let server = try ReferenceServer()
        let c = try open(server, user: "lim", #""refreshTokens":2,"refreshIntervalSeconds":100,"refreshPeriodSeconds":0.1,"retryBaseSeconds":0.05,"retryMaxSeconds":0.1"#)
        try await Task.sleep(nanoseconds: 1_500_000_000)
        #expect(try syncCount(server) == 2)
        #expect(c.diagnostics().lastRefresh?.error?.code == .rateLimited)
        c.close()
    }

    @Test func refreshOnOpenOnlyWhenTheLastSyncIsOlder() async throws {
        let server = try ReferenceServer()
        let dir = Fixtures.temporaryDirectory("on-open")
        defer { Fixtures.removeTree(dir) }
        let policy = #""refreshTokens":0,"refreshOnOpenAfterSeconds":3600"#
        let first = try open(server, user: "opa", storage: dir, policy)   // never synced: refreshes
        try await waitUntil { (try first.counts().total) != 0 }
        #expect(try first.counts().total == 10)
        first.close()
        let second = try open(server, user: "opa", storage: dir, policy)  // synced a moment ago
        try await Task.sleep(nanoseconds: 600_000_000)
        #expect(try syncCount(server) == 1)
        second.close()
        let third = try open(server, user: "opa", storage: dir, #""refreshTokens":0,"refreshOnOpenAfterSeconds":0"#)
        try await waitUntil { (try syncCount(server)) >= 2 }
        #expect(try syncCount(server) == 2)
        // A user change is an open for the new user.
        try third.changeUser("opb")
        try await waitUntil { (try third.counts().total) != 0 }
        #expect(try third.counts().total == 10)
        third.close()
    }

    @Test func anOutageIsRetriedWithBackoffAndRetryAfterIsHonoured() async throws {
        let server = try ReferenceServer()
        try server.admin("POST", "/_admin/transfer", #"{"outage":true}"#)
        let c = try open(server, user: "out", #""refreshTokens":0,"refreshOnOpenAfterSeconds":0,"refreshPeriodSeconds":60,"retryBaseSeconds":0.05,"retryMaxSeconds":0.4"#)
        try await Task.sleep(nanoseconds: 2_000_000_000)
        let during = try syncCount(server)
        // Windows 0.05, 0.1, 0.2, then 0.4 s, each wait uniform in its window: about 10 tries
        // in 2 s; without backoff a retry loop would make hundreds, with no retry there is 1.
        #expect(during >= 3 && during <= 30, "\(during) tries in 2 s of outage")
        // The server asks for 1 s: at most one try a second from now on.
        try server.admin("POST", "/_admin/transfer", #"{"outage_retry_after":1}"#)
        try await Task.sleep(nanoseconds: 500_000_000)
        let asked = try syncCount(server)
        let started = Date()
        try await Task.sleep(nanoseconds: 2_000_000_000)
        let withRetryAfter = try syncCount(server) - asked
        let waited = Date().timeIntervalSince(started)   // 2 s, or more on a loaded machine
        #expect(withRetryAfter >= 1 && Double(withRetryAfter) <= waited + 1, "\(withRetryAfter) tries in \(waited) s with Retry-After: 1")
        // Recovery: the next try succeeds, and then the 60 s period takes over.
        try server.admin("POST", "/_admin/transfer", #"{"outage":false}"#)
        try await waitUntil { (try c.counts().total) != 0 }
        #expect(try c.counts().total == 10)
        let recovered = try syncCount(server)
        try await Task.sleep(nanoseconds: 700_000_000)
        #expect(try syncCount(server) == recovered)
        c.close()
    }
}
