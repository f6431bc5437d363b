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
    /// Set while a card is read: an escaped lone surrogate is then written U+FFFD and noted
    /// in `sawLoneSurrogate` instead of failing the document (`Parser+Escapes.swift`).
    var toleratesLoneSurrogates = false
    var sawLoneSurrogate = false

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
}
