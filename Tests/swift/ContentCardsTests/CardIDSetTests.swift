import Testing
@testable import ContentCards

/// The set of ids the decoder and the merge use in place of `Set<CardKey>` (`CardIDSet`): it
/// must hold exactly what a `Set<CardKey>` holds after the same inserts, ids being equal only
/// when their bytes are, whatever their length (each way of hashing: 1-3, 4-7, 8-16 bytes and
/// longer), and keep doing so as it grows.
@Suite struct CardIDSetTests {
    /// Ids of every length up to 40 bytes, near misses of each other (one byte changed at each
    /// end, one byte longer or shorter), canonically equivalent but different bytes ("é" and
    /// "e" + U+0301), the empty id, and ids that repeat.
    static func ids(seed: UInt64, count: Int) -> [String] {
        var random = SplitMix(seed: seed)
        let alphabet = Array("abcXYZ019_-.é✓\u{301}")
        var out: [String] = ["", "é", "e\u{301}", "a", "a\u{0}", "\u{0}a"]
        for i in 0..<count {
            let length = Int(random.next() % 41)
            var s = String((0..<length).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
            if i % 7 == 0, let last = out.last { s = last + "x" }
            if i % 11 == 0, let last = out.last, !last.isEmpty { s = String(last.dropLast()) }
            if i % 13 == 0, let last = out.last { s = last }     // a repeat
            out.append(s)
        }
        return out
    }

    @Test(arguments: [(1, 0), (2, 16), (3, 5000)] as [(UInt64, Int)])
    func itHoldsWhatASetOfCardKeysHolds(seed: UInt64, capacity: Int) {
        let ids = Self.ids(seed: seed, count: 3000)
        var set = CardIDSet(minimumCapacity: capacity)
        var reference = Set<CardKey>()
        for id in ids {
            #expect(set.insert(id) == reference.insert(CardKey(id)).inserted, "\(id.debugDescription)")
            #expect(set.count == reference.count)
        }
        // The ids in the order first inserted, each once.
        var firsts: [CardKey] = []
        var met = Set<CardKey>()
        for id in ids where met.insert(CardKey(id)).inserted { firsts.append(CardKey(id)) }
        #expect(set.ids.map { CardKey($0) } == firsts)
        for id in ids + Self.ids(seed: seed &+ 100, count: 3000) {
            #expect(set.contains(id) == reference.contains(CardKey(id)), "\(id.debugDescription)")
        }
        #expect(!CardIDSet().contains("a"))
    }

    /// Each byte of an id of every length up to 24 changes its hash (a hash that left a byte
    /// out would still be correct, but put every id differing only there in one place).
    @Test func everyByteOfAnIdChangesItsHash() {
        for length in 1...24 {
            let bytes = (0..<length).map { UInt8(0x61 + $0 % 26) }
            let base = bytes.withUnsafeBufferPointer { CardIDSet.hash($0, seed: 42) }
            for at in 0..<length {
                var changed = bytes
                changed[at] ^= 0x01
                let hash = changed.withUnsafeBufferPointer { CardIDSet.hash($0, seed: 42) }
                #expect(hash != base, "byte \(at) of \(length)")
            }
            let longer = (bytes + [0x61]).withUnsafeBufferPointer { CardIDSet.hash($0, seed: 42) }
            #expect(longer != base, "\(length) bytes and one more")
        }
    }
}
