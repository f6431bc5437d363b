@testable import ContentCards

/// The test oracle of the visible feed (docs/BEHAVIOUR.md, "The feed and counts"): its order,
/// and which cards are in it at the moment of reading, stated as plainly as the rules are.
/// The library's one order is `FeedIndex.precedes` (it serves every read); `FeedIndexTests`
/// checks the index against this statement of the same rules, written apart on purpose.
enum FeedView {
    /// Pinned first, then newest first, then id descending.
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
