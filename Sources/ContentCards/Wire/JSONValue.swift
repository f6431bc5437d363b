/// A parsed JSON document. Every piece of JSON the library reads becomes one of these in the
/// `wire` layer, and nothing else in the library parses JSON.
///
/// Numbers keep their source text, so an extras value `1.50` is handed on as `"1.50"` and large
/// integers lose nothing. Objects keep their members in source order; on a duplicate key the
/// last one wins, as in most parsers.
package enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    package static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.number(x), .number(y)): return x == y
        case let (.string(x), .string(y)): return x == y
        case let (.array(x), .array(y)): return x == y
        case let (.object(x), .object(y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    /// The member named `key` of an object (the last one when repeated), else nil.
    package subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        for member in members.reversed() where member.key == key { return member.value }
        return nil
    }

    /// A short name of the value's JSON type, for error messages.
    package var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    package var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    package var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    package var doubleValue: Double? {
        guard case .number(let text) = self, let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// The number as a whole Int64: integral text, or a number whose decimal value has no
    /// fractional part (`1.7e9`, `12.0`) within Int64's range, decided from its digits
    /// (`wholeNumber`). Not through a `Double`: `1700000000.0000001` rounds to a whole one and
    /// `9007199254740993.0` to its neighbour.
    package var int64Value: Int64? {
        guard case .number(let text) = self else { return nil }
        if let exact = Int64(text) { return exact }
        return Self.wholeNumber(text)
    }

    /// The value of JSON number text when it is whole and within Int64's range, else nil:
    /// digits × 10^exponent, with the fraction's digits moved into the exponent, the zeros at
    /// the digits' end taken off, and the product built with checked arithmetic.
    static func wholeNumber(_ text: String) -> Int64? {
        var bytes = Array(text.utf8)[...]
        let negative = bytes.first == 0x2D
        if negative { bytes = bytes.dropFirst() }
        var digits: [UInt8] = []
        var exponent = 0
        var inFraction = false
        var sawDigit = false
        while let b = bytes.first, b != 0x65, b != 0x45 {
            bytes = bytes.dropFirst()
            if b == 0x2E { inFraction = true; continue }
            guard b >= 0x30 && b <= 0x39 else { return nil }
            sawDigit = true
            if digits.isEmpty && b == 0x30 { if inFraction { exponent -= 1 }; continue }   // a leading zero
            digits.append(b - 0x30)
            if inFraction { exponent -= 1 }
        }
        if !bytes.isEmpty {
            bytes = bytes.dropFirst()        // e or E
            var sign = 1
            if bytes.first == 0x2B || bytes.first == 0x2D { sign = bytes.first == 0x2D ? -1 : 1; bytes = bytes.dropFirst() }
            guard !bytes.isEmpty else { return nil }
            var e = 0
            for b in bytes {
                guard b >= 0x30 && b <= 0x39 else { return nil }
                // Saturated past any count of digits the text can hold, so that an exponent
                // cancelling a million zeros is still exact (capped at a million, it was not).
                e = min(e * 10 + Int(b - 0x30), 1 << 40)
            }
            exponent += sign * e
        }
        guard sawDigit else { return nil }
        if digits.isEmpty { return 0 }       // zero, whatever its exponent
        while digits.last == 0 { digits.removeLast(); exponent += 1 }
        guard exponent >= 0, digits.count + exponent <= 19 else { return nil }
        var magnitude: UInt64 = 0
        for d in digits + repeatElement(0, count: exponent) {
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(d))
            guard !o1, !o2 else { return nil }
            magnitude = sum
        }
        if negative { return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// The JSON text of this value (compact, members in their order).
    package var jsonText: String {
        var writer = JSONWriter()
        writer.value(self)
        return writer.string
    }
}
