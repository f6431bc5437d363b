#if arch(x86_64)
import CContentCardsSIMD
#endif

/// String tokens: where one ends and what it holds (escapes, ASCII-ness, DEL), found without
/// making a `String` (the decoder copies the bytes it keeps). The reader's hottest loops: a
/// payload is mostly string text.
extension Parser {
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
        #if arch(x86_64)
        var high: UInt64 = 0        // the not-ASCII bytes the vector loop passed (bit per byte)
        #endif
        while true {
            #if arch(x86_64)
            if !vectorRun(base, n, &p, high: &high) { wordRun(words, n, &p, seen: &seen) }
            #else
            wordRun(words, n, &p, seen: &seen)
            #endif
            guard p < n else { return nil }
            let b = base[p]
            if b == 0x22 { break }
            if b == 0x5C { hasEscapes = true; p += 2; continue }
            if b < 0x20 { return nil }
            if b == 0x7F { hasDEL = true } else if b >= 0x80 { highTail = true }
            p += 1
        }
        guard p <= n else { return nil }
        #if arch(x86_64)
        if high != 0 { highTail = true }
        #endif
        let ascii = !highTail && seen & 0x8080_8080_8080_8080 == 0
        return StringSpan(start: start, end: p, escaped: hasEscapes, ascii: ascii, plain: !hasEscapes && !hasDEL)
    }

    #if arch(x86_64)
    /// Moves `p` over the run of plain string text at it, sixteen bytes at a time (SSE2:
    /// Sources/CContentCardsSIMD), to the first byte that ends it (the bytes `endingMask`
    /// marks), adding the high bits of the bytes passed to `high`; false, with `p` where it
    /// stopped, when fewer than sixteen bytes are left before one is found.
    @inline(__always)
    static func vectorRun(_ base: UnsafePointer<UInt8>, _ n: Int, _ p: inout Int, high: inout UInt64) -> Bool {
        while p + 16 <= n {
            let masks = cc_simd_string_masks16(base + p)
            let ending = masks & 0xFFFF
            if ending == 0 {
                high |= masks >> 32
                p += 16
                continue
            }
            let k = ending.trailingZeroBitCount
            high |= (masks >> 32) & ((1 << UInt64(k)) &- 1)
            p += k
            return true
        }
        return false
    }
    #endif

    /// The same eight bytes at a time, the bytes passed added to `seen`; stops at the byte that
    /// ends the run (the mask's lowest set bit is exactly that byte: see `endingMask`) or with
    /// fewer than eight bytes left.
    @inline(__always)
    static func wordRun(_ words: UnsafeRawPointer, _ n: Int, _ p: inout Int, seen: inout UInt64) {
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
            return
        }
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
