/// A card id as a dictionary key, compared byte for byte.
///
/// Swift compares strings by canonical equivalence, so "é" (U+00E9) and "e" + U+0301 would be
/// one key; the server, SQLite and C callers all see two different ids. Every map and set of
/// card ids uses this key, so the library agrees with them.
public struct CardKey: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let id: String

    public init(_ id: String) { self.id = id }
    public init(stringLiteral value: String) { id = value }

    public static func == (a: CardKey, b: CardKey) -> Bool { a.id.utf8.elementsEqual(b.id.utf8) }

    public func hash(into hasher: inout Hasher) {
        var copy = id
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public var description: String { id }

    /// Byte order, as SQLite's BINARY collation and C's strcmp have it.
    public static func bytewiseLess(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}

extension Dictionary where Key == CardKey {
    subscript(id: String) -> Value? {
        get { self[CardKey(id)] }
        set { self[CardKey(id)] = newValue }
    }
}

extension Set where Element == CardKey {
    func contains(_ id: String) -> Bool { contains(CardKey(id)) }
    @discardableResult mutating func insert(_ id: String) -> (inserted: Bool, memberAfterInsert: CardKey) { insert(CardKey(id)) }
    @discardableResult mutating func remove(_ id: String) -> CardKey? { remove(CardKey(id)) }
}
