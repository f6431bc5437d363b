import Testing
@testable import ContentCards

@Suite struct CardJSONTests {
    static let cards: [Card] = [
        Card(id: "classic", created: 10, expiresAt: 99, viewed: true, dismissible: true, url: "myapp://inbox",
             extras: ["class_type": "message_full_page", "message_header": "Hi \"you\"\n/é"],
             content: .classic(.init(title: "T", cardDescription: "D", image: "https://x/i.png", imageAltText: "alt", domain: "x.com"))),
        Card(id: "banner", created: 11, pinned: true, content: .banner(.init(image: "https://x/b.png", imageAspectRatio: 2))),
        Card(id: "captioned", created: 12, clicked: true, isTest: true, openURLInWebView: true,
             content: .captionedImage(.init(image: "https://x/c.png", imageAspectRatio: 1.333, title: "T", cardDescription: "D"))),
        Card(id: "control", created: 13, extras: ["class_type": "coupon_code"], content: .control),
    ]

    @Test(arguments: cards)
    func roundTripOfEveryKind(card: Card) throws {
        let json = CardJSON.encode(card)
        #expect(try CardJSON.decode(json) == card)
    }

    @Test func everyFieldPresentInTheDocumentedOrder() throws {
        let json = CardJSON.encode(Self.cards[3])
        guard case .object(let members) = try JSONReader.parse(json) else { Issue.record("not an object"); return }
        #expect(members.map(\.key) == CardJSON.keys)
        #expect(json == #"{"id":"control","type":"control","created":13,"expiresAt":-1,"viewed":false,"clicked":false,"dismissed":false,"read":false,"dismissible":false,"pinned":false,"isTest":false,"isControl":true,"url":null,"openURLInWebView":false,"extras":{"class_type":"coupon_code"},"classType":"coupon_code","image":null,"imageAltText":null,"imageAspectRatio":null,"title":null,"cardDescription":null,"domain":null,"imagePath":null}"#)
    }

    @Test func byteIdenticalOnEveryCall() {
        var extras: [String: String] = [:]
        for i in 0..<50 { extras["k\(i)"] = "v\(i)" }
        let card = Card(id: "x", created: 1, extras: extras, content: .control)
        let first = CardJSON.encode(card)
        for _ in 0..<20 { #expect(CardJSON.encode(Card(id: "x", created: 1, extras: extras, content: .control)) == first) }
    }

    @Test func listIsAnArrayInTheGivenOrder() throws {
        let list = CardJSON.encode(Self.cards)
        #expect(try CardJSON.decodeList(list) == Self.cards)
        #expect(CardJSON.encode([Card]()) == "[]")
    }

    /// A card as the general writer writes it, member by member (commas, keys, escapes, numbers
    /// all its own): what `CardJSON.write`'s pieces must come to, byte for byte.
    static func reference(_ card: Card) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("id"); w.string(card.id)
        w.key("type"); w.string(card.type.rawValue)
        w.key("created"); w.int(card.created)
        w.key("expiresAt"); w.int(card.expiresAt)
        for (name, flag) in [("viewed", card.viewed), ("clicked", card.clicked), ("dismissed", card.dismissed),
                             ("read", card.read), ("dismissible", card.dismissible), ("pinned", card.pinned),
                             ("isTest", card.isTest), ("isControl", card.isControl)] {
            w.key(name); w.bool(flag)
        }
        w.key("url"); w.string(card.url)
        w.key("openURLInWebView"); w.bool(card.openURLInWebView)
        w.key("extras"); w.beginObject()
        for (k, v) in card.extras.sorted(by: { CardKey.bytewiseLess($0.key, $1.key) }) { w.key(k); w.string(v) }
        w.endObject()
        w.key("classType"); w.string(card.classType)
        w.key("image"); w.string(card.image)
        w.key("imageAltText"); w.string(card.imageAltText)
        w.key("imageAspectRatio"); if let r = card.imageAspectRatio { w.double(r) } else { w.null() }
        w.key("title"); w.string(card.title)
        w.key("cardDescription"); w.string(card.cardDescription)
        w.key("domain"); w.string(card.domain)
        w.key("imagePath"); w.string(card.imagePath)
        w.endObject()
        return w.string
    }

    /// The writer's head is one piece when the id needs no escape, and the general pieces when
    /// it does: both against the general writer, for ids of every length with every kind of
    /// byte at their end, times at the digits' edges, every combination of the seven flags a
    /// card sets (isControl follows the type: the four kinds are among the cards), and with
    /// and without an image path.
    @Test func eachCardIsWhatTheGeneralWriterWrites() {
        var ids = ["", "card-000123", String(repeating: "x", count: 40), "é", "😀card", "a\"b", "a\\b", "\u{01}", "line\nbreak", "del\u{7F}"]
        for length in 0...24 {
            for last in ["z", "\"", "\\", "\u{1F}", "\u{7F}", "é"] { ids.append(String(repeating: "k", count: length) + last) }
        }
        let times: [Int64] = [0, 9, 10, -1, -10, 1_763_414_002, Int64.max, Int64.min]
        var checked = 0
        for (i, id) in ids.enumerated() {
            for (j, base) in Self.cards.enumerated() {
                var card = base
                card.id = id
                card.created = times[(i + j) % times.count]
                card.expiresAt = times[(i + 3 * j + 1) % times.count]
                for path in [nil, "/tmp/images/x.png", "odd \"path\""] {
                    card.imagePath = path
                    #expect(CardJSON.encode(card) == Self.reference(card), "id \(id.debugDescription), path \(path ?? "nil")")
                    checked += 1
                }
            }
        }
        var card = Self.cards[0]
        for bits in 0..<128 {     // the seven flags a card sets (isControl follows its type)
            card.viewed = bits & 1 != 0; card.clicked = bits & 2 != 0; card.dismissed = bits & 4 != 0
            card.read = bits & 8 != 0; card.dismissible = bits & 16 != 0; card.pinned = bits & 32 != 0
            card.isTest = bits & 64 != 0
            #expect(CardJSON.encode(card) == Self.reference(card), "flags \(bits)")
            checked += 1
        }
        #expect(checked > 2_000)
        // The feed's array of the same cards: each card the same bytes.
        #expect(CardJSON.encode(Self.cards) == "[" + Self.cards.map(Self.reference).joined(separator: ",") + "]")
    }

    @Test func badBoundaryJSONIsAnError() {
        #expect(throws: PayloadError.self) { try CardJSON.decode("{") }
        #expect(throws: PayloadError.self) { try CardJSON.decode(#"{"id":"a","type":"banner","created":1}"#) }
        #expect(throws: PayloadError.self) { try CardJSON.decode(#"{"id":"a","type":"nope","created":1}"#) }
    }
}

@Suite struct ClassTypeTests {
    @Test(arguments: [("home_tile", "home_tile"), ("  Home_Tile\n", "home_tile"), ("COUPON_CODE", "coupon_code"),
                      ("", ""), ("   ", ""), ("\u{00A0}message_webview\u{2003}", "message_webview")])
    func normalization(raw: String, expected: String) {
        #expect(ClassType.normalize(raw) == expected)
    }

    @Test func filters() {
        let tile = Card(id: "a", created: 1, extras: ["class_type": "Home_Tile"], content: .control)
        let none = Card(id: "b", created: 1, content: .control)
        #expect(ClassTypeFilter.all.matches(tile) && ClassTypeFilter.all.matches(none))
        #expect(ClassTypeFilter([" HOME_TILE "]).matches(tile))
        #expect(!ClassTypeFilter(["home_tile"]).matches(none))
        #expect(ClassTypeFilter([""]).matches(none) && !ClassTypeFilter([""]).matches(tile))
        #expect(ClassTypeFilter(["", "home_tile"]).matches(none) && ClassTypeFilter(["", "home_tile"]).matches(tile))
        #expect(!ClassTypeFilter(["coupon_code"]).matches(tile))
    }

    @Test func knownClassTypes() {
        #expect(ClassType.normalize("Ad_Banner", known: ["ad_banner"]) == "ad_banner")
        #expect(ClassType.normalize("mystery", known: ["ad_banner"]) == "")
        #expect(ClassType.normalize("mystery", known: nil) == "mystery")
    }

    @Test func urlValidity() {
        for good in ["https://x.com/a", "http://x", "myapp://inbox/1", "mailto:a@b.c"] {
            #expect(URLCheck.isValid(good), "\(good)")
        }
        for bad in ["", "x.com", "://x", "https://x y", "javascript:alert(1)", "JavaScript:x", "data:text/html,x", "1http://x", "https:"] {
            #expect(!URLCheck.isValid(bad), "\(bad)")
        }
    }
}
