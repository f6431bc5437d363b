/// The tokens of a JSON document, read in place: the decoders walk objects and arrays with it
/// and read each value where it is (`JSONReader.swift` builds trees and errors with it;
/// `Parser+Escapes.swift` unescapes the strings that hold escapes).
struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var pos = 0
    var depth = 0
    var scratch: [UInt8] = []
    /// The caller checked that the whole input is valid UTF-8 (`UTF8Validation.isValid`,
    /// one pass at about a byte an instruction): strings then skip multi-byte characters eight
    /// bytes at a time instead of stopping to validate each one (accented text stopped the
    /// fast loop at every accent).
    var validUTF8 = false

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes; self.maxDepth = maxDepth
    }

    mutating func skipSpace() {
        while pos < bytes.count {
            switch bytes[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONError) {
        let start = pos
        let count = word.utf8CodeUnitCount
        guard bytes.count - pos >= count else { throw error("unexpected end of input in a literal (the JSON is truncated)", at: start) }
        // One comparison of the whole word (a loop of checked subscripts was a hundred
        // instructions for every boolean of every card).
        guard let base = bytes.baseAddress, memcmp(base + pos, word.utf8Start, count) == 0 else {
            throw error("invalid literal: expected \(word)", at: start)
        }
        pos += count
    }

    mutating func enter() throws(JSONError) {
        depth += 1
        if depth > maxDepth { throw error("nesting deeper than \(maxDepth) levels") }
    }

    /// Where an object or array being read is: decoders walk members and elements with
    /// `nextKey` and `nextElement`, and read each value in place, so a card never has to become
    /// a generic tree first.
    struct Cursor {
        var first = true
    }

    /// At '{': enters the object.
    mutating func beginObject() throws(JSONError) -> Cursor {
        try enter()
        pos += 1
        return Cursor()
    }

    /// The next member's name, with the parser at its value; nil at the end of the object.
    mutating func nextKey(_ cursor: inout Cursor) throws(JSONError) -> (name: String, known: KnownKey?)? {
        guard try toNextMember(&cursor) else { return nil }
        let key = try parseKey()
        try afterMemberName()
        return key
    }

    /// The next member of an object of known fields (a card): which known key it has, with
    /// the parser at its value, or the end of the object. Keys repeat in every card, so the
    /// common shape (`, "k": ` with a short key without escapes) is read in one tight pass;
    /// anything else goes the general way (`nextKey`), from where it started, so errors and
    /// odd input are handled exactly as there.
    enum MemberKey {
        case end
        case known(KnownKey)
        case other
    }

    mutating func nextMemberKey(_ cursor: inout Cursor) throws(JSONError) -> MemberKey {
        if let base = bytes.baseAddress {
            let n = bytes.count
            var p = pos
            @inline(__always) func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }
            while p < n && isSpace(base[p]) { p += 1 }
            if !cursor.first && p < n && base[p] == 0x2C {
                p += 1
                while p < n && isSpace(base[p]) { p += 1 }
            } else if !cursor.first {
                p = n    // the end of the object, or an error: the general way
            }
            if p < n && base[p] == 0x22 {
                let start = p + 1
                var end = start
                while end < n && end - start <= 16 && base[end] != 0x22 && base[end] != 0x5C { end += 1 }
                if end < n && base[end] == 0x22 && end - start <= 16 {
                    var q = end + 1
                    while q < n && isSpace(base[q]) { q += 1 }
                    if q < n && base[q] == 0x3A {
                        q += 1
                        while q < n && isSpace(base[q]) { q += 1 }
                        // Only a known name is taken here: `PackedKey` refuses control bytes,
                        // and a known name is plain ASCII, so the bytes were a valid string.
                        // Any other name (which may hold bad UTF-8) goes the general way,
                        // which checks it.
                        if let known = PackedKey(UnsafeBufferPointer(start: base + start, count: end - start)).flatMap(Parser.knownKey) {
                            pos = q
                            cursor.first = false
                            return .known(known)
                        }
                    }
                }
            }
        }
        guard let key = try nextKey(&cursor) else { return .end }
        return key.known.map(MemberKey.known) ?? .other
    }

    /// Moves to the next member's name (true) or past the closing brace (false).
    mutating func toNextMember(_ cursor: inout Cursor) throws(JSONError) -> Bool {
        skipSpace()
        guard pos < bytes.count else { throw error("unexpected end of input in an object (the JSON is truncated)") }
        if bytes[pos] == 0x7D && cursor.first { pos += 1; depth -= 1; return false }
        if !cursor.first {
            if bytes[pos] == 0x7D { pos += 1; depth -= 1; return false }
            guard bytes[pos] == 0x2C else { throw error("unexpected \(describe(bytes[pos])): expected ',' or '}' in an object") }
            pos += 1
            skipSpace()
            guard pos < bytes.count else { throw error("unexpected end of input in an object (the JSON is truncated)") }
        }
        cursor.first = false
        guard bytes[pos] == 0x22 else { throw error("unexpected \(describe(bytes[pos])): expected a member name in double quotes") }
        return true
    }

    mutating func afterMemberName() throws(JSONError) {
        skipSpace()
        guard pos < bytes.count else { throw error("unexpected end of input in an object (the JSON is truncated)") }
        guard bytes[pos] == 0x3A else { throw error("unexpected \(describe(bytes[pos])): expected ':' after a member name") }
        pos += 1
        skipSpace()
    }

    /// At '[': enters the array.
    mutating func beginArray() throws(JSONError) -> Cursor {
        try enter()
        pos += 1
        return Cursor()
    }

    /// True with the parser at the next element; false at the end of the array.
    mutating func nextElement(_ cursor: inout Cursor) throws(JSONError) -> Bool {
        skipSpace()
        guard pos < bytes.count else { throw error("unexpected end of input in an array (the JSON is truncated)") }
        if bytes[pos] == 0x5D && cursor.first { pos += 1; depth -= 1; return false }
        if !cursor.first {
            if bytes[pos] == 0x5D { pos += 1; depth -= 1; return false }
            guard bytes[pos] == 0x2C else { throw error("unexpected \(describe(bytes[pos])): expected ',' or ']' in an array") }
            pos += 1
            skipSpace()
        }
        cursor.first = false
        return true
    }

    /// The byte the next value starts with (after white space), or nil at the end.
    mutating func peek() -> UInt8? {
        skipSpace()
        return pos < bytes.count ? bytes[pos] : nil
    }

    /// Steps over a number token, checking its grammar; the range of its text.
    mutating func scanNumber() throws(JSONError) -> Range<Int> {
        let start = pos
        if bytes[pos] == 0x2D { pos += 1 }
        guard pos < bytes.count, isDigit(bytes[pos]) else { throw error("invalid number: expected a digit", at: pos) }
        if bytes[pos] == 0x30 {
            pos += 1
            if pos < bytes.count, isDigit(bytes[pos]) { throw error("invalid number: leading zero", at: start) }
        } else {
            while pos < bytes.count, isDigit(bytes[pos]) { pos += 1 }
        }
        if pos < bytes.count, bytes[pos] == 0x2E {
            pos += 1
            guard pos < bytes.count, isDigit(bytes[pos]) else { throw error("invalid number: expected a digit after '.'") }
            while pos < bytes.count, isDigit(bytes[pos]) { pos += 1 }
        }
        if pos < bytes.count, bytes[pos] | 0x20 == 0x65 {
            pos += 1
            if pos < bytes.count, bytes[pos] == 0x2B || bytes[pos] == 0x2D { pos += 1 }
            guard pos < bytes.count, isDigit(bytes[pos]) else { throw error("invalid number: expected a digit in the exponent") }
            while pos < bytes.count, isDigit(bytes[pos]) { pos += 1 }
        }
        return start..<pos
    }

    func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// A member name, and which known one it is. A known name without escapes comes back as
    /// its shared string, neither validated nor allocated again: names repeat in every card.
    mutating func parseKey() throws(JSONError) -> (name: String, known: KnownKey?) {
        var end = pos + 1
        while end < bytes.count && end - pos <= 17 && bytes[end] != 0x22 && bytes[end] != 0x5C { end += 1 }
        if end < bytes.count && bytes[end] == 0x22,
           let packed = PackedKey(UnsafeBufferPointer(rebasing: bytes[(pos + 1)..<end])),
           let known = Parser.knownKey(packed) {
            pos = end + 1
            return (known.rawValue, known)
        }
        let name = try parseString()
        return (name, Parser.knownKey(named: name))
    }

    /// Reads a string token, validating UTF-8 and escapes. Strings without escapes are made
    /// straight from the input bytes.
    mutating func parseString() throws(JSONError) -> String {
        let span = try scanString()
        return try string(span)
    }

    /// The text of a string token scanned earlier.
    mutating func string(_ span: StringSpan) throws(JSONError) -> String {
        if !span.escaped { return String(decoding: self.bytes(span), as: UTF8.self) }
        return try unescape(from: span.start, to: span.end)
    }

    /// The bytes between a token's quotes (its text, when it has no escapes).
    func bytes(_ span: StringSpan) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[span.start..<span.end])
    }

    /// Steps over a string token, validating its UTF-8, and says where its text is: the
    /// decoder copies text from the input to its output without making a `String` of it.
    /// Escapes are validated when the text is read (`string`).
    mutating func scanString() throws(JSONError) -> StringSpan {
        if validUTF8, let base = bytes.baseAddress, let span = Parser.scanValidString(base, count: bytes.count, quote: pos) {
            pos = span.end + 1
            return span
        }
        return try scanStringChecked()
    }

    /// `scanString` for input already known to be valid UTF-8 (most strings of a payload):
    /// the span of the string whose opening quote is at `quote`, or nil when it is not
    /// well formed (a control character, or no closing quote), which the checked scan then
    /// reports. Static, on locals only: as a method it kept `pos` in memory and saved every
    /// register around the error paths it held, twice the instructions of the loop itself.
    @inline(__always)
    static func scanValidString(_ base: UnsafePointer<UInt8>, count n: Int, quote: Int) -> StringSpan? {
        let start = quote + 1
        var p = start
        var seen: UInt64 = 0
        var hasEscapes = false, hasDEL = false, highTail = false
        let words = UnsafeRawPointer(base)
        while true {
            // Eight bytes at a time; the mask's lowest set bit is exactly the first byte that
            // ends the run (see `endingMask`).
            while p + 8 <= n {
                let word = UInt64(littleEndian: words.loadUnaligned(fromByteOffset: p, as: UInt64.self))
                let ending = endingMask(word)
                if ending == 0 {
                    seen |= word
                    p += 8
                    continue
                }
                let k = ending.trailingZeroBitCount >> 3
                seen |= word & ((1 << UInt64(k << 3)) &- 1)
                p += k
                break
            }
            guard p < n else { return nil }
            let b = base[p]
            if b == 0x22 { break }
            if b == 0x5C { hasEscapes = true; p += 2; continue }
            if b < 0x20 { return nil }
            if b == 0x7F { hasDEL = true } else if b >= 0x80 { highTail = true }
            p += 1
        }
        guard p <= n else { return nil }
        let ascii = !highTail && seen & 0x8080_8080_8080_8080 == 0
        return StringSpan(start: start, end: p, escaped: hasEscapes, ascii: ascii, plain: !hasEscapes && !hasDEL)
    }

    /// `scanString` checking the UTF-8 as it goes (and reporting what is wrong).
    mutating func scanStringChecked() throws(JSONError) -> StringSpan {
        let open = pos
        pos += 1
        let start = pos
        var hasEscapes = false
        var ascii = true
        var hasDEL = false
        let words = UnsafeRawPointer(bytes.baseAddress)
        while true {
            // Eight plain ASCII characters at a time (no quote, backslash, control character or
            // non-ASCII byte among them); every other byte is looked at below, and checked.
            // (Input known to be valid UTF-8 goes through `scanValidString`, and comes here
            // only for a string that is not well formed, to say what is wrong with it.)
            if let words {
                while pos + 8 <= bytes.count && !Parser.anySpecial(words.loadUnaligned(fromByteOffset: pos, as: UInt64.self)) {
                    pos += 8
                }
            }
            guard pos < bytes.count else { throw error("unterminated string (the JSON is truncated)", at: open) }
            let b = bytes[pos]
            if b == 0x22 { break }
            if b == 0x5C {
                hasEscapes = true
                pos += 2
                continue
            }
            if b < 0x20 { throw error("control character \(describe(b)) in a string: it must be escaped") }
            if b < 0x80 {
                if b == 0x7F { hasDEL = true }
                pos += 1
                continue
            }
            ascii = false
            pos += validUTF8 ? 1 : try utf8SequenceLength(at: pos)
        }
        let end = pos
        pos += 1
        return StringSpan(start: start, end: end, escaped: hasEscapes, ascii: ascii, plain: !hasEscapes && !hasDEL)
    }

    /// Steps over any value without building it; `depth` limits nesting as parsing does.
    mutating func skipValue() throws(JSONError) {
        guard pos < bytes.count else { throw error("unexpected end of input: expected a value (the JSON is truncated)") }
        switch bytes[pos] {
        case 0x7B:
            var cursor = try beginObject()
            while try toNextMember(&cursor) {
                let key = try scanString()
                if key.escaped { _ = try string(key) }
                try afterMemberName()
                try skipValue()
            }
        case 0x5B:
            var cursor = try beginArray()
            while try nextElement(&cursor) { try skipValue() }
        case 0x22:
            let span = try scanString()
            if span.escaped { _ = try string(span) }
        case 0x74: try literal("true")
        case 0x66: try literal("false")
        case 0x6E: try literal("null")
        case 0x2D, 0x30...0x39: _ = try scanNumber()
        default: throw error("unexpected \(describe(bytes[pos])): expected a value")
        }
    }

    /// Whether any of eight bytes ends a run of plain string text: a quote, a backslash, a
    /// control character, DEL (which the writer escapes), or a byte of a multi-byte character. (The SWAR tests for a zero byte
    /// and for a byte below n answer "is there one" exactly. The writer has its own copy: a
    /// helper in another file is not inlined by the CMake build, which costs 8% of a sync.)
    @inline(__always)
    static func anySpecial(_ x: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func hasZero(_ v: UInt64) -> UInt64 { (v &- ones) & ~v & highs }
        let below20 = (x &- ones &* 0x20) & ~x & highs
        return (x & highs) | below20 | hasZero(x ^ (ones &* 0x22)) | hasZero(x ^ (ones &* 0x5C))
            | hasZero(x ^ (ones &* 0x7F)) != 0
    }

    /// For input known to be valid UTF-8, the bytes (bit 7 of each, the first byte lowest)
    /// that end a run of plain text: a quote, a backslash, a control character or DEL;
    /// multi-byte characters do not.
    @inline(__always)
    static func endingMask(_ x: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func hasZero(_ v: UInt64) -> UInt64 { (v &- ones) & ~v & highs }
        // Below 0x20, only for bytes without the high bit (a continuation byte is not a control).
        let below20 = (x &- ones &* 0x20) & ~x & highs
        return below20 | hasZero(x ^ (ones &* 0x22)) | hasZero(x ^ (ones &* 0x5C)) | hasZero(x ^ (ones &* 0x7F))
    }

    /// The length of the valid UTF-8 sequence at `i`, or an error (see `UTF8Validation`).
    func utf8SequenceLength(at i: Int) throws(JSONError) -> Int {
        guard let n = UTF8Validation.sequenceLength(bytes, at: i) else {
            // The error is built only when thrown: building it scans the input for the line number.
            throw error("invalid UTF-8 in a string", at: i)
        }
        return n
    }
}

/// Where a string token's text is in the input: between its quotes, `start..<end`.
struct StringSpan {
    var start: Int
    var end: Int
    /// The token holds escapes: its text must be unescaped (`Parser.string`).
    var escaped: Bool
    /// Every byte is ASCII.
    var ascii: Bool
    /// No escapes and no DEL: the bytes can be written out between quotes as they are.
    var plain: Bool
    var isEmpty: Bool { start == end }
}
