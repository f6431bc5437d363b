import Testing
@testable import ContentCards

/// What the large-apply changes must keep: the moving apply leaves the same state as a
/// copying one, a card stays 80 bytes, and the huge-page advice stays inside its buffer.
@Suite struct LargeApplyTests {
    func card(_ id: String, created: Int64, pinned: Bool = false) -> Card {
        Card(id: id, created: created, dismissible: true, pinned: pinned,
             content: .classic(.init(title: "t \(id)", cardDescription: "d")))
    }

    /// Changes of every kind: new cards, a replaced one, a deleted one, a dismissal.
    func changes() -> (StoredUser, StoreChanges) {
        let state = StoredUser(cards: [CardKey("kept"): card("kept", created: 1), CardKey("old"): card("old", created: 2),
                                       CardKey("gone"): card("gone", created: 3)], dismissed: [])
        var changes = StoreChanges()
        changes.upserts = (0..<50).map { card("n\($0)", created: Int64(100 + $0 % 7), pinned: $0 % 5 == 0) }
        changes.upserts.append(card("old", created: 9))
        changes.deletes = ["gone", "never-stored"]
        changes.dismissalsAdded = ["kept"]
        return (state, changes)
    }

    @Test func theMovingApplyLeavesWhatTheCopyingOneLeaves() {
        let (start, original) = changes()
        var copied = start, moved = start
        let copiedTransitions = copied.apply(original)
        var taken = original
        let movedTransitions = moved.apply(moving: &taken)
        #expect(moved.cards == copied.cards)
        #expect(moved.dismissed == copied.dismissed)
        #expect(moved.cards.count == 52 && moved.cards["gone"] == nil && moved.cards["old"]?.created == 9)
        #expect(movedTransitions.map { $0.new?.id } == copiedTransitions.map { $0.new?.id })
        #expect(movedTransitions.map { $0.old?.id } == copiedTransitions.map { $0.old?.id })
        // The cards moved out; the caller's copy, shared before the move, is untouched.
        #expect(taken.upserts.isEmpty)
        #expect(original.upserts.count == 51 && original.upserts[0].id == "n0")
        // The feed index built from the transitions is the one built from the state.
        let index = FeedIndex(start.cards.values).applying(movedTransitions)
        #expect(index.ids(.all, now: 0) == FeedIndex(moved.cards.values).ids(.all, now: 0))
    }

    /// A sync that replaces every stored card (each an entry removed and one added) leaves an
    /// index the size of its entries: it reserved the old entries and the new together, twice
    /// what it holds, for as long as the index lived.
    @Test func anIndexRebuiltByReplacingEveryCardHoldsNoMoreThanItsEntries() {
        var state = StoredUser()
        state.apply(StoreChanges(upserts: (0..<2000).map { card("c\($0)", created: Int64($0)) }))
        let index = FeedIndex(state.cards.values)
        var replace = StoreChanges(upserts: (0..<2000).map { card("c\($0)", created: Int64(5000 + $0 % 9)) })
        let next = index.applying(state.apply(moving: &replace))
        #expect(next.entries.count == 2000)
        #expect(next.entries.capacity < 2000 + 2000 / 4)
        #expect(next.ids(.all, now: 0) == FeedIndex(state.cards.values).ids(.all, now: 0))
    }

    @Test func aCardIsEightyBytesAndAnIndexEntryForty() {
        // The kind sits beside the flags; declared after `imagePath` it took a word of its own.
        #expect(MemoryLayout<Card>.size <= 80)
        // The entry's five flags in one byte (five `Bool`s made it 41 bytes, a stride of 48).
        #expect(MemoryLayout<FeedIndex.Entry>.stride == 40)
        let facts = FeedIndex.Facts(Card(id: "x", created: 5, viewed: true, read: true, pinned: true,
                                         content: .control))
        var e = FeedIndex.Entry(facts, classType: 3)
        #expect(e.pinned && e.control && e.viewed && !e.dismissed && e.read && e.classType == 3)
        e.dismissed = true; e.viewed = false
        #expect(e.pinned && e.control && !e.viewed && e.dismissed && e.read)
    }

    @Test func hugePagesAreAdvisedOnlyInsideTheBuffer() {
        let mib = 1 << 20
        #expect(HugePages.advisedRange(start: 4096, count: 3 * mib) == nil)           // under 4 MiB
        let r = HugePages.advisedRange(start: 2 * mib + 16, count: 8 * mib)
        #expect(r?.start == 4 * mib && r?.count == 6 * mib)                           // whole pages inside
        #expect(HugePages.advisedRange(start: 4 * mib, count: 4 * mib)?.count == 4 * mib)
        #expect(HugePages.advisedRange(start: 0, count: 8 * mib) == nil)
        #expect(HugePages.advisedRange(start: Int.max - mib, count: 8 * mib) == nil)
        // A large array advised keeps its values (a hint, not a change of the memory).
        var a: [Int] = []
        a.reserveCapacity(1 << 20)
        HugePages.adviseCapacity(of: a)
        a.append(contentsOf: 0..<(1 << 20))
        #expect(a[12345] == 12345 && a.count == 1 << 20)
        var d: [CardKey: Card] = [:]
        d.reserveCapacity(100_000)
        HugePages.prepareFilling(storageOf: d)
        for i in 0..<1000 { d[CardKey("c\(i)")] = card("c\(i)", created: Int64(i)) }
        #expect(d["c999"]?.created == 999 && d.count == 1000)
    }

    /// Buffers between 64 KiB and 4 MiB that will be filled are faulted in at once: only the
    /// whole pages inside them, and their values are what was written.
    @Test func pagesArePopulatedOnlyInsideTheBuffer() {
        let kib = 1 << 10
        #expect(HugePages.populatedRange(start: 4096, count: 32 * kib, page: 4096) == nil)        // under 64 KiB
        #expect(HugePages.populatedRange(start: 4096, count: 4 << 20, page: 4096) == nil)         // huge pages then
        let r = HugePages.populatedRange(start: 4096 + 16, count: 100 * kib, page: 4096)
        #expect(r?.start == 8192 && r?.count == 96 * kib)                                          // whole pages inside
        #expect(HugePages.populatedRange(start: 8192, count: 64 * kib, page: 4096)?.count == 64 * kib)
        #expect(HugePages.populatedRange(start: 0, count: 64 * kib, page: 4096) == nil)
        #expect(HugePages.populatedRange(start: Int.max - kib, count: 64 * kib, page: 4096) == nil)
        #expect(HugePages.populatedRange(start: 4096, count: 64 * kib, page: 0) == nil)
        // Prepared arrays and tables keep what is written (a hint, not a change of the memory),
        // also when only their first elements are prepared.
        var a: [Int] = []
        a.reserveCapacity(100_000)
        HugePages.prepareFilling(capacityOf: a, first: 50_000)
        HugePages.prepareFilling(capacityOf: a)
        a.append(contentsOf: 0..<100_000)
        #expect(a[99_999] == 99_999 && a.count == 100_000)
        var d: [CardKey: Card] = [:]
        d.reserveCapacity(5000)
        HugePages.prepareFilling(storageOf: d)
        for i in 0..<5000 { d[CardKey("c\(i)")] = card("c\(i)", created: Int64(i)) }
        #expect(d["c4999"]?.created == 4999 && d.count == 5000)
    }
}
