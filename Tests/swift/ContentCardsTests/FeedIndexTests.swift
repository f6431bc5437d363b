import Foundation
import Testing
@testable import ContentCards

/// The feed index is kept up to date change by change (and rebuilt in one pass for big
/// changes): after any sequence of changes it must answer exactly as an index built from the
/// cards from scratch, and as the plain rules of `FeedView` do.
@Suite struct FeedIndexTests {
    /// More class types than `FeedIndex.classTypesCompared`: the index finds the first few by
    /// comparing names, the rest in its table, and the cards must not tell.
    static let types = ["home_tile", "coupon_code", "", "message_full_page"]
        + (1...(FeedIndex.classTypesCompared + 2)).map { "extra_type_\($0)" }
    static let filters: [ClassTypeFilter] = [.all, ClassTypeFilter(["home_tile"]),
                                             ClassTypeFilter(["coupon_code", ""]), ClassTypeFilter(["nope"]),
                                             ClassTypeFilter(["extra_type_1", "extra_type_\(FeedIndex.classTypesCompared + 2)"])]

    struct Random {
        var state: UInt64
        mutating func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(n))
        }
    }

    static func card(_ r: inout Random, id: String) -> Card {
        let control = r.next(8) == 0
        return Card(id: id, created: Int64(100 + r.next(20)), expiresAt: r.next(3) == 0 ? Int64(1000 + r.next(50)) : Card.neverExpires,
                    viewed: r.next(3) == 0, dismissed: r.next(6) == 0, read: r.next(2) == 0, pinned: r.next(10) == 0,
                    extras: ["class_type": types[r.next(types.count)]],
                    content: control ? .control : .classic(.init(cardDescription: "d")))
    }

    /// What the rules say, straight from the cards.
    static func expected(_ cards: [CardKey: Card], _ filter: ClassTypeFilter, now: Double) -> ([String], FeedCounts) {
        let visible = FeedView.cards(cards.values, filter: filter, now: now)
        let unviewed = visible.filter { !$0.viewed && !$0.isControl }.count
        let unread = visible.filter { !$0.read && !$0.isControl }.count
        return (visible.map(\.id), FeedCounts(total: visible.count, unviewed: unviewed, unread: unread))
    }

    static func check(_ index: inout FeedIndex, _ cards: [CardKey: Card], now: Double,
                      sourceLocation: SourceLocation = #_sourceLocation) {
        for filter in filters {
            let (ids, counts) = expected(cards, filter, now: now)
            #expect(index.ids(filter, now: now) == ids, sourceLocation: sourceLocation)
            #expect(index.counts(filter, now: now) == counts, sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: [1, 2, 3, 4])
    func changesInPlaceAgreeWithARebuild(seed: Int) {
        var r = Random(state: UInt64(seed))
        var stored = StoredUser()
        var index = FeedIndex()
        var now = 990.0
        for step in 0..<400 {
            var changes = StoreChanges()
            let id = "c\(r.next(60))"
            switch r.next(4) {
            case 0:
                changes.deletes = [id]
            case 1:
                // Flags only: the entry stays where it is.
                if var c = stored.cards[id] {
                    c.viewed = true
                    c.read.toggle()                        // read state goes both ways
                    if r.next(2) == 0 { c.dismissed = true }
                    changes.upserts = [c]
                }
            default:
                changes.upserts = [Self.card(&r, id: id)]
            }
            for t in stored.apply(changes) { index.update(old: t.old, new: t.new) }
            if step % 7 == 0 { now += Double(r.next(8)) }     // cards expire as time goes on
            Self.check(&index, stored.cards, now: now)
        }
        var rebuilt = FeedIndex(stored.cards.values)
        Self.check(&rebuilt, stored.cards, now: now)
    }

    @Test(arguments: [5, 6])
    func changesAppliedInOnePassAgreeWithARebuild(seed: Int) {
        var r = Random(state: UInt64(seed))
        var stored = StoredUser()
        var index = FeedIndex()
        for _ in 0..<20 {
            var changes = StoreChanges()
            for _ in 0..<r.next(40) { changes.upserts.append(Self.card(&r, id: "c\(r.next(100))")) }
            var seen = Set<String>()
            changes.upserts = changes.upserts.filter { seen.insert($0.id).inserted }
            for _ in 0..<r.next(10) {
                let id = "c\(r.next(100))"
                if !seen.contains(id) { changes.deletes.append(id); seen.insert(id) }
            }
            index = index.applying(stored.apply(changes))
            Self.check(&index, stored.cards, now: 1020)
        }
    }

    /// The packed-key sort gives exactly the order of `precedes`, across pinned and unpinned
    /// cards, equal seconds, ids that differ in length and bytes, and times at both ends of
    /// Int64 (where a naive packing of the sign or the pinned bit would go wrong).
    @Test func thePackedKeySortIsTheFeedOrder() {
        var r = Random(state: 99)
        let times: [Int64] = [.min, .min + 1, -1, 0, 1, 100, 101, 1 << 62, .max - 1, .max]
        let ids = ["a", "b", "aa", "ab", "b0", "é", "z", "card-1", "card-10", "card-2"]
        for round in 0..<200 {
            var entries: [FeedIndex.Entry] = []
            var used = Set<String>()
            for _ in 0..<r.next(40) {
                let id = ids[r.next(ids.count)] + String(r.next(round % 3 == 0 ? 2 : 50))
                guard used.insert(id).inserted else { continue }
                let card = Card(id: id, created: round % 2 == 0 ? times[r.next(times.count)] : Int64(r.next(4)),
                                pinned: r.next(4) == 0, content: .classic(.init(cardDescription: "d")))
                entries.append(FeedIndex.Entry(FeedIndex.Facts(card), classType: 0))
            }
            let expected = entries.sorted(by: FeedIndex.precedes).map(\.id)
            #expect(FeedIndex.inFeedOrder(entries).map(\.id) == expected, "round \(round)")
        }
    }
    /// The radix sort that large batches take (`FeedIndex.radixSortMinimum` entries and up)
    /// gives the order of `precedes` too: times spread over every byte of an Int64, times
    /// bunched in a few seconds (most passes skipped), one time for all (every pass skipped
    /// but the rank's), and every card pinned or none.
    @Test func theRadixSortIsTheFeedOrder() {
        var r = Random(state: 7)
        let spreads: [(String, (inout Random) -> Int64)] = [
            ("any Int64", { r in Int64(bitPattern: UInt64(r.next(1 << 30)) << 34 ^ UInt64(r.next(1 << 30)) << 4 ^ UInt64(r.next(16))) }),
            ("both ends", { r in r.next(2) == 0 ? Int64.min + Int64(r.next(300)) : Int64.max - Int64(r.next(300)) }),
            ("a year of seconds", { r in 1_700_000_000 + Int64(r.next(31_536_000)) }),
            ("a few seconds", { r in 1_700_000_000 + Int64(r.next(5)) }),
            ("one second", { _ in 42 }),
            ("around zero", { r in Int64(r.next(600)) - 300 }),
        ]
        for (name, time) in spreads {
            for (count, pinnedOneIn) in [(FeedIndex.radixSortMinimum, 4), (3_000, 1), (3_000, 1_000_000), (20_000, 7)] {
                var entries: [FeedIndex.Entry] = []
                for i in 0..<count {
                    let card = Card(id: "c\(r.next(1_000_000))-\(i)", created: time(&r), pinned: r.next(pinnedOneIn) == 0,
                                    content: .classic(.init(cardDescription: "d")))
                    entries.append(FeedIndex.Entry(FeedIndex.Facts(card), classType: 0))
                }
                let expected = entries.sorted(by: FeedIndex.precedes).map(\.id)
                let got = FeedIndex.inFeedOrder(entries).map(\.id)
                // The first difference, not two arrays of 20,000 ids, when they differ.
                let differsAt = got.count != expected.count ? -1 : zip(got, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                #expect(differsAt == nil, "\(name), \(count) entries")
            }
        }
    }

    @Test func theRadixSortKeepsTheOrderOfEqualKeys() {
        var r = Random(state: 11)
        for count in [2, 3, 300, 5_000] {
            var keys = (0..<count).map { i in
                FeedIndex.SortKey(created: UInt64(r.next(4)) << 40 | UInt64(r.next(3)), at: UInt32(i), rank: UInt8(r.next(2)))
            }
            let expected = keys.enumerated().sorted { a, b in
                (a.element.rank, a.element.created, a.offset) < (b.element.rank, b.element.created, b.offset)
            }.map(\.element.at)
            FeedIndex.radixSort(&keys)
            let differsAt = zip(keys.map(\.at), expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(keys.count == expected.count && differsAt == nil, "\(count) keys")
        }
    }
}

