import Testing
@testable import ContentCards

/// Values from the configuration and from servers that reach HTTP
/// headers and messages; the Retry-After header as RFC 9110 writes it.
@Suite struct MessageSafetyTests {
    func configError(_ json: String) -> String? {
        do { _ = try ConfigurationJSON.decode(json); return nil } catch { return error.message }
    }

    // MARK: Item 10

    @Test func controlCharactersInTheAPIKeyAreRefused() {
        for key in [#"k\r\nX-Admin: 1"#, #"k\nx"#, #"k\rx"#, #"k\u0000x"#, #"k\u001bx"#, #"k\u007fx"#] {
            for endpoint in ["source", "events"] {
                let m = configError(#"{"\#(endpoint)":{"url":"http://127.0.0.1:1","apiKey":"\#(key)"}}"#)
                #expect(m?.contains("\"\(endpoint).apiKey\" must not contain control characters") == true, "\(key): \(m ?? "accepted")")
            }
        }
        #expect(configError(#"{"source":{"url":"http://127.0.0.1:1","apiKey":"k\tey-1"}}"#) == nil)
    }

    @Test func headersAreCheckedWhereTheyAreBuiltToo() {
        // Past the configuration (a source made directly): the request is not sent.
        let sent = Counter()
        let transport = ClosureTransport { _ in sent.add(); return .success(TransportResponse(status: 200, body: [])) }
        let source = RemoteSource(url: "http://127.0.0.1:1/content_cards/sync", apiKey: "k\r\nX-Injected: 1", maxBytes: 1000) { .success(transport) }
        let result = source.fetch(userID: "u", deviceID: "", cursors: SyncCursors(), validator: nil, timeout: 1)
        guard case .failure(let e) = result else { Issue.record("sent"); return }
        #expect(e.code == .config && e.message.contains("control character"))
        let sink = RemoteEventSink(url: "http://127.0.0.1:1/events", apiKey: "k\nx") { .success(transport) }
        guard case .retry(let e2) = sink.deliver([Event(id: "1", kind: .feedDisplayed, cardID: nil, classType: nil, userID: "u", time: 1)], timeout: 1) else {
            Issue.record("delivered"); return
        }
        #expect(e2.message.contains("control character"))
        #expect(CurlTransport().send(TransportRequest(kind: .sync, url: "http://127.0.0.1:1", headers: [("X-Api-Key", "a\rb")], body: [], timeout: 1, maxResponseBytes: 10)).failureCode == .config)
        #expect(sent.value == 0)
    }

    @Test func credentialsInURLsAreRedactedFromMessages() {
        let m = configError(#"{"source":{"url":"ftp://alice:s3cret@example.com/x?api_key=K123&page=2&token=T9"}}"#) ?? ""
        #expect(!m.contains("s3cret") && !m.contains("alice") && !m.contains("K123") && !m.contains("T9"), "\(m)")
        #expect(m.contains("ftp://***@example.com/x?api_key=***&page=2&token=***"), "\(m)")
        let spaced = configError(#"{"source":{"url":"https://bob:pw@host/a b"}}"#) ?? ""
        #expect(spaced.contains("must not contain spaces") && !spaced.contains("pw"), "\(spaced)")
        #expect(Redact.url("https://user:pa@ss@host:8/p@th?x=1") == "https://***@host:8/p@th?x=1")
        #expect(Redact.url("https://host/p?Password=abc#frag") == "https://host/p?Password=***#frag")
        #expect(Redact.scrub("Failed to connect to https://u:p@h/x (u:p)", url: "https://u:p@h/x") == "Failed to connect to https://***@h/x (***)")
    }

    @Test func theTextSearchFindsWhatTheStandardLibrarysDoes() {
        // Redact's own search stands in for `_StringProcessing`'s `firstRange(of:)`, which the
        // library does not link (Tests/c/check_exports.sh): the same range for every pair,
        // compared character by character (canonically equivalent forms match, a letter does
        // not match the same letter with a combining mark).
        let texts = ["", "a", "aaab", "abcabcabd", "https://u:p@h/x", "x://y://z", "caf\u{E9}", "cafe\u{301}!",
                     "e\u{301}e", "\u{1F469}\u{200D}\u{1F4BB}://", "::///", "\r\n://\u{0}"]
        let targets = ["", "a", "aab", "abd", "://", "e", "\u{E9}", "e\u{301}", "\u{1F469}", "//", "\r", "\n", "zz"]
        for text in texts {
            for target in targets {
                #expect(text.firstRange(ofText: target) == text.firstRange(of: target), "\(text.debugDescription) \(target.debugDescription)")
                let tail = text.dropFirst()
                #expect(tail.firstRange(ofText: target) == tail.firstRange(of: target), "\(tail.debugDescription) \(target.debugDescription)")
            }
        }
        #expect("a-b-a".replacingAll("a", with: "xy") == "xy-b-xy")
        #expect("aaa".replacingAll("aa", with: "b") == "ba")
    }

    @Test func serverTextIsEscapedAndBounded() {
        let body = Array("\u{1b}[31mred\u{1b}[0m\r\nnext\u{7}".utf8) + Array(repeating: UInt8(ascii: "z"), count: 5000)
        let e = HTTPStatus.error(for: TransportResponse(status: 500, body: body), what: "sync")
        #expect(!e.message.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(e.message)")
        #expect(e.message.contains(#"\u001b[31mred\u001b[0m\u000d\u000anext\u0007"#), "\(e.message)")
        #expect(e.message.count < 300 && e.message.hasSuffix("…"))
        #expect(e.code == .server && e.message.contains("HTTP 500"))
        let bad = HTTPStatus.error(for: TransportResponse(status: 502, body: [0xFF, 0xC3, 0x28, 0x9B]), what: "sync")
        #expect(!bad.message.unicodeScalars.contains { $0.value == 0x9B })
    }

    // MARK: Item 12

    @Test func retryAfterIsReadAsRFC9110Says() {
        let now = 784_111_777.0   // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryAfter.parse("120", now: now) == 120)
        #expect(RetryAfter.parse("  0 ", now: now) == 0)
        #expect(RetryAfter.parse("007", now: now) == 7)
        for bad in ["1e999", "7abc", "-5", "+5", "1.5", "", " ", "0x10", "7 s", "inf", "NaN", "１２"] {
            #expect(RetryAfter.parse(bad, now: now) == nil, "\(bad)")
        }
        #expect(RetryAfter.parse("99999999999999999999999999", now: now).map { $0 >= 3600 } == true)
        // The three date forms, 90 s after `now`.
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:51:07 GMT", now: now) == 90)
        #expect(RetryAfter.parse("Sunday, 06-Nov-94 08:51:07 GMT", now: now) == 90)
        #expect(RetryAfter.parse("Sun Nov  6 08:51:07 1994", now: now) == 90)
        // A date in the past: no wait.
        #expect(RetryAfter.parse("Sat, 05 Nov 1994 08:49:37 GMT", now: now) == 0)
        for bad in ["Sun, 06 Nov 1994 08:51:07 UTC", "Sun, 6 Nov 1994 08:51:07 GMT", "Sun, 31 Feb 1994 08:51:07 GMT",
                    "Xyz, 06 Nov 1994 08:51:07 GMT", "Sun, 06 Nov 1994 25:51:07 GMT", "Sun Nov 6 08:51:07 1994",
                    "Sunday, 06-Nov-1994 08:51:07 GMT", "Sun, 06 Nov 1994 08:51:07 GMT junk"] {
            #expect(RetryAfter.parse(bad, now: now) == nil, "\(bad)")
        }
        // RFC 850's two-digit year: more than 50 years ahead means the previous century.
        let y2026 = 1_795_000_000.0
        #expect(RetryAfter.httpDate("Saturday, 01-Jan-77 00:00:00 GMT", now: y2026) == 220_924_800)   // 1977
        #expect(RetryAfter.httpDate("Thursday, 01-Jan-70 00:00:00 GMT", now: y2026) == 3_155_760_000)  // 2070
        #expect(RetryAfter.daysFromCivil(2000, 3, 1) == 11_017)
    }

    @Test func theWaitReportedIsTheWaitEnforced() {
        let e = HTTPStatus.error(for: TransportResponse(status: 429, body: [], retryAfter: 31_536_000), what: "sync")
        #expect(e.retryAfter == RetryAfter.maxSeconds)
        #expect(e.message.contains("retry after 3600 s"), "\(e.message)")
        let f = HTTPStatus.error(for: TransportResponse(status: 503, body: [], retryAfter: 2.2), what: "sync")
        #expect(f.retryAfter == 2.2 && f.message.contains("retry after 3 s"))
        #expect(HTTPStatus.error(for: TransportResponse(status: 503, body: [], retryAfter: .infinity), what: "s").retryAfter == nil)
    }
}

final class Counter: @unchecked Sendable {
    private let lock = Lock()
    private var n = 0
    func add() { lock.withLock { n += 1 } }
    var value: Int { lock.withLock { n } }
}

extension Result where Failure == ContentCardsError {
    var failureCode: ContentCardsError.Code? {
        if case .failure(let e) = self { return e.code }
        return nil
    }
}
