/// The stored cards of the current user in feed order, as compact entries, rebuilt only when
/// the state changes: reading the feed then costs no sort, and a count touches a few bytes per
/// card instead of copying each card. The unfiltered counts (the app's badge, asked for
/// often) are kept until the state changes or the next card expires.
struct FeedIndex {
    struct Entry {
        let id: String
        /// Index into `classTypes`.
        let classType: Int32
        let expiresAt: Int64
        let viewed: Bool
        let control: Bool
    }

    /// Undismissed cards in feed order (expiry is decided at reading time).
    private(set) var entries: [Entry] = []
    private(set) var classTypes: [String] = []
    private var classTypeIndex: [String: Int32] = [:]
    /// The earliest `expiresAt` of any entry (Int64.max when none expires).
    private let firstExpiry: Int64
    private var memo: (counts: FeedCounts, validBefore: Double)?

    init(_ cards: [CardKey: Card]) {
        let ordered = cards.values.filter { !$0.dismissed }.sorted(by: FeedView.precedes)
        var first = Int64.max
        entries.reserveCapacity(ordered.count)
        for card in ordered {
            let type: Int32
            if let known = classTypeIndex[card.classType] {
                type = known
            } else {
                type = Int32(classTypes.count)
                classTypes.append(card.classType)
                classTypeIndex[card.classType] = type
            }
            if card.expiresAt != Card.neverExpires { first = min(first, card.expiresAt) }
            entries.append(Entry(id: card.id, classType: type, expiresAt: card.expiresAt, viewed: card.viewed,
                                 control: card.isControl))
        }
        firstExpiry = first
    }

    /// The class-type ids a filter selects; nil for every card.
    private func selected(_ filter: ClassTypeFilter) -> Set<Int32>? {
        if filter.selectsAll { return nil }
        return Set(filter.classTypes.compactMap { classTypeIndex[$0] })
    }

    @inline(__always)
    private static func visible(_ e: Entry, at now: Double) -> Bool {
        !Card.isExpired(expiresAt: e.expiresAt, at: now)
    }

    /// The ids of the visible cards passing `filter`, in feed order.
    func ids(_ filter: ClassTypeFilter, now: Double) -> [String] {
        let chosen = selected(filter)
        return entries.compactMap { e in
            Self.visible(e, at: now) && (chosen?.contains(e.classType) ?? true) ? e.id : nil
        }
    }

    mutating func counts(_ filter: ClassTypeFilter, now: Double) -> FeedCounts {
        let all = filter.selectsAll
        if all, let memo, now < memo.validBefore { return memo.counts }
        let chosen = selected(filter)
        var counts = FeedCounts()
        for e in entries where Self.visible(e, at: now) && (chosen?.contains(e.classType) ?? true) {
            counts.total += 1
            if !e.viewed && !e.control { counts.unviewed += 1 }
        }
        if all {
            // Valid until the next card to expire does; a card that expired already stays out.
            var next = Double.infinity
            if firstExpiry != Int64.max {
                for e in entries where e.expiresAt != Card.neverExpires && Double(e.expiresAt) > now {
                    next = min(next, Double(e.expiresAt))
                }
            }
            memo = (counts, next)
        }
        return counts
    }
}
