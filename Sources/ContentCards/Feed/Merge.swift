/// The merge of a sync response into a user's stored cards (docs/BEHAVIOUR.md, "Merge"), as a pure
/// function: it reads the stored state and the payload and returns the changes to persist, so
/// every rule can be tested without a store.
struct Merge {
    /// Counts of what the merge did, reported to the caller and to subscribers.
    struct Stats: Equatable, Sendable {
        var added = 0
        var updated = 0
        var removed = 0
        var keptNewer = 0
    }

    var changes = StoreChanges()
    var stats = Stats()

    /// Applies `payload` to `state` (mutated to the merged state) and records the changes.
    /// The caller has already discarded a payload for another user (rule 1).
    static func apply(_ payload: Payload, to state: inout StoredUser, pendingRead: Set<CardKey> = []) -> Merge {
        var payload = payload
        let merge = plan(&payload, from: state, pendingRead: pendingRead)
        _ = state.apply(merge.changes)
        return merge
    }

    /// The changes `payload` makes to `state`, which it only reads: the controller persists
    /// them first and then changes its state by exactly these (`StoredUser.apply`), so a merge
    /// never copies the user's cards, and one that fails to persist leaves nothing to undo.
    /// `pendingRead`: cards with a read or unread event still in the outbox, whose local read
    /// state the server has not heard of yet (rule 9).
    ///
    /// The payload's cards are moved into the changes, not copied: each is taken out of
    /// `payload.cards`, which is left empty (copying a card retains its bytes, an atomic
    /// operation on memory just written by another card's decode; two copies a card were 2.4%
    /// of a 10,000-card apply's time).
    static func plan(_ payload: inout Payload, from state: StoredUser, pendingRead: Set<CardKey> = []) -> Merge {
        var merge = Merge()
        // Sized once: grown by doubling, a full sync's array held a third more than it used.
        merge.changes.upserts.reserveCapacity(payload.cards.count)
        HugePages.adviseCapacity(of: merge.changes.upserts)     // not filled when cards are unchanged
        // The decoder's set of the ids when it has one (it matches the cards: the decoder
        // refuses a repeated id), else collected here.
        var listed: CardIDSet
        if let ids = payload.listedIDs, ids.count == payload.cards.count {
            listed = ids
            payload.listedIDs = nil
        } else {
            listed = CardIDSet(minimumCapacity: payload.cards.count)
            // By index: `for server in payload.cards` copies every card to read its id.
            for i in payload.cards.indices { listed.insert(payload.cards[i].card.id) }
        }
        // A decoded payload lists each id once; a hand-made one may not, and then a later
        // copy must see what an earlier one changed: such a payload keeps an overlay of this
        // merge's changes, read before the stored state.
        let overlay = listed.count != payload.cards.count
        var cards: [CardKey: Card?] = [:]
        var dismissed: [CardKey: Bool] = [:]
        func stored(_ key: CardKey) -> Card? {
            if overlay, let c = cards[key] { return c }
            return state.cards[key]
        }
        func isDismissed(_ key: CardKey) -> Bool {
            if overlay, let d = dismissed[key] { return d }
            return state.dismissed.contains(key)
        }

        // A first sync has nothing stored to look up.
        let nothingStored = state.cards.isEmpty && state.dismissed.isEmpty
        // The cards taken from the end, in payload order after one reversal: `popLast` moves a
        // card out and leaves nothing behind, where a swap left an empty card in its place,
        // copied in and destroyed with the array (2 M instructions for 10,000 cards).
        payload.cards.withUnsafeMutableBufferPointer { $0.reverse() }     // moves, no copies
        while let server = payload.cards.popLast() {
            let id = server.card.id
            let key = CardKey(id)
            let stored = nothingStored && !overlay ? nil : stored(key)

            // Rule 2: a stored copy newer than the server's wins.
            if let c = stored, c.created > server.card.created {
                merge.stats.keptNewer += 1
                continue
            }
            // Rule 3: removed by the server: delete it and forget its dismissal.
            if server.removed {
                if stored != nil {
                    if overlay { cards[key] = .some(nil) }
                    merge.changes.deletes.append(id)
                    merge.stats.removed += 1
                }
                if isDismissed(key) {
                    if overlay { dismissed[key] = false }
                    merge.changes.dismissalsRemoved.append(id)
                }
                continue
            }
            let serverDismissed = server.card.dismissed
            let serverRead = server.read
            var next = (consume server).card
            // Rule 6 (applied to every stored copy): sticky flags are the OR of local and server.
            if let c = stored {
                next.viewed = c.viewed || next.viewed
                next.clicked = c.clicked || next.clicked
                next.dismissed = c.dismissed || next.dismissed
                // Rule 9: read state is not sticky (a card can be marked unread again): the
                // server's `rd` wins when the card carries it, unless this device changed the
                // card's read state and the event has not been delivered yet; without `rd`
                // the local state stays.
                if let serverRead, !pendingRead.contains(key) {
                    next.read = serverRead
                } else {
                    next.read = c.read
                }
            }
            if (!nothingStored || overlay) && isDismissed(key) {
                // Rule 4: dismissed locally stays dismissed; it is not resurrected.
                next.dismissed = true
            } else if serverDismissed {
                // Rule 5: dismissed on the server (another device): dismissed here too.
                next.dismissed = true
                if overlay { dismissed[key] = true }
                merge.changes.dismissalsAdded.append(id)
            }
            // (Compared card to card: `stored != next` wraps `next` in an Optional, a copy.)
            let changed: Bool
            if let c = stored { changed = c != next } else { changed = true }
            if stored == nil { merge.stats.added += 1 } else if changed { merge.stats.updated += 1 }
            if changed {
                if overlay { cards[key] = .some(next) }
                // Moved, not copied: a copy retains the card's strings and body, atomic
                // operations on memory the decoder wrote long ago (4% of a first sync's time).
                merge.changes.upserts.append(consume next)
            }
        }

        // Rule 7: a full sync lists every card: the others go, except test cards.
        if payload.fullSync {
            for (key, card) in state.cards where !listed.contains(key.id) && !card.isTest {
                merge.changes.deletes.append(key.id)
                merge.stats.removed += 1
            }
            for key in state.dismissed where !listed.contains(key.id) {
                merge.changes.dismissalsRemoved.append(key.id)
            }
        }

        // Rule 8: the cursors, where the response sets them (-1 = unchanged).
        var cursors = state.cursors
        if payload.lastFullSyncAt >= 0 { cursors.lastFullSyncAt = payload.lastFullSyncAt }
        if payload.lastCardUpdatedAt >= 0 { cursors.lastCardUpdatedAt = payload.lastCardUpdatedAt }
        if cursors != state.cursors { merge.changes.cursors = cursors }
        return merge
    }
}
