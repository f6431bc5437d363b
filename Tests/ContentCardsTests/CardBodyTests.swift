import Testing
@testable import ContentCards

/// A card keeps its server-set fields as boundary JSON bytes (`CardBody`), which the stream
/// decoder writes straight from the payload's tokens. These tests hold the three ways a body is
/// made to the same bytes: from the token stream, from a parsed `JSONValue`, and from values
/// through `Card.init`; and check that reading a field back and setting one agree with them.
@Suite struct CardBodyTests {
    /// Payload cards where copying tokens could differ from writing the text: escapes, DEL
    /// (which the writer escapes), non-ASCII and escaped extras keys, a repeated key, extras
    /// that are not strings, an empty URL, an escaped class type.
    static let tricky: [String] = [
        #"{"id":"a","tp":"short_news","ca":1,"ds":"plain","tt":"T\u00e9\n\"q\"","e":{"z":"1","a":"2","class_type":" Coupon "}}"#,
        "{\"id\":\"b\",\"tp\":\"short_news\",\"ca\":2,\"ds\":\"del \u{7F} here\",\"e\":{\"k\u{7F}\":\"v\u{7F}\"}}",
        #"{"id":"c","tp":"banner_image","ca":3,"i":"https://x/i.png","ar":1.0,"e":{"b":"1","a":"2","b":"3","a":"4"}}"#,
        #"{"id":"d","tp":"captioned_image","ca":4,"i":"https://x/c.png","tt":"t","ds":"d","ar":1.777,"e":{"é":"x","e":"y","\u0065\u0301":"z"}}"#,
        #"{"id":"e","tp":"short_news","ca":5,"ds":"x","u":"","e":{"n":1.50,"o":{"k":[1,true,null]},"t":true,"class_typ\u0065":"Offer"}}"#,
        #"{"id":"f\u00e9","tp":"control","ca":6,"ea":99,"v":true,"rd":false,"e":{"class_type":"x","class_type":"Y"}}"#,
        #"{"id":"g","tp":"text_announcement","ca":7.0,"ds":"d","i":"","uw":true,"u":"myapp://x","dm":"x.com","image_alt":"alt"}"#,
        #"{"id":"h","tp":"short_news","ca":8,"ds":"d","e":{"":"empty key","Z":"upper","_":"under"}}"#,
        #"{"id":"i","tp":"short_news","ca":9,"r":true,"e":{"class_type":"gone"}}"#,
    ]

    static func payload() -> String { "[" + tricky.joined(separator: ",") + "]" }

    @Test func theStreamAndTheParsedValueGiveTheSameCards() throws {
        let decoder = PayloadDecoder()
        let streamed = try decoder.decode(Self.payload())
        let parsed = try decoder.decode(try JSONReader.parse(Self.payload()))
        #expect(streamed.leftOut.isEmpty)
        #expect(streamed.cards.count == Self.tricky.count)
        #expect(streamed == parsed)
        for (a, b) in zip(streamed.cards, parsed.cards) {
            #expect(CardJSON.encode(a.card) == CardJSON.encode(b.card))
        }
    }

    @Test func aDecodedCardEqualsTheSameCardBuiltFromItsValues() throws {
        let decoded = try PayloadDecoder().decode(Self.payload()).cards.map(\.card)
        for card in decoded {
            let rebuilt = Card(id: card.id, created: card.created, expiresAt: card.expiresAt, viewed: card.viewed,
                               clicked: card.clicked, dismissed: card.dismissed, read: card.read,
                               dismissible: card.dismissible, pinned: card.pinned, isTest: card.isTest,
                               url: card.url, openURLInWebView: card.openURLInWebView, extras: card.extras,
                               classType: card.classType, content: card.content)
            #expect(rebuilt == card, "\(card.id)")
            #expect(CardJSON.encode(rebuilt) == CardJSON.encode(card), "\(card.id)")
            #expect(rebuilt.hashValue == card.hashValue)
        }
    }

    @Test func fieldsReadBackAsTheyWereSent() throws {
        let cards = try PayloadDecoder().decode(Self.payload()).cards.map(\.card)
        let a = try #require(cards.first { $0.id == "a" })
        #expect(a.title == "Té\n\"q\"")
        #expect(a.classType == "coupon")
        #expect(a.extras == ["z": "1", "a": "2", "class_type": " Coupon "])
        let b = try #require(cards.first { $0.id == "b" })
        #expect(b.cardDescription == "del \u{7F} here")
        #expect(b.extras == ["k\u{7F}": "v\u{7F}"])
        #expect(CardJSON.encode(b).contains(#""del \u007f here""#))
        let c = try #require(cards.first { $0.id == "c" })
        #expect(c.extras == ["a": "4", "b": "3"])
        #expect(c.imageAspectRatio == 1.0)
        #expect(CardJSON.encode(c).contains(#""extras":{"a":"4","b":"3"}"#))
        let e = try #require(cards.first { $0.id == "e" })
        #expect(e.url == nil)
        #expect(e.extras["n"] == "1.50")
        #expect(e.extras["o"] == #"{"k":[1,true,null]}"#)
        #expect(e.classType == "offer")
        let f = try #require(cards.first { $0.id == "fé" })
        #expect(f.classType == "y")
        #expect(f.type == .control && f.image == nil && f.title == nil)
        let g = try #require(cards.first { $0.id == "g" })
        #expect(g.image == nil && g.openURLInWebView && g.url == "myapp://x" && g.domain == "x.com")
        #expect(g.imageAltText == "alt")
        #expect(g.content == .classic(Card.Classic(title: nil, cardDescription: "d", image: nil, imageAltText: "alt", domain: "x.com")))
        let h = try #require(cards.first { $0.id == "h" })
        #expect(CardJSON.encode(h).contains(#""extras":{"":"empty key","Z":"upper","_":"under"}"#))
    }

    @Test func settingAFieldRewritesTheBody() throws {
        var card = try #require(try PayloadDecoder().decode(Self.payload()).cards.first?.card)
        let before = CardJSON.encode(card)
        card.url = "https://example.com/new"
        card.extras["added"] = "yes"
        card.content = .banner(Card.Banner(image: "https://x/new.png", imageAspectRatio: 0.5))
        card.classType = "home_tile"
        card.openURLInWebView = true
        #expect(card.type == .banner && card.isControl == false)
        #expect(card.url == "https://example.com/new" && card.openURLInWebView)
        #expect(card.extras["added"] == "yes" && card.extras["z"] == "1")
        #expect(card.image == "https://x/new.png" && card.imageAspectRatio == 0.5 && card.title == nil)
        #expect(card.classType == "home_tile")
        let after = CardJSON.encode(card)
        #expect(after != before)
        #expect(try CardJSON.decode(after) == card)
    }

    @Test func theStoredFormReadsBackToTheSameCard() throws {
        let decoder = PayloadDecoder()
        for server in try decoder.decode(Self.payload()).cards where !server.removed {
            let stored = StoredCardJSON.encode(server.card)
            let back = stored.withUnsafeBufferPointer { decoder.decodeStoredCard($0) }
            #expect(back == server.card, "\(server.card.id)")
        }
    }
}

/// The string scanner's two loops (input checked as valid UTF-8 up front, and not) must find
/// the same tokens: the same end, escapes, ASCII-ness and DEL, wherever in an 8-byte word the
/// special byte falls.
@Suite struct StringScanTests {
    static let pieces: [String] = ["a", "é", "€", "😀", "\\\"", "\\\\", "\\u00e9", "\u{7F}", "bcdefgh", " "]

    @Test func bothLoopsAgreeOnEveryPlacement() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            var text = ""
            for _ in 0..<Int.random(in: 0...24, using: &rng) { text += Self.pieces.randomElement(using: &rng)! }
            let token = Array(("\"" + text + "\",").utf8)
            let fast = try token.withUnsafeBufferPointer { b throws(JSONError) -> (StringSpan, String) in
                var p = Parser(bytes: b, maxDepth: 4)
                p.validUTF8 = true
                let span = try p.scanString()
                return (span, try p.string(span))
            }
            let checked = try token.withUnsafeBufferPointer { b throws(JSONError) -> (StringSpan, String) in
                var p = Parser(bytes: b, maxDepth: 4)
                let span = try p.scanString()
                return (span, try p.string(span))
            }
            #expect(fast.0.end == checked.0.end && fast.0.escaped == checked.0.escaped, "\(text)")
            #expect(fast.0.ascii == checked.0.ascii && fast.0.plain == checked.0.plain, "\(text)")
            #expect(fast.1 == checked.1, "\(text)")
            #expect(fast.0.ascii == text.utf8.allSatisfy { $0 < 0x80 }, "\(text)")
            #expect(fast.0.plain == !(text.contains("\\") || text.contains("\u{7F}")), "\(text)")
        }
    }
}
