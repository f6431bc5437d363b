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

    /// The number as a whole Int64: integral text, or a finite number with no fractional part
    /// (`1.7e9`, `12.0`) within Int64's range.
    package var int64Value: Int64? {
        guard case .number(let text) = self else { return nil }
        if let exact = Int64(text) { return exact }
        guard let value = Double(text), value.isFinite, value.rounded(.towardZero) == value,
              value >= -9.2e18, value <= 9.2e18 else { return nil }
        return Int64(value)
    }

    /// The JSON text of this value (compact, members in their order).
    package var jsonText: String {
        var writer = JSONWriter()
        writer.value(self)
        return writer.string
    }
}
