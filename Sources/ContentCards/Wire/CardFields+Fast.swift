/// The card reader's one pass over the common shape of a card: short member names without
/// escapes, strings, numbers and literals, an extras object of strings. It reads straight from
/// the input's bytes with the position in a register, where the general reader (`read`) goes
/// through the parser's methods a token at a time (a call, a `Field` returned and a position
/// stored and loaded again for each). It decides nothing of its own: it gives up (false) at
/// anything it does not take, and the caller then reads the card again the general way from
/// where it started, so an odd or malformed card is read, and reported, exactly as before.
/// A card it takes leaves the fields as the general reader leaves them (`CardFieldsTests`
/// reads every shape both ways).
extension CardFields {
    /// Reads the card object at the parser's position (its `{`) into the fields; true with the
    /// parser past its `}` and at the depth it was. False changes nothing the caller keeps: it
    /// resets the fields, the parser's position and depth before reading again.
    mutating func readCommonShape(_ parser: inout Parser) -> Bool {
        guard parser.validUTF8, let base = parser.bytes.baseAddress else { return false }
        let n = parser.bytes.count
        let depth = parser.depth
        guard parser.depth + 1 <= parser.maxDepth else { return false }
        var p = parser.pos + 1
        parser.depth = depth + 1
        var place = 0
        while true {
            // From the end of the value before (or the object's `{`) to this member's value:
            // the comma, the name, the colon and the white space between, when they are the
            // bytes the card before had at this place (one or two loads and compares:
            // `NameTemplates`); else each read in full, and kept for the next card.
            let use: NameTemplates.Use
            if let template = names.match(place, base, n, p) {
                p &+= template.length
                Self.skipSpace(base, n, &p)
                guard p < n else { return false }
                use = template.use
            } else {
                let start = p
                guard let step = place == 0 ? Self.opening(base, n, &p) : Self.afterValue(base, n, &p) else {
                    return false
                }
                if step == .end {
                    parser.pos = p
                    parser.depth = depth
                    return true
                }
                guard let name = readName(base, n, &p), Self.colon(base, n, &p) else { return false }
                use = NameTemplates.Use(name)
                names.learn(place, base + start, p - start, use: use)
            }
            place &+= 1
            if use.isExtras {
                // Only an object here; null or another type is the general reader's.
                guard base[p] == 0x7B, readExtrasCommonShape(&parser, base, n, &p) else { return false }
            } else if use.isSlot {
                guard let field = readValue(&parser, base, n, &p, keep: true) else { return false }
                setSlot(use.slot, field)
            } else {
                // Stepped over, as the general reader does: an escaped string is checked, not kept.
                guard readValue(&parser, base, n, &p, keep: false) != nil else { return false }
            }
        }
    }

    /// Where an object's punctuation leaves the reading: at a member's name, or past the
    /// object's `}`.
    private enum Step { case member, end }

    @inline(__always)
    private static func skipSpace(_ base: UnsafePointer<UInt8>, _ n: Int, _ p: inout Int) {
        while p < n {
            let c = base[p]
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            p &+= 1
        }
    }

    /// Just past an object's `{`: the first member, or the end of an empty object; nil at the
    /// input's end.
    @inline(__always)
    private static func opening(_ base: UnsafePointer<UInt8>, _ n: Int, _ p: inout Int) -> Step? {
        skipSpace(base, n, &p)
        guard p < n else { return nil }
        guard base[p] == 0x7D else { return .member }
        p &+= 1
        return .end
    }

    /// Past a member's name: its `:` and the white space around it, `p` at the value; false to
    /// give up.
    @inline(__always)
    private static func colon(_ base: UnsafePointer<UInt8>, _ n: Int, _ p: inout Int) -> Bool {
        skipSpace(base, n, &p)
        guard p < n, base[p] == 0x3A else { return false }
        p &+= 1
        skipSpace(base, n, &p)
        return p < n
    }

    /// Past a member's value: the next member after a `,`, or the end past the `}`; nil to
    /// give up.
    @inline(__always)
    private static func afterValue(_ base: UnsafePointer<UInt8>, _ n: Int, _ p: inout Int) -> Step? {
        skipSpace(base, n, &p)
        guard p < n else { return nil }
        if base[p] == 0x2C {
            p &+= 1
            skipSpace(base, n, &p)
            return .member
        }
        guard base[p] == 0x7D else { return nil }
        p &+= 1
        return .end
    }

    /// The member name at `p` (its opening quote), `p` moved past its closing quote: which
    /// known key it is, `.some(nil)` for another name, nil for one the general reader must
    /// read (an escape, a control byte, the input's end).
    @inline(__always)
    private func readName(_ base: UnsafePointer<UInt8>, _ n: Int, _ p: inout Int) -> KnownKey?? {
        guard p < n, base[p] == 0x22 else { return nil }
        let start = p &+ 1
        var q = start
        while q < n {
            let c = base[q]
            if c == 0x22 { break }
            guard c != 0x5C, c >= 0x20 else { return nil }
            q &+= 1
        }
        guard q < n else { return nil }
        p = q &+ 1
        let length = q - start
        // A name of up to 8 bytes (every card key) packed with one load, when 8 bytes are
        // there to load: the bytes past the name are masked off, as `PackedKey` pads.
        if length <= 8 && start + 8 <= n {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + start).loadUnaligned(as: UInt64.self))
            let low = length == 8 ? word : word & ((1 << UInt64(length &* 8)) &- 1)
            return .some(Parser.knownKey(Parser.PackedKey(low: low, high: 0)))
        }
        guard length <= 16, let packed = Parser.PackedKey(UnsafeBufferPointer(start: base + start, count: length)) else {
            return .some(nil)
        }
        return .some(Parser.knownKey(packed))
    }

    /// The value at `p`, as the general reader keeps it (`read(value:)`), with `p` past it;
    /// nil to give up. Objects and arrays are stepped over by the parser itself. `keep` false:
    /// a value only stepped over (`skipValue`), whose escaped text is checked and not kept.
    @inline(__always)
    private mutating func readValue(_ parser: inout Parser, _ base: UnsafePointer<UInt8>, _ n: Int, _ p: inout Int,
                                    keep: Bool) -> Field? {
        let c = base[p]
        switch c {
        case 0x22:
            guard let span = Parser.scanValidString(base, count: n, quote: p) else { return nil }
            p = span.end &+ 1
            if span.escaped {
                parser.pos = p
                guard let text = try? parser.string(span) else { return nil }
                return keep ? self.keep(text) : Field(kind: .string)
            }
            return Field(kind: .span, start: span.start, end: span.end, ascii: span.ascii, plain: span.plain)
        case 0x74:
            guard n - p >= 4, memcmp(base + p, "true", 4) == 0 else { return nil }
            p &+= 4
            return Field(kind: .yes)
        case 0x66:
            guard n - p >= 5, memcmp(base + p, "false", 5) == 0 else { return nil }
            p &+= 5
            return Field(kind: .no)
        case 0x6E:
            guard n - p >= 4, memcmp(base + p, "null", 4) == 0 else { return nil }
            p &+= 4
            return Field(kind: .null)
        case 0x2D, 0x30...0x39:
            // A whole number that does not start with 0 (the times) is scanned here: its
            // digits, then a byte that is not one of a fraction or exponent. Any other number,
            // and one at the input's end, is the parser's.
            var q = p
            if base[q] == 0x2D { q &+= 1 }
            if q < n, base[q] &- 0x31 < 9 {
                q &+= 1
                while q < n, base[q] &- 0x30 < 10 { q &+= 1 }
                if q < n, base[q] != 0x2E, base[q] | 0x20 != 0x65 {
                    defer { p = q }
                    return Field(kind: .number, start: p, end: q)
                }
            }
            parser.pos = p
            guard let range = try? parser.scanNumber() else { return nil }
            p = parser.pos
            return Field(kind: .number, start: range.lowerBound, end: range.upperBound)
        case 0x7B, 0x5B:
            parser.pos = p
            guard (try? parser.skipValue()) != nil else { return nil }
            p = parser.pos
            return Field(kind: c == 0x7B ? .object : .array)
        default:
            return nil
        }
    }

    /// The extras object at `p` (its `{`) when its names and values are strings, as
    /// `readExtras` keeps them; false to give up.
    private mutating func readExtrasCommonShape(_ parser: inout Parser, _ base: UnsafePointer<UInt8>, _ n: Int,
                                                _ p: inout Int) -> Bool {
        guard parser.depth + 1 <= parser.maxDepth else { return false }
        setEntries()
        p &+= 1
        @inline(__always) func text() -> Field? {
            guard p < n, base[p] == 0x22, let span = Parser.scanValidString(base, count: n, quote: p), !span.escaped else {
                return nil
            }
            p = span.end &+ 1
            return Field(kind: .span, start: span.start, end: span.end, ascii: span.ascii, plain: span.plain)
        }
        guard var next = Self.opening(base, n, &p) else { return false }
        while next == .member {
            guard let key = text(), Self.colon(base, n, &p), let value = text() else { return false }
            appendEntry(Entry(key: key, value: value))
            guard let after = Self.afterValue(base, n, &p) else { return false }
            next = after
        }
        return true
    }
}
