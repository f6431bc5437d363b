/// Byte comparisons of UTF-8 text the parsers point into: `memcmp`, where the generic
/// `elementsEqual` and `lexicographicallyPrecedes` cost tens of instructions a byte (they were
/// a tenth of a merge, and a twentieth of opening a store, where they were used).
extension UnsafeBufferPointer where Element == UInt8 {
    /// Whether these are exactly the bytes of `literal`.
    @inline(__always)
    func bytesEqual(_ literal: StaticString) -> Bool {
        count == literal.utf8CodeUnitCount
            && (count == 0 || memcmp(baseAddress!, literal.utf8Start, count) == 0)
    }

    /// Whether these are exactly `other`'s bytes.
    @inline(__always)
    func bytesEqual(_ other: UnsafeBufferPointer<UInt8>) -> Bool {
        count == other.count && (count == 0 || memcmp(baseAddress!, other.baseAddress!, count) == 0)
    }

    /// Byte order, as C's `strcmp` and SQLite's BINARY collation have it (a prefix first):
    /// negative, zero or positive.
    @inline(__always)
    func bytesCompare(_ other: UnsafeBufferPointer<UInt8>) -> Int {
        let n = Swift.min(count, other.count)
        if n > 0, let p = baseAddress, let q = other.baseAddress {
            let c = memcmp(p, q, n)
            if c != 0 { return Int(c) }
        }
        return count - other.count
    }
}
