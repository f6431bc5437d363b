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
