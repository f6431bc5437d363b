/// Putting many entries in feed order at once: a store's cards when it opens, a sync's new
/// cards before they are merged into the index. One change at a time goes in by binary search
/// (`FeedIndex.position`), not through here.
extension FeedIndex {
    /// Ascending (rank, created) is feed order up to the id.
    struct SortKey {
        var created: UInt64     // `created` as an order-preserving unsigned, inverted: newest first
        var at: UInt32          // the entry's position in the entries being sorted
        var rank: UInt8         // 0: pinned, 1: not
    }

    /// Below this many entries a comparison sort is cheaper than the radix sort's tables.
    static let radixSortMinimum = 256

    /// `entries` in feed order (`precedes`). Sorted as 16-byte keys (pinned and created, and
    /// the entry's position) rather than 40-byte entries through a closure (the sort was 3.8%
    /// of a 10,000-card sync); entries created in the same second are then put in order by
    /// id, and moved once into place.
    static func inFeedOrder(_ entries: [Entry]) -> [Entry] {
        guard entries.count > 1, entries.count <= Int(UInt32.max) else {
            return entries.sorted(by: precedes)
        }
        var keys: [SortKey] = []
        keys.reserveCapacity(entries.count)
        HugePages.prepareFilling(capacityOf: keys)
        for (i, e) in entries.enumerated() {
            keys.append(SortKey(created: ~(UInt64(bitPattern: e.created) ^ (1 << 63)), at: UInt32(i), rank: e.pinned ? 0 : 1))
        }
        if keys.count >= radixSortMinimum {
            radixSort(&keys)
        } else {
            keys.sort { a, b in a.rank != b.rank ? a.rank < b.rank : a.created < b.created }
        }
        // Runs of equal (rank, created): id descending, bytewise.
        var start = 0
        while start < keys.count {
            var end = start + 1
            while end < keys.count && keys[end].rank == keys[start].rank && keys[end].created == keys[start].created { end += 1 }
            if end - start > 1 {
                keys[start..<end].sort { a, b in CardKey.bytewiseLess(entries[Int(b.at)].id, entries[Int(a.at)].id) }
            }
            start = end
        }
        var sorted: [Entry] = []
        sorted.reserveCapacity(entries.count)
        HugePages.prepareFilling(capacityOf: sorted)
        for key in keys { sorted.append(entries[Int(key.at)]) }
        return sorted
    }

    /// Sorts `keys` ascending by (rank, created), keeping the order of equal keys: a least
    /// significant digit radix sort, a byte of `created` a pass and the rank last. The nine
    /// counts are taken in one read of the keys, and a pass whose byte is the same in every
    /// key (the high bytes of times that lie within a few years of each other) moves nothing
    /// and is skipped: a 10,000-card feed takes four or five passes of a few instructions a
    /// key, where the comparison sort took 540 instructions a key.
    static func radixSort(_ keys: inout [SortKey]) {
        let n = keys.count
        guard n > 1 else { return }
        let digits = 9
        var counts = [Int](repeating: 0, count: digits * 256)
        var scratch = [SortKey](repeating: SortKey(created: 0, at: 0, rank: 0), count: n)
        counts.withUnsafeMutableBufferPointer { counts in
            keys.withUnsafeMutableBufferPointer { keys in
                scratch.withUnsafeMutableBufferPointer { scratch in
                    for key in keys {
                        var word = key.created
                        for d in 0..<8 {
                            counts[d &* 256 &+ Int(truncatingIfNeeded: word & 0xFF)] &+= 1
                            word &>>= 8
                        }
                        counts[8 &* 256 &+ Int(key.rank)] &+= 1
                    }
                    // The keys move between the two buffers; `inKeys` says where they are now.
                    var inKeys = true
                    for d in 0..<digits {
                        let table = d &* 256
                        let first = digit(keys[0], d)
                        if counts[table &+ first] == n { continue }     // the same byte everywhere
                        var sum = 0
                        for b in 0..<256 {
                            let c = counts[table &+ b]
                            counts[table &+ b] = sum
                            sum &+= c
                        }
                        let from = inKeys ? keys : scratch, to = inKeys ? scratch : keys
                        for key in from {
                            let slot = table &+ digit(key, d)
                            to[counts[slot]] = key
                            counts[slot] &+= 1
                        }
                        inKeys.toggle()
                    }
                    if !inKeys { _ = keys.update(fromContentsOf: scratch) }
                }
            }
        }
    }

    /// Byte `d` of the key's order: bytes 0 to 7 of `created` from the lowest, then the rank.
    @inline(__always)
    private static func digit(_ key: SortKey, _ d: Int) -> Int {
        d == 8 ? Int(key.rank) : Int(truncatingIfNeeded: (key.created &>> UInt64(d &* 8)) & 0xFF)
    }
}
