import Foundation
import Testing
@testable import ContentCards

/// Against the reference server over real HTTP on 127.0.0.1.
@Suite(.serialized) struct HTTPTests {
    func controller(_ server: ReferenceServer, user: String, timeout: Double = 5, extra: String = "") throws -> ContentCardsController {
        try ContentCardsController(json: #"""
            {"userId":"\#(user)","refreshTokens":0,"timeoutSeconds":\#(timeout),
             "source":{"url":"\#(server.url)","apiKey":"k"},"events":{"url":"\#(server.url)","apiKey":"k"},
             "eventFlushIntervalSeconds":0\#(extra)}
            """#)
    }

    @Test func fullThenIncrementalSync() throws {
        let server = try ReferenceServer(apiKey: "k")
        let c = try controller(server, user: "alice")
        let first = try c.refresh()
        #expect(first.fullSync && first.added == 11 && first.leftOut.count == 3)
        try server.admin("POST", "/_admin/cards", #"{"user_id":"alice","cards":[{"id":"new-1","tp":"short_news","ca":1763799999,"ds":"fresh"}]}"#)
        try server.admin("POST", "/_admin/remove", #"{"user_id":"alice","ids":["tile-3"]}"#)
        let second = try c.refresh()
        #expect(!second.fullSync && second.added == 1 && second.removed == 1)
        #expect(try c.cards().map(\.id).contains("new-1"))
        #expect(throws: ContentCardsError.self) { try c.card(id: "tile-3") }
        // The cursors went to the server with the second request.
        guard case .array(let requests)? = try server.admin("GET", "/_admin/requests")["requests"] else { Issue.record("no requests"); return }
        #expect(requests.count == 2)
        #expect(requests.allSatisfy { $0["api_key_present"] == .bool(true) })
    }

    @Test func wrongAPIKeyIsAServerError() throws {
        let server = try ReferenceServer(apiKey: "right")
        let c = try controller(server, user: "x")
        do { try c.refresh(); Issue.record("refreshed") } catch {
            #expect(error.code == .server && error.message.contains("401"))
        }
    }

    @Test func eventsAreDeliveredAndDeduplicated() throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "bob")
        try c.refresh()
        try c.logImpression(cardID: "coupon-1")
        try c.logClick(cardID: "coupon-1")
        try c.logImpression(cardID: "coupon-control")
        try c.logFeedDisplayed()
        let flushed = try c.flushEvents()
        #expect(flushed == { var f = FlushResult(); f.delivered = 4; return f }())
        let events = try server.events()
        #expect(events.map { $0["type"]?.stringValue ?? "" } == ["impression", "click", "control_impression", "feed_displayed"])
        #expect(events.allSatisfy { $0["user_id"] == .string("bob") })
        #expect(events[3]["card_id"] == .null)
        // The answer to a delivery is lost: the batch goes again, and the server drops it.
        try c.logDismissal(cardID: "coupon-1")
        try server.fault(#"{"path":"/events","body":"truncated"}"#)
        #expect(throws: ContentCardsError.self) { try c.flushEvents() }
        #expect(try c.pendingEvents() == 1)
        try c.flushEvents()
        #expect(try c.pendingEvents() == 0)
        #expect(try server.events().filter { $0["type"] == .string("dismissal") }.count == 1)
        #expect(try server.admin("GET", "/_admin/events")["duplicates"] == .number("1"))
    }

    @Test func retryableAndPermanentDeliveryFailures() throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "eve")
        try c.refresh()
        try c.logImpression(cardID: "tile-1")
        try server.fault(#"{"path":"/events","status":503,"retry_after":1}"#)
        do { try c.flushEvents(); Issue.record("flushed") } catch {
            #expect(error.code == .server && error.retryAfter == 1)
        }
        #expect(try c.pendingEvents() == 1)
        try server.fault(#"{"path":"/events","status":400}"#)
        let dropped = try c.flushEvents()
        #expect(dropped.dropped == 1 && dropped.pending == 0)
        #expect(c.diagnostics().droppedEvents == 1)
        #expect(c.diagnostics().lastError?.message.contains("dropped") == true)
    }

    /// A refusal of the credentials, a redirect from a misconfigured proxy or a moved endpoint
    /// is not a verdict on the events: they stay pending, reported, and go once it works.
    /// Only 400, 413, 415 and 422 drop a batch (the server read it and will never take it).
    @Test(arguments: [401, 403, 407, 301, 302, 307, 404, 405, 409, 410])
    func answersThatAreNoVerdictOnTheEventsKeepThem(status: Int) throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "kept-\(status)")
        defer { c.close() }
        try c.logFeedDisplayed()
        try server.fault(#"{"path":"/events","status":\#(status)}"#)
        do { try c.flushEvents(); Issue.record("flushed through \(status)") } catch {
            #expect(error.code == .server && error.message.contains("HTTP \(status)"), "\(error.message)")
            #expect(error.message.contains("pending"), "\(error.message)")
        }
        #expect(try c.pendingEvents() == 1)
        let d = c.diagnostics()
        #expect(d.droppedEvents == 0 && d.pendingEvents == 1)
        #expect(d.lastError?.message.contains("HTTP \(status)") == true)
        // The fault was used up: the next flush delivers the same event, once.
        #expect(try c.flushEvents().delivered == 1)
        #expect(try server.events().count == 1)
    }

    @Test(arguments: [400, 413, 422])
    func aVerdictOnTheEventsDropsThem(status: Int) throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "verdict-\(status)")
        defer { c.close() }
        try c.logFeedDisplayed()
        try server.fault(#"{"path":"/events","status":\#(status)}"#)
        let result = try c.flushEvents()
        #expect(result.dropped == 1 && result.pending == 0)
        #expect(c.diagnostics().droppedEvents == 1)
    }

    @Test func backgroundDeliveryRetriesWithBackoff() async throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "fay", extra: #","eventFlushIntervalSeconds":0.2"#)
        try await c.refresh()
        try server.fault(#"{"path":"/events","status":500}"#)
        try c.logImpression(cardID: "tile-1")
        // First attempt after 0.2 s fails with 500; the retry after ~1 s of backoff succeeds.
        for _ in 0..<600 where (try c.pendingEvents()) > 0 { try await Task.sleep(nanoseconds: 50_000_000) }     // up to 30 s: a bound
        #expect(try c.pendingEvents() == 0)
        #expect(try server.events().count == 1)
        #expect(try server.admin("GET", "/_admin/events")["batches"] == .number("2"))
    }

    @Test(arguments: [
        (#"{"status":500}"#, ContentCardsError.Code.server),
        (#"{"status":429,"retry_after":7}"#, .rateLimited),
        (#"{"delay":3}"#, .timeout),
        (#"{"body":"truncated"}"#, .network),
        (#"{"body":"invalid"}"#, .parse),
        (#"{"body":"wrong_user"}"#, .wrongUser),
        (#"{"hang":true}"#, .timeout),
        (#"{"drip":0.3}"#, .timeout),
    ])
    func eachFaultKeepsTheCachedCards(fault: String, code: ContentCardsError.Code) throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "carol", timeout: 1)
        try c.refresh()
        try c.logImpression(cardID: "tile-1")
        try server.fault(fault)
        let started = Date()
        do { try c.refresh(); Issue.record("refreshed through \(fault)") } catch {
            #expect(error.code == code, "\(fault): \(error.message)")
            if code == .rateLimited { #expect(error.retryAfter == 7) }
        }
        #expect(Date().timeIntervalSince(started) < 3, "refresh returned within its timeout")
        #expect(try c.counts() == FeedCounts(total: 10, unviewed: 8, unread: 9))
        #expect(try c.card(id: "tile-1").viewed)
        #expect(c.diagnostics().lastRefresh?.error?.code == code)
    }

    @Test func aServerRetryAfterHoldsBackTheNextRefresh() throws {
        let server = try ReferenceServer()
        let clock = ManualClock(1_763_800_000)
        let c = try ContentCardsController(json: #"{"userId":"gil","refreshTokens":0,"source":{"url":"\#(server.url)"}}"#, clock: clock)
        try c.refresh()
        try server.fault(#"{"status":429,"retry_after":30}"#)
        do { try c.refresh(); Issue.record("refreshed") } catch {
            #expect(error.code == .rateLimited && error.message.contains("retry after 30 s"))
        }
        do { try c.refresh(); Issue.record("refreshed") } catch {
            #expect(error.code == .rateLimited && error.message.contains("the server asked to wait"))
        }
        guard case .array(let sent)? = try server.admin("GET", "/_admin/requests")["requests"] else { return }
        #expect(sent.count == 2)        // the third refresh never left the process
        clock.advance(31)
        #expect(throws: Never.self) { try c.refresh() }
    }

    @Test func theCachedFeedStaysReadableDuringAHangingRefresh() throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "hal", timeout: 3)
        try c.refresh()
        try server.fault(#"{"hang":true}"#)
        let started = Date()
        #expect(try c.refreshInBackground())
        // While the request hangs, reads answer at once from the cache.
        var reads = 0
        while Date().timeIntervalSince(started) < 1 {
            #expect(try c.counts().total == 10)
            #expect(try c.cards().count == 10)
            reads += 1
        }
        #expect(reads > 100)
        #expect(c.diagnostics().refreshInFlight)
    }

    @Test func eventsAreNeitherLostNorDuplicatedThroughFaults() throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "ivy", timeout: 1, extra: #","eventBatchSize":2"#)
        try c.refresh()
        var logged: [String] = []
        let faults = [#"{"path":"/events","hang":true}"#, #"{"path":"/events","drip":0.5}"#,
                      #"{"path":"/events","body":"truncated"}"#, #"{"path":"/events","status":500}"#,
                      #"{"path":"/events","status":429,"retry_after":1}"#, #"{"path":"/events","delay":2}"#]
        for (i, fault) in faults.enumerated() {
            logged.append(try c.logImpression(cardID: ["tile-1", "tile-2", "msg-1"][i % 3]).eventID ?? "")
            logged.append(try c.logFeedDisplayed().eventID ?? "")
            try server.fault(fault)
            _ = try? c.flushEvents(timeout: 2)
        }
        // Background retries run too and may meet a fault first: flush until the outbox is empty.
        let deadline = Date().addingTimeInterval(20)
        while try c.pendingEvents() > 0, Date() < deadline {
            _ = try? c.flushEvents(timeout: 3)
            if try c.pendingEvents() > 0 { usleep(300_000) }
        }
        #expect(try c.pendingEvents() == 0)
        let received = try server.events().compactMap { $0["id"]?.stringValue }
        #expect(received.sorted() == logged.sorted(), "each event exactly once")
    }

    @Test func withoutLibcurlRefreshNamesTheFix() throws {
        // libcurl is loaded once per process: play a host without it in a child process.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Tool.path)
        p.arguments = ["feed", #"{"source":{"url":"http://127.0.0.1:9"}}"#]
        p.environment = ["CONTENTCARDS_LIBCURL": "/nonexistent/libcurl.so.4"]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 1)
        #expect(message.contains("libcurl is not installed"), "\(message)")
        #expect(message.contains("apt-get install libcurl4") && message.contains("transport callback"))
    }

    @Test func nothingListening() throws {
        let c = try ContentCardsController(json: #"{"refreshTokens":0,"timeoutSeconds":2,"source":{"url":"http://127.0.0.1:9"}}"#)
        do { try c.refresh(); Issue.record("refreshed") } catch { #expect(error.code == .network) }
    }
}
