/// How the feed in memory is read and changed (the two locks of `ContentCardsController`).
extension ContentCardsController {
    /// Changes made in place at most cost this many entry shifts (moving an entry in a feed of
    /// n cards shifts up to n): about a millisecond of readers waiting. Larger changes are built
    /// beside the published state and swapped in.
    static let inPlaceBudget = 1 << 18

    /// Runs a read of the published feed under the readers' lock.
    ///
    /// A file store may have been changed by another process (or another controller on the
    /// same file): when no write is running here, the read first checks the store's data
    /// version and reloads if it moved. When a write is running, the read does not wait for it
    /// and serves the last published state (that write reloads before it merges, and publishes
    /// when it is done).
    func read<T>(_ body: () throws(ContentCardsError) -> T) throws(ContentCardsError) -> T {
        if !storeIsInMemory, lock.tryLock() {
            defer { lock.unlock() }
            try reloadIfChangedElsewhere()
        }
        readLock.lock()
        defer { readLock.unlock() }
        guard isOpen else { throw Self.closedError }
        return try body()
    }

    /// Makes persisted changes visible to readers. Called with the writer's lock held, after
    /// the store committed `changes`, whose cards are moved into the state (`changes.upserts`
    /// is left holding empty cards).
    func publish(_ changes: inout StoreChanges) {
        // Readers update the index's counts memo under the readers' lock, so even reading the
        // index takes it here (the decision costs O(changes · log n)).
        let few = changes.upserts.count + changes.deletes.count <= 4096
        let inPlace: Bool = readLock.withLock {
            guard few && stored.moves(changes, in: index) <= Self.inPlaceBudget / max(index.entries.count, 1) else {
                return false
            }
            for t in stored.apply(moving: &changes) { index.update(old: t.old, new: t.new) }
            publishBadge()
            return true
        }
        if inPlace { return }
        // Too many to change in place: build the next state while readers keep reading this
        // one (only writers, who hold `lock`, change `stored`, and readers only read its
        // storage), then swap. The old state is freed after the lock is let go.
        var nextStored = stored
        let transitions = nextStored.apply(moving: &changes)
        let base = readLock.withLock { index }
        var nextIndex = base.applying(transitions)
        _ = nextIndex.counts(.all, now: clock.now())     // the tallies, counted before the swap
        readLock.withLock {
            swap(&stored, &nextStored)
            swap(&index, &nextIndex)
            publishBadge()
        }
    }

    /// Replaces the whole state (a reload, a user change). Called with the writer's lock held.
    func publish(replacing next: StoredUser) {
        var nextStored = next
        var nextIndex = FeedIndex(next.cards.values)
        _ = nextIndex.counts(.all, now: clock.now())
        readLock.withLock {
            swap(&stored, &nextStored)
            swap(&index, &nextIndex)
            publishBadge()
        }
    }

    // MARK: The badge observer

    /// Called with the unfiltered counts of the published feed and the time until which they
    /// stay exact (unix seconds; +infinity: until the feed changes), or with a negative time
    /// when there are none to trust (closed). Called with the readers' lock held, so it must
    /// only store the values: the C layer keeps them where `cc_controller_counts` reads them
    /// without a lock. Only for an in-memory store: a file store can be changed by another
    /// connection, which only a read of the store notices.
    public typealias BadgeObserver = @Sendable (_ counts: FeedCounts, _ validBefore: Double) -> Void

    public func observeBadge(_ observer: BadgeObserver?) {
        guard storeIsInMemory else { return }
        readLock.withLock {
            badgeObserver = observer
            lastBadge = nil
            if isOpen { _ = index.counts(.all, now: clock.now()) }
            publishBadge()
        }
    }

    /// Tells the observer the current badge when it changed. Called with the readers' lock held.
    func publishBadge() {
        armExpiryTimer()
        guard let observer = badgeObserver else { return }
        let badge = isOpen ? index.badge : nil
        if badge == lastBadge { return }
        lastBadge = badge
        if let badge {
            observer(badge.counts, badge.validBefore)
        } else {
            observer(FeedCounts(), -1)
        }
    }
}
