import Foundation
import Testing
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

/// Compressed transfers and conditional sync, against the reference
/// server over real HTTP on 127.0.0.1.
@Suite(.serialized) struct TransferTests {
    func controller(_ server: ReferenceServer, user: String, storage: String? = nil, extra: String = "") throws -> ContentCardsController {
        let path = storage.map { #","storagePath":"\#($0)""# } ?? ""
        return try ContentCardsController(json: #"""
            {"userId":"\#(user)","refreshTokens":0,"timeoutSeconds":10,
             "source":{"url":"\#(server.url)"},"events":{"url":"\#(server.url)"},
             "eventFlushIntervalSeconds":0\#(path)\#(extra)}
            """#)
    }

    func requests(_ server: ReferenceServer) throws -> [JSONValue] {
        guard case .array(let list)? = try server.admin("GET", "/_admin/requests")["requests"] else { return [] }
        return list
    }

    // MARK: Item 1: compression

    @Test func syncAsksForGzipAndDecodesIt() throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "zed")
        let summary = try c.refresh()
        #expect(summary.fullSync && summary.added == 11)
        let sent = try requests(server)
        #expect(sent.count == 1)
        #expect(sent[0]["accept_encoding"]?.stringValue?.contains("gzip") == true)
        #expect(sent[0]["response_encoding"] == .string("gzip"))
    }

    @Test func aGzipBombIsAnErrorNotAnAllocation() throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "bomb", extra: #","maxPayloadBytes":1048576"#)
        try c.refresh()
        try server.fault(#"{"body":"gzip_bomb"}"#)
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let before = usage.ru_maxrss
        do { try c.refresh(); Issue.record("a bomb was accepted") } catch {
            #expect(error.code == .parse && error.message.contains("too large"), "\(error.message)")
            #expect(error.message.contains("1048576"))
        }
        getrusage(RUSAGE_SELF.rawValue, &usage)
        // 256 MiB once inflated: the peak grew by far less (the decoded bytes stop at the limit).
        #expect(usage.ru_maxrss - before < 64 * 1024, "max RSS grew by \(usage.ru_maxrss - before) KiB")
        #expect(try c.counts().total == 10)    // the cached feed is untouched
    }

    @Test func aBodyThatIsNotTheGzipItClaimsIsRefused() throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "badgz")
        try server.fault(#"{"body":"bad_gzip"}"#)
        do { try c.refresh(); Issue.record("refreshed") } catch {
            #expect(error.code == .parse && error.message.contains("Content-Encoding"), "\(error.message)")
        }
    }

    @Test func eventBatchesGoCompressed() throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "gzev")
        try c.refresh()
        for card in try c.cards() { try c.logImpression(cardID: card.id) }
        let flushed = try c.flushEvents()
        #expect(flushed.delivered == 10)
        #expect(try server.events().count == 10)
        let batch = try requests(server).last { $0["path"] == .string("/events") }
        #expect(batch?["content_encoding"] == .string("gzip"))
        #expect(batch?["status"] == .number("200"))
    }

    @Test func anEndpointThatRefusesGzipGetsPlainJSON() throws {
        let server = try ReferenceServer()
        try server.admin("POST", "/_admin/transfer", #"{"gzip_events":false}"#)
        let c = try controller(server, user: "plain")
        try c.refresh()
        for card in try c.cards() { try c.logImpression(cardID: card.id) }
        #expect(try c.flushEvents().delivered == 10)
        try c.logFeedDisplayed()
        for card in try c.cards() { _ = try? c.logClick(cardID: card.id) }
        try c.flushEvents()
        let batches = try requests(server).filter { $0["path"] == .string("/events") }
        // 415 to the gzip one, the same batch again as JSON, then JSON only.
        #expect(batches.map { $0["status"] ?? .null } == [.number("415"), .number("200"), .number("200")])
        #expect(batches.map { $0["content_encoding"] ?? .null } == [.string("gzip"), .null, .null])
        #expect(try c.pendingEvents() == 0)
        #expect(try server.events().count > 11)
    }

    /// A 415 to the gzipped batch after most of the delivery's time went: the plain resend
    /// gets what is left of the one deadline. It got the whole timeout again, so a delivery
    /// could run twice its bound (and its late answer came after the flush had returned). The
    /// sink as the library's HTTP endpoint makes it (compressing), over a transport in memory.
    @Test func thePlainResendAfterA415GetsWhatIsLeftOfTheTimeout() throws {
        final class Seen: @unchecked Sendable {
            private let lock = NSLock()
            private var timeouts: [Double] = []
            func add(_ t: Double) { lock.lock(); timeouts.append(t); lock.unlock() }
            var all: [Double] { lock.lock(); defer { lock.unlock() }; return timeouts }
        }
        let seen = Seen()
        let transport = ClosureTransport { r in
            if r.headers.contains(where: { $0.name == "Content-Encoding" }) {
                usleep(600_000)
                return .success(TransportResponse(status: 415, body: []))
            }
            seen.add(r.timeout)
            return .success(TransportResponse(status: 200, body: []))
        }
        let sink = RemoteEventSink(url: "http://127.0.0.1:9/events", apiKey: "", compression: EventCompression(),
                                   transport: { .success(transport) })
        // Enough events to be worth compressing (`EventCompression.minimumBytes`).
        let events = (0..<50).map { Event(id: "e\($0)", kind: .impression, cardID: "card-\($0)", classType: nil, userID: "u", time: 1) }
        #expect(sink.deliver(events, timeout: 1) == .delivered)
        let plain = try #require(seen.all.first)
        #expect(plain < 0.5, "the plain resend was given \(plain) s of a 1 s delivery")
    }

    // MARK: Item 2: conditional sync

    @Test func anUnchangedRefreshIsA304WithNoMergeAndNoWrite() throws {
        let server = try ReferenceServer()
        let dir = Fixtures.temporaryDirectory("etag")
        defer { Fixtures.removeTree(dir) }
        let c = try controller(server, user: "nina", storage: dir)
        defer { c.close() }
        try c.refresh()
        try c.logImpression(cardID: "tile-1")
        let watcher = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        func dataVersion() throws -> Int64 {
            let s = try watcher.prepare("PRAGMA data_version"); defer { s.reset() }
            return try s.step() ? s.int(0) : -1
        }
        let version = try dataVersion()
        let second = try c.refresh()
        #expect(second.notModified && second.added == 0 && !second.fullSync)
        #expect(second.counts.total == 10 && second.counts.unviewed == 8)
        #expect(try dataVersion() == version, "a 304 wrote to the store")
        let sent = try requests(server)
        #expect(sent.map { $0["status"] ?? .null } == [.number("200"), .number("304")])
        #expect(sent[0]["if_none_match"] == .null)
        #expect(sent[1]["if_none_match"]?.stringValue?.hasPrefix("\"") == true)
        // A change on the server: a 200 again, with the change.
        try server.admin("POST", "/_admin/cards", #"{"user_id":"nina","cards":[{"id":"new-1","tp":"short_news","ca":1763799999,"ds":"x"}]}"#)
        let third = try c.refresh()
        #expect(!third.notModified && third.added == 1)
        #expect(try c.refresh().notModified)
    }

    @Test func theValidatorSurvivesReopenAndIsTheUsersOwn() throws {
        let server = try ReferenceServer()
        let dir = Fixtures.temporaryDirectory("etag-reopen")
        defer { Fixtures.removeTree(dir) }
        do {
            let c = try controller(server, user: "olga", storage: dir)
            try c.refresh()
            c.close()
        }
        let c = try controller(server, user: "olga", storage: dir)
        defer { c.close() }
        #expect(try c.refresh().notModified)
        // Another user has no validator: a full sync, never the first user's 304.
        try c.changeUser("pete")
        let other = try c.refresh()
        #expect(other.fullSync && !other.notModified)
        try c.changeUser("olga")
        #expect(try c.refresh().notModified)
        let sent = try requests(server)
        #expect(sent.map { $0["if_none_match"] == .null } == [true, false, true, false])
    }

    @Test func aSchema1StoreIsMigratedAndKeepsItsCards() throws {
        let server = try ReferenceServer()
        let dir = Fixtures.temporaryDirectory("schema1")
        defer { Fixtures.removeTree(dir) }
        do {
            let c = try controller(server, user: "uma", storage: dir)
            try c.refresh()
            c.close()
        }
        do {   // the store as the library before schema 2 left it
            let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
            try db.execute("DROP TABLE sync_state; PRAGMA user_version = 1;")
        }
        let c = try controller(server, user: "uma", storage: dir)
        #expect(try c.counts().total == 10)
        let first = try c.refresh()          // no validator yet: the cursors only
        #expect(!first.notModified && first.added == 0)
        #expect(try c.refresh().notModified)
        c.close()
        let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        let version = try db.prepare("PRAGMA user_version")
        #expect(try version.step() && version.int(0) == CardStore.schemaVersion)
        version.reset()
    }

    @Test func aForcedFullSyncIgnoresTheValidator() throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "quin")
        try c.refresh()
        try server.admin("POST", "/_admin/force_full", #"{"user_id":"quin"}"#)
        let forced = try c.refresh()
        #expect(forced.fullSync && !forced.notModified)
        #expect(try c.refresh().notModified)
    }

    @Test func cardsTheApplicationAppliesDropTheValidator() throws {
        let server = try ReferenceServer()
        let c = try controller(server, user: "rita")
        try c.refresh()
        try c.apply(#"[{"id":"pushed","tp":"short_news","ca":1763799999,"ds":"from a push"}]"#)
        let after = try c.refresh()
        #expect(!after.notModified)
        #expect(try requests(server).last?["if_none_match"] == .null)
    }

    @Test func aHostTransportPassesTheValidatorAndAnswers304() throws {
        let server = try ReferenceServer()
        let seen = LockedBox<[TransportRequest]>([])
        let curl = CurlTransport()
        let host = ClosureTransport { request in
            seen.mutate { $0.append(request) }
            var forwarded = request
            forwarded.url = server.url + request.url
            return curl.send(forwarded)     // the host's own HTTP: here libcurl, uncompressed
        }
        let c = try ContentCardsController(json: #"{"userId":"sam","refreshTokens":0,"source":{"callback":true}}"#, transport: host)
        try c.refresh()
        #expect(try c.refresh().notModified)
        let requests = seen.value
        #expect(requests.count == 2)
        #expect(requests.allSatisfy { !$0.acceptsCompression })
        #expect(!requests[0].headers.contains { $0.name == "If-None-Match" })
        #expect(requests[1].headers.contains { $0.name == "If-None-Match" && $0.value.hasPrefix("\"") })
    }

    @Test func a304ToARequestWithoutAValidatorIsAnError() throws {
        let host = ClosureTransport { _ in .success(TransportResponse(status: 304, body: [])) }
        let c = try ContentCardsController(json: #"{"userId":"tom","refreshTokens":0,"source":{"callback":true}}"#, transport: host)
        do { try c.refresh(); Issue.record("refreshed") } catch {
            #expect(error.code == .server && error.message.contains("304"))
        }
    }
}

/// A value shared between threads in a test.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T { lock.lock(); defer { lock.unlock() }; return stored }
    func mutate(_ body: (inout T) -> Void) { lock.lock(); body(&stored); lock.unlock() }
}
