/// Writes compact JSON into a byte buffer. Output is deterministic: members come in the order
/// they are written, `/` is not escaped, non-ASCII text is written as UTF-8, and control
/// characters are escaped. The library's only JSON writer.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    /// Whether the current object or array has a value already (then the next one needs a
    /// comma); the enclosing levels' flags wait in `outer`.
    private var needsComma = false
    private var outer: [Bool] = []

    public init(reservingCapacity capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    public var string: String { String(decoding: bytes, as: UTF8.self) }

    private var afterKey = false

    /// Puts the comma that separates this value from the previous one, unless it follows a key.
    @inline(__always)
    private mutating func beforeValue() {
        if afterKey {
            afterKey = false
        } else if needsComma {
            bytes.append(0x2C)
        }
        needsComma = true
    }

    private mutating func open(_ bracket: UInt8) {
        beforeValue()
        bytes.append(bracket)
        outer.append(needsComma)
        needsComma = false
    }

    private mutating func close(_ bracket: UInt8) {
        needsComma = outer.popLast() ?? true
        bytes.append(bracket)
    }

    public mutating func beginObject() { open(0x7B) }
    public mutating func endObject() { close(0x7D) }
    public mutating func beginArray() { open(0x5B) }
    public mutating func endArray() { close(0x5D) }

    /// A member name encoded once (quotes, escapes and colon), for names written over and over.
    public struct Key: Sendable {
        let bytes: [UInt8]
        public init(_ name: String) {
            var w = JSONWriter()
            w.writeString(name)
            bytes = w.bytes + [0x3A]
        }
    }

    /// Writes a pre-encoded member name; the next value written is its value.
    public mutating func key(_ key: Key) {
        beforeValue()
        key.bytes.withUnsafeBufferPointer { bytes.append(contentsOf: $0) }
        afterKey = true
    }

    /// Appends a literal's bytes (`null`, `true`, `false`) without building an array for them.
    @inline(__always)
    private mutating func literal(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Writes a member name; the next value written is its value.
    public mutating func key(_ name: String) {
        beforeValue()
        writeString(name)
        bytes.append(0x3A)
        afterKey = true
    }

    public mutating func null() { beforeValue(); literal("null") }
    public mutating func bool(_ v: Bool) {
        beforeValue()
        if v { literal("true") } else { literal("false") }
    }
    public mutating func int(_ v: Int64) { beforeValue(); writeDigits(v) }

    /// Decimal digits without making a String (numbers are in every card).
    private mutating func writeDigits(_ v: Int64) {
        if v >= 0 && v < 10 { bytes.append(0x30 &+ UInt8(v)); return }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)     // 24 bytes: Int64.min has 20 characters
        var magnitude = v.magnitude
        let count: Int = withUnsafeMutableBytes(of: &digits) { buffer in
            var i = buffer.count
            repeat {
                i -= 1
                buffer[i] = 0x30 &+ UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if v < 0 { i -= 1; buffer[i] = 0x2D }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[i...]))
            return buffer.count - i
        }
        _ = count
    }
    public mutating func int(_ v: Int) { int(Int64(v)) }
    /// Finite numbers in Swift's shortest round-trip form; NaN and infinities (not JSON) as null.
    public mutating func double(_ v: Double) {
        guard v.isFinite else { null(); return }
        beforeValue()
        if v == v.rounded(.towardZero), abs(v) < 1e15 {
            writeDigits(Int64(v))
        } else {
            bytes.append(contentsOf: v.description.utf8)
        }
    }
    public mutating func string(_ v: String) { beforeValue(); writeString(v) }
    public mutating func string(_ v: String?) { if let v { string(v) } else { null() } }
    /// Writes a number kept as source text (see `JSONValue.number`).
    public mutating func rawNumber(_ text: String) { beforeValue(); bytes.append(contentsOf: text.utf8) }

    public mutating func value(_ v: JSONValue) {
        switch v {
        case .null: null()
        case .bool(let b): bool(b)
        case .number(let n): rawNumber(n)
        case .string(let s): string(s)
        case .array(let items):
            beginArray()
            for item in items { value(item) }
            endArray()
        case .object(let members):
            beginObject()
            for m in members { key(m.key); value(m.value) }
            endObject()
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// Whether a UTF-8 byte must be escaped in a JSON string.
    @inline(__always)
    private static func needsEscape(_ b: UInt8) -> Bool { b < 0x20 || b == 0x22 || b == 0x5C || b == 0x7F }

    /// Whether any of eight bytes must be escaped (the SWAR tests for a zero byte and for a
    /// byte below n: exact answers to "is there one", with no false positives).
    @inline(__always)
    private static func anyNeedsEscape(_ x: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func hasZero(_ v: UInt64) -> UInt64 { (v &- ones) & ~v & highs }
        let below20 = (x &- ones &* 0x20) & ~x & highs
        return (below20 | hasZero(x ^ (ones &* 0x22)) | hasZero(x ^ (ones &* 0x5C)) | hasZero(x ^ (ones &* 0x7F))) != 0
    }

    fileprivate mutating func writeString(_ s: String) {
        bytes.append(0x22)
        var s = s
        s.withUTF8 { utf8 in
            // Most strings need no escape: find the runs eight bytes at a time, copy them whole.
            guard let base = utf8.baseAddress else { return }
            let raw = UnsafeRawPointer(base)
            let n = utf8.count
            var start = 0, i = 0
            while i < n {
                if i + 8 <= n && !JSONWriter.anyNeedsEscape(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) {
                    i += 8
                    continue
                }
                let b = utf8[i]
                if JSONWriter.needsEscape(b) {
                    if i > start { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i])) }
                    writeEscape(b)
                    start = i + 1
                }
                i += 1
            }
            if start < n { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...])) }
        }
        bytes.append(0x22)
    }

    private mutating func writeEscape(_ b: UInt8) {
        switch b {
        case 0x22: bytes.append(0x5C); bytes.append(0x22)
        case 0x5C: bytes.append(0x5C); bytes.append(0x5C)
        case 0x0A: bytes.append(0x5C); bytes.append(0x6E)
        case 0x0D: bytes.append(0x5C); bytes.append(0x72)
        case 0x09: bytes.append(0x5C); bytes.append(0x74)
        case 0x08: bytes.append(0x5C); bytes.append(0x62)
        case 0x0C: bytes.append(0x5C); bytes.append(0x66)
        default:
            bytes.append(contentsOf: [0x5C, 0x75, 0x30, 0x30])
            bytes.append(JSONWriter.hex[Int(b >> 4)])
            bytes.append(JSONWriter.hex[Int(b & 0xF)])
        }
    }
}
