/// How the published feed is read (the two locks of `ContentCardsController`), and its badge observer.
extension ContentCardsController {
    /// Runs a read of the published feed under the readers' lock.
    ///
    /// A file store may have been changed by another process (or another controller on the
    /// same file): when no write is running here, the read first checks the store's data
    /// version and reloads if it moved. When a write is running, the read does not wait for it
    /// and serves the last published state (that write reloads before it merges, and publishes
    /// when it is done). A deferred open (Controller+Kept.swift) has published nothing yet: the
    /// read waits for the writer's lock and finishes the open first.
    func read<T>(_ body: () throws(ContentCardsError) -> T) throws(ContentCardsError) -> T {
        if !storeIsInMemory {
            if lock.tryLock() {
                defer { lock.unlock() }
                try reloadIfChangedElsewhere()
            } else if feed.lock.withLock({ feed.isDeferred }) {
                try lock.withLock { () throws(ContentCardsError) in try reloadIfChangedElsewhere() }
            }
        }
        feed.lock.lock()
        defer { feed.lock.unlock() }
        guard feed.isOpen else { throw Self.closedError }
        return try body()
    }

    // MARK: The badge observer

    /// Called with the unfiltered counts of the published feed and the time until which they
    /// stay exact (unix seconds; +infinity: until the feed changes), or with a negative time
    /// when there are none to trust (closed). Called with the readers' lock held, so it must
    /// only store the values: the C layer keeps them where `cc_controller_counts` reads them
    /// without a lock. Only for an in-memory store: a file store can be changed by another
    /// connection, which only a read of the store notices.
    ///
    /// It does not say from when the counts are exact: after the wall clock is set back past
    /// the expiry of a card they leave out, that card is visible again and the counts are
    /// not. `observeBadgeWindow` says both ends.
    public typealias BadgeObserver = @Sendable (_ counts: FeedCounts, _ validBefore: Double) -> Void

    public func observeBadge(_ observer: BadgeObserver?) {
        guard let observer else { return observeBadgeWindow(nil) }
        observeBadgeWindow { counts, _, validBefore in observer(counts, validBefore) }
    }

    /// `BadgeObserver` with both ends of the time the counts are exact in: from `validFrom`
    /// (the latest expiry of a card they leave out as expired; -infinity when none) until
    /// `validBefore` (the next expiry; +infinity when none), unix seconds, `validFrom`
    /// included. Outside it a card's expiry decides otherwise, and a count must be asked of the
    /// controller. A negative `validBefore`: no counts to trust (closed).
    public typealias BadgeWindowObserver = @Sendable (_ counts: FeedCounts, _ validFrom: Double,
                                                      _ validBefore: Double) -> Void

    public func observeBadgeWindow(_ observer: BadgeWindowObserver?) {
        guard storeIsInMemory, !isInherited else { return }
        feed.observe(observer)
    }
}
