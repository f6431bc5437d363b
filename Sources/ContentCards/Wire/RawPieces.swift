/// Pieces written straight into room the caller asked the writer for
/// (`JSONWriter.appendRaw(maxCount:)`): short copies, decimal digits, and whether a text can be
/// copied as it is. The card writers (`CardJSON.write`, `CardBody.writeMembers`, the plain body
/// writer of `CardFields+PlainBody.swift`) build a card from them with one check for room,
/// where a call to the writer for each piece (its check for room, a call to `memcpy`) cost more
/// than the bytes it wrote.
enum RawPieces {
    /// Copies `count` bytes; below 16, as two words that may overlap (every load and store
    /// within the `count` bytes) rather than a call to `memcpy`: most pieces of a card are a
    /// key or a short value, and the call cost more than the copy.
    @inline(__always)
    static func copy(_ source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>, count: Int) {
        let from = UnsafeRawPointer(source), to = UnsafeMutableRawPointer(target)
        if count >= 16 {
            to.copyMemory(from: from, byteCount: count)
        } else if count >= 8 {
            let first = from.loadUnaligned(as: UInt64.self), last = from.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            to.storeBytes(of: first, as: UInt64.self)
            to.storeBytes(of: last, toByteOffset: count - 8, as: UInt64.self)
        } else if count >= 4 {
            let first = from.loadUnaligned(as: UInt32.self), last = from.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            to.storeBytes(of: first, as: UInt32.self)
            to.storeBytes(of: last, toByteOffset: count - 4, as: UInt32.self)
        } else {
            var i = 0
            while i < count { target[i] = source[i]; i += 1 }
        }
    }

    /// A literal piece at `at`, moved past it.
    @inline(__always)
    static func put(_ text: StaticString, _ out: UnsafeMutablePointer<UInt8>, _ at: inout Int) {
        copy(text.utf8Start, to: out + at, count: text.utf8CodeUnitCount)
        at += text.utf8CodeUnitCount
    }

    /// The most characters `putDigits` writes: Int64.min's 20.
    static let maxDigits = 20

    /// Writes `v`'s decimal digits at `p` (room for `maxDigits`), returning how many.
    @inline(__always)
    static func putDigits(_ v: Int64, _ p: UnsafeMutablePointer<UInt8>) -> Int {
        if v >= 0 && v < 10 { p[0] = 0x30 &+ UInt8(v); return 1 }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)     // 24 bytes
        var magnitude = v.magnitude
        return withUnsafeMutableBytes(of: &digits) { buffer in
            var i = buffer.count
            repeat {
                i -= 1
                buffer[i] = 0x30 &+ UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if v < 0 { i -= 1; buffer[i] = 0x2D }
            let count = buffer.count - i
            UnsafeMutableRawPointer(p).copyMemory(from: buffer.baseAddress! + i, byteCount: count)
            return count
        }
    }

    /// Whether `JSONWriter.string` would write these bytes as they are, between quotes (no
    /// byte needs an escape): eight at a time.
    static func needsNoEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        var i = 0
        while i + 8 <= bytes.count {
            if JSONWriter.anyNeedsEscape(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) { return false }
            i += 8
        }
        while i < bytes.count {
            if JSONWriter.needsEscape(base[i]) { return false }
            i += 1
        }
        return true
    }
}
