import Foundation
import Testing
@testable import ContentCards

@Suite struct LoggingTests {
    @Test func impressionMarksViewedOnceAndRecordsEveryEvent() throws {
        let c = try makeController()
        try c.refresh()
        let first = try c.logImpression(cardID: "tile-1")
        let second = try c.logImpression(cardID: "tile-1")
        #expect(first.stateChanged && !second.stateChanged)
        #expect(first.eventID != second.eventID)
        #expect(try c.card(id: "tile-1").viewed)
        #expect(try c.pendingEvents() == 2)
        #expect(try c.unviewedCount() == 8)
    }

    @Test func controlImpressionIsItsOwnEventType() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(#""events":{"file":"\#(dir)/events.jsonl"},"eventFlushIntervalSeconds":0"#)
        try c.refresh()
        try c.logImpression(cardID: "coupon-control")
        try c.flushEvents()
        let line = String(decoding: try Files.read(dir + "/events.jsonl", limit: 1 << 20), as: UTF8.self)
        #expect(line.contains(#""type":"control_impression","card_id":"coupon-control","class_type":"coupon_code","user_id":"u-1""#))
    }

    @Test func clickNeedsAValidURL() throws {
        let c = try makeController()
        try c.refresh()
        #expect(try c.logClick(cardID: "coupon-1").stateChanged)
        #expect(try c.card(id: "coupon-1").clicked)
        // A refusal is a result, not an error: the same fields as Python's.
        let noURL = try c.logClick(cardID: "msg-2")
        #expect(!noURL.recorded && noURL.eventID == nil && !noURL.stateChanged)
        #expect(noURL.reason?.contains("has no url") == true)
        try c.apply("[\(Fixtures.wire("js", extra: #""u":"javascript:alert(1)""#))]")
        let js = try c.logClick(cardID: "js")
        #expect(!js.recorded && js.reason?.contains("no valid url") == true)
        #expect(try c.pendingEvents() == 1)
        #expect(try !c.card(id: "msg-2").clicked)
    }

    @Test func dismissalRules() throws {
        let c = try makeController()
        try c.refresh()
        #expect(try c.logDismissal(cardID: "msg-1").reason?.contains("not dismissible") == true)
        let first = try c.logDismissal(cardID: "tile-1")
        #expect(first.recorded && first.stateChanged && first.reason == nil && first.eventID != nil)
        #expect(try !c.cards().map(\.id).contains("tile-1"))
        let again = try c.logDismissal(cardID: "tile-1")
        #expect(!again.recorded && again.reason?.contains("already dismissed") == true)
        do { try c.logDismissal(cardID: "nope"); Issue.record("an unknown card is an error") } catch {
            #expect(error.code == .notFound)
        }
        #expect(try c.pendingEvents() == 1)
        // Stays out after a refresh that lists it as not dismissed.
        try c.refresh()
        #expect(try !c.cards().map(\.id).contains("tile-1"))
    }

    @Test func unknownCardIdIsAnErrorAndRecordsNothing() throws {
        let c = try makeController()
        try c.refresh()
        for log in [c.logImpression, c.logClick, c.logDismissal] {
            do { _ = try log("nope"); Issue.record("logged an unknown card") } catch {
                #expect(error.code == .notFound && error.message.contains("\"nope\""))
            }
        }
        #expect(throws: ContentCardsError.self) { try c.card(id: "nope") }
        #expect(try c.pendingEvents() == 0)
    }

    @Test func feedDisplayedIsRecorded() throws {
        let c = try makeController()
        let r = try c.logFeedDisplayed()
        #expect(r.eventID == "event-1" && !r.stateChanged)
        #expect(try c.pendingEvents() == 1)
    }

    @Test func stickyFlagsSurviveARefresh() throws {
        let c = try makeController()
        try c.refresh()
        try c.logImpression(cardID: "tile-1")
        try c.logClick(cardID: "tile-1")
        try c.refresh()
        let card = try c.card(id: "tile-1")
        #expect(card.viewed && card.clicked)
    }
}
