import Foundation
import Testing
@testable import ContentCards

/// Read state (docs/BEHAVIOUR.md, "Read state"): the scenario of Tests/c/test_read_state.c and
/// bindings/python/tests/test_read_state.py, with the same results, and merge rule 9.
@Suite struct ReadStateTests {
    static let cards = #"""
    {"cards":[
     {"id":"m-1","tp":"short_news","ca":10,"ds":"one","e":{"class_type":"message"}},
     {"id":"m-2","tp":"short_news","ca":20,"ds":"two","e":{"class_type":"message"}},
     {"id":"t-1","tp":"short_news","ca":30,"ds":"tile","rd":true,"e":{"class_type":"tile"}},
     {"id":"ctl","tp":"control","ca":40}]}
    """#

    @Test func markReadUnreadAndAll() throws {
        let c = try ContentCardsController(json: #"{"userId":"u"}"#)
        try c.apply(Self.cards)
        #expect(try c.counts() == FeedCounts(total: 4, unviewed: 3, unread: 2))
        #expect(try c.unreadCount(ClassTypeFilter(["message"])) == 2)
        #expect(try c.unreadCount(ClassTypeFilter(["tile"])) == 0)

        #expect(try c.markRead(cardID: "m-1").stateChanged)
        #expect(try c.counts() == FeedCounts(total: 4, unviewed: 3, unread: 1))   // impressions apart
        let again = try c.markRead(cardID: "m-1")
        #expect(!again.stateChanged && again.eventID == nil)
        #expect(try c.markUnread(cardID: "t-1").stateChanged)
        #expect(try c.unreadCount(ClassTypeFilter(["tile"])) == 1)
        #expect(try c.cards(ClassTypeFilter(["message"])).map { "\($0.id):\($0.read)" } == ["m-2:false", "m-1:true"])

        #expect(try c.markAllRead(ClassTypeFilter(["message"])) == 1)
        #expect(try c.unreadCount() == 1)
        #expect(try c.markAllRead() == 2)              // t-1 and the control card
        #expect(try c.unreadCount() == 0)
        #expect(try c.markAllRead() == 0)

        let pending = try c.listPendingEvents()
        #expect(pending.pending == 5)
        #expect(pending.events.prefix(2).map { "\($0.kind.rawValue) \($0.cardID ?? "")" } == ["read m-1", "unread t-1"])

        #expect(throws: ContentCardsError.self) { try c.markRead(cardID: "nope") }
        c.close()
        #expect(throws: ContentCardsError.self) { try c.unreadCount() }
    }

    @Test func subscribersHearReadChanges() throws {
        let c = try ContentCardsController(json: #"{"userId":"u"}"#)
        try c.apply(Self.cards)
        let log = UpdateLog()
        try c.subscribe { log.add($0) }
        try c.markRead(cardID: "m-1")
        try c.markRead(cardID: "m-1")                  // no change: no update
        try c.markUnread(cardID: "m-1")
        try c.markAllRead()
        #expect(log.all.map { "\($0.reason.rawValue) \($0.cardID ?? "-") \($0.counts.unread)" } == ["read m-1 1", "unread m-1 2", "read - 0"])
    }

    @Test func readStateIsDurableAndStoredCompactly() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let json = #"{"userId":"u","storagePath":"\#(dir)/store"}"#
        do {
            let c = try ContentCardsController(json: json)
            try c.apply(Self.cards)
            try c.markRead(cardID: "m-2")
            c.close()
        }
        let c = try ContentCardsController(json: json)
        #expect(try c.unreadCount() == 1)
        #expect(try c.card(id: "m-2").read)
        let stored = try #require(StoredCard.encode(try c.card(id: "m-2")))
        #expect(stored.withUnsafeBufferPointer { StoredCard.decode($0, id: "m-2", knownClassTypes: nil) }?.read == true)
        #expect(CardJSON.encode(try c.card(id: "m-2")).contains(#""dismissed":false,"read":true,"#))
        #expect(try CardJSON.decode(CardJSON.encode(try c.card(id: "m-2"))) == (try c.card(id: "m-2")))
    }

    // MARK: Merge rule 9

    func card(_ id: String, read: Bool) -> Card {
        Card(id: id, created: 100, read: read, content: .classic(.init(cardDescription: "d")))
    }

    func state(_ cards: [Card]) -> StoredUser {
        StoredUser(cards: Dictionary(uniqueKeysWithValues: cards.map { (CardKey($0.id), $0) }))
    }

    @Test func rule9_theServersReadStateWinsWhenItCarriesOne() {
        var s = state([card("a", read: true), card("b", read: false), card("c", read: true)])
        _ = Merge.apply(Payload(cards: [.init(card: card("a", read: false), read: false),
                                        .init(card: card("b", read: true), read: true),
                                        .init(card: card("c", read: false), read: nil)]), to: &s)
        #expect(s.cards["a"]?.read == false)   // unread on another device
        #expect(s.cards["b"]?.read == true)
        #expect(s.cards["c"]?.read == true)    // no "rd": the local state stays
    }

    @Test func rule9_aChangeNotYetDeliveredWins() {
        var s = state([card("a", read: true)])
        _ = Merge.apply(Payload(cards: [.init(card: card("a", read: false), read: false)]), to: &s, pendingRead: ["a"])
        #expect(s.cards["a"]?.read == true)
    }

    @Test func rule9_throughTheControllerAndTheOutbox() throws {
        let c = try ContentCardsController(json: #"{"userId":"u"}"#)
        try c.apply(Self.cards)
        try c.markRead(cardID: "m-1")                  // pending: not delivered (no sink)
        try c.apply(#"[{"id":"m-1","tp":"short_news","ca":10,"ds":"one","rd":false},{"id":"m-2","tp":"short_news","ca":20,"ds":"two","rd":true}]"#)
        #expect(try c.card(id: "m-1").read)            // kept: its read event is still pending
        #expect(try c.card(id: "m-2").read)            // taken from the server
    }

    /// A local change is never lost to a sync that crosses it: the change is made and its
    /// event delivered while a sync is out, and that sync answers with the old state. Read
    /// state (not sticky) is kept by rule 9 for the whole window; viewed, clicked and dismissed
    /// by being sticky (rules 4 and 6). Each, for a change made before the sync started
    /// (pending then) and one made while it was out.
    @Test(arguments: [false, true])
    func aSyncThatCrossesALocalChangeDoesNotUndoIt(changeBeforeTheSyncStarts: Bool) throws {
        let gate = HangTests.Gate()
        let syncs = HangTests.Counter()
        // The server's view, as of before the changes: all unread, unviewed, not dismissed.
        let stale = #"{"cards":[{"id":"r","tp":"short_news","ca":10,"ds":"read","rd":false},{"id":"u","tp":"short_news","ca":11,"ds":"unread","rd":true},{"id":"v","tp":"short_news","ca":12,"ds":"viewed","u":"https://example.com/v","rd":false},{"id":"d","tp":"short_news","ca":13,"ds":"dismissed","db":true,"rd":false}],"full_sync":true}"#
        let c = try ContentCardsController(
            json: #"{"userId":"x","source":{"callback":true},"events":{"callback":true},"eventFlushIntervalSeconds":0,"refreshTokens":0}"#,
            transport: ClosureTransport { request in
                switch request.kind {
                case .sync:
                    syncs.add()
                    if syncs.value > 1 { gate.wait(max: 20) }   // the crossing sync is held out
                    return .success(TransportResponse(status: 200, body: Array(stale.utf8)))
                default:
                    return .success(TransportResponse(status: 200, body: []))
                }
            })
        defer { gate.open(); c.close() }
        try c.refresh(timeout: 5)
        func change() throws {
            try c.markRead(cardID: "r")
            try c.markUnread(cardID: "u")
            try c.logImpression(cardID: "v")
            #expect(try c.logClick(cardID: "v").stateChanged)
            try c.logDismissal(cardID: "d")
        }
        if changeBeforeTheSyncStarts { try change() }
        final class Box: @unchecked Sendable { var result: Result<SyncSummary, ContentCardsError>? }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        try c.refreshInBackground(timeout: 20) { box.result = $0; done.signal() }
        #expect(HangTests.finishes(within: 10) { while syncs.value < 2 { usleep(1_000) } })
        if !changeBeforeTheSyncStarts { try change() }
        // Delivered while the sync is still out: nothing is pending any more.
        #expect(try c.flushEvents(timeout: 5).pending == 0)
        gate.open()
        #expect(done.wait(timeout: .now() + 20) == .success)
        #expect((try? box.result?.get()) != nil, "\(String(describing: box.result))")
        let card = { (id: String) throws -> Card in try c.card(id: id) }
        #expect(try card("r").read == true, "a read change was lost to the crossing sync")
        #expect(try card("u").read == false, "an unread change was lost to the crossing sync")
        let v = try card("v")
        #expect(v.viewed && v.clicked, "\(CardJSON.encode(v))")
        #expect(try card("d").dismissed)
        // The next sync, which no change crosses, takes the server's read state again.
        try c.refresh(timeout: 5)
        #expect(try card("r").read == false && card("u").read == true)
    }

    @Test func theWireKeyIsRead() throws {
        let payload = try PayloadDecoder().decode(#"[{"id":"a","tp":"control","ca":1,"rd":true},{"id":"b","tp":"control","ca":1},{"id":"c","tp":"control","ca":1,"rd":"yes"}]"#)
        #expect(payload.cards.map(\.read) == [true, nil])
        #expect(payload.cards[0].card.read && !payload.cards[1].card.read)
        #expect(payload.leftOut.first?.reason.contains("rd") == true)
    }
}
