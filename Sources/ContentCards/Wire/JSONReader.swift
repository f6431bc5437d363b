/// A strict JSON reader (RFC 8259) with the bounds the library promises: a size limit, a nesting
/// limit and UTF-8 validation. It never traps on any input: every problem is a `JSONError`
/// that says what was expected and where (line, column and byte offset).
package struct JSONReader {
    package struct Limits: Sendable {
        package var maxBytes: Int
        package var maxDepth: Int
        package init(maxBytes: Int = 16 << 20, maxDepth: Int = 64) {
            self.maxBytes = maxBytes; self.maxDepth = maxDepth
        }
    }

    package static func parse(_ text: String, limits: Limits = Limits()) throws(JSONError) -> JSONValue {
        var copy = text
        let result = copy.withUTF8 { bytes in Result { () throws(JSONError) in try parse(bytes, limits: limits) } }
        return try result.get()
    }

    package static func parse(_ bytes: [UInt8], limits: Limits = Limits()) throws(JSONError) -> JSONValue {
        let result = bytes.withUnsafeBufferPointer { buffer in Result { () throws(JSONError) in try parse(buffer, limits: limits) } }
        return try result.get()
    }

    package static func parse(_ bytes: UnsafeBufferPointer<UInt8>, limits: Limits = Limits()) throws(JSONError) -> JSONValue {
        if bytes.count > limits.maxBytes {
            throw JSONError(message: "payload is \(bytes.count) bytes, over the limit of \(limits.maxBytes)",
                            offset: 0, line: 1, column: 1)
        }
        var parser = Parser(bytes: bytes, maxDepth: limits.maxDepth)
        return try parser.document()
    }
}

package struct JSONError: Error, Equatable, CustomStringConvertible, Sendable {
    package let message: String
    package let offset: Int
    package let line: Int
    package let column: Int
    package var description: String { "\(message) at line \(line), column \(column) (byte \(offset))" }
}

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

    mutating func document() throws(JSONError) -> JSONValue {
        try beginDocument()
        let value = try parseValue()
        try endDocument()
        return value
    }

    /// Skips a UTF-8 byte order mark (many files carry one) and white space; fails on nothing.
    mutating func beginDocument() throws(JSONError) {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { pos = 3 }
        skipSpace()
        if pos >= bytes.count { throw error("empty document: expected a JSON value") }
    }

    /// Only white space may follow the document's value.
    mutating func endDocument() throws(JSONError) {
        skipSpace()
        if pos < bytes.count { throw error("unexpected \(describe(bytes[pos])) after the JSON value") }
    }

    func error(_ message: String, at offset: Int? = nil) -> JSONError {
        let at = min(offset ?? pos, bytes.count)
        var line = 1, lineStart = 0
        var i = 0
        while i < at { if bytes[i] == 0x0A { line += 1; lineStart = i + 1 }; i += 1 }
        // Columns count characters, not bytes, so they match what an editor shows.
        var column = 1
        i = lineStart
        while i < at { if bytes[i] & 0xC0 != 0x80 { column += 1 }; i += 1 }
        return JSONError(message: message, offset: at, line: line, column: column)
    }

    func describe(_ b: UInt8) -> String {
        if b >= 0x21 && b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        return "byte 0x\(String(b, radix: 16, uppercase: true))"
    }

    mutating func skipSpace() {
        while pos < bytes.count {
            switch bytes[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONError) -> JSONValue {
        guard pos < bytes.count else { throw error("unexpected end of input: expected a value (the JSON is truncated)") }
        switch bytes[pos] {
        case 0x7B: return try parseObject()
        case 0x5B: return try parseArray()
        case 0x22: return .string(try parseString())
        case 0x74: try literal("true"); return .bool(true)
        case 0x66: try literal("false"); return .bool(false)
        case 0x6E: try literal("null"); return .null
        case 0x2D, 0x30...0x39: return try parseNumber()
        default: throw error("unexpected \(describe(bytes[pos])): expected a value")
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

    mutating func parseObject() throws(JSONError) -> JSONValue {
        var cursor = try beginObject()
        var members: [(key: String, value: JSONValue)] = []
        while let key = try nextKey(&cursor) {
            members.append((key.name, try parseValue()))
        }
        return .object(members)
    }

    mutating func parseArray() throws(JSONError) -> JSONValue {
        var cursor = try beginArray()
        var elements: [JSONValue] = []
        while try nextElement(&cursor) {
            elements.append(try parseValue())
        }
        return .array(elements)
    }

    mutating func parseNumber() throws(JSONError) -> JSONValue {
        let range = try scanNumber()
        return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self))
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

    mutating func unescape(from start: Int, to end: Int) throws(JSONError) -> String {
        scratch.removeAll(keepingCapacity: true)
        var i = start
        while i < end {
            let b = bytes[i]
            guard b == 0x5C else { scratch.append(b); i += 1; continue }
            guard i + 1 < end else { throw error("invalid escape at the end of a string", at: i) }
            let e = bytes[i + 1]
            i += 2
            switch e {
            case 0x22: scratch.append(0x22)
            case 0x5C: scratch.append(0x5C)
            case 0x2F: scratch.append(0x2F)
            case 0x62: scratch.append(0x08)
            case 0x66: scratch.append(0x0C)
            case 0x6E: scratch.append(0x0A)
            case 0x72: scratch.append(0x0D)
            case 0x74: scratch.append(0x09)
            case 0x75:
                var code = try hex4(at: i, end: end)
                i += 4
                if code >= 0xD800 && code <= 0xDBFF {
                    guard i + 6 <= end, bytes[i] == 0x5C, bytes[i + 1] == 0x75 else {
                        throw error("invalid \\u escape: a high surrogate without its low surrogate", at: i - 6)
                    }
                    let low = try hex4(at: i + 2, end: end)
                    guard low >= 0xDC00 && low <= 0xDFFF else {
                        throw error("invalid \\u escape: a high surrogate without its low surrogate", at: i - 6)
                    }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                } else if code >= 0xDC00 && code <= 0xDFFF {
                    throw error("invalid \\u escape: a lone low surrogate", at: i - 6)
                }
                guard let scalar = Unicode.Scalar(code) else { throw error("invalid \\u escape", at: i - 6) }
                appendUTF8(scalar)
            default:
                throw error("invalid escape '\\\(Character(Unicode.Scalar(e)))' in a string", at: i - 2)
            }
        }
        return String(decoding: scratch, as: UTF8.self)
    }

    mutating func appendUTF8(_ scalar: Unicode.Scalar) {
        let v = scalar.value
        switch v {
        case 0..<0x80: scratch.append(UInt8(v))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | (v >> 6))); scratch.append(UInt8(0x80 | (v & 0x3F)))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | (v >> 12))); scratch.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (v & 0x3F)))
        default:
            scratch.append(UInt8(0xF0 | (v >> 18))); scratch.append(UInt8(0x80 | ((v >> 12) & 0x3F)))
            scratch.append(UInt8(0x80 | ((v >> 6) & 0x3F))); scratch.append(UInt8(0x80 | (v & 0x3F)))
        }
    }

    func hex4(at i: Int, end: Int) throws(JSONError) -> UInt32 {
        guard i + 4 <= end else { throw error("invalid \\u escape: expected 4 hex digits", at: i - 2) }
        var code: UInt32 = 0
        for k in 0..<4 {
            let c = bytes[i + k]
            let digit: UInt32
            switch c {
            case 0x30...0x39: digit = UInt32(c - 0x30)
            case 0x41...0x46: digit = UInt32(c - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(c - 0x61 + 10)
            default: throw error("invalid \\u escape: expected 4 hex digits", at: i - 2)
            }
            code = code << 4 | digit
        }
        return code
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
