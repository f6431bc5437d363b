/// The visible feed (docs/BEHAVIOUR.md, "The feed and counts"): its order, and which cards are in it at the moment of
/// reading. The controller serves reads from `FeedIndex`, built with the same rules.
enum FeedView {
    /// Pinned first, then newest first, then id descending: the one order used everywhere.
    static func precedes(_ a: Card, _ b: Card) -> Bool {
        if a.pinned != b.pinned { return a.pinned }
        if a.created != b.created { return a.created > b.created }
        return CardKey.bytewiseLess(b.id, a.id)
    }

    static func isVisible(_ card: Card, now: Double) -> Bool {
        !card.dismissed && !card.isExpired(at: now)
    }

    /// The visible cards passing `filter`, in feed order. Control cards are included: the
    /// application must log their impression, and decides not to draw them.
    static func cards<S: Sequence>(_ stored: S, filter: ClassTypeFilter, now: Double) -> [Card] where S.Element == Card {
        stored.filter { isVisible($0, now: now) && filter.matches($0) }.sorted(by: precedes)
    }
}

/// The badge numbers of a feed.
public struct FeedCounts: Hashable, Sendable {
    public var total = 0
    /// Visible cards without an impression, control cards left out: the unviewed badge.
    public var unviewed = 0
    /// Visible cards not marked read, control cards left out: the unread badge.
    public var unread = 0
    public init(total: Int = 0, unviewed: Int = 0, unread: Int = 0) {
        self.total = total; self.unviewed = unviewed; self.unread = unread
    }
}
