import Foundation
import Testing
@testable import ContentCards

/// Edges of the wire found by a review of the decoder: whole numbers decided from their
/// digits, an escaped lone surrogate leaving one card out, and text from the input bounded and
/// escaped in messages.
@Suite struct WireEdgeTests {
    let decoder = PayloadDecoder()

    /// Before: through a `Double`, `1700000000.0000001` was whole, `9007199254740993.0` read
    /// as its neighbour and `9.21e18` (within Int64) was refused.
    @Test(arguments: [
        ("1.7e9", Int64(1_700_000_000)), ("12.0", 12), ("1.50e1", 15), ("-0", 0), ("-0.0e-5", 0), ("0e999999999999", 0),
        ("9007199254740993.0", 9_007_199_254_740_993), ("9.21e18", 9_210_000_000_000_000_000),
        ("9223372036854775807.0", .max), ("-9223372036854775808.0", .min), ("-9.223372036854775808e18", .min),
        ("1E2", 100), ("1e+2", 100), ("100e-2", 1),
    ])
    func wholeNumbersAreReadFromTheirDigits(text: String, value: Int64) {
        #expect(JSONValue.number(text).int64Value == value)
    }

    @Test(arguments: ["1700000000.0000001", "12345678901234567.5", "0.5", "1e-1", "9223372036854775808",
                      "9223372036854775807.5", "-9223372036854775809", "1e19", "1e999999999999", "1e-999999999999",
                      "123456789012345678901234567890"])
    func fractionsAndNumbersPastInt64AreNotWhole(text: String) {
        #expect(JSONValue.number(text).int64Value == nil)
    }

    /// An exponent that cancels a million zeros: capped at a million, it read 10.
    @Test func aLongExponentIsExact() {
        #expect(JSONValue.number("1" + String(repeating: "0", count: 1_000_001) + "e-1000001").int64Value == 1)
        #expect(JSONValue.number("0." + String(repeating: "0", count: 1_000_001) + "1e1000002").int64Value == 1)
        #expect(JSONValue.wholeNumber("-") == nil && JSONValue.wholeNumber("e5") == nil && JSONValue.wholeNumber("") == nil)
    }

    @Test func aCardWhoseTimeHasAFractionIsLeftOutAndACursorRefused() throws {
        let payload = try decoder.decode(#"""
            [{"id":"a","tp":"control","ca":1700000000.0000001},{"id":"b","tp":"control","ca":1.7e9,"ea":9007199254740993.0}]
            """#)
        #expect(payload.leftOut.map(\.id) == ["a"])
        #expect(payload.leftOut.first?.reason.contains("not a whole number") == true)
        #expect(payload.cards.first?.card.created == 1_700_000_000)
        #expect(payload.cards.first?.card.expiresAt == 9_007_199_254_740_993)
        #expect(throws: PayloadError.self) {
            try decoder.decode(#"{"cards":[],"last_full_sync_at":1700000000.0000001}"#)
        }
    }

    /// `\ud83d` alone (JavaScript's text cut inside an emoji) failed the whole response; now
    /// that card is left out, a paired one is read, and outside the cards it is still an error.
    @Test func anEscapedLoneSurrogateLeavesItsCardOut() throws {
        let payload = try decoder.decode(#"""
            [{"id":"a","tp":"short_news","ca":1,"ds":"cut \ud83d"},
             {"id":"b","tp":"short_news","ca":1,"ds":"\ud83d\ude00 \ud83d\u0041"},
             {"id":"c","tp":"short_news","ca":1,"ds":"low \ude00 first"},
             {"id":"d","tp":"short_news","ca":1,"ds":"whole \ud83d\ude00"},
             {"id":"e","tp":"short_news","ca":1,"ds":"x","zz":{"k":["\udbff"]}},
             {"id":"f","tp":"short_news","ca":1,"ds":"x","e":{"k\ud800":"v"}},
             "\ud800",
             {"id":"g","tp":"short_news","ca":1,"ds":"x"}]
            """#)
        #expect(payload.cards.map(\.card.id) == ["d", "g"])
        #expect(payload.cards.first?.card.cardDescription == "whole 😀")
        #expect(payload.leftOut.map(\.index) == [0, 1, 2, 4, 5, 6])
        #expect(payload.leftOut.prefix(5).allSatisfy { $0.reason.contains("lone surrogate") })
        #expect(payload.leftOut.last?.reason == "not an object but a string")
        // Outside a card: the response is refused, as before.
        #expect(throws: PayloadError.self) { try decoder.decode(#"{"user_id":"\ud800","cards":[]}"#) }
        #expect(throws: JSONError.self) { try JSONReader.parse(#"{"userId":"\ud800"}"#) }
        // A large payload read by two threads leaves the same cards out.
        let feed = CardArraySplitTests.feed { CardArraySplitTests.card($0, description: $0 % 500 == 9 ? #"cut \ud83d"# : nil) }
        let r = CardArraySplitTests.both(feed)
        #expect(r.agree && r.joined == true)
        #expect((try? r.split.get())?.leftOut.map(\.index) == [9, 509, 1009, 1509, 2009, 2509])
    }

    /// A type, a user id or a configuration key from outside can be megabytes long and hold
    /// control characters: messages quote it escaped and cut.
    @Test func textFromTheInputIsBoundedAndEscapedInMessages() throws {
        let long = String(repeating: "x\n", count: 50_000)
        let payload = try decoder.decode(#"[{"id":"a","tp":"\#(long.replacingOccurrences(of: "\n", with: "\\n"))","ca":1}]"#)
        let reason = try #require(payload.leftOut.first?.reason)
        #expect(reason.count < 1000)
        #expect(reason.contains("x\\u000ax") && !reason.contains("\n"))
        #expect(reason.hasSuffix("(100000 bytes)"))
        #expect(Redact.quoted("tile\u{0}\u{1b}") == #""tile\u0000\u001b""#)
        #expect(ContentCardsController.quoted("plain") == #""plain""#)

        let key = String(repeating: "k", count: 500_000)
        do {
            _ = try ContentCardsController(json: #"{"\#(key)":1}"#)
            Issue.record("an unknown key was taken")
        } catch {
            #expect(error.message.count < 400)
            #expect(error.message.contains("unknown configuration key"))
        }

        // A raw control byte after a backslash is named, not written into the message.
        do {
            _ = try decoder.decode(Array(#"[{"id":"a\"#.utf8) + [0x0A] + Array(#"","tp":"control","ca":1}]"#.utf8))
            Issue.record("a bad escape was read")
        } catch {
            #expect(error.message.contains("a backslash before byte 0xA") && !error.message.contains("\n"))
        }
    }
}
