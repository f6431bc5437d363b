#if arch(x86_64)
import CContentCardsSIMD
#endif

/// Strict UTF-8 (RFC 3629), for the JSON reader and for string arguments at the C boundary.
package enum UTF8Validation {
    /// The length of the valid UTF-8 sequence starting at `i` (1 for ASCII), or nil: overlong
    /// forms, surrogates and code points past U+10FFFF are invalid, as the Unicode standard says.
    @inline(__always)
    package static func sequenceLength(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int) -> Int? {
        let b0 = bytes[i]
        if b0 < 0x80 { return 1 }
        @inline(__always) func cont(_ k: Int) -> UInt8? {
            i + k < bytes.count && bytes[i + k] & 0xC0 == 0x80 ? bytes[i + k] : nil
        }
        switch b0 {
        case 0xC2...0xDF:
            return cont(1) != nil ? 2 : nil
        case 0xE0...0xEF:
            guard let b1 = cont(1), cont(2) != nil else { return nil }
            if b0 == 0xE0 && b1 < 0xA0 { return nil }     // overlong
            if b0 == 0xED && b1 > 0x9F { return nil }     // surrogate
            return 3
        case 0xF0...0xF4:
            guard let b1 = cont(1), cont(2) != nil, cont(3) != nil else { return nil }
            if b0 == 0xF0 && b1 < 0x90 { return nil }     // overlong
            if b0 == 0xF4 && b1 > 0x8F { return nil }     // past U+10FFFF
            return 4
        default:
            return nil
        }
    }

    /// Whether all of `bytes` is valid UTF-8; mostly-ASCII text goes 64 bytes at a time (SSE2,
    /// Sources/CContentCardsSIMD, on x86-64), then 32, then eight (a payload is ASCII in runs of
    /// a few hundred bytes between its accented letters: one test a word made this loop 2.5% of
    /// a 10,000-card sync's time).
    package static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        let high: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        while i < bytes.count {
            #if arch(x86_64)
            // Straight to the first byte that is not ASCII, wherever in the 64 it is: a payload
            // has one every few hundred bytes, and the loops below took 190 instructions to
            // find and check each.
            if i + 64 <= bytes.count {
                if cc_simd_any_high64(base + i) == 0 { i += 64; continue }
                i += cc_simd_high_mask64(base + i).trailingZeroBitCount
                guard let n = sequenceLength(bytes, at: i) else { return false }
                i += n
                continue
            }
            #endif
            while i + 32 <= bytes.count {
                let any = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    | raw.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)
                    | raw.loadUnaligned(fromByteOffset: i + 16, as: UInt64.self)
                    | raw.loadUnaligned(fromByteOffset: i + 24, as: UInt64.self)
                guard any & high == 0 else { break }
                i += 32
            }
            while i + 8 <= bytes.count {
                let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) & high
                // Straight to the word's first byte that is not ASCII (little-endian: the
                // lowest set bit), not through the ASCII bytes before it one at a time.
                guard word == 0 else { i += word.trailingZeroBitCount &>> 3; break }
                i += 8
            }
            guard i < bytes.count else { break }
            guard let n = sequenceLength(bytes, at: i) else { return false }
            i += n
        }
        return true
    }
}
