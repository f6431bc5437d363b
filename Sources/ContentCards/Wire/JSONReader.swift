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
            throw JSONError(message: "the text is \(bytes.count) bytes, over the limit of \(limits.maxBytes)",
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

/// The document and its values as a tree (`JSONValue`, what `JSONReader.parse` returns), and
/// the errors: the parts of the reader that run once a document, or for the few values that
/// are not a card (the decoders read cards from the tokens: Parser.swift).
extension Parser {
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
}
