import Foundation
import Testing
@testable import ContentCards

@Suite struct FeedTests {
    @Test func refreshFromTheSampleFeed() throws {
        let c = try makeController()
        let summary = try c.refresh()
        #expect(summary.added == 11 && summary.fullSync)
        #expect(summary.leftOut.count == 3)
        #expect(try c.cards().map(\.id) == ["tile-2", "banner-noclass", "test-1", "coupon-control", "coupon-1",
                                            "msg-3", "msg-2", "msg-1", "tile-3", "tile-1"])
        #expect(try c.counts() == FeedCounts(total: 10, unviewed: 9, unread: 9))
    }

    /// `cardsJSON` is written straight from the published cards, not from `cards()`:
    /// the two must agree for every filter, after dismissals, expiry and read state too.
    @Test func cardsJSONIsTheCardsAsJSON() throws {
        let clock = ManualClock(1_763_800_000)
        let c = try makeController(clock: clock)
        #expect(try c.cardsJSON() == "[]")
        try c.refresh()
        let filters = [ClassTypeFilter.all, ClassTypeFilter(["home_tile"]), ClassTypeFilter(["coupon_code", "message_webview"]),
                       ClassTypeFilter(["no_such_type"])]
        func check() throws {
            for filter in filters {
                let json = try c.cardsJSON(filter)
                #expect(json == CardJSON.encode(try c.cards(filter)))
                #expect(try CardJSON.decodeList(json) == (try c.cards(filter)))
            }
        }
        try check()
        _ = try c.logDismissal(cardID: "tile-2")
        _ = try c.logImpression(cardID: "msg-1")
        try c.apply("[\(Fixtures.wire("soon", created: 2_000_000_000, extra: #""ea":1763800010"#))]")
        #expect(try c.cards().first?.id == "soon")
        try check()
        clock.set(1_763_800_010)
        #expect(try !c.cards().contains { $0.id == "soon" || $0.id == "tile-2" })
        try check()
    }

    /// `cardsJSONMallocedIndexed` (cc_controller_feed_indexed): the same text as `cardsJSON`,
    /// and offsets that bound each card exactly, for every filter and for the empty feed; and
    /// the same offsets from the path that writes copied cards (an image cache's).
    @Test func indexedFeedBoundsEachCard() throws {
        let c = try makeController()
        func check(_ filter: ClassTypeFilter, cards expected: Int) throws {
            guard let feed = try c.cardsJSONMallocedIndexed(filter) else { Issue.record("no memory"); return }
            defer { free(feed.text) }
            let bytes = Array(UnsafeBufferPointer(start: UnsafeRawPointer(feed.text).assumingMemoryBound(to: UInt8.self),
                                                  count: feed.length))
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text == (try c.cardsJSON(filter)))
            let offsets = Array(UnsafeBufferPointer(start: feed.offsets, count: feed.count + 1))
            #expect(feed.count == expected && offsets.last == feed.length)
            let cards = try c.cards(filter)
            #expect(cards.count == feed.count)
            for (i, card) in cards.enumerated() {
                let span = bytes[offsets[i]..<(offsets[i + 1] - 1)]
                #expect(String(decoding: span, as: UTF8.self) == CardJSON.encode(card))
                #expect(bytes[offsets[i + 1] - 1] == (i + 1 == cards.count ? UInt8(ascii: "]") : UInt8(ascii: ",")))
            }
            var recorded: [Int]? = []
            let copied = CardJSON.feed(cards, offsets: &recorded)
            #expect(recorded == offsets && copied.bytes == bytes)
        }
        try check(.all, cards: 0)
        if let empty = try c.cardsJSONMallocedIndexed() {
            defer { free(empty.text) }
            #expect(Array(UnsafeBufferPointer(start: empty.offsets, count: 1)) == [2])
        }
        try c.refresh()
        try check(.all, cards: 10)
        try check(ClassTypeFilter(["coupon_code", "message_webview"]), cards: 4)
        try check(ClassTypeFilter(["no_such_type"]), cards: 0)
    }

    @Test func orderIsPinnedThenNewestThenIdDescending() throws {
        let c = try makeController()
        try c.apply(Fixtures.payload([Fixtures.wire("a", created: 5), Fixtures.wire("b", created: 5),
                                      Fixtures.wire("c", created: 9), Fixtures.wire("p", created: 1, extra: #""p":true"#)]))
        #expect(try c.cards().map(\.id) == ["p", "c", "b", "a"])
    }

    @Test func expiryIsDecidedAtReadTime() throws {
        let clock = ManualClock(1000)
        let c = try makeController(clock: clock)
        try c.apply("[\(Fixtures.wire("soon", created: 1, extra: #""ea":1010"#)),\(Fixtures.wire("never", created: 1))]")
        #expect(try c.cards().map(\.id) == ["soon", "never"])
        clock.set(1010)
        #expect(try c.cards().map(\.id) == ["never"])
        #expect(try c.counts().total == 1)
        // Still stored: readable by id.
        #expect(try c.card(id: "soon").id == "soon")
    }

    @Test func countsWithControlAndDismissedCards() throws {
        let c = try makeController()
        try c.apply("[\(Fixtures.wire("k", type: "control")),\(Fixtures.wire("a", extra: #""db":true"#)),\(Fixtures.wire("b"))]")
        #expect(try c.counts() == FeedCounts(total: 3, unviewed: 2, unread: 2))
        try c.logDismissal(cardID: "a")
        #expect(try c.counts() == FeedCounts(total: 2, unviewed: 1, unread: 1))
        try c.logImpression(cardID: "b")
        try c.logImpression(cardID: "b")
        #expect(try c.counts() == FeedCounts(total: 2, unviewed: 0, unread: 1))
        try c.logImpression(cardID: "k")
        #expect(try c.counts() == FeedCounts(total: 2, unviewed: 0, unread: 1))
    }

    @Test func countsAndFeedPerClassType() throws {
        let c = try makeController()
        try c.refresh()
        #expect(try c.counts(ClassTypeFilter(["coupon_code"])) == FeedCounts(total: 2, unviewed: 1, unread: 1))
        #expect(try c.counts(ClassTypeFilter(["home_tile"])) == FeedCounts(total: 3, unviewed: 3, unread: 3))
        #expect(try c.cards(ClassTypeFilter([""])).map(\.id) == ["banner-noclass", "test-1"])
        #expect(try c.cards(ClassTypeFilter(["MESSAGE_WEBVIEW"])).map(\.id) == ["msg-3", "msg-2"])
    }
}
