import Testing
@testable import ContentCards

/// The card builder takes a common card in one pass (`CardFields+CommonCard.swift`) and gives
/// every other card to the general builder. For every card type, each field the type reads and
/// each it does not, with every kind of value (absent, null, empty, plain, escaped, DEL, of
/// the wrong type, numbers of every grammar), the card decoded from the token stream (where
/// the one pass may take it) must equal the card decoded from a parsed tree (which it never
/// takes): the same card with the same body, or left out for the same reason.
@Suite struct CommonCardTests {
    static let types = ["captioned_image", "banner_image", "short_news", "text_announcement", "control", "other"]

    /// Fields and values that each replace one member of a complete card.
    static let variants: [(key: String, values: [String])] = [
        ("id", ["null", #""""#, "5", #""a\u0000b""#, #""c\u00e9""#, "\"a\u{7F}\""]),
        ("ca", ["null", "-3", "1.0", "1e3", "123456789012345678901", #""5""#]),
        ("ea", ["null", "-1", "0", "2.5", "true"]),
        ("r", ["null", "true", "false", "0"]),
        ("rd", ["null", "true", "false", #""x""#]),
        ("v", ["null", "true", "1"]), ("cl", ["false", "[]"]), ("d", ["true", "{}"]),
        ("db", ["true", #""y""#]), ("p", ["true", "null"]), ("t", ["true", "0"]), ("uw", ["true", "null", "2"]),
        ("u", ["null", #""""#, #""https://a.example/x""#, #""https:\/\/a""#, "\"a\u{7F}\"", "7"]),
        ("i", ["null", #""""#, #""https://a.example/i.png""#, #""\u00e9""#, "[]"]),
        ("image_alt", ["null", #""""#, #""alt""#, "\"a\u{7F}\"", "false"]),
        ("ar", ["null", "0", "-1.5", "1.777", "1e2", "12345678901234567.5", #""1""#]),
        ("tt", ["null", #""""#, #""Title""#, #""\n""#, "{}"]),
        ("ds", ["null", #""""#, #""Description""#, #""é ✓""#, "3"]),
        ("dm", ["null", #""""#, #""a.example""#, "1"]),
        ("tp", ["null", "1", #""sh\u006frt_news""#]),
        ("e", ["null", "{}", #""s""#, #"{"b":"2","a":"1"}"#, #"{"a":"1","a":"2"}"#, #"{"class_type":"Home_Tile"}"#,
               #"{"n":1}"#, "{\"k\":\"a\u{7F}\"}", #"{"é":"1"}"#, #"{"k\"":"v"}"#,
               // Put in order, then given up on (a value that needs an escape); a key with DEL.
               "{\"b\":\"x\u{7F}\",\"a\":\"1\"}", "{\"k\u{7F}\":\"v\"}",
               // The class type's memo written, then given up on; class_type repeated (the last wins).
               #"{"class_type":"Home_Tile","é":"1"}"#, #"{"class_type":"coupon","class_type":"home_tile"}"#,
               #"{"class_type":"home_tile","class_type":"coupon","a":"1"}"#]),
    ]

    static let complete: [(String, String)] = [
        ("id", #""c""#), ("ca", "1700000000"), ("ea", "-1"), ("v", "false"), ("cl", "false"), ("d", "false"),
        ("db", "true"), ("p", "false"), ("t", "false"), ("uw", "false"), ("u", #""https://a.example/""#),
        ("i", #""https://a.example/i.png""#), ("image_alt", #""alt""#), ("ar", "1.5"), ("tt", #""T""#),
        ("ds", #""D""#), ("dm", #""a.example""#), ("e", #"{"class_type":"home_tile","k":"v"}"#),
    ]

    static func card(type: String, replacing key: String? = nil, with value: String? = nil) -> String {
        var members = [("tp", "\"\(type)\"")] + complete
        if let key, let value {
            if let i = members.firstIndex(where: { $0.0 == key }) { members[i].1 = value } else { members.append((key, value)) }
        }
        return "{" + members.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    static var payloads: [String] {
        var all: [String] = []
        for type in types {
            all.append("[\(card(type: type))]")
            for (key, values) in variants {
                for value in values { all.append("[\(card(type: type, replacing: key, with: value))]") }
            }
        }
        return all
    }

    @Test(arguments: [nil, Set(["home_tile"]), Set(["coupon"])] as [Set<String>?])
    func theOnePassBuilderBuildsAsTheGeneralOne(known: Set<String>?) throws {
        let decoder = PayloadDecoder(knownClassTypes: known)
        for json in Self.payloads {
            let bytes = Array(json.utf8)
            let streamed = try decoder.decode(bytes)
            let parsed = try decoder.decode(JSONReader.parse(bytes))
            #expect(streamed == parsed, "\(json)")
        }
    }

    /// Cards of one-pass and general shapes in one payload, in both orders: what one card
    /// leaves in the fields (its extras, their order, the class type's memo) is never the next
    /// card's.
    @Test(arguments: [nil, Set(["home_tile"])] as [Set<String>?])
    func cardsOfBothKindsInOnePayload(known: Set<String>?) throws {
        let decoder = PayloadDecoder(knownClassTypes: known)
        let general = [#"{"b":"1","k\u0061":"v","class_type":"Coupon"}"#, #"{"a":"x\n","class_type":"home_tile"}"#,
                       #"{"é":"1","class_type":"HOME_TILE"}"#, #"{"n":2}"#]
        let common = [#"{"b":"1","a":"2","class_type":"home_tile"}"#, #"{"class_type":"coupon"}"#, "{}"]
        var cards: [String] = []
        for (i, extras) in (general + common + general.reversed() + common.reversed()).enumerated() {
            let type = Self.types[i % (Self.types.count - 1)]
            cards.append(Self.card(type: type, replacing: "e", with: extras).replacing(#""id":"c""#, with: #""id":"c\#(i)""#))
        }
        let bytes = Array("[\(cards.joined(separator: ","))]".utf8)
        let streamed = try decoder.decode(bytes)
        #expect(streamed.cards.count == cards.count)
        #expect(streamed == (try decoder.decode(JSONReader.parse(bytes))))
    }

    /// The values the rules allow, each in a card the one pass must take: it is not a path
    /// that never runs, and a change that gave up on more of them would fail here.
    static let taken: [(key: String, value: String)] = [
        ("ea", "null"), ("ea", "0"), ("r", "null"), ("r", "false"), ("rd", "true"), ("rd", "false"), ("rd", "null"),
        ("v", "true"), ("v", "null"), ("d", "true"), ("p", "true"), ("t", "true"), ("uw", "true"), ("db", "null"),
        ("u", #""""#), ("u", "null"), ("image_alt", #""""#), ("image_alt", "null"), ("dm", #""""#), ("ar", "null"),
        ("ar", "-1.5"), ("ar", "0"), ("ca", "-3"), ("ds", #""é ✓""#), ("e", "null"), ("e", "{}"),
        ("e", #"{"b":"2","a":"1"}"#), ("e", #"{"a":"1","a":"2"}"#), ("e", #"{"class_type":"coupon","class_type":"home_tile"}"#),
    ]

    @Test func theCommonCardsAreTakenInOnePass() throws {
        for type in Self.types.dropLast() {
            let variants = [Self.card(type: type)] + Self.taken.map { Self.card(type: type, replacing: $0.key, with: $0.value) }
            for json in variants {
                let bytes = Array(json.utf8)
                let card = bytes.withUnsafeBufferPointer { buffer -> Payload.ServerCard? in
                    var parser = Parser(bytes: buffer, maxDepth: 64)
                    parser.validUTF8 = true
                    var fields = CardFields()
                    fields.reset(source: buffer)
                    guard (try? fields.read(&parser)) != nil else { return nil }
                    var writer = JSONWriter()
                    return fields.buildCommonCard(knownClassTypes: nil, writer: &writer)
                }
                #expect(card != nil, "\(json)")
            }
        }
    }
}
