/// Strict UTF-8 validation of bytes from C (RFC 3629: no overlong forms, no surrogates, nothing
/// past U+10FFFF), with an ASCII fast path of eight bytes at a time: a payload is mostly ASCII,
/// and checking it this way costs a fraction of building a String from it.
enum UTF8Validation {
    static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        let n = bytes.count
        var i = 0
        while i < n {
            // Eight ASCII bytes at a time (unaligned loads are fine on the platforms we build for).
            while i + 8 <= n && raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                i += 8
            }
            guard i < n else { break }
            let b0 = bytes[i]
            if b0 < 0x80 { i += 1; continue }
            func cont(_ k: Int) -> UInt8? { i + k < n && bytes[i + k] & 0xC0 == 0x80 ? bytes[i + k] : nil }
            switch b0 {
            case 0xC2...0xDF:
                guard cont(1) != nil else { return false }
                i += 2
            case 0xE0...0xEF:
                guard let b1 = cont(1), cont(2) != nil else { return false }
                if b0 == 0xE0 && b1 < 0xA0 { return false }     // overlong
                if b0 == 0xED && b1 > 0x9F { return false }     // surrogate
                i += 3
            case 0xF0...0xF4:
                guard let b1 = cont(1), cont(2) != nil, cont(3) != nil else { return false }
                if b0 == 0xF0 && b1 < 0x90 { return false }     // overlong
                if b0 == 0xF4 && b1 > 0x8F { return false }     // past U+10FFFF
                i += 4
            default:
                return false
            }
        }
        return true
    }
}
