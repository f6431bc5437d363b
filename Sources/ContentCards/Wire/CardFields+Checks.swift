/// Checking a card's fields against what each must be (docs/WIRE.md, "Cards on the wire"):
/// present or not, of the right type, a whole number, a finite number, a non-empty text. Each
/// check reads its field's slot; a failed one is the card's `CardProblem`.
extension CardFields {
    func bytes(_ f: Field) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: source[f.start..<f.end])
    }

    /// The text of a `span` or `string` field.
    func string(_ f: Field) -> String {
        f.kind == .span ? String(decoding: bytes(f), as: UTF8.self) : strings[f.start]
    }

    func isEmptyText(_ f: Field) -> Bool {
        f.kind == .span ? f.start == f.end : strings[f.start].isEmpty
    }

    var id: String? {
        let f = slots[0]
        guard f.kind == .span || f.kind == .string, !isEmptyText(f) else { return nil }
        return string(f)
    }

    /// The id's bytes when it is a text of the input without escapes (the bytes of the `id`
    /// the card gets).
    var idSpan: UnsafeBufferPointer<UInt8>? {
        let f = slots[0]
        return f.kind == .span ? bytes(f) : nil
    }

    func problem(_ reason: String) -> CardProblem { CardProblem(id: id, reason: reason) }

    /// The field of `key`; nil when absent or null (null counts as absent).
    @inline(__always)
    func value(_ key: KnownKey) -> Field? {
        guard let i = CardFields.slot(key) else { return nil }
        let f = slots[i]
        return f.kind == .absent || f.kind == .null ? nil : f
    }

    func expectedString(_ key: KnownKey, _ f: Field) throws(CardProblem) {
        guard f.kind == .span || f.kind == .string else {
            throw problem("field \"\(key.rawValue)\" is \(f.typeName), expected a string")
        }
    }

    func string(_ key: KnownKey) throws(CardProblem) -> String? {
        guard let f = value(key) else { return nil }
        try expectedString(key, f)
        return string(f)
    }

    /// A text field for the body, without making a `String` of a token without escapes;
    /// nil when absent or null.
    func text(_ key: KnownKey) throws(CardProblem) -> CardBody.Text? {
        guard let f = value(key) else { return nil }
        try expectedString(key, f)
        if f.kind == .string { return .string(strings[f.start]) }
        return f.plain ? .plain(bytes(f)) : .utf8(bytes(f))
    }

    static func isEmpty(_ t: CardBody.Text) -> Bool {
        switch t {
        case .null: return true
        case .string(let s): return s.isEmpty
        case .utf8(let b), .plain(let b): return b.count == 0
        }
    }

    /// A text that may be absent.
    func optionalText(_ key: KnownKey) throws(CardProblem) -> CardBody.Text { try text(key) ?? .null }

    /// Required text: present, a string, and not empty.
    func requiredText(_ key: KnownKey, _ name: String, for type: String) throws(CardProblem) -> CardBody.Text {
        guard let t = try text(key), !CardFields.isEmpty(t) else {
            throw problem("missing required field \"\(key.rawValue)\" (\(name)) for a \(type) card")
        }
        return t
    }

    /// A text where empty means absent.
    func nonEmptyText(_ key: KnownKey) throws(CardProblem) -> CardBody.Text {
        guard let t = try text(key), !CardFields.isEmpty(t) else { return .null }
        return t
    }

    @inline(__always)
    func bool(_ key: KnownKey) throws(CardProblem) -> Bool? {
        guard let f = value(key) else { return nil }
        guard f.kind == .yes || f.kind == .no else { throw problem("field \"\(key.rawValue)\" is \(f.typeName), expected a boolean") }
        return f.kind == .yes
    }

    /// The text of a number field.
    func numberText(_ f: Field) -> String {
        f.kind == .numberText ? strings[f.start] : String(decoding: bytes(f), as: UTF8.self)
    }

    func int(_ key: KnownKey) throws(CardProblem) -> Int64? {
        guard let f = value(key) else { return nil }
        guard f.kind == .number || f.kind == .numberText else {
            throw problem("field \"\(key.rawValue)\" is \(f.typeName), expected a number")
        }
        if f.kind == .number, let n = CardFields.plainInteger(bytes(f)) { return n }
        guard let n = JSONValue.number(numberText(f)).int64Value else {
            throw problem("field \"\(key.rawValue)\" is not a whole number of seconds")
        }
        return n
    }

    /// An integer of at most 18 digits (no fraction or exponent) read from its digits; nil
    /// for any other number, which `JSONValue.int64Value` then reads.
    static func plainInteger(_ b: UnsafeBufferPointer<UInt8>) -> Int64? {
        var i = 0
        let negative = b.count > 0 && b[0] == 0x2D
        if negative { i = 1 }
        guard b.count - i > 0 && b.count - i <= 18 else { return nil }
        // At most 18 digits: no overflow to check for.
        guard let base = b.baseAddress else { return nil }
        var v: Int64 = 0
        while i < b.count {
            let d = base[i] &- 0x30
            guard d < 10 else { return nil }
            v = v &* 10 &+ Int64(d)
            i &+= 1
        }
        return negative ? 0 &- v : v
    }

    func double(_ key: KnownKey) throws(CardProblem) -> Double? {
        guard let f = value(key) else { return nil }
        if f.kind == .number, let d = CardFields.shortDecimal(bytes(f)) { return d }
        guard f.kind == .number || f.kind == .numberText, let d = Double(numberText(f)), d.isFinite else {
            throw problem("field \"\(key.rawValue)\" is \(f.typeName), expected a finite number")
        }
        return d
    }

    /// A decimal of at most 15 digits without an exponent (`1.777`, `-2`, `0.5`), read
    /// exactly: its digits as an integer are exact in a Double (below 2^53), so is the power
    /// of ten (at most 10^15), and IEEE division rounds the quotient correctly, so this is
    /// the Double nearest the decimal, as `Double(String)` gives (Clinger's fast path). Nil
    /// for any other number, which `Double(String)` then reads.
    static func shortDecimal(_ b: UnsafeBufferPointer<UInt8>) -> Double? {
        var i = 0
        let negative = b.count > 0 && b[0] == 0x2D
        if negative { i = 1 }
        var mantissa: Int64 = 0
        var digits = 0
        var fraction = 0
        var sawPoint = false
        while i < b.count {
            let c = b[i]
            if c == 0x2E {
                if sawPoint { return nil }
                sawPoint = true
            } else {
                let d = c &- 0x30
                guard d < 10 else { return nil }     // an exponent, or anything else
                mantissa = mantissa * 10 + Int64(d)
                digits += 1
                if sawPoint { fraction += 1 }
                if digits > 15 { return nil }
            }
            i += 1
        }
        guard digits > 0 else { return nil }
        var scale = 1.0
        for _ in 0..<fraction { scale *= 10 }
        let value = Double(mantissa) / scale
        return negative ? -value : value
    }
}
