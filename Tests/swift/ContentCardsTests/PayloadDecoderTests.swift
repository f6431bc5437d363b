import Foundation
import Testing
@testable import ContentCards

@Suite struct PayloadDecoderTests {
    let decoder = PayloadDecoder()

    @Test func everyWireKeyIsRead() throws {
        let json = #"""
        [{"id":"c1","tp":"captioned_image","ca":1700000000,"ea":1800000000,"v":true,"cl":true,"d":true,
          "p":true,"db":true,"t":true,"uw":true,"u":"https://shop.example.com/sale",
          "i":"https://cdn.example.com/sale.png","image_alt":"A sale","ar":1.5,"tt":"Weekend sale",
          "ds":"20% off everything","dm":"shop.example.com","r":false,"zz":"ignored",
          "e":{"class_type":"Coupon_Code","discount_percentage":"20"}}]
        """#
        let payload = try decoder.decode(json)
        #expect(payload.leftOut.isEmpty)
        let card = try #require(payload.cards.first?.card)
        #expect(card.id == "c1")
        #expect(card.type == .captionedImage)
        #expect(card.created == 1_700_000_000)
        #expect(card.expiresAt == 1_800_000_000)
        #expect(card.viewed && card.clicked && card.dismissed && card.pinned && card.dismissible && card.isTest && card.openURLInWebView)
        #expect(card.url == "https://shop.example.com/sale")
        #expect(card.image == "https://cdn.example.com/sale.png")
        #expect(card.imageAltText == "A sale")
        #expect(card.imageAspectRatio == 1.5)
        #expect(card.title == "Weekend sale")
        #expect(card.cardDescription == "20% off everything")
        #expect(card.domain == "shop.example.com")
        #expect(card.extras == ["class_type": "Coupon_Code", "discount_percentage": "20"])
        #expect(card.classType == "coupon_code")
        #expect(payload.cards.first?.removed == false)
        #expect(!payload.fullSync)
    }

    @Test func defaultsWhenKeysAreAbsent() throws {
        let card = try #require(try decoder.decode(#"[{"id":"a","tp":"short_news","ca":5,"ds":"d"}]"#).cards.first)
        #expect(card.removed == false)
        let c = card.card
        #expect(c.expiresAt == -1)
        #expect(!c.viewed && !c.clicked && !c.dismissed && !c.pinned && !c.dismissible && !c.isTest && !c.openURLInWebView)
        #expect(c.url == nil && c.image == nil && c.title == nil && c.domain == nil)
        #expect(c.extras.isEmpty)
        #expect(c.classType == "")
    }

    /// The decoder reuses one set of field slots from card to card and empties them with a
    /// mask: a field the next card lacks must read as absent, not as the last card's value.
    @Test func aCardNeverSeesTheFieldsOfTheCardBefore() throws {
        let json = #"""
        [{"id":"full","tp":"captioned_image","ca":1,"ea":9,"v":true,"cl":true,"d":true,"rd":true,"p":true,
          "db":true,"t":true,"uw":true,"u":"https://a.example/","i":"https://a.example/i.png",
          "image_alt":"alt","ar":2.0,"tt":"title","ds":"description","dm":"a.example",
          "e":{"class_type":"home_tile"}},
         {"id":"bare","tp":"short_news","ca":2,"ds":"only this"}]
        """#
        let payload = try decoder.decode(json)
        #expect(payload.leftOut.isEmpty)
        let bare = try #require(payload.cards.last)
        #expect(bare.card.id == "bare")
        #expect(bare.read == nil)
        let c = bare.card
        #expect(c.expiresAt == Card.neverExpires)
        #expect(!c.viewed && !c.clicked && !c.dismissed && !c.read && !c.pinned && !c.dismissible && !c.isTest)
        #expect(!c.openURLInWebView)
        #expect(c.url == nil && c.image == nil && c.imageAltText == nil && c.imageAspectRatio == nil)
        #expect(c.title == nil && c.domain == nil)
        #expect(c.cardDescription == "only this")
        #expect(c.extras.isEmpty && c.classType == "")
    }

    @Test func nullCountsAsAbsent() throws {
        let c = try #require(try decoder.decode(#"[{"id":"a","tp":"short_news","ca":5,"ds":"d","u":null,"p":null,"e":null}]"#).cards.first?.card)
        #expect(c.url == nil && !c.pinned && c.extras.isEmpty)
    }

    @Test(arguments: [
        (#"{"tp":"banner_image","ca":1}"#, "\"i\""),
        (#"{"tp":"captioned_image","ca":1,"i":"x","ds":"d"}"#, "\"tt\""),
        (#"{"tp":"captioned_image","ca":1,"i":"x","tt":"t"}"#, "\"ds\""),
        (#"{"tp":"captioned_image","ca":1,"tt":"t","ds":"d"}"#, "\"i\""),
        (#"{"tp":"short_news","ca":1}"#, "\"ds\""),
        (#"{"tp":"text_announcement","ca":1,"ds":""}"#, "\"ds\""),
        (#"{"tp":"hologram","ca":1}"#, "unknown type \"hologram\""),
        (#"{"ca":1}"#, "\"tp\""),
        (#"{"tp":"control"}"#, "\"ca\""),
        (#"{"tp":"control","ca":"yesterday"}"#, "\"ca\" is a string"),
        (#"{"tp":"control","ca":1,"p":"yes"}"#, "\"p\" is a string, expected a boolean"),
        (#"{"tp":"control","ca":1,"e":[1]}"#, "extras"),
        (#"{"tp":"control","ca":1,"ar":"wide"}"#, ""),
        (#"{"tp":"banner_image","ca":1,"i":"x","ar":"wide"}"#, "\"ar\""),
        (#"{"tp":"control","ca":1.5}"#, "whole number"),
    ])
    func eachRequiredFieldAndTypeIsChecked(body: String, reason: String) throws {
        let json = "[" + "{\"id\":\"x\"," + body.dropFirst() + "]"
        let payload = try decoder.decode(json)
        if reason.isEmpty {
            // Control cards ignore fields they do not have.
            #expect(payload.cards.count == 1)
            return
        }
        #expect(payload.cards.isEmpty, "\(json)")
        let left = try #require(payload.leftOut.first)
        #expect(left.id == "x")
        #expect(left.index == 0)
        #expect(left.reason.contains(reason), "\(left.reason)")
    }

    @Test func controlNeedsOnlyIdAndCreated() throws {
        let c = try #require(try decoder.decode(#"[{"id":"k","tp":"control","ca":1}]"#).cards.first?.card)
        #expect(c.type == .control && c.isControl && c.image == nil && c.cardDescription == nil)
    }

    @Test func oneBadCardNeverFailsThePayload() throws {
        let json = #"""
        [{"id":"ok1","tp":"short_news","ca":1,"ds":"d"}, 42, {"id":"","tp":"control","ca":1},
                       {"tp":"control","ca":1}, {"id":"bad","tp":"banner_image","ca":1},
                       {"id":"ok1","tp":"control","ca":2}, {"id":"ok2","tp":"control","ca":1}]
        """#
        let payload = try decoder.decode(json)
        #expect(payload.cards.map(\.card.id) == ["ok1", "ok2"])
        #expect(payload.leftOut.map(\.index) == [1, 2, 3, 4, 5])
        #expect(payload.leftOut.map(\.id) == [nil, nil, nil, "bad", "ok1"])
        #expect(payload.leftOut[0].reason.contains("not an object"))
        #expect(payload.leftOut[4].reason.contains("duplicate id"))
        #expect(payload.leftOut[3].description == #"card "bad": missing required field "i" (image) for a banner_image card"#)
    }

    @Test func classicMappings() throws {
        let json = #"""
        [{"id":"a","tp":"short_news","ca":1,"ds":"no image"},
                      {"id":"b","tp":"short_news","ca":1,"ds":"with image","i":"https://x/y.png","tt":"T"},
                      {"id":"c","tp":"text_announcement","ca":1,"ds":"text","tt":"T"}]
        """#
        let cards = try decoder.decode(json).cards.map(\.card)
        #expect(cards.map(\.type) == [.classic, .classic, .classic])
        #expect(cards[0].image == nil)
        #expect(cards[1].image == "https://x/y.png" && cards[1].title == "T")
        #expect(cards[2].cardDescription == "text")
    }

    @Test func nonStringExtrasBecomeTheirJSONText() throws {
        let json = #"[{"id":"a","tp":"control","ca":1,"e":{"n":20,"f":1.50,"b":true,"z":null,"o":{"k":[1,"v"]},"s":"x"}}]"#
        let extras = try #require(try decoder.decode(json).cards.first?.card.extras)
        #expect(extras == ["n": "20", "f": "1.50", "b": "true", "z": "null", "o": #"{"k":[1,"v"]}"#, "s": "x"])
    }

    @Test func envelopeFieldsAndDefaults() throws {
        let p = try decoder.decode(#"{"cards":[],"full_sync":true,"last_full_sync_at":10,"last_card_updated_at":20,"user_id":"u"}"#)
        #expect(p.fullSync && p.lastFullSyncAt == 10 && p.lastCardUpdatedAt == 20 && p.userID == "u")
        let q = try decoder.decode(#"{"cards":[]}"#)
        #expect(!q.fullSync && q.lastFullSyncAt == -1 && q.lastCardUpdatedAt == -1 && q.userID == nil)
        let bare = try decoder.decode("[]")
        #expect(!bare.fullSync && bare.cards.isEmpty)
    }

    @Test(arguments: [
        ("{}", "without a \"cards\" array"),
        (#"{"cards":{}}"#, "expected an array"),
        ("42", "expected an array of cards"),
        (#"{"cards":[],"full_sync":"yes"}"#, "full_sync"),
        (#"{"cards":[],"user_id":7}"#, "user_id"),
        (#"{"cards":[{"id":"a""#, "truncated"),
        ("not json", "not valid JSON"),
    ])
    func wrongShapeIsAnError(json: String, fragment: String) {
        do { _ = try decoder.decode(json); Issue.record("decoded") } catch {
            #expect(error.message.contains(fragment), "\(error.message)")
        }
    }

    @Test func tombstoneNeedsOnlyIdAndCreated() throws {
        let p = try decoder.decode(#"[{"id":"gone","ca":5,"r":true}]"#)
        #expect(p.cards.first?.removed == true)
        #expect(p.cards.first?.card.id == "gone")
    }

    @Test func knownClassTypesMapOthersToEmpty() throws {
        let d = PayloadDecoder(knownClassTypes: ["home_tile", " Coupon_Code "])
        let json = #"""
        [{"id":"a","tp":"control","ca":1,"e":{"class_type":"coupon_code"}},
                      {"id":"b","tp":"control","ca":1,"e":{"class_type":"surprise"}},
                      {"id":"c","tp":"control","ca":1,"e":{"class_type":" HOME_TILE"}}]
        """#
        #expect(try d.decode(json).cards.map(\.card.classType) == ["coupon_code", "", "home_tile"])
    }

    @Test func payloadSizeLimit() {
        let d = PayloadDecoder(limits: .init(maxBytes: 10))
        do { _ = try d.decode("[" + String(repeating: " ", count: 20) + "]"); Issue.record("decoded") } catch {
            #expect(error.message.contains("over the limit of 10"))
        }
    }

    @Test func sampleFeed() throws {
        let p = try decoder.decode(try Fixtures.sampleFeed())
        #expect(p.fullSync)
        #expect(p.cards.count == 11)
        #expect(Set(p.leftOut.compactMap(\.id)) == ["bad-1", "bad-type"])
        #expect(p.leftOut.count == 3)
        let byID = Dictionary(uniqueKeysWithValues: p.cards.map { ($0.card.id, $0.card) })
        #expect(byID["msg-3"]?.classType == "message_webview")
        #expect(byID["coupon-control"]?.extras["discount_percentage"] == "20")
        #expect(byID["coupon-control"]?.isControl == true)
    }
}


@Suite struct CardIdentityTests {
    @Test func idsAreComparedAsBytes() throws {
        let c = try ContentCardsController(configuration: Configuration())
        let summary = try c.apply(#"""
            [{"id":"\u00e9","tp":"short_news","ca":1,"ds":"nfc"},{"id":"e\u0301","tp":"short_news","ca":1,"ds":"nfd"},
             {"id":"f","tp":"short_news","ca":1,"ds":"ascii"}]
            """#)
        #expect(summary.added == 3 && summary.leftOut.isEmpty)
        #expect(try c.card(id: "e\u{301}").cardDescription == "nfd")
        #expect(try c.card(id: "\u{e9}").cardDescription == "nfc")
        // Ties on created break on the id's bytes, descending: "é" (C3 A9) > "f" > "e" + U+0301.
        #expect(try c.cards().map { Array($0.id.utf8) } == [[0xC3, 0xA9], [0x66], [0x65, 0xCC, 0x81]])
    }

    @Test func aNULInAnIdLeavesTheCardOut() throws {
        let p = try PayloadDecoder().decode(#"[{"id":"x\u0000y","tp":"control","ca":1},{"id":"ok","tp":"control","ca":1}]"#)
        #expect(p.cards.map(\.card.id) == ["ok"])
        #expect(p.leftOut.first?.reason.contains("NUL") == true)
        #expect(throws: ConfigurationError.self) { try ConfigurationJSON.decode(#"{"userId":"a\u0000b"}"#) }
    }

    @Test func longIdsAreCutInMessages() throws {
        let c = try ContentCardsController(configuration: Configuration())
        let long = String(repeating: "x", count: 100_000)
        do { _ = try c.card(id: long); Issue.record("found") } catch {
            #expect(error.message.count < 300 && error.message.contains("100000 bytes"))
        }
    }
}
