/// The check sum kept beside each stored card (the `cards` table's `checksum` column): XXH64,
/// seed 0, of the record's bytes (`StoredCard`).
///
/// Why: opening a store checked every record value by value (a third of a cold start's
/// instructions), because a record may have been damaged or edited since it was written. A
/// record whose bytes give the sum written beside them is the one the library wrote, from a
/// card that was checked when it came in, and is read without the check; any other record
/// (damaged, edited, or written by a library from before the column, which leaves it null) is
/// checked in full as before. The sum guards against damage and stray edits, not against
/// someone who rewrites both on purpose: whoever can write the store can put any valid card
/// into it anyway.
///
/// XXH64 (github.com/Cyan4973/xxHash, "xxhash_spec.md"): four lanes of 8 bytes for 32-byte
/// stripes, then the tail; about a third of an instruction a byte.
enum RecordSum {
    private static let p1: UInt64 = 11_400_714_785_074_694_791
    private static let p2: UInt64 = 14_029_467_366_897_019_727
    private static let p3: UInt64 = 1_609_587_929_392_839_161
    private static let p4: UInt64 = 9_650_029_242_287_828_579
    private static let p5: UInt64 = 2_870_177_450_012_600_261

    /// The sum as SQLite keeps it (a signed 64-bit integer, the same bits).
    static func of(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64 {
        Int64(bitPattern: xxh64(bytes, seed: 0))
    }

    static func of(_ bytes: [UInt8]) -> Int64 {
        bytes.withUnsafeBufferPointer { of($0) }
    }

    @inline(__always) private static func rotl(_ x: UInt64, _ r: UInt64) -> UInt64 { (x << r) | (x >> (64 - r)) }

    @inline(__always) private static func round(_ acc: UInt64, _ input: UInt64) -> UInt64 {
        rotl(acc &+ input &* p2, 31) &* p1
    }

    @inline(__always) private static func merge(_ acc: UInt64, _ lane: UInt64) -> UInt64 {
        (acc ^ round(0, lane)) &* p1 &+ p4
    }

    static func xxh64(_ bytes: UnsafeBufferPointer<UInt8>, seed: UInt64) -> UInt64 {
        let n = bytes.count
        guard let base = bytes.baseAddress else { return avalanche(seed &+ p5) }
        let raw = UnsafeRawPointer(base)
        @inline(__always) func word(_ at: Int) -> UInt64 { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
        var p = 0
        var h: UInt64
        if n >= 32 {
            var v1 = seed &+ p1 &+ p2, v2 = seed &+ p2, v3 = seed, v4 = seed &- p1
            while p + 32 <= n {
                v1 = round(v1, word(p)); v2 = round(v2, word(p + 8))
                v3 = round(v3, word(p + 16)); v4 = round(v4, word(p + 24))
                p += 32
            }
            h = rotl(v1, 1) &+ rotl(v2, 7) &+ rotl(v3, 12) &+ rotl(v4, 18)
            h = merge(h, v1); h = merge(h, v2); h = merge(h, v3); h = merge(h, v4)
        } else {
            h = seed &+ p5
        }
        h = h &+ UInt64(n)
        while p + 8 <= n {
            h ^= round(0, word(p))
            h = rotl(h, 27) &* p1 &+ p4
            p += 8
        }
        if p + 4 <= n {
            let w = UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: p, as: UInt32.self)))
            h ^= w &* p1
            h = rotl(h, 23) &* p2 &+ p3
            p += 4
        }
        while p < n {
            h ^= UInt64(base[p]) &* p5
            h = rotl(h, 11) &* p1
            p += 1
        }
        return avalanche(h)
    }

    @inline(__always) private static func avalanche(_ x: UInt64) -> UInt64 {
        var h = x
        h ^= h >> 33; h = h &* p2
        h ^= h >> 29; h = h &* p3
        h ^= h >> 32
        return h
    }
}
