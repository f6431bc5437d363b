/// Writes compact JSON into a byte buffer. Output is deterministic: members come in the order
/// they are written, `/` is not escaped, non-ASCII text is written as UTF-8, and control
/// characters are escaped. The library's only JSON writer.
package struct JSONWriter {
    /// The output. A buffer of its own rather than an `[UInt8]`: an array's append checks
    /// uniqueness and capacity and goes through the Sequence protocol, about a hundred
    /// instructions a call, and a card is some sixty appends.
    private var out: ByteBuffer
    /// The JSON written so far.
    package var bytes: [UInt8] { out.array }
    /// Whether the current object or array has a value already (then the next one needs a
    /// comma); the enclosing levels' flags wait in `outer`.
    private var needsComma = false
    private var outer: [Bool] = []

    package init(reservingCapacity capacity: Int = 256) {
        out = ByteBuffer(capacity: capacity)
    }

    /// A writer for a text about `capacity` bytes long that will fill most of it (a feed):
    /// between 64 KiB and 4 MiB its pages are faulted in at once; from 4 MiB on, backed by
    /// 2 MiB pages as they are written (`ByteBuffer.prepareForFilling`).
    init(reservingFilled capacity: Int) {
        out = ByteBuffer(capacity: capacity)
        out.prepareForFilling()
    }

    package var string: String { out.withBytes { String(decoding: $0, as: UTF8.self) } }

    /// An allocation failed while writing: the bytes are only a prefix of what was written.
    package var failed: Bool { out.failed }

    /// The JSON written, NUL-terminated, in `malloc`ed memory that the caller owns (and frees
    /// with `free`): a C caller's result without a copy. Nil when memory ran out while writing.
    /// The writer is left empty.
    package mutating func takeMalloced() -> UnsafeMutablePointer<CChar>? {
        needsComma = false; outer = []; afterKey = false
        return out.takeMalloced().map { UnsafeMutableRawPointer($0).assumingMemoryBound(to: CChar.self) }
    }

    /// As `takeMalloced`, with `trailer` stored after the text's NUL, aligned for `Int`, in the
    /// same allocation: one block, freed with `free` (cc_controller_feed_indexed's offsets).
    /// Nil when memory ran out while writing or for the trailer. The writer is left empty.
    package mutating func takeMalloced(trailer: [Int]) -> (text: UnsafeMutablePointer<CChar>, trailer: UnsafePointer<Int>)? {
        needsComma = false; outer = []; afterKey = false
        return out.takeMalloced(trailer: trailer).map {
            (UnsafeMutableRawPointer($0.text).assumingMemoryBound(to: CChar.self), $0.trailer)
        }
    }

    /// The number of bytes written so far.
    package var byteCount: Int { out.count }

    /// Calls `body` with the bytes written so far, without copying them.
    package func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R { try out.withBytes(body) }

    /// A writer copied and then written to gets a buffer of its own (value semantics); the
    /// check is a load and a compare, made once per value written.
    @inline(__always)
    private mutating func unique() { out.makeUnique() }

    private var afterKey = false

    /// Puts the comma that separates this value from the previous one, unless it follows a key.
    @inline(__always)
    private mutating func beforeValue() {
        unique()
        if afterKey {
            afterKey = false
        } else if needsComma {
            out.append(0x2C)
        }
        needsComma = true
    }

    private mutating func open(_ bracket: UInt8) {
        beforeValue()
        out.append(bracket)
        outer.append(needsComma)
        needsComma = false
    }

    private mutating func close(_ bracket: UInt8) {
        unique()
        needsComma = outer.popLast() ?? true
        out.append(bracket)
    }

    package mutating func beginObject() { open(0x7B) }
    package mutating func endObject() { close(0x7D) }
    package mutating func beginArray() { open(0x5B) }
    package mutating func endArray() { close(0x5D) }

    /// A member name encoded once (quotes, escapes and colon), for names written over and over.
    package struct Key: Sendable {
        let bytes: [UInt8]
        package init(_ name: String) {
            var w = JSONWriter()
            w.writeString(name)
            bytes = w.bytes + [0x3A]
        }
    }

    /// Writes a pre-encoded member name; the next value written is its value.
    package mutating func key(_ key: Key) {
        beforeValue()
        key.bytes.withUnsafeBufferPointer { out.append($0) }
        afterKey = true
    }

    /// Appends a literal's bytes (`null`, `true`, `false`) without building an array for them.
    @inline(__always)
    private mutating func literal(_ text: StaticString) {
        out.append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Writes a member name; the next value written is its value.
    package mutating func key(_ name: String) {
        beforeValue()
        writeString(name)
        out.append(0x3A)
        afterKey = true
    }

    package mutating func null() { beforeValue(); literal("null") }
    package mutating func bool(_ v: Bool) {
        beforeValue()
        if v { literal("true") } else { literal("false") }
    }
    package mutating func int(_ v: Int64) { beforeValue(); writeDigits(v) }

    /// Decimal digits without making a String (numbers are in every card).
    private mutating func writeDigits(_ v: Int64) {
        out.append(maxCount: RawPieces.maxDigits) { RawPieces.putDigits(v, $0) }
    }

    package mutating func int(_ v: Int) { int(Int64(v)) }
    /// Finite numbers in Swift's shortest round-trip form; NaN and infinities (not JSON) as null.
    package mutating func double(_ v: Double) {
        guard v.isFinite else { null(); return }
        beforeValue()
        writeFinite(v)
    }

    /// A finite number: a whole one as its digits, any other in Swift's shortest round-trip
    /// form (`description`).
    private mutating func writeFinite(_ v: Double) {
        if v == v.rounded(.towardZero), abs(v) < 1e15 {
            writeDigits(Int64(v))
        } else if let (digits, decimals) = JSONWriter.fewDecimals(v) {
            writeDecimal(digits, decimals, negative: v < 0)
        } else {
            out.append(string: v.description)
        }
    }

    /// `digits / 10^decimals` as text: the whole part, the point, the decimals with their
    /// leading zeros.
    private mutating func writeDecimal(_ digits: UInt64, _ decimals: Int, negative: Bool) {
        var divisor: UInt64 = 1
        for _ in 0..<decimals { divisor &*= 10 }
        if negative { out.append(0x2D) }
        writeDigits(Int64(digits / divisor))
        out.append(0x2E)
        var fraction = digits % divisor
        out.append(maxCount: decimals) { p in
            var i = decimals
            while i > 0 {
                i -= 1
                p[i] = 0x30 &+ UInt8(fraction % 10)
                fraction /= 10
            }
            return decimals
        }
    }
    package mutating func string(_ v: String) { beforeValue(); writeString(v) }
    package mutating func string(_ v: String?) { if let v { string(v) } else { null() } }
    /// Writes a number kept as source text (see `JSONValue.number`).
    package mutating func rawNumber(_ text: String) { beforeValue(); out.append(string: text) }

    package mutating func value(_ v: JSONValue) {
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

    /// Whether a UTF-8 byte must be escaped in a JSON string (the one rule: the plain body
    /// writer, `CardFields+PlainBody.swift`, asks it too).
    @inline(__always)
    static func needsEscape(_ b: UInt8) -> Bool { b < 0x20 || b == 0x22 || b == 0x5C || b == 0x7F }

    /// Whether any of eight bytes must be escaped (the SWAR tests of `Parser.anySpecial`, kept
    /// here too so that they are inlined).
    @inline(__always)
    static func anyNeedsEscape(_ x: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func hasZero(_ v: UInt64) -> UInt64 { (v &- ones) & ~v & highs }
        let below20 = (x &- ones &* 0x20) & ~x & highs
        return (below20 | hasZero(x ^ (ones &* 0x22)) | hasZero(x ^ (ones &* 0x5C)) | hasZero(x ^ (ones &* 0x7F))) != 0
    }

    fileprivate mutating func writeString(_ s: String) {
        var s = s
        s.withUTF8 { writeStringBytes($0) }
    }

    /// Writes text given as valid UTF-8 bytes (a string token of the input without escapes,
    /// which is its text as it is): the same output as `string` of the same text, without
    /// making a `String` of it.
    mutating func string(utf8 bytes: UnsafeBufferPointer<UInt8>) { beforeValue(); writeStringBytes(bytes) }

    /// Writes text known to need no escape (the parser saw no quote, backslash, control
    /// character or DEL in it): the bytes between quotes, with no scan.
    mutating func string(plain bytes: UnsafeBufferPointer<UInt8>) {
        beforeValue()
        out.append(0x22)
        out.append(bytes)
        out.append(0x22)
    }

    /// Writes a member name known to need no escape (see `string(plain:)`).
    mutating func key(plain bytes: UnsafeBufferPointer<UInt8>) {
        beforeValue()
        out.append(0x22)
        out.append(bytes)
        out.append(0x22)
        out.append(0x3A)
        afterKey = true
    }

    /// Writes a member name given as valid UTF-8 bytes (see `string(utf8:)`).
    mutating func key(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        beforeValue()
        writeStringBytes(bytes)
        out.append(0x3A)
        afterKey = true
    }

    // MARK: Pieces whose place the caller knows
    //
    // For the fixed layouts written for every card (its boundary JSON, its body): literal
    // pieces, texts and numbers go in as they are, without the comma bookkeeping of each
    // value, which was most of the cost of writing a card. `beginRawValue` puts the comma
    // before a value the caller then writes in pieces (a card in a feed's array).
    //
    // A run of pieces does not check, piece by piece, that the buffer is this writer's own
    // (the check is a call into the runtime: it was a third of writing a card's body). A run
    // starts where the buffer is known to be: a new writer, `removeAll()`, `beginRawValue()`
    // or any other write; no copy of the writer may be written to in the middle of a run.
    // Debug builds (the tests, the fuzzer) check every piece.

    mutating func beginRawValue() { beforeValue() }

    @inline(__always)
    private mutating func inRun() { assert(out.isUnique(), "a raw piece outside a run (see JSONWriter)") }

    mutating func raw(_ text: StaticString) {
        inRun()
        literal(text)
    }

    mutating func raw(_ byte: UInt8) {
        inRun()
        out.append(byte)
    }

    /// Appends bytes as they are (JSON this writer wrote elsewhere).
    mutating func appendRaw(_ bytes: UnsafeBufferPointer<UInt8>) {
        inRun()
        out.append(bytes)
    }

    /// Lets `body` write up to `maxCount` bytes straight into the buffer and returns; `body`
    /// gets where to write and returns how many bytes it wrote (at most `maxCount`). For a
    /// piece made of many small copies (a card's body between its keys): one check for room
    /// instead of one a copy.
    mutating func appendRaw(maxCount: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        inRun()
        out.append(maxCount: maxCount, body)
    }

    /// A string, quoted and escaped.
    mutating func rawString(_ s: String) {
        inRun()
        writeString(s)
    }

    /// Text given as valid UTF-8, quoted and escaped (see `string(utf8:)`).
    mutating func rawString(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        inRun()
        writeStringBytes(bytes)
    }

    /// Text that needs no escape (see `string(plain:)`), quoted.
    mutating func rawString(plain bytes: UnsafeBufferPointer<UInt8>) {
        inRun()
        out.appendQuoted(bytes)
    }

    mutating func rawInt(_ v: Int64) {
        inRun()
        writeDigits(v)
    }

    /// As `double`: finite numbers in the shortest round-trip form, others as null.
    mutating func rawDouble(_ v: Double) {
        inRun()
        if !v.isFinite {
            literal("null")
        } else {
            writeFinite(v)
        }
    }

    /// Empties the writer, keeping its memory, to write the next document.
    mutating func removeAll() {
        unique()
        out.removeAll()
        // (Emptied only when it holds something: the generic range replacement runs even
        // for an empty array, and a card's body writer is emptied for every card.)
        needsComma = false; afterKey = false
        if !outer.isEmpty { outer.removeAll(keepingCapacity: true) }
    }

    private mutating func writeStringBytes(_ utf8: UnsafeBufferPointer<UInt8>) {
        out.append(0x22)
        // Most strings need no escape: find the runs eight bytes at a time, copy them whole.
        if let base = utf8.baseAddress {
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
                    if i > start { out.append(UnsafeBufferPointer(rebasing: utf8[start..<i])) }
                    writeEscape(b)
                    start = i + 1
                }
                i += 1
            }
            if start < n { out.append(UnsafeBufferPointer(rebasing: utf8[start...])) }
        }
        out.append(0x22)
    }

    private mutating func writeEscape(_ b: UInt8) {
        switch b {
        case 0x22: out.append(0x5C); out.append(0x22)
        case 0x5C: out.append(0x5C); out.append(0x5C)
        case 0x0A: out.append(0x5C); out.append(0x6E)
        case 0x0D: out.append(0x5C); out.append(0x72)
        case 0x09: out.append(0x5C); out.append(0x74)
        case 0x08: out.append(0x5C); out.append(0x62)
        case 0x0C: out.append(0x5C); out.append(0x66)
        default:
            out.append(0x5C); out.append(0x75); out.append(0x30); out.append(0x30)
            out.append(JSONWriter.hex[Int(b >> 4)])
            out.append(JSONWriter.hex[Int(b & 0xF)])
        }
    }
}
