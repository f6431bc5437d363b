import Testing
@testable import ContentCards

/// The string scanner. Its two loops (input checked as valid UTF-8 up front, and not) must find
/// the same tokens: the same end, escapes, ASCII-ness and DEL, wherever in a word the special
/// byte falls. And `Parser.scanValidString`, the loop for checked input, against the
/// byte-at-a-time rule it implements: sixteen bytes at a time on x86-64 (SSE2), eight
/// elsewhere, then byte by byte near the input's end. Each loop hands over to the next at every
/// distance from the end, so every byte class is put at every position of strings that end at
/// every distance from it.
@Suite struct StringScanTests {
    static let pieces: [String] = ["a", "é", "€", "😀", "\\\"", "\\\\", "\\u00e9", "\u{7F}", "bcdefgh", " "]

    @Test func bothLoopsAgreeOnEveryPlacement() throws {
        var rng = SplitMix(seed: 0x57A1_5CA7)     // seeded: a failure is there again the next run
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

    /// A string that is not well formed (a raw control character, no closing quote, a
    /// backslash at the very end) gets the same error from both loops, wherever it falls.
    @Test func bothLoopsRefuseTheSameMalformedStrings() {
        let bad = ["abc\u{01}def", "abcdefghijk\u{1F}", "\u{0A}", "abcdefgh", "abcdefghijklmnop\\", "é\u{00}é"]
        for text in bad {
            for close in ["", "\""] {
                let token = Array(("\"" + text + close).utf8)
                func scan(_ valid: Bool) -> String {
                    token.withUnsafeBufferPointer { b in
                        var p = Parser(bytes: b, maxDepth: 4)
                        p.validUTF8 = valid
                        do throws(JSONError) { _ = try p.scanString(); return "ok \(p.pos)" } catch { return error.message }
                    }
                }
                #expect(scan(true) == scan(false), "\(text.debugDescription)\(close)")
                if close.isEmpty || text.utf8.contains(where: { $0 < 0x20 }) { #expect(!scan(true).hasPrefix("ok"), "\(text.debugDescription)") }
            }
        }
    }


    /// The rule, a byte at a time: the string ends at the first quote not escaped; a backslash
    /// escapes the byte after it (checked later, by the unescaping); a control byte, or no
    /// closing quote, is not a string this scan takes (nil).
    static func reference(_ b: [UInt8], quote: Int) -> StringSpan? {
        var p = quote + 1
        var escaped = false, del = false, high = false
        while true {
            guard p < b.count else { return nil }
            let c = b[p]
            if c == 0x22 { break }
            if c == 0x5C { escaped = true; p += 2; continue }
            if c < 0x20 { return nil }
            if c == 0x7F { del = true }
            if c >= 0x80 { high = true }
            p += 1
        }
        return StringSpan(start: quote + 1, end: p, escaped: escaped, ascii: !high, plain: !escaped && !del)
    }

    static func scan(_ b: [UInt8], quote: Int) -> StringSpan? {
        b.withUnsafeBufferPointer { Parser.scanValidString($0.baseAddress!, count: $0.count, quote: quote) }
    }

    static func same(_ a: StringSpan?, _ b: StringSpan?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case let (x?, y?):
            return x.start == y.start && x.end == y.end && x.escaped == y.escaped && x.ascii == y.ascii && x.plain == y.plain
        default: return false
        }
    }

    static func describe(_ s: StringSpan?) -> String {
        guard let s else { return "nil" }
        return "\(s.start)..<\(s.end) escaped \(s.escaped) ascii \(s.ascii) plain \(s.plain)"
    }

    /// Every byte that changes the scan: the ends of a run (quote, backslash, control bytes,
    /// DEL), the bytes around them, and bytes with the high bit (UTF-8's lead and continuation
    /// bytes; 0xFF, which no valid UTF-8 holds, as the signed compares would see it).
    static let special: [UInt8] = [0x22, 0x5C, 0x00, 0x01, 0x1F, 0x20, 0x21, 0x7E, 0x7F, 0x80, 0xBF, 0xC3, 0xE2, 0xF0, 0xFF]

    @Test func eachByteAtEachPositionOfStringsEndingAtEachDistanceFromTheInputsEnd() {
        var checked = 0
        for length in 0...40 {
            for tail in 0...20 {               // bytes after the closing quote, to the input's end
                for position in 0..<max(length, 1) {
                    for byte in Self.special {
                        var b: [UInt8] = [0x5B, 0x22] + Array(repeating: 0x61, count: length) + [0x22]
                        b += Array(repeating: 0x5D, count: tail)
                        if length > 0 { b[2 + position] = byte }
                        let expected = Self.reference(b, quote: 1), got = Self.scan(b, quote: 1)
                        #expect(Self.same(expected, got),
                                "length \(length), tail \(tail), byte \(byte) at \(position): \(Self.describe(got)), expected \(Self.describe(expected))")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 100_000)
    }

    @Test func stringsCutOffByTheInputsEndAreNotTaken() {
        for length in 0...40 {
            for byte in Self.special where byte != 0x22 {
                var b: [UInt8] = [0x22] + Array(repeating: 0x61, count: length)
                if length > 0 { b[length] = byte }        // the last byte: a backslash escapes past the end
                #expect(Self.scan(b, quote: 0) == nil, "length \(length), last byte \(byte)")
            }
        }
    }

    @Test func randomStringsOfEveryByteClass() {
        var rng = SplitMix(seed: 0x5C4A_2025)
        let pool: [UInt8] = Self.special + [0x61, 0x62, 0x30, 0x2F, 0x3A, 0x41]
        for _ in 0..<20_000 {
            let length = Int(rng.next() % 70)
            var b: [UInt8] = [0x22]
            for _ in 0..<length {
                // Mostly plain text, as payloads are: a special byte one time in eight.
                let r = rng.next()
                b.append(r % 8 == 0 ? pool[Int((r >> 8) % UInt64(pool.count))] : UInt8(0x61 + (r >> 16) % 26))
            }
            b.append(0x22)
            b += Array(repeating: 0x20, count: Int(rng.next() % 24))
            let expected = Self.reference(b, quote: 0), got = Self.scan(b, quote: 0)
            #expect(Self.same(expected, got), "\(b): \(Self.describe(got)), expected \(Self.describe(expected))")
        }
    }
}
