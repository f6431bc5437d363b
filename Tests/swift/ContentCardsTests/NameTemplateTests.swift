import Testing
@testable import ContentCards

/// The one-pass card reader checks what lies between two values (the comma, the next name, its
/// colon, the white space) against the bytes at the same place of the card before
/// (`NameTemplates`). What it reads must not depend on the card before: each card
/// of a sequence, read by one `CardFields` as a payload's cards are, must leave exactly what
/// the general reader leaves reading that card alone; and a payload of such cards must decode
/// to what its parsed tree decodes to.
@Suite struct NameTemplateTests {
    /// Reads `cards` one after the other from one buffer with one `CardFields`; every card the
    /// one pass takes is compared with the general reader's fields. Returns how many it took.
    @discardableResult
    static func readInTurn(_ cards: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        let bytes = Array(("[" + cards.joined(separator: ",") + "]").utf8)
        var taken = 0
        try bytes.withUnsafeBufferPointer { buffer in
            var parser = Parser(bytes: buffer, maxDepth: 64)
            parser.validUTF8 = true
            parser.pos = 1
            var fields = CardFields()
            for (i, card) in cards.enumerated() {
                parser.skipSpace()
                // The general reader alone (input not known to be UTF-8), on fresh fields.
                var general = Parser(bytes: buffer, maxDepth: 64)
                general.pos = parser.pos
                var generalFields = CardFields()
                generalFields.reset(source: buffer)
                try generalFields.read(&general)
                fields.reset(source: buffer)
                let depth = parser.depth
                if fields.readCommonShape(&parser) {
                    taken += 1
                    #expect(fields.readState == generalFields.readState, "card \(i): \(card)", sourceLocation: sourceLocation)
                    #expect(parser.pos == general.pos, "card \(i): \(card)", sourceLocation: sourceLocation)
                    #expect(parser.depth == depth, sourceLocation: sourceLocation)
                } else {
                    parser.pos = general.pos
                    parser.depth = depth
                }
                parser.skipSpace()
                parser.pos += 1     // the comma, or the closing bracket
            }
        }
        return taken
    }

    static let common = #"{"id":"c","tp":"short_news","ca":5,"v":true,"ds":"d","e":{"k":"v"},"u":"https://a.example/"}"#

    @Test func cardsOfOneLayoutAreReadAsAlone() throws {
        let cards = (0..<6).map { Self.common.replacingOccurrences(of: #""c""#, with: "\"c\($0)\"") }
        #expect(try Self.readInTurn(cards) == cards.count)
    }

    /// Each card below follows one whose names are at the same places with other bytes: the
    /// same name with other white space, a name that is a prefix or an extension of the one
    /// before, the same name escaped, a name in another order, one more or one less member.
    @Test func cardsWhoseLayoutChangesAreReadAsAlone() throws {
        let cards = [
            Self.common,
            #"{"id":"c","tp":"short_news","ca":5,"v":true,"ds":"d","e":{"k":"v"},"u":"https://a.example/"}"#,
            #"{"id" :"c","tp": "short_news","ca" : 5,"v":\#ttrue,"ds"\#t:"d","e":{"k":"v"},"u":"x"}"#,
            #"{"id":"c","tp":"short_news","ca":5,"v":true,"ds":"d","e":{"k":"v"},"u":"x"}"#,
            #"{"i":"c","t":"short_news","c":5,"vv":true,"d":false,"ee":{"k":"v"},"uw":true}"#,
            #"{"ids":"c","tpx":"short_news","ca":5,"v":true,"dsx":"d","e":{"k":"v"},"u":"x"}"#,
            #"{"\u0069d":"c","t\u0070":"short_news","ca":5,"v":true,"ds":"d","e":{"k":"v"},"u":"x"}"#,
            #"{"id":"c","tp":"short_news","ca":5,"v":true,"ds":"d","e":{"k":"v"},"u":"x"}"#,
            #"{"tp":"short_news","id":"c","v":true,"ca":5,"e":{"k":"v"},"ds":"d","u":"x"}"#,
            #"{"tp":"short_news","id":"c","v":true,"ca":5,"e":{"k":"v"},"ds":"d","u":"x","tt":"t"}"#,
            #"{"tp":"short_news","id":"c","v":true,"ca":5,"e":{"k":"v"},"ds":"d"}"#,
            #"{"tp":"short_news","id":"c","v":true,"ca":5,"e":null,"ds":"d","u":"x","tt":"t"}"#,
            // Names of 6, 7 and 8 bytes with their quotes and colon, and one too long for a template.
            #"{"abcd":1,"abcde":2,"abcdef":3,"image_alt":"a","abcdefghijkl":4}"#,
            #"{"abcd":1,"abcde":2,"abcdef":3,"image_alt":"a","abcdefghijkl":4}"#,
            #"{"abce":1,"abcdf":2,"abcdeg":3,"image_alx":"a","abcdefghijkm":4}"#,
            // White space before the colon, and more white space after it than the template has.
            #"{"id" : "c","tp" :  "short_news","ca"\#t:5}"#,
            #"{"id" :  "c","tp" : "short_news","ca"\#t: 5}"#,
            "{\"id\"\n:\r\n\"c\",\"tp\"\t:\"short_news\",\"ca\":5}",
            // White space around the commas, and after the opening brace.
            "{ \"id\":\"c\" ,\"tp\":\"short_news\",\n\"ca\":5 , \"v\":true}",
            "{\"id\":\"c\", \"tp\":\"short_news\" ,\"ca\":5,\n \"v\":true }",
            "{}", "{ }", Self.common,
            // A last card whose last name has fewer than 8 bytes left after it.
            #"{"id":"c","v":1}"#, #"{"id":"c","v":1}"#,
        ]
        // Not taken: the card with escaped names, and the one whose extras are null.
        #expect(try Self.readInTurn(cards) == cards.count - 2)
    }

    /// Many cards of random layouts, from a pool of names that overlap, with random white space:
    /// read in turn, and decoded whole against the parsed tree.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func randomLayoutsAreReadAsAlone(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        let members = [#""id":"c""#, #""tp":"captioned_image""#, #""ca":7"#, #""ea":-1"#, #""v":true"#, #""cl":false"#,
                       #""d":null"#, #""i":"https://a.example/i.png""#, #""ar":1.5"#, #""tt":"T""#, #""ds":"D""#,
                       #""dm":"a.example""#, #""u":"x""#, #""image_alt":"alt""#, #""e":{"class_type":"home_tile","k":"v"}"#,
                       #""x":[1,{"y":2}]"#, #""ii":"no""#, #""idx":3"#, #""t":false"#, #""uw":true"#]
        let spaces = ["", "", "", " ", "\t", "\n "]
        var cards: [String] = []
        var layout = Array(members.prefix(12))
        for i in 0..<400 {
            // Mostly the layout of the card before, as a server writes them; sometimes another.
            if random.next() % 4 == 0 {
                layout = members.shuffled(using: &random).prefix(Int(random.next() % UInt64(members.count))).map { $0 }
            }
            let ws = spaces[Int(random.next() % UInt64(spaces.count))]
            let body = layout.map { member -> String in
                let member = member.hasPrefix(#""id":"#) ? #""id":"c\#(i)""# : member
                return ws.isEmpty ? member : member.replacingOccurrences(of: "\":", with: "\"\(ws):\(ws)")
            }
            cards.append("{" + body.joined(separator: ",") + "}")
        }
        let taken = try Self.readInTurn(cards)
        #expect(taken == cards.count)
        let bytes = Array(("[" + cards.joined(separator: ",") + "]").utf8)
        let decoder = PayloadDecoder()
        #expect(try decoder.decode(bytes) == decoder.decode(JSONReader.parse(bytes)))
    }
}
