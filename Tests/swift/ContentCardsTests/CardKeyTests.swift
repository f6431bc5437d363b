import Testing
@testable import ContentCards

/// `CardKey` hashes through `CardIDSet.hash` (`_rawHashValue(seed:)`), not `Hasher`: every
/// dictionary and set of ids must still hold exactly what one keyed by the id's bytes holds
/// (ids equal only when their bytes are), through inserts, removals and growth, and a
/// dictionary copied into another in its own order must come out whole.
@Suite struct CardKeyTests {
    @Test(arguments: [1, 2, 3] as [UInt64])
    func aDictionaryOfIdsHoldsWhatOneKeyedByTheirBytesHolds(seed: UInt64) {
        let ids = CardIDSetTests.ids(seed: seed, count: 4000)
        var dictionary: [CardKey: Int] = [:]
        var reference: [[UInt8]: Int] = [:]
        for (i, id) in ids.enumerated() {
            dictionary[CardKey(id)] = i
            reference[Array(id.utf8)] = i
            if i % 5 == 0 {     // an earlier one removed (or already gone)
                let other = ids[i / 2]
                #expect((dictionary.removeValue(forKey: CardKey(other)) == nil) == (reference.removeValue(forKey: Array(other.utf8)) == nil))
            }
            #expect(dictionary.count == reference.count)
        }
        for id in ids + CardIDSetTests.ids(seed: seed &+ 100, count: 4000) {
            #expect(dictionary[CardKey(id)] == reference[Array(id.utf8)], "\(id.debugDescription)")
        }
        // Copied in its own order into a table of the same size (the case a hash that ignores
        // the table's seed makes slow), and into a set.
        var copy: [CardKey: Int] = [:]
        copy.reserveCapacity(dictionary.count)
        for (key, value) in dictionary { copy[key] = value }
        #expect(copy == dictionary)
        #expect(Set(dictionary.keys).count == reference.count)
    }

    /// Equal keys hash alike; the same bytes give the same hash value however the string was
    /// made (a literal, a slice made whole, bytes decoded).
    @Test func equalKeysHashAlike() {
        let made = ["card-1", String("xcard-1".dropFirst()), String(decoding: Array("card-1".utf8), as: UTF8.self)]
        for id in made {
            #expect(CardKey(id) == CardKey("card-1"))
            #expect(CardKey(id).hashValue == CardKey("card-1").hashValue)
        }
        // Canonically equivalent, different bytes: two keys.
        #expect(CardKey("é") != CardKey("e\u{301}"))
        #expect(Set([CardKey("é"), CardKey("e\u{301}")]).count == 2)
    }
}
