/// A card id as a dictionary key, compared byte for byte.
///
/// Swift compares strings by canonical equivalence, so "é" (U+00E9) and "e" + U+0301 would be
/// one key; the server, SQLite and C callers all see two different ids. Every map and set of
/// card ids uses this key, so the library agrees with them.
public struct CardKey: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let id: String

    public init(_ id: String) { self.id = id }
    public init(stringLiteral value: String) { id = value }

    public static func == (a: CardKey, b: CardKey) -> Bool { bytewiseCompare(a.id, b.id) == 0 }

    public func hash(into hasher: inout Hasher) {
        var copy = id
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// What `Dictionary` and `Set` hash a key with: the id's bytes through `CardIDSet`'s hash
    /// (a multiply for up to 16 bytes, XXH64 past that), seeded by the process's random seed
    /// and the table's own, instead of `Hasher` (SipHash: seeding, the bytes, finalizing).
    /// `Hashable` declares this requirement for the standard library's own types; a type
    /// outside it may implement it too, and every dictionary and set of ids goes through here.
    public func _rawHashValue(seed: Int) -> Int {
        Int(truncatingIfNeeded: CardIDSet.hash(id, seed: CardIDSet.seed ^ UInt64(truncatingIfNeeded: seed)))
    }

    public var description: String { id }

    /// Byte order, as SQLite's BINARY collation and C's strcmp have it.
    @inline(__always)
    public static func bytewiseLess(_ a: String, _ b: String) -> Bool { bytewiseCompare(a, b) < 0 }

    /// memcmp over the UTF-8 bytes, shorter first on a common prefix: every id comparison and
    /// dictionary probe goes through here (the generic `elementsEqual` cost a tenth of a merge).
    public static func bytewiseCompare(_ a: String, _ b: String) -> Int {
        let x = a.utf8, y = b.utf8
        let result = x.withContiguousStorageIfAvailable { px in
            y.withContiguousStorageIfAvailable { py -> Int in
                let n = min(px.count, py.count)
                if n > 0, let pa = px.baseAddress, let pb = py.baseAddress {
                    let c = memcmp(pa, pb, n)
                    if c != 0 { return Int(c) }
                }
                return px.count - py.count
            }
        }
        if let result, let result { return result }
        // Not contiguous (a bridged or lazy string): element by element.
        if x.elementsEqual(y) { return 0 }
        return x.lexicographicallyPrecedes(y) ? -1 : 1
    }
}

extension Dictionary where Key == CardKey {
    subscript(id: String) -> Value? {
        get { self[CardKey(id)] }
        set { self[CardKey(id)] = newValue }
    }
}

// The same for the table of cards, compiled for it here: the extension above is generic over
// the value, and a call from another file (not inlined there) ran the standard library's
// unspecialized subscript, looking up the value's metadata and witnesses on every call
// (1,400 instructions an insert: a twelfth of opening a store of 1,000 cards).
extension Dictionary where Key == CardKey, Value == Card {
    subscript(id: String) -> Card? {
        get { self[CardKey(id)] }
        set { self[CardKey(id)] = newValue }
    }
}

extension Set where Element == CardKey {
    func contains(_ id: String) -> Bool { contains(CardKey(id)) }
    @discardableResult mutating func insert(_ id: String) -> (inserted: Bool, memberAfterInsert: CardKey) { insert(CardKey(id)) }
    @discardableResult mutating func remove(_ id: String) -> CardKey? { remove(CardKey(id)) }
}
