/// The published feed: what readers see (docs/BEHAVIOUR.md, "Feed"): the current user's stored
/// cards, the feed index over them (the one order, and the counts), the badge told to the C
/// layer's lock-free cells, and the time of the expiry timer.
///
/// Locks: its own `lock` is the readers' lock. Readers take it alone and briefly; writers
/// change the state only with the controller's writer's lock held first and this one inside
/// it (the controller keeps that order), so a writer may read `stored` with the writer's lock
/// alone. A change small enough is made in place, costing readers O(changes · log n); a larger
/// one is built beside the published state with only the writer's lock held, and swapped in.
final class PublishedFeed: @unchecked Sendable {
    /// Changes made in place at most cost this many entry shifts (moving an entry in a feed of
    /// n cards shifts up to n): about a millisecond of readers waiting. Larger changes are built
    /// beside the published state and swapped in.
    static let inPlaceBudget = 1 << 18

    /// The readers' lock: guards everything below.
    let lock = Lock()
    /// The current user's cards, dismissals and cursors.
    var stored: StoredUser
    /// The feed order and counts over `stored` (its counts memo is updated by readers too).
    var index: FeedIndex
    /// False once the controller closed; what readers check.
    var isOpen = true
    /// True while the controller's open is deferred (Controller+Kept.swift): the state here is
    /// empty until the store is opened, so readers open it first.
    private(set) var isDeferred = false
    /// Told the unfiltered badge when it changes (`ContentCardsController.observeBadgeWindow`).
    var badgeObserver: ContentCardsController.BadgeWindowObserver?
    var lastBadge: FeedIndex.Badge?
    /// The wall-clock time the expiry timer is set for, if one is.
    var expiryTimerAt: Double?
    /// Sets the expiry timer for a time (Controller+Expiry.swift); called with `lock` held.
    var armTimer: ((Double) -> Void)?
    /// The number of the last update's state (`FeedUpdate.sequence`).
    private var lastUpdate: UInt64 = 0

    private let clock: Clock

    init(_ stored: StoredUser, clock: Clock) {
        self.stored = stored
        self.index = FeedIndex(stored.cards.values)
        self.clock = clock
        // The counts (and so the time of the next expiry) from the start.
        _ = index.counts(.all, now: clock.now())
    }

    /// An empty state for a deferred open, replaced (`publish(replacing:)`) when the store opens.
    init(deferred clock: Clock) {
        self.stored = StoredUser()
        self.index = FeedIndex()
        self.clock = clock
        isDeferred = true
    }

    /// The visible feed's JSON, written straight from the published cards: no array of copied
    /// cards between. `offsets`, when not nil, gets where each card begins
    /// (`CardJSON.recordCard`). Called with `lock` held, or the writer's lock held and no
    /// writer changing the state.
    func writeVisible(_ filter: ClassTypeFilter, now: Double, offsets: inout [Int]?) -> JSONWriter {
        let visible = index.positions(filter, now: now)
        var writer = CardJSON.feedWriter(count: visible.count, offsets: &offsets)
        index.entries.withUnsafeBufferPointer { entries in
            for at in visible {
                guard let card = stored.cards[entries[Int(at)].id] else { continue }
                CardJSON.write(card, to: &writer)
                CardJSON.recordCard(writer, in: &offsets)
            }
        }
        CardJSON.endFeed(&writer, offsets: &offsets)
        return writer
    }

    /// Makes persisted changes visible to readers. Called with the writer's lock held, after
    /// the store committed `changes`, whose cards are moved into the state (`changes.upserts`
    /// is left holding empty cards).
    func publish(_ changes: inout StoreChanges) {
        // Readers update the index's counts memo under the readers' lock, so even reading the
        // index takes it here (the decision costs O(changes · log n)).
        let few = changes.upserts.count + changes.deletes.count <= 4096
        let inPlace: Bool = lock.withLock {
            guard few && stored.moves(changes, in: index) <= Self.inPlaceBudget / max(index.entries.count, 1) else {
                return false
            }
            for t in stored.apply(moving: &changes) { index.update(old: t.old, new: t.new) }
            publishBadge()
            return true
        }
        if inPlace { return }
        // Too many to change in place: build the next state while readers keep reading this
        // one (only writers, who hold the writer's lock, change `stored`, and readers only read
        // its storage), then swap. The old state is freed after the lock is let go.
        var nextStored = stored
        let transitions = nextStored.apply(moving: &changes)
        let base = lock.withLock { index }
        var nextIndex = base.applying(transitions)
        _ = nextIndex.counts(.all, now: clock.now())     // the tallies, counted before the swap
        lock.withLock {
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
        lock.withLock {
            swap(&stored, &nextStored)
            swap(&index, &nextIndex)
            isDeferred = false
            publishBadge()
        }
    }

    /// Sets the badge observer (nil: none) and tells it the badge now.
    func observe(_ observer: ContentCardsController.BadgeWindowObserver?) {
        lock.withLock {
            badgeObserver = observer
            lastBadge = nil
            if isOpen { _ = index.counts(.all, now: clock.now()) }
            publishBadge()
        }
    }

    /// Closes the feed for readers: the badge observer hears "none" and is let go.
    func close() {
        lock.withLock {
            isOpen = false
            publishBadge()
            badgeObserver = nil
        }
    }

    /// The unfiltered counts at `now` for `count` updates, numbered together with them (the
    /// first number returned, the rest after it), so the numbers are in the order of the
    /// states. Called with `lock` held.
    func updateState(now: Double, count: Int = 1) -> UpdateState {
        let first = lastUpdate &+ 1
        lastUpdate &+= UInt64(count)
        return UpdateState(counts: index.counts(.all, now: now), sequence: first)
    }

    /// Tells the observer the current badge when it changed, and sets the expiry timer for
    /// the next expiry. Called with `lock` held (after every change and count).
    func publishBadge() {
        armExpiryTimer()
        guard let observer = badgeObserver else { return }
        let badge = isOpen ? index.badge : nil
        if badge == lastBadge { return }
        lastBadge = badge
        if let badge {
            observer(badge.counts, badge.validFrom, badge.validBefore)
        } else {
            observer(FeedCounts(), -.infinity, -1)
        }
    }

    /// Sets the timer for the next expiry, unless one is set for then or earlier. Called with
    /// `lock` held; cheap when a timer is set already (this runs on every count: a polled badge).
    func armExpiryTimer() {
        guard isOpen, let at = index.validBefore, at.isFinite else { return }
        if let set = expiryTimerAt, set <= at { return }
        // An expiry already past is armed too (it fires at once): a card that expired between
        // the counts and this call left no timer, and nothing armed one until the next count.
        guard let armTimer else { return }
        expiryTimerAt = at
        armTimer(at)
    }
}
