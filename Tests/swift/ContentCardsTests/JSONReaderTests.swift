import Testing
@testable import ContentCards

@Suite struct JSONReaderTests {
    @Test func parsesEveryKindOfValue() throws {
        let v = try JSONReader.parse(#"{"a":[1,-2.5e3,true,false,null,"x\n\u00e9\ud83d\ude00"],"b":{}}"#)
        guard case .array(let items)? = v["a"] else { Issue.record("a is not an array"); return }
        #expect(items == [.number("1"), .number("-2.5e3"), .bool(true), .bool(false), .null, .string("x\né😀")])
        #expect(v["b"] == .object([]))
    }

    @Test func lastDuplicateKeyWins() throws {
        #expect(try JSONReader.parse(#"{"k":1,"k":2}"#)["k"] == .number("2"))
    }

    @Test(arguments: [
        ("", "empty document"),
        ("{", "truncated"),
        (#"{"cards":[{"id":"a""#, "truncated"),
        (#"{"a" 1}"#, "expected ':'"),
        ("[1,]", "expected a value"),
        ("[01]", "leading zero"),
        ("[1.]", "digit after '.'"),
        (#"["a\x"]"#, "invalid escape"),
        (#"["\ud800"]"#, "surrogate"),
        ("[tru]", "invalid literal"),
        ("{} x", "after the JSON value"),
        ("[\"a\tb\"]", "control character"),
        ("NaN", "expected a value"),
    ])
    func malformedInputIsAnErrorWithAPosition(input: String, fragment: String) {
        do {
            _ = try JSONReader.parse(input)
            Issue.record("\(input) parsed")
        } catch {
            #expect(error.description.contains(fragment), "\(error.description)")
            #expect(error.description.contains("line"))
        }
    }

    @Test func errorPositionIsLineAndColumn() {
        do {
            _ = try JSONReader.parse("{\n  \"a\": tru\n}")
            Issue.record("parsed")
        } catch {
            #expect(error.line == 2)
            #expect(error.column == 8)
        }
    }

    @Test(arguments: [
        [UInt8]([0x5B, 0x22, 0xFF, 0x22, 0x5D]),              // a byte never valid in UTF-8
        [0x5B, 0x22, 0xC3, 0x22, 0x5D],                       // truncated sequence
        [0x5B, 0x22, 0xC0, 0xAF, 0x22, 0x5D],                 // overlong '/'
        [0x5B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x5D],           // encoded surrogate
        [0x5B, 0x22, 0xF4, 0x90, 0x80, 0x80, 0x22, 0x5D],     // past U+10FFFF
    ])
    func invalidUTF8IsAnError(bytes: [UInt8]) {
        #expect(throws: JSONError.self) { try JSONReader.parse(bytes) }
        do { _ = try JSONReader.parse(bytes) } catch { #expect(error.message.contains("UTF-8")) }
    }

    @Test func tooDeepIsAnError() {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        do { _ = try JSONReader.parse(deep); Issue.record("parsed") } catch {
            #expect(error.message.contains("nesting deeper than 64"))
        }
        // A very deep document fails cleanly too (no stack overflow).
        let deeper = String(repeating: "[", count: 1_000_000)
        #expect(throws: JSONError.self) { try JSONReader.parse(deeper) }
        #expect(throws: Never.self) { try JSONReader.parse(String(repeating: "[", count: 64) + String(repeating: "]", count: 64)) }
    }

    @Test func tooLargeIsAnError() {
        do { _ = try JSONReader.parse("[1,2,3]", limits: .init(maxBytes: 4)); Issue.record("parsed") } catch {
            #expect(error.message.contains("over the limit of 4"))
        }
    }

    @Test func byteOrderMarkIsTolerated() throws {
        #expect(try JSONReader.parse([0xEF, 0xBB, 0xBF, 0x31]) == .number("1"))
    }

    @Test func writerEscapesAndKeepsSlashes() {
        var w = JSONWriter()
        w.beginObject(); w.key("s"); w.string("a/b\"c\\\n\u{01}é"); w.key("n"); w.double(1.5); w.key("i"); w.int(Int64(-3)); w.endObject()
        #expect(w.string == #"{"s":"a/b\"c\\\n\u0001é","n":1.5,"i":-3}"#)
    }

    @Test func writerRoundTripsThroughReader() throws {
        let text = #"{"a":[1,2.5,"x",{"b":null}],"c":true}"#
        #expect(try JSONReader.parse(text).jsonText == text)
    }
}
