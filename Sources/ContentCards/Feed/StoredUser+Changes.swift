/// The in-memory side of a store write: the same `StoreChanges` the store commits, applied to
/// the user's cards, so memory and disk never disagree about what a change was.
extension StoredUser {
    /// One card before and after a change (nil: absent), as the feed index sees it.
    struct Transition {
        let old: FeedIndex.Facts?
        let new: FeedIndex.Facts?
    }

    /// Applies `changes` in place and returns what happened to each card, for the feed index.
    @discardableResult
    mutating func apply(_ changes: StoreChanges) -> [Transition] {
        var copy = changes
        return apply(moving: &copy)
    }

    /// `apply`, moving the upserted cards out of `changes` (left empty) instead
    /// of copying them: a copy retains each card's id and body, and in a large apply those
    /// objects were written long enough before to be out of the caches, so each retain was a
    /// miss (the card copies were a tenth of a 100,000-card apply and feed).
    /// `changes.upserts` moves only when the caller holds the only reference to it.
    @discardableResult
    mutating func apply(moving changes: inout StoreChanges) -> [Transition] {
        var transitions: [Transition] = []
        transitions.reserveCapacity(changes.upserts.count + changes.deletes.count)
        HugePages.prepareFilling(capacityOf: transitions)
        // A big change (a full sync) grows the table once rather than doubling it step by
        // step, which held the old and the new table at once at the peak of a large apply.
        // Small ones do not reserve: they are made under the readers' lock, and most of their
        // upserts replace cards already there.
        if changes.upserts.count > 4096 {
            cards.reserveCapacity(cards.count + changes.upserts.count)
            HugePages.prepareFilling(storageOf: cards)
        }
        // Taken from the end, in order after one reversal: `popLast` moves each card out and
        // leaves nothing to destroy (a swap left an empty card in its place).
        changes.upserts.withUnsafeMutableBufferPointer { $0.reverse() }     // moves, no copies
        while let card = changes.upserts.popLast() {
            let facts = FeedIndex.Facts(card)
            let old = cards.updateValue(consume card, forKey: CardKey(facts.id))
            transitions.append(Transition(old: old.map(FeedIndex.Facts.init), new: facts))
        }
        // Its memory goes before the feed index is built (a full sync's is a `Card` per card,
        // 80 MB for 1,000,000 cards, at the apply's peak).
        changes.upserts = []
        for id in changes.deletes {
            if let old = cards.removeValue(forKey: CardKey(id)) {
                transitions.append(Transition(old: FeedIndex.Facts(old), new: nil))
            }
        }
        for id in changes.dismissalsAdded { dismissed.insert(CardKey(id)) }
        for id in changes.dismissalsRemoved { dismissed.remove(CardKey(id)) }
        if let c = changes.cursors { cursors = c }
        if let s = changes.sync { sync = s }
        return transitions
    }

    /// The cost of applying `changes` to `index` in place, in entries shifted (see
    /// `FeedIndex.update`); without changing anything.
    func moves(_ changes: StoreChanges, in index: FeedIndex) -> Int {
        var total = 0
        for card in changes.upserts { total += index.moves(old: cards[CardKey(card.id)], new: card) }
        for id in changes.deletes where cards[CardKey(id)] != nil { total += 1 }
        return total
    }
}
