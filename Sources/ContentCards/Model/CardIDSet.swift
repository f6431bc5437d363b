import CContentCardsSIMD

/// A set of card ids, compared byte for byte as `CardKey` compares them: the decoder's check
/// that a payload lists each id once, and the merge's test of which stored cards a full sync
/// lists (`Payload.listedIDs`).
///
/// Why not `Set<CardKey>`: every insert went through `Hasher` (SipHash: seeding it, the bytes,
/// finalizing it), 450 instructions a card, 3% of a 10,000-card sync. Here an id is hashed
/// once (`hash`: a multiply for an id of up to 16 bytes, XXH64 for longer ones) and placed by
/// open addressing; ids are compared only when their hashes agree. The hash is
/// seeded once a process from the system's random source, as `Hasher` is, so that a server
/// cannot choose ids that all land in one place of every client's table.
struct CardIDSet {
    /// The ids, in the order they were inserted.
    private(set) var ids: [String] = []
    /// A power of two long and at most half full: 0 for an empty place, else the id's index
    /// in `ids` plus one (low 32 bits) and the high 32 bits of its hash, compared before the
    /// ids are.
    private var places: [UInt64] = []

    /// The seed of every set's hash in this process.
    static let seed = UInt64.random(in: .min ... .max)

    /// Sets of other ids taken in whole (`adopt`): a payload read by two threads lists the
    /// second thread's ids here instead of placing each again.
    private var adopted: [CardIDSet] = []

    var count: Int { adopted.reduce(ids.count) { $0 + $1.count } }
    /// How many tables the ids are in: 1, or 2 once a set was adopted.
    var parts: Int { adopted.reduce(1) { $0 + $1.parts } }

    /// Room for `capacity` ids without growing.
    init(minimumCapacity capacity: Int = 0) {
        ids.reserveCapacity(capacity)
        HugePages.adviseCapacity(of: ids)
        places = Self.emptyPlaces(Self.placesFor(capacity))
    }

    /// Inserts `id`; false when the set has it already (nothing changes then).
    @discardableResult
    mutating func insert(_ id: String) -> Bool {
        if !adopted.isEmpty && adopted.contains(where: { $0.contains(id) }) { return false }
        if (ids.count + 1) * 2 > places.count { grow() }
        let hash = Self.hash(id)
        let (found, at) = find(id, hash: hash)
        if found { return false }
        ids.append(id)
        places[at] = Self.tag(hash) | UInt64(ids.count)
        return true
    }

    /// Asks the cache for the place where the id of these bytes goes (`cc_prefetch_for_write`):
    /// called when a card's id is read, ahead of its `insert` once the card is built. Only a
    /// hint: nothing changes, and a table grown meanwhile has the id's place elsewhere.
    func prefetch(_ bytes: UnsafeBufferPointer<UInt8>) {
        let hash = Self.hash(bytes, seed: Self.seed)
        places.withUnsafeBufferPointer { table in
            guard let base = table.baseAddress, table.count > 0 else { return }
            cc_prefetch_for_write(base + (Int(truncatingIfNeeded: hash) & (table.count - 1)))
        }
    }

    func contains(_ id: String) -> Bool {
        (!places.isEmpty && find(id, hash: Self.hash(id)).found) || adopted.contains { $0.contains(id) }
    }

    /// Each id's hash, in the order they were inserted: what `adopt` places them by, worked out
    /// on the thread that made the set.
    func hashes() -> [UInt64] { ids.map { Self.hash($0) } }

    /// Takes every id of `other` (whose `hashes()` are `hashes`) into this set when none of
    /// them is in it already; false, with nothing changed, when one is.
    mutating func adopt(_ other: CardIDSet, hashes: [UInt64]) -> Bool {
        guard adopted.isEmpty, other.adopted.isEmpty, hashes.count == other.ids.count else {
            // Not the decoder's two halves: each id looked up the plain way.
            guard !other.ids.contains(where: { contains($0) }) else { return false }
            adopted.append(other)
            return true
        }
        if !places.isEmpty {
            for i in other.ids.indices where find(other.ids[i], hash: hashes[i]).found { return false }
        }
        adopted.append(other)
        return true
    }

    /// Where `id` is (found), or the empty place where it would go (the table is never full).
    @inline(__always)
    private func find(_ id: String, hash: UInt64) -> (found: Bool, at: Int) {
        let mask = places.count - 1
        var at = Int(truncatingIfNeeded: hash) & mask
        let tag = Self.tag(hash)
        while true {
            let place = places[at]
            if place == 0 { return (false, at) }
            if place & Self.tagBits == tag && CardKey.bytewiseCompare(ids[Int(place & 0xFFFF_FFFF) - 1], id) == 0 {
                return (true, at)
            }
            at = (at &+ 1) & mask
        }
    }

    /// The high half of a hash, kept in its place to compare before the ids.
    private static let tagBits: UInt64 = 0xFFFF_FFFF_0000_0000
    @inline(__always) private static func tag(_ hash: UInt64) -> UInt64 { hash & tagBits }

    /// Twice the places, every id placed again (hashed again: the table keeps only half of
    /// each hash).
    private mutating func grow() {
        let count = Self.placesFor(max(ids.count + 1, places.count))
        var next = Self.emptyPlaces(count)
        let mask = count - 1
        for (i, id) in ids.enumerated() {
            let hash = Self.hash(id)
            var at = Int(truncatingIfNeeded: hash) & mask
            while next[at] != 0 { at = (at &+ 1) & mask }
            next[at] = Self.tag(hash) | UInt64(i + 1)
        }
        places = next
    }

    /// `count` empty places. A large table (a payload of 100,000 cards and more) is advised
    /// huge pages before it is zeroed, as the `Set` it replaced was: zeroed first, its 4 KiB
    /// pages were each faulted in on their own.
    private static func emptyPlaces(_ count: Int) -> [UInt64] {
        var table: [UInt64] = []
        table.reserveCapacity(count)
        HugePages.prepareFilling(capacityOf: table)     // zeroed next: every page written
        table.append(contentsOf: repeatElement(0, count: count))
        return table
    }

    /// The places for `capacity` ids: a power of two, at least twice as many, at least 16.
    private static func placesFor(_ capacity: Int) -> Int {
        var n = 16
        while n < capacity * 2 { n *= 2 }
        return n
    }

    @inline(__always)
    private static func hash(_ id: String) -> UInt64 { hash(id, seed: seed) }

    /// The hash of an id's UTF-8 bytes (also `CardKey`'s, for the standard library's tables).
    @inline(__always)
    static func hash(_ id: String, seed: UInt64) -> UInt64 {
        var copy = id
        return copy.withUTF8 { hash($0, seed: seed) }
    }

    /// The hash of an id's bytes: up to 16 bytes (most ids) as two words loaded without
    /// reading past them (the first and last 8 or 4 bytes, which overlap for shorter ids) and
    /// mixed by one 128-bit multiply, as wyhash does; longer ones by XXH64.
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>, seed: UInt64) -> UInt64 {
        let n = bytes.count
        guard n <= 16, let base = bytes.baseAddress else { return RecordSum.xxh64(bytes, seed: seed) }
        let raw = UnsafeRawPointer(base)
        let a: UInt64, b: UInt64
        if n >= 8 {
            a = UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self))
            b = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self))
        } else if n >= 4 {
            a = UInt64(UInt32(littleEndian: raw.loadUnaligned(as: UInt32.self)))
            b = UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)))
        } else if n > 0 {
            a = UInt64(base[0]) << 16 | UInt64(base[n >> 1]) << 8 | UInt64(base[n - 1])
            b = 0
        } else {
            a = 0; b = 0
        }
        let first = mix(a ^ seed ^ 0xA076_1D64_78BD_642F, b ^ 0xE703_7ED1_A0B4_28DB)
        return mix(first, UInt64(n) ^ seed ^ 0x8EBC_6AF0_9C88_C6E3)
    }

    /// The two halves of the 128-bit product, folded.
    @inline(__always)
    private static func mix(_ x: UInt64, _ y: UInt64) -> UInt64 {
        let product = x.multipliedFullWidth(by: y)
        return product.high ^ product.low
    }
}
