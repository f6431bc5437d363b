import Testing
@testable import ContentCards

// The application's own objects, as an app following the Content Card guide would write them.

struct HomeTile: ContentCardable, Equatable {
    let contentCardData: ContentCardData?
    let title: String
    let price: Double

    init(title: String, price: Double) { contentCardData = nil; self.title = title; self.price = price }

    init?(metadata: ContentCardMetadata, classType: String) {
        guard let title = metadata[extra: "tile_title"], let price = metadata[extra: "tile_price"].flatMap(Double.init) else { return nil }
        contentCardData = ContentCardData(metadata.card)
        self.title = title; self.price = price
    }
}

struct Message: ContentCardable {
    enum Kind { case fullPage(header: String), webView(html: String?, url: String?) }
    let contentCardData: ContentCardData?
    let title: String
    let kind: Kind

    init?(metadata: ContentCardMetadata, classType: String) {
        contentCardData = ContentCardData(metadata.card)
        title = metadata[extra: "message_title"] ?? metadata[.title].string ?? ""
        switch classType {
        case "message_full_page":
            guard let header = metadata[extra: "message_header"] else { return nil }
            kind = .fullPage(header: header)
        case "message_webview":
            kind = .webView(html: metadata[extra: "html"], url: metadata[extra: "message_url"])
        default:
            return nil
        }
    }
}

struct Coupon: ContentCardable {
    let contentCardData: ContentCardData?
    let code: String?
    let discount: Int

    init?(metadata: ContentCardMetadata, classType: String) {
        guard let discount = metadata[extra: "discount_percentage"].flatMap(Int.init) else { return nil }
        contentCardData = ContentCardData(metadata.card)
        code = metadata[extra: "coupon_code"]
        self.discount = discount
    }
}

@Suite struct ConversionTests {
    func sampleCards() throws -> [Card] {
        let payload = try PayloadDecoder().decode(try Fixtures.sampleFeed())
        return FeedView.cards(payload.cards.map(\.card), filter: .all, now: 1_763_800_000)
    }

    func registry() -> ContentCardRegistry {
        var r = ContentCardRegistry()
        r.register(HomeTile.self, for: "home_tile")
        r.register(Message.self, for: "message_full_page", "Message_WebView")
        r.register(Coupon.self, for: "coupon_code")
        return r
    }

    @Test func tilesBlendedIntoTheAppsFeed() throws {
        let tiles = registry().convert(try sampleCards(), to: HomeTile.self, for: ClassTypeFilter(["home_tile"]))
        #expect(tiles.map { $0.contentCardData?.contentCardID } == ["tile-2", "tile-3", "tile-1"])
        // The app's own tiles mix in; only the converted ones carry a card id for logging.
        let mine = HomeTile(title: "House special", price: 9.5)
        let blended = (tiles + [mine]).sorted { $0.price < $1.price }
        #expect(blended.count == 4)
        #expect(blended.filter { $0.contentCardData == nil } == [mine])
    }

    @Test func messageCenterByClassType() throws {
        let messages = registry().convert(try sampleCards(), to: Message.self,
                                          for: ClassTypeFilter(["message_full_page", "message_webview"]))
        #expect(messages.map { $0.contentCardData?.contentCardID ?? "" } == ["msg-3", "msg-2", "msg-1"])
        guard case .webView(_, let url) = messages[0].kind else { Issue.record("msg-3 is not a web view"); return }
        #expect(url == "https://help.example.com/faq")
        guard case .webView(let html, _) = messages[1].kind else { Issue.record("msg-2 is not a web view"); return }
        #expect(html?.contains("<") == true)
        guard case .fullPage = messages[2].kind else { Issue.record("msg-1 is not a full page"); return }
    }

    @Test func couponAtCheckoutIncludingTheControlVariant() throws {
        let coupons = registry().convert(try sampleCards(), to: Coupon.self, for: ClassTypeFilter(["coupon_code"]))
        #expect(coupons.map { $0.contentCardData?.contentCardID ?? "" } == ["coupon-control", "coupon-1"])
        #expect(coupons[0].contentCardData?.isControl == true)
        #expect(coupons[1].discount == 20 && coupons[1].code == "SAVE20")
    }

    @Test func aFactoryThatDeclinesIsSkipped() throws {
        var r = ContentCardRegistry()
        r.register(classType: "home_tile") { metadata in
            metadata.card.id == "tile-3" ? nil : HomeTile(metadata: metadata, classType: "home_tile")
        }
        let ids = r.convert(try sampleCards()).compactMap { $0.contentCardData?.contentCardID }
        #expect(ids == ["tile-2", "tile-1"])
    }

    @Test func cardsWithoutAFactoryAreSkipped() throws {
        var r = ContentCardRegistry()
        r.register(Coupon.self, for: "coupon_code")
        #expect(r.convert(try sampleCards()).count == 2)
        #expect(r.registeredClassTypes == ["coupon_code"])
    }

    @Test func metadataIsKeyedByStableNames() throws {
        let card = try #require(try sampleCards().first { $0.id == "coupon-1" })
        let m = ContentCardMetadata(card)
        #expect(m[.id] == .string("coupon-1"))
        #expect(m[.type] == .string("banner"))
        #expect(m[.classType] == .string("coupon_code"))
        #expect(m[.dismissible] == .bool(true))
        #expect(m[.title] == .null)
        #expect(m[.created].int == card.created)
        #expect(m.dictionary.count == ContentCardKey.allCases.count)
        #expect(Set(ContentCardKey.allCases.map(\.rawValue)) == Set(CardJSON.keys))
    }
}
