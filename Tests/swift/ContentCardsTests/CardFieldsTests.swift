import Foundation
import Testing
@testable import ContentCards

/// The card reader takes the common shape of a card in one pass (`CardFields+Fast.swift`) and
/// gives every other card to the general reader, from its start. Each shape below is decoded
/// from the token stream (one pass or general, as the card's shape decides) and from a parsed
/// tree (the parsed-value path, which shares neither), and the two payloads must be equal:
/// the same cards with the same bodies, the same cards left out for the same reasons.
@Suite struct CardFieldsTests {
    static let base = #""id":"c","tp":"short_news","ca":5,"ds":"d""#

    static let shapes: [String] = [
        // The common shape, with and without white space.
        #"[{"id":"c","tp":"captioned_image","ca":1,"ea":2,"v":true,"cl":false,"d":false,"rd":true,"p":true,"db":true,"t":false,"uw":true,"u":"https://a.example/x","i":"https://a.example/i.png","image_alt":"alt","ar":1.5,"tt":"T","ds":"D","dm":"a.example","e":{"class_type":"home_tile","b":"2","a":"1"}}]"#,
        "[ {\n \"id\" : \"c\" ,\t\"tp\" :\r\n\"banner_image\", \"ca\": 7, \"i\": \"x\", \"e\" : { \"k\" : \"v\" } } ]",
        // Values with escapes (read in the one pass), and names with escapes (a known name
        // spelled with one: the card goes to the general reader).
        #"[{"id":"c\u00e9","tp":"short_news","ca":5,"ds":"a \"quoted\" \/ text\n","u":"https:\/\/a.example\/","tt":"\ud834\udd1e"}]"#,
        #"[{"\u0069d":"c\u00e9","tp":"short_news","ca":5,"ds":"a \"quoted\" \/ text\n","u":"https:\/\/a.example\/"}]"#,
        #"[{"id":"c","tp":"short_news","ca":5,"ds":"d","e":{"cl\u0061ss_type":"Home_Tile","k\"":"v\\"}}]"#,
        // Extras of other types, and extras that are not an object.
        #"[{"id":"c","tp":"short_news","ca":5,"ds":"d","e":{"n":1.50,"o":{"x":[1,{"y":null}]},"t":true,"z":null}}]"#,
        "[{\(base),\"e\":null}]", "[{\(base),\"e\":\"s\"}]", "[{\(base),\"e\":[]}]", "[{\(base),\"e\":{}}]",
        // A repeated name: the last one wins, extras too.
        "[{\(base),\"ds\":\"second\",\"e\":{\"a\":\"1\"},\"e\":{\"b\":\"2\"}}]",
        "[{\(base),\"e\":{\"a\":\"1\"},\"e\":null}]",
        // Names the card does not know: short, long, non-ASCII, empty; values of every kind.
        "[{\(base),\"zz\":{\"a\":[1,2,{\"b\":\"c\"}]},\"a_name_longer_than_sixteen\":[true,false,null],\"é\":1,\"\":\"x\"}]",
        "[{\(base),\"ids\":\"not the id\",\"i\":null,\"cards\":[1],\"user_id\":\"u\"}]",
        // Numbers of every grammar, and fields of the wrong type (the card is left out).
        #"[{"id":"c","tp":"captioned_image","ca":1e3,"ea":-0.0,"i":"x","tt":"t","ds":"d","ar":1.0E+2}]"#,
        #"[{"id":"c","tp":"captioned_image","ca":1700000000,"i":"x","tt":"t","ds":"d","ar":-12345678901234567890.5e-3}]"#,
        "[{\(base),\"v\":\"yes\"}]", "[{\(base),\"ca\":\"5\"}]", "[{\(base),\"u\":1}]", "[{\(base),\"tt\":{}}]",
        "[{\(base),\"tt\":[]}]", "[{\"tp\":\"short_news\",\"ca\":5,\"ds\":\"d\"}]", "[{}]", "[{},{\(base)}]",
        // DEL and non-ASCII text (written escaped, and as they are).
        "[{\(base),\"tt\":\"a\u{7F}b\",\"dm\":\"ünïcödé ✓ 𝄞\"}]",
        // A card that is not an object, and several cards.
        "[1,\"x\",null,{\(base)},[{\(base)}]]",
        "{\"cards\":[{\(base)},{\"id\":\"d\",\"tp\":\"control\",\"ca\":6}],\"full_sync\":true}",
    ]

    @Test(arguments: shapes)
    func theOnePassReaderReadsAsTheGeneralOne(_ json: String) throws {
        let decoder = PayloadDecoder()
        let bytes = Array(json.utf8)
        let streamed = try decoder.decode(bytes)
        let parsed = try decoder.decode(JSONReader.parse(bytes))
        #expect(streamed == parsed)
    }

    /// Single cards: those of the common shape (`taken`) must be read by the one-pass reader,
    /// and leave exactly what the general reader leaves (every slot, kept string, extras entry,
    /// the parser's position and depth); the others may go either way, and when the one-pass
    /// reader takes one, the same holds.
    static let cards: [(json: String, taken: Bool)] = [
        (#"{"id":"c","tp":"short_news","ca":5,"ds":"d","e":{"class_type":"home_tile","k":"v"}}"#, true),
        ("{ }", true), ("{\n}", true), ("{}", true),
        (" {\t\"id\" :\r\n\"c\" , \"e\" : { \"a\" :\t\"1\" ,\n\"b\":\"2\" } }", true),
        (#"{"id":"c","x":"a\nb","type":"\u00e9","tt":"\u00e9\n"}"#, true),
        (#"{"abcdefgh":1,"image_alx":2,"openURLInWebView":true,"openURLInWebViewX":[[]],"":null}"#, true),
        (#"{"id":"c","v":true,"cl":false,"d":null,"ar":-0,"ca":1E-2,"ea":0e0,"x":-1.5e+3}"#, true),
        // Whole numbers (scanned by the one pass itself) beside every other grammar.
        (#"{"ca":1700000000,"ea":-1,"x":-7,"y":123456789012345678901234567890,"z":5,"ar":10.25,"w":9e9}"#, true),
        (#"{"ca":0,"ea":-0,"x":10,"y":-10E1,"z":7.0e-1}"#, true),
        (#"{"tt":{"a":{}},"ds":[1,[2,{"b":"\n"}]]}"#, true),
        ("{\"id\":\"c\",\"a\u{7F}\":1,\"é\":\"ü\"}", true),
        (#"{"e":{"a":"1"},"e":{"b":"2"}}"#, true),
        (#"{"e":{"a":"1"},"e":{"b":2}}"#, false), (#"{"e":{"a":"1"},"e":"s"}"#, false),
        (#"{"e":{"a":"\n"}}"#, false), (#"{"e":{"é":"1","a":"2"}}"#, true),
        (#"{"\u0078":1}"#, false), (#"{"\u0065":{"a":"b"}}"#, false),
        (#"{"id":"c","r":1}"#, true),
    ]

    @Test(arguments: cards.indices)
    func theOnePassReaderLeavesWhatTheGeneralOneLeaves(_ index: Int) throws {
        let (json, taken) = Self.cards[index]
        let bytes = Array(json.utf8)
        try bytes.withUnsafeBufferPointer { buffer in
            var fast = Parser(bytes: buffer, maxDepth: 64)
            fast.validUTF8 = true
            fast.skipSpace()
            var fastFields = CardFields()
            fastFields.reset(source: buffer)
            let tookIt = fastFields.readCommonShape(&fast)
            if taken { #expect(tookIt, "\(json)") }
            guard tookIt else { return }
            // The general reader alone: input not known to be UTF-8 is never the one pass's.
            var general = Parser(bytes: buffer, maxDepth: 64)
            general.skipSpace()
            var generalFields = CardFields()
            generalFields.reset(source: buffer)
            try generalFields.read(&general)
            #expect(fastFields.readState == generalFields.readState, "\(json)")
            #expect(fast.pos == general.pos)
            #expect(fast.depth == general.depth)
        }
    }

    /// Input that is not JSON is refused: the one-pass reader gives up on it, and the general
    /// reader reports it (a card the one-pass reader took would be decoded, and pass).
    @Test(arguments: [
        "[{\(base),\"ca\":01}]", "[{\(base),\"v\":tru}]", "[{\(base),\"v\":nul}]", "[{\(base),}]",
        "[{\(base) \"x\":1}]", "[{\(base),\"x\"}]", "[{\(base),\"x\":}]", "[{\(base),\"e\":{\"a\":1,}}]",
        "[{\(base),\"e\":{\"a\"}}]", "[{\(base),\"u\":\"\\x\"}]", "[{\(base),\"u\":\"a\nb\"}]", "[{\(base)",
        "[{\(base),\"e\":{\"a\":\"b\"", "[{\"id\":\"c", "[{\(base),\"d\":-}]", "[{\(base),\"ar\":1.}]",
        "[{\(base),\"v\":true", "[{\(base),\"v\":nullx}]", "[{\(base),\"v\":truee}]", "[{\(base),\"v\":t}]",
        "[{\(base),\"ca\":1e}]", "[{\(base),\"x\":1e+}]", "[{\(base),\"x\":-a}]", "[{\(base),\"x\":.5}]",
        "[{\(base),\"x\":+1}]", "[{\(base),\"x\":-01}]", "[{,\(base)}]", "[{\(base),,\"x\":1}]", "[{\(base),\"x\"",
        "[{\(base),\"ca\":12x}]", "[{\(base),\"x\":1-}]", "[{\(base),\"x\":-1.}]", "[{\(base),\"x\":12e}]",
        "[{\(base),\"a\tb\":1}]", "[{\(base),\"id\u{01}\":1}]", "[{\(base),\"x\":{\"\\q\":1}}]",
    ])
    func malformedCardsAreRefused(_ json: String) throws {
        let decoder = PayloadDecoder()
        let bytes = Array(json.utf8)
        var streamError: String?
        do { _ = try decoder.decode(bytes) } catch { streamError = error.message }
        #expect(streamError != nil)
        #expect((try? JSONReader.parse(bytes)) == nil)
        #expect(streamError?.hasPrefix("payload is not valid JSON: ") == true)
    }

    /// Each card leaves the parser at the depth it found it: a thousand cards with extras
    /// under the default limit of 64 levels.
    @Test func manyCardsLeaveTheDepthAsTheyFoundIt() throws {
        let card = "{\(Self.base),\"e\":{\"k\":\"v\"},\"x\":[{\"y\":1}]}"
        let json = "[" + Array(repeating: card, count: 1000).enumerated()
            .map { $0.element.replacingOccurrences(of: "\"id\":\"c\"", with: "\"id\":\"c\($0.offset)\"") }
            .joined(separator: ",") + "]"
        let payload = try PayloadDecoder().decode(Array(json.utf8))
        #expect(payload.cards.count == 1000)
        #expect(payload.leftOut.isEmpty)
    }

    /// The nesting limit counts a card and its extras whichever reader reads them.
    @Test func theNestingLimitHoldsForBothReaders() throws {
        let json = Array("[{\(Self.base),\"e\":{\"a\":\"b\"}}]".utf8)
        var limits = JSONReader.Limits()
        limits.maxDepth = 2
        #expect(throws: PayloadError.self) { try PayloadDecoder(limits: limits).decode(json) }
        limits.maxDepth = 3
        #expect(try PayloadDecoder(limits: limits).decode(json).cards.count == 1)
        let nested = Array("[{\(Self.base),\"x\":{\"y\":{\"z\":1}}}]".utf8)
        limits.maxDepth = 3
        #expect(throws: PayloadError.self) { try PayloadDecoder(limits: limits).decode(nested) }
        limits.maxDepth = 4
        #expect(try PayloadDecoder(limits: limits).decode(nested).cards.count == 1)
    }
}

/// A class type met before is taken from the decoder's memo by its raw bytes
/// (`CardFields.normalizedClassType`): every card must still get what `ClassType.normalize`
/// gives its own raw value, with and without known class types, past the memo's capacity, and
/// for raw values that differ only in case, white space or length.
@Suite struct ClassTypeMemoTests {
    static let raws = ["coupon_code", " Coupon_Code ", "COUPON_CODE", "coupon_cod", "coupon_code2", "", " ", "é",
                       "Home_Tile", "home_tile", "home.tile", "a-b"] + (0..<30).map { "type_\($0)" }

    static func payload(_ raws: [String]) -> [UInt8] {
        let cards = raws.enumerated().map { i, raw in
            #"{"id":"c\#(i)","tp":"control","ca":\#(i),"e":{"class_type":"\#(raw)","x":"y"}}"#
        }
        return Array("[\(cards.joined(separator: ","))]".utf8)
    }

    @Test(arguments: [nil, Set(["coupon_code", "home_tile", "type_3", "type_29"])] as [Set<String>?])
    func everyCardGetsItsOwnNormalizedClassType(known: Set<String>?) throws {
        // Each raw value three times, in an order that meets each again after others.
        let raws = Self.raws + Self.raws.reversed() + Self.raws
        let cards = try PayloadDecoder(knownClassTypes: known).decode(Self.payload(raws)).cards
        try #require(cards.count == raws.count)
        for (card, raw) in zip(cards, raws) {
            #expect(card.card.classType == ClassType.normalize(raw, known: known), "\(raw.debugDescription)")
            #expect(card.card.extras[ClassType.extrasKey] == raw)
        }
    }
}

/// The card writers' copy of short pieces (`RawPieces.copy`: two words that may overlap): every length
/// copies exactly its bytes, and nothing around them.
@Suite struct PieceCopyTests {
    @Test func everyLengthCopiesItsBytesAndNothingElse() {
        for count in 0...40 {
            let source = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            var target = [UInt8](repeating: 0xEE, count: count + 16)
            source.withUnsafeBufferPointer { s in
                target.withUnsafeMutableBufferPointer { t in
                    if let from = s.baseAddress { RawPieces.copy(from, to: t.baseAddress! + 8, count: count) }
                }
            }
            #expect(Array(target[8..<(8 + count)]) == source, "\(count) bytes")
            #expect(target[..<8].allSatisfy { $0 == 0xEE } && target[(8 + count)...].allSatisfy { $0 == 0xEE }, "\(count) bytes")
        }
    }
}

/// Extras keys are put in order as two words each when they are short
/// (`CardFields.compareKeys`): keys that are prefixes of each other, of 7, 8 and 9 bytes,
/// repeated (the last one wins), in every order, and a key so near the end of the input
/// that its 8 bytes cannot be loaded, must come out as the parsed tree's sorted dictionary
/// has them.
@Suite struct ExtrasOrderTests {
    static let keys = ["a", "ab", "abc", "b", "ba", "Z", "_", "aaaaaaa", "aaaaaaaa", "aaaaaaab", "aaaaaaaaa",
                       "key_1", "key_10", "key_2", "class_type", "~", " ", "a b"]

    @Test func shuffledKeysComeOutInTheTreesOrder() throws {
        var rng = SplitMix(seed: 0xE7)
        let decoder = PayloadDecoder()
        for round in 0..<400 {
            let count = 1 + Int(rng.next() % 20)
            let members = (0..<count).map { i in
                #""\#(Self.keys[Int(rng.next() % UInt64(Self.keys.count))])":"v\#(i)""#
            }
            let json = #"[{"id":"c","tp":"short_news","ca":5,"ds":"d","e":{\#(members.joined(separator: ","))}}]"#
            let bytes = Array(json.utf8)
            let streamed = try decoder.decode(bytes)
            let parsed = try decoder.decode(JSONReader.parse(bytes))
            #expect(streamed == parsed, "round \(round): \(json)")
        }
    }

    @Test func aKeyAtTheVeryEndOfTheInputIsCompared() throws {
        // The card is the document: a last key of one byte has 7 bytes after it, so its 8
        // bytes would run past the input's end.
        let decoder = PayloadDecoder()
        for tail in ["b", "a", "ab", "aa"] {
            let json = #"{"id":"c","tp":"short_news","ca":5,"ds":"d","e":{"ab":"1","\#(tail)":""}}"#
            let card = try #require(Array(json.utf8).withUnsafeBufferPointer { decoder.decodeStoredCard($0) })
            let expected = tail == "ab" ? #"{"ab":""}"# : (tail < "ab" ? #"{"\#(tail)":"","ab":"1"}"# : #"{"ab":"1","\#(tail)":""}"#)
            #expect(CardJSON.encode(card).contains(#""extras":\#(expected)"#), "\(tail): \(CardJSON.encode(card))")
        }
    }
}
