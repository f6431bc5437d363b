import Foundation
import Testing
@testable import ContentCards

/// Hints (docs/SYNC.md, "Hints"): the event-stream reader, bounded against hostile servers, and
/// the hint stream against the reference server.
@Suite struct HintTests {
    func events(_ text: String, chunk: Int = 3) throws -> (events: [ServerSentEvents.Event], parser: ServerSentEvents) {
        var parser = ServerSentEvents()
        var out: [ServerSentEvents.Event] = []
        let bytes = Array(text.utf8)
        var i = 0
        while i < bytes.count {
            let piece = Array(bytes[i..<min(i + chunk, bytes.count)])
            try piece.withUnsafeBytes { raw in try parser.feed(raw) { out.append($0) } }
            i += chunk
        }
        return (out, parser)
    }

    @Test func readsEventsWhateverTheLineEndsAndPieces() throws {
        let text = "retry: 1500\n\n: keepalive\r\nid: 7\revent: hint\r\ndata: {\"user_id\":\"u\"}\n\nevent: other\ndata: x\n\nid: 8\nevent: hint\n\n"
        for chunk in [1, 2, 5, 1000] {
            let (events, parser) = try events(text, chunk: chunk)
            #expect(events.map(\.type) == ["hint", "other", "hint"])
            #expect(events[0].id == "7" && events[0].data == #"{"user_id":"u"}"#)
            #expect(events[2].id == "8")
            #expect(parser.lastEventID == "8")
            #expect(parser.retryMilliseconds == 1500)
        }
    }

    @Test func aLineThatNeverEndsIsRefused() {
        #expect(throws: ServerSentEvents.Failure.lineTooLong) {
            _ = try events("data: " + String(repeating: "x", count: 5000), chunk: 512)
        }
        #expect(throws: ServerSentEvents.Failure.lineTooLong) {
            _ = try events(String(repeating: "data: \(String(repeating: "y", count: 1000))\n", count: 5) + "\n", chunk: 64)
        }
    }

    /// An event cut off by a broken connection (no blank line yet) is not acknowledged: its id
    /// became the one sent back at once, and the server, seeing it, sent no catch-up hint.
    @Test func anEventIdCountsOnlyOnceItsEventIsDispatched() throws {
        for chunk in [1, 4, 1000] {
            let (cut, cutParser) = try events("id: 42\nevent: hint\ndata: {}\n\nid: 43\nevent: hint\ndata: {}\n", chunk: chunk)
            #expect(cut.count == 1 && cutParser.lastEventID == "42")
            let (whole, parser) = try events("id: 42\nevent: hint\ndata: {}\n\nid: 43\nevent: hint\ndata: {}\n\n", chunk: chunk)
            #expect(whole.map(\.id) == ["42", "43"] && parser.lastEventID == "43")
        }
    }

    /// A byte order mark at the start is not part of the first field's name (its `retry` was
    /// ignored); a `retry` of any number of digits is read, the largest saturating.
    @Test func aByteOrderMarkIsSkippedAndRetryIsAnyRunOfDigits() throws {
        for chunk in [1, 2, 1000] {
            #expect(try events("\u{FEFF}retry: 1500\n\n", chunk: chunk).parser.retryMilliseconds == 1500)
            #expect(try events("retry: 0000000001500\n\n", chunk: chunk).parser.retryMilliseconds == 1500)
            #expect(try events("retry: 123456789012345678901234567890\n\n", chunk: chunk).parser.retryMilliseconds == Int.max)
            // Bytes that only begin like a byte order mark are text (here, of a comment).
            let (out, parser) = try events(":\u{FEFF}\nevent: hint\ndata: x\n\n", chunk: chunk)
            #expect(out.map(\.type) == ["hint"] && parser.retryMilliseconds == nil)
        }
    }

    /// A response that is not a 200 is not a stream: an error page holding a hint neither
    /// counted as a connection nor refreshed (it did both: its body was read as events).
    @Test func anErrorResponseHoldingEventsIsNotReadAsAStream() throws {
        let server = try ReferenceServer(feed: Fixtures.root + "/Tests/c/empty_feed.json")
        try server.admin("POST", "/_admin/stream_fault", #"{"status":503,"events":true,"times":1000}"#)
        let c = try ContentCardsController(json: #"""
            {"userId":"eve","refreshTokens":0,"timeoutSeconds":5,"source":{"url":"\#(server.url)","hints":{"idleSeconds":2,"retryMaxSeconds":1}}}
            """#)
        defer { c.close() }
        let deadline = Date().addingTimeInterval(5)
        while c.diagnostics().hints.lastError == nil && Date() < deadline { usleep(10_000) }
        usleep(300_000)     // a second answer or more (the backoff waits at most 1 s)
        let hints = c.diagnostics().hints
        #expect(hints.lastError?.contains("HTTP 503") == true, "\(hints)")
        #expect(hints.connects == 0 && !hints.connected && hints.streamHints == 0, "\(hints)")
        #expect(c.diagnostics().hints.refreshes == 0)
    }

    /// A connection that fails slowly is a failure: a server that accepts and never answers
    /// (dropped after `idleSeconds`) counted as a success once the request had lasted long
    /// enough, resetting the backoff, so a fleet reconnected in step. Success is now timed
    /// from the stream's first byte (here shortened from 10 s to 0.5, the drop coming at 1 s).
    @Test func aConnectionThatFailsSlowlyBacksOff() throws {
        let server = try ReferenceServer(feed: Fixtures.root + "/Tests/c/empty_feed.json")
        try server.admin("POST", "/_admin/stream_fault", #"{"mode":"silent_accept","times":1000}"#)
        var config = try ConfigurationJSON.decode(#"""
            {"userId":"gus","refreshTokens":0,"timeoutSeconds":5,"source":{"url":"\#(server.url)","hints":{"idleSeconds":1,"retryMaxSeconds":1}}}
            """#)
        config.hints?.lastingSeconds = 0.5
        let c = try ContentCardsController(configuration: config)
        defer { c.close() }
        func failures() -> Int { c.lock.withLock { c.refresher.hintStream }?.snapshot.failures ?? -1 }
        let deadline = Date().addingTimeInterval(10)
        while failures() < 2 && Date() < deadline { usleep(20_000) }
        #expect(failures() >= 2)
        #expect(c.diagnostics().hints.connects == 0)
    }

    /// The diagnostics name the last event id (it was always null), and forgetting the current
    /// user drops it and connects again (the stream went on with the forgotten user's
    /// connection, token and event id).
    @Test func forgettingTheCurrentUserStartsTheStreamAnew() throws {
        let server = try ReferenceServer(feed: Fixtures.root + "/Tests/c/empty_feed.json")
        let c = try ContentCardsController(json: #"""
            {"userId":"fay","refreshTokens":0,"timeoutSeconds":5,"source":{"url":"\#(server.url)","hints":{"idleSeconds":2}}}
            """#)
        defer { c.close() }
        func wait(_ what: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(5)
            while !what() && Date() < deadline { usleep(10_000) }
            return what()
        }
        #expect(wait { c.diagnostics().hints.connected })
        try server.admin("POST", "/_admin/hint", #"{"user_id":"fay"}"#)
        #expect(wait { c.diagnostics().hints.lastEventID != nil }, "\(c.diagnostics().hints)")
        let before = c.diagnostics().hints.connects
        _ = try c.forgetUser()
        #expect(c.diagnostics().hints.lastEventID == nil)
        #expect(wait { c.diagnostics().hints.connects > before && c.diagnostics().hints.connected },
                "\(c.diagnostics().hints)")
    }

    @Test func theStreamMakesANewCardVisibleWithoutARefreshCall() throws {
        let server = try ReferenceServer(feed: Fixtures.root + "/Tests/c/empty_feed.json")
        let c = try ContentCardsController(json: #"""
            {"userId":"nia","refreshTokens":0,"timeoutSeconds":5,"source":{"url":"\#(server.url)","hints":{"idleSeconds":2}}}
            """#)
        defer { c.close() }
        let deadline = Date().addingTimeInterval(5)
        while !c.diagnostics().hints.connected && Date() < deadline { usleep(10_000) }
        #expect(c.diagnostics().hints.connected)
        try server.admin("POST", "/_admin/cards", #"{"user_id":"nia","cards":[{"id":"via-hint","tp":"short_news","ca":1763799999,"ds":"d"}]}"#)
        let shown = Date().addingTimeInterval(3)
        while (try? c.card(id: "via-hint")) == nil && Date() < shown { usleep(5_000) }
        #expect(try c.card(id: "via-hint").id == "via-hint")
        #expect(c.diagnostics().hints.streamHints >= 1)
    }

    /// A user change while the stream waits for the user's token: the stream connects for the
    /// new user. The interrupt found no socket to shut down, and the connection went on for
    /// the user read before it, and stayed (the new user's hints never came).
    @Test func aUserChangeWhileTheStreamAsksForItsTokenConnectsForTheNewUser() throws {
        let server = try ReferenceServer(feed: Fixtures.root + "/Tests/c/empty_feed.json")
        let c = try ContentCardsController(json: #"""
            {"userId":"ann","refreshTokens":0,"timeoutSeconds":5,"source":{"url":"\#(server.url)","hints":{"idleSeconds":5}}}
            """#)
        defer { c.close() }
        final class Gate: @unchecked Sendable {
            let lock = NSCondition()
            var asked = false, open = false
        }
        let gate = Gate()
        try c.setTokenProvider { user in
            if user == "cat" {
                gate.lock.lock()
                gate.asked = true
                gate.lock.broadcast()
                while !gate.open { gate.lock.wait() }
                gate.lock.unlock()
            }
            return .success(AuthToken("token-\(user)"))
        }
        try c.changeUser("cat")
        gate.lock.lock()
        let deadline = Date().addingTimeInterval(5)
        while !gate.asked && Date() < deadline { _ = gate.lock.wait(until: deadline) }
        gate.lock.unlock()
        #expect(gate.asked)
        try c.changeUser("ben")
        gate.lock.lock()
        gate.open = true
        gate.lock.broadcast()
        gate.lock.unlock()
        func open() throws -> [String: JSONValue] {
            guard case .object(let users)? = try server.admin("GET", "/_admin/streams")["by_user"] else { return [:] }
            return Dictionary(users.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
        }
        let until = Date().addingTimeInterval(5)
        while (try open())["ben"] == nil && Date() < until { usleep(20_000) }
        usleep(300_000)     // a connection for the user before would have opened by now
        let streams = try open()
        #expect(streams["ben"] != nil, "\(streams)")
        #expect(streams["cat"] == nil, "\(streams)")
    }

    /// A user change while the stream waits for a provider that does not answer: the stream
    /// gives the wait up and connects for the new user at once. It waited for the old user's
    /// token for the whole connection timeout (here 20 s) first.
    @Test func aUserChangeGivesUpTheWaitForTheOldUsersToken() throws {
        let server = try ReferenceServer(feed: Fixtures.root + "/Tests/c/empty_feed.json")
        let c = try ContentCardsController(json: #"""
            {"userId":"ann","refreshTokens":0,"timeoutSeconds":5,"source":{"url":"\#(server.url)","hints":{"idleSeconds":20}}}
            """#)
        let release = DispatchSemaphore(value: 0)
        defer { release.signal(); c.close() }
        let asked = DispatchSemaphore(value: 0)
        try c.setTokenProvider { user in
            if user == "cat" {
                asked.signal()
                _ = release.wait(timeout: .now() + 30)
            }
            return .success(AuthToken("token-\(user)"))
        }
        try c.changeUser("cat")
        #expect(asked.wait(timeout: .now() + 5) == .success)
        let changed = Date()
        try c.changeUser("ben")
        func streams() throws -> [String: JSONValue] {
            guard case .object(let users)? = try server.admin("GET", "/_admin/streams")["by_user"] else { return [:] }
            return Dictionary(users.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
        }
        while (try streams())["ben"] == nil && Date().timeIntervalSince(changed) < 15 { usleep(20_000) }
        #expect((try streams())["ben"] != nil)
        #expect(Date().timeIntervalSince(changed) < 10)
    }

    @Test func hintsForAnotherUserAreIgnoredAndNeedASource() throws {
        let none = try ContentCardsController(json: "{}")
        #expect(throws: ContentCardsError.self) { try none.hint() }
        let c = try ContentCardsController(json: #"{"userId":"u","source":{"callback":true}}"#)
        try c.hint(user: "v")
        #expect(c.diagnostics().hints.ignored == 1)
        #expect(throws: ContentCardsError.self) {
            _ = try ContentCardsController(json: #"{"source":{"file":"/x","hints":true}}"#)
        }
        // Under a second, a stream refused at once would be made again many times a second.
        #expect(throws: ContentCardsError.self) {
            _ = try ContentCardsController(json: #"{"source":{"url":"http://127.0.0.1:9","hints":{"retryMaxSeconds":0.001}}}"#)
        }
    }
}
