import Foundation
import Testing
@testable import ContentCards

/// The writer's fast paths (eight bytes at a time for strings, digits without a String) give
/// exactly what the plain rules give, and what the reader reads back.
@Suite struct JSONWriterTests {
    /// The rules, one byte at a time.
    static func reference(_ s: String) -> [UInt8] {
        var out: [UInt8] = [0x22]
        for b in s.utf8 {
            switch b {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, 0x6E]
            case 0x0D: out += [0x5C, 0x72]
            case 0x09: out += [0x5C, 0x74]
            case 0x08: out += [0x5C, 0x62]
            case 0x0C: out += [0x5C, 0x66]
            case 0..<0x20, 0x7F: out += Array(String(format: "\\u%04x", b).utf8)
            default: out.append(b)
            }
        }
        return out + [0x22]
    }

    @Test func stringsMatchTheByteByByteRules() throws {
        let pieces = ["a", "é", "\"", "\\", "\n", "\u{01}", "\u{1F}", "\u{7F}", " ", "~", "日本", "😀", "\t",
                      "abcdefgh", "0123456789abcdef", "\u{80}", "!", "#"]
        var rng = SplitMix(seed: 0x3A17_E5C4)     // seeded: a failure is there again the next run
        for length in 0..<40 {
            for _ in 0..<25 {
                let s = (0..<length).map { _ in pieces.randomElement(using: &rng)! }.joined()
                var w = JSONWriter()
                w.string(s)
                #expect(w.bytes == Self.reference(s), "\(s.debugDescription)")
                #expect(try JSONReader.parse(w.string) == .string(s))
            }
        }
    }

    @Test func integersAsDecimalDigits() {
        for v: Int64 in [0, 1, 9, 10, -1, -9, -10, 42, 1_763_800_000, -1_763_800_000, Int64.max, Int64.min] {
            var w = JSONWriter()
            w.int(v)
            #expect(w.string == String(v))
        }
        var w = JSONWriter()
        w.double(3.0); w.double(-12.0); w.double(1.5)
        #expect(w.string == "3,-12,1.5")
    }

    @Test func nestingPutsCommasWhereTheyBelong() {
        var w = JSONWriter()
        w.beginArray()
        w.beginObject(); w.key("a"); w.int(1); w.key("b"); w.beginArray(); w.int(2); w.int(3); w.endArray(); w.endObject()
        w.beginObject(); w.endObject()
        w.beginArray(); w.endArray()
        w.string("x")
        w.endArray()
        #expect(w.string == #"[{"a":1,"b":[2,3]},{},[],"x"]"#)
    }

    /// The writer keeps its output in a buffer of its own; a copy is still a value.
    @Test func aCopiedWriterWritesItsOwnOutput() {
        var a = JSONWriter(reservingCapacity: 4)
        a.beginArray(); a.int(1)
        var b = a
        b.int(2); b.endArray()
        a.string(String(repeating: "x", count: 100)); a.endArray()
        #expect(b.string == "[1,2]")
        #expect(a.string == "[1,\"" + String(repeating: "x", count: 100) + "\"]")
    }

    /// The feed is handed to C in the writer's own memory: NUL-terminated, equal to what was
    /// written, owned by the caller; a copy that shared the buffer keeps its bytes.
    @Test func handingOverTheBufferGivesTheBytesAndLeavesCopiesIntact() {
        var a = JSONWriter(reservingCapacity: 4)
        a.beginArray()
        for i in 0..<1000 { a.string("card-\(i) \u{00E9}\"") }
        a.endArray()
        let expected = a.bytes
        let b = a                                   // shares the buffer
        guard let owned = a.takeMalloced() else { Issue.record("no memory"); return }
        defer { free(owned) }
        #expect(strlen(owned) == expected.count)
        #expect(Array(UnsafeBufferPointer(start: UnsafeRawPointer(owned).assumingMemoryBound(to: UInt8.self), count: expected.count)) == expected)
        #expect(b.bytes == expected)
        #expect(a.bytes.isEmpty)
        a.int(7)
        #expect(a.string == "7")
    }
    /// The text `double` and `rawDouble` must give: a whole number's digits, any other number
    /// as Swift's `description` (its shortest round-trip form).
    static func expectedText(_ v: Double) -> String {
        v == v.rounded(.towardZero) && abs(v) < 1e15 ? String(Int64(v)) : v.description
    }

    static func written(_ v: Double) -> (plain: String, raw: String) {
        var w = JSONWriter()
        w.double(v)
        var r = JSONWriter()
        r.rawDouble(v)
        return (String(decoding: w.bytes, as: UTF8.self), String(decoding: r.bytes, as: UTF8.self))
    }

    /// The few-decimals path (`JSONWriter.fewDecimals`) gives `description`'s text: decimals
    /// of one to six places read as Doubles, the nearest Doubles on both sides of them, and
    /// any Double at all, across and past the path's range (0.001 to 10^9).
    @Test func numbersWithFewDecimalsAreWrittenAsDescriptionWritesThem() {
        var r = SplitMix(seed: 0xD0B1E)
        var values: [Double] = [0.001, 0.0009999, 0.0010001, 0.5, 1.5, 1.777, 0.1, 0.2, 0.3, 1e9 - 0.5, 999_999_999.999999,
                                1e9 + 0.5, 123.456, 0.000999, 1.0000001, 2.675, 1.005, 0.015625, 1.25e-3]
        for _ in 0..<20_000 {
            let decimals = Int(r.next() % 7)
            var scale = 1.0
            for _ in 0..<decimals { scale *= 10 }
            let digits = Double(r.next() % 2_000_000_000_000) / (r.next() % 2 == 0 ? 1 : 1_000)
            let v = digits / scale
            values += [v, v.nextUp, v.nextDown, -v]
            values.append(Double(bitPattern: r.next()))                     // any Double
            values.append(Double(r.next() % 1_000_000_000) + Double(bitPattern: 0x3FF0_0000_0000_0000 | r.next() >> 12) - 1)
        }
        for v in values where v.isFinite {
            let (plain, raw) = Self.written(v)
            let expected = Self.expectedText(v)
            #expect(plain == expected && raw == expected, "\(v.debugDescription)")
        }
    }
}
