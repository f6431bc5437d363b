/// The text of a string token with escapes (`Parser.string`), unescaped and checked: the
/// slow path of string reading, for the few strings that hold a backslash.
extension Parser {
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
                    let paired = i + 6 <= end && bytes[i] == 0x5C && bytes[i + 1] == 0x75
                    let low = paired ? try hex4(at: i + 2, end: end) : 0
                    guard low >= 0xDC00 && low <= 0xDFFF else {
                        // What follows, another escape or not, is read as itself.
                        try loneSurrogate("invalid \\u escape: a high surrogate without its low surrogate", at: i - 6)
                        continue
                    }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                } else if code >= 0xDC00 && code <= 0xDFFF {
                    try loneSurrogate("invalid \\u escape: a lone low surrogate", at: i - 6)
                    continue
                }
                guard let scalar = Unicode.Scalar(code) else { throw error("invalid \\u escape", at: i - 6) }
                appendUTF8(scalar)
            default:
                // The byte is shown only when it is printable ASCII: after a backslash the
                // scanners take any byte, a raw control byte or half a character too.
                guard e >= 0x21 && e < 0x7F else {
                    throw error("invalid escape: a backslash before \(describe(e)) in a string", at: i - 2)
                }
                throw error("invalid escape '\\\(Character(Unicode.Scalar(e)))' in a string", at: i - 2)
            }
        }
        return String(decoding: scratch, as: UTF8.self)
    }

    /// An escaped surrogate without its pair (`\ud83d` alone: what JavaScript writes for a text
    /// cut inside an emoji). JSON's grammar takes it; no UTF-8 can hold it. Inside a card
    /// (`toleratesLoneSurrogates`) it is written U+FFFD and noted (`sawLoneSurrogate`), and the
    /// decoder leaves that one card out; anywhere else it is an error, as before.
    private mutating func loneSurrogate(_ message: String, at offset: Int) throws(JSONError) {
        guard toleratesLoneSurrogates else { throw error(message, at: offset) }
        sawLoneSurrogate = true
        scratch.append(contentsOf: [0xEF, 0xBF, 0xBD])
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
