/// Every stored card of the current user in feed order, as compact entries, kept up to date
/// change by change: reading the feed costs no sort, a count costs a few additions, and a
/// logged impression or dismissal costs a binary search, however many cards are stored.
///
/// Dismissed cards keep their entry (flagged), so dismissing moves nothing. Counts are kept per
/// class type as tallies that are exact until the next card expires (`validBefore`), and from
/// the latest expiry they left out (`validFrom`: before it, a clock set back, that card is
/// visible again); a count after the next expiry or before the time they were taken recounts
/// once, and every change between adjusts the tallies by itself.
struct FeedIndex {
    struct Entry {
        let id: String
        let created: Int64
        let expiresAt: Int64
        /// Index into `classTypes`.
        let classType: Int32
        /// The five flags in one byte: an entry of 40 bytes instead of 48 (five `Bool`s made it
        /// 41), in an index that holds one for every card and sorts them.
        private var flags: UInt8

        private static let pinnedBit: UInt8 = 1, controlBit: UInt8 = 2, viewedBit: UInt8 = 4
        private static let dismissedBit: UInt8 = 8, readBit: UInt8 = 16

        var pinned: Bool { flags & Self.pinnedBit != 0 }
        var control: Bool { flags & Self.controlBit != 0 }
        var viewed: Bool {
            get { flags & Self.viewedBit != 0 }
            set { set(Self.viewedBit, newValue) }
        }
        var dismissed: Bool {
            get { flags & Self.dismissedBit != 0 }
            set { set(Self.dismissedBit, newValue) }
        }
        var read: Bool {
            get { flags & Self.readBit != 0 }
            set { set(Self.readBit, newValue) }
        }

        private mutating func set(_ bit: UInt8, _ on: Bool) {
            if on { flags |= bit } else { flags &= ~bit }
        }

        init(_ card: Facts, classType: Int32) {
            id = card.id; created = card.created; expiresAt = card.expiresAt
            self.classType = classType
            flags = (card.pinned ? Self.pinnedBit : 0) | (card.control ? Self.controlBit : 0)
                | (card.viewed ? Self.viewedBit : 0) | (card.dismissed ? Self.dismissedBit : 0)
                | (card.read ? Self.readBit : 0)
        }
    }

    /// What the index knows of a card: a change hands the index these rather than the cards
    /// themselves, so a big change holds a small record per card instead of two copies of
    /// each card (a `Card` is 192 bytes inline, and copying one retains a dozen strings).
    struct Facts {
        let id: String
        let created: Int64
        let expiresAt: Int64
        let classType: String
        let pinned: Bool
        let control: Bool
        let viewed: Bool
        let dismissed: Bool
        let read: Bool

        init(_ card: Card) {
            id = card.id; created = card.created; expiresAt = card.expiresAt
            classType = card.classType; pinned = card.pinned; control = card.isControl
            viewed = card.viewed; dismissed = card.dismissed; read = card.read
        }

        /// Whether `other` stands where this does in the feed and counts under the same class
        /// type: then a change between them only changes flags.
        func sameSlot(as other: Facts) -> Bool {
            pinned == other.pinned && created == other.created && expiresAt == other.expiresAt
                && classType == other.classType && control == other.control
        }
    }

    /// Total, unviewed and unread cards of one class type, visible at `Tallies.time`.
    struct Tally {
        var total = 0
        var unviewed = 0
        var unread = 0

        /// Counts one visible entry in (+1) or out (-1).
        @inline(__always)
        mutating func add(_ e: Entry, _ sign: Int) {
            total += sign
            if e.control { return }
            if !e.viewed { unviewed += sign }
            if !e.read { unread += sign }
        }
    }

    /// The unfiltered counts and the wall-clock times between which they are exact:
    /// from `validFrom` (the last expiry at or before the count) until `validBefore`.
    struct Badge: Equatable {
        var counts: FeedCounts
        var validFrom: Double
        var validBefore: Double
    }

    private struct Tallies {
        var byClassType: [Tally]
        /// The time they were counted at, and the first expiry after it.
        var time: Double
        var validBefore: Double
        /// The latest expiry at or before `time` of a card left out as expired (-infinity:
        /// none). Before it, a clock set back, that card is visible again: the tallies are
        /// exact only from it (`Badge.validFrom`).
        var validFrom = -Double.infinity
    }

    private(set) var entries: [Entry] = []
    private(set) var classTypes: [String] = []
    private var classTypeIndex: [String: Int32] = [:]
    /// Up to how many class types `knownClassTypeID` compares a name with each instead of
    /// hashing it; past them `classTypeIndex` is made, and used.
    static let classTypesCompared = 8
    private var tallies: Tallies?

    init() {}

    /// Of the cards a store holds. The concrete type, not a generic sequence: the callers are
    /// in other files, where a generic initializer is not specialized, and iterating through
    /// the protocol's witnesses cost 180 instructions a card.
    init(_ cards: Dictionary<CardKey, Card>.Values) {
        var all: [Entry] = []
        all.reserveCapacity(cards.count)
        HugePages.prepareFilling(capacityOf: all)
        for card in cards { all.append(Entry(Facts(card), classType: classTypeID(card.classType))) }
        entries = Self.inFeedOrder(all)
    }

    // MARK: Order

    /// Pinned first, then newest first, then id descending (bytewise): the one feed order.
    @inline(__always)
    static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        if a.pinned != b.pinned { return a.pinned }
        if a.created != b.created { return a.created > b.created }
        return CardKey.bytewiseLess(b.id, a.id)
    }

    @inline(__always)
    private static func precedes(_ a: Entry, pinned: Bool, created: Int64, id: String) -> Bool {
        if a.pinned != pinned { return a.pinned }
        if a.created != created { return a.created > created }
        return CardKey.bytewiseLess(id, a.id)
    }

    /// The first position whose entry does not precede the card's key.
    private func position(pinned: Bool, created: Int64, id: String) -> Int {
        var low = 0, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if Self.precedes(entries[mid], pinned: pinned, created: created, id: id) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The position of a stored card's entry, nil when there is none.
    private func find(_ card: Facts) -> Int? {
        let at = position(pinned: card.pinned, created: card.created, id: card.id)
        guard at < entries.count, CardKey.bytewiseCompare(entries[at].id, card.id) == 0 else { return nil }
        return at
    }

    /// The id of a class type the index has, nil when it has none.
    private func knownClassTypeID(_ name: String) -> Int32? {
        // A feed has a handful of class types: comparing the name with each (its bytes, after
        // its length) costs less than hashing it, which was a quarter of building the index of
        // 1,000 cards at open (docs/PERFORMANCE.md, "Cold start"). Past a few, the table.
        if classTypes.count <= Self.classTypesCompared {
            for (i, known) in classTypes.enumerated() where known == name { return Int32(i) }
            return nil
        }
        return classTypeIndex[name]
    }

    private mutating func classTypeID(_ name: String) -> Int32 {
        if let known = knownClassTypeID(name) { return known }
        let id = Int32(classTypes.count)
        classTypes.append(name)
        // The table is made when it is first needed, past a few class types: made at the first
        // class type, it was a generic type the runtime instantiated at every process's first
        // open (126,000 instructions, 1% of a cold start).
        if classTypes.count > Self.classTypesCompared {
            if classTypeIndex.isEmpty {
                for (i, known) in classTypes.enumerated() { classTypeIndex[known] = Int32(i) }
            } else {
                classTypeIndex[name] = id
            }
        }
        tallies?.byClassType.append(Tally())
        return id
    }

    // MARK: Changes

    /// One card changed: `old` is the stored card before (nil when new), `new` after (nil when
    /// removed). A change of flags only updates the entry where it stands; any other change
    /// moves it (O(n) at worst, for the array's shift: callers with many changes rebuild).
    mutating func update(old: Facts?, new: Facts?) {
        if let old, let new, old.sameSlot(as: new), let at = find(old) {
            tally(entries[at], -1)
            entries[at].viewed = new.viewed
            entries[at].dismissed = new.dismissed
            entries[at].read = new.read
            tally(entries[at], +1)
            return
        }
        if let old, let at = find(old) {
            tally(entries[at], -1)
            entries.remove(at: at)
        }
        if let new {
            let entry = Entry(new, classType: classTypeID(new.classType))
            entries.insert(entry, at: position(pinned: new.pinned, created: new.created, id: new.id))
            tally(entry, +1)
        }
    }

    /// How many entries `update` would shift for these changes: the cost of changing in place.
    func moves(old: Card?, new: Card?) -> Int {
        guard let old, let new else { return 1 }
        return Facts(old).sameSlot(as: Facts(new)) ? 0 : 2
    }

    /// Adds (+1) or takes away (-1) an entry from the tallies, when they are kept.
    private mutating func tally(_ e: Entry, _ sign: Int) {
        guard tallies != nil else { return }
        if e.expiresAt != Card.neverExpires {
            let at = Double(e.expiresAt)
            if at <= tallies!.time {                       // expired when counted: not in them
                if sign > 0 { tallies!.validFrom = max(tallies!.validFrom, at) }
                return
            }
            if sign > 0 { tallies!.validBefore = min(tallies!.validBefore, at) }
        }
        if e.dismissed { return }
        tallies!.byClassType[Int(e.classType)].add(e, sign)
    }

    // MARK: Reading

    @inline(__always)
    private static func visible(_ e: Entry, at now: Double) -> Bool {
        !e.dismissed && !Card.isExpired(expiresAt: e.expiresAt, at: now)
    }

    /// The class-type ids a filter selects; nil for every card.
    private func selected(_ filter: ClassTypeFilter) -> [Int32]? {
        if filter.selectsAll { return nil }
        return filter.classTypes.compactMap { knownClassTypeID($0) }
    }

    /// The ids of the visible cards passing `filter`, in feed order.
    func ids(_ filter: ClassTypeFilter, now: Double) -> [String] {
        var out: [String] = []
        forEachVisible(filter, now: now) { i in out.append(entries[i].id) }
        return out
    }

    /// Where the visible cards passing `filter` are in `entries`, in feed order: what a feed
    /// written straight from the store walks (4 bytes a card, where an id retains its string).
    func positions(_ filter: ClassTypeFilter, now: Double) -> [Int32] {
        var out: [Int32] = []
        forEachVisible(filter, now: now) { i in out.append(Int32(truncatingIfNeeded: i)) }
        return out
    }

    /// Calls `body` with the position of each visible entry passing `filter`, in feed order.
    @inline(__always)
    private func forEachVisible(_ filter: ClassTypeFilter, now: Double, _ body: (Int) -> Void) {
        var chosen: [Bool]? = nil
        if let selected = selected(filter) {
            var mask = [Bool](repeating: false, count: classTypes.count)
            for t in selected { mask[Int(t)] = true }
            chosen = mask
        }
        for (i, e) in entries.enumerated() where Self.visible(e, at: now) && (chosen?[Int(e.classType)] ?? true) {
            body(i)
        }
    }

    /// Total, unviewed and unread visible cards passing `filter`.
    mutating func counts(_ filter: ClassTypeFilter, now: Double) -> FeedCounts {
        if tallies == nil || now >= tallies!.validBefore || now < tallies!.time { recount(now) }
        let byType = tallies!.byClassType
        var counts = FeedCounts()
        if let selected = selected(filter) {
            for t in selected { Self.sum(byType[Int(t)], into: &counts) }
        } else {
            for t in byType { Self.sum(t, into: &counts) }
        }
        return counts
    }

    /// Until when the tallies stay exact (the next expiry), without summing them; nil before
    /// the first count.
    var validBefore: Double? { tallies?.validBefore }

    /// The unfiltered counts and the times between which they are exact, when the tallies are
    /// kept (after the first count, and through every change since).
    var badge: Badge? {
        guard let t = tallies else { return nil }
        var counts = FeedCounts()
        for x in t.byClassType { Self.sum(x, into: &counts) }
        return Badge(counts: counts, validFrom: t.validFrom, validBefore: t.validBefore)
    }

    @inline(__always)
    private static func sum(_ t: Tally, into counts: inout FeedCounts) {
        counts.total += t.total; counts.unviewed += t.unviewed; counts.unread += t.unread
    }

    private mutating func recount(_ now: Double) {
        var byType = [Tally](repeating: Tally(), count: classTypes.count)
        var next = Double.infinity, last = -Double.infinity
        for e in entries {
            if e.expiresAt != Card.neverExpires {
                let at = Double(e.expiresAt)
                if at <= now { last = max(last, at); continue }
                next = min(next, at)
            }
            if e.dismissed { continue }
            byType[Int(e.classType)].add(e, +1)
        }
        tallies = Tallies(byClassType: byType, time: now, validBefore: next, validFrom: last)
    }
}

extension FeedIndex {
    /// A new index: this one with `transitions` applied, in one pass (O(n + k log k)) rather
    /// than a sort of everything: for changes too many to make in place.
    func applying(_ transitions: [StoredUser.Transition]) -> FeedIndex {
        var next = FeedIndex()
        next.classTypes = classTypes
        next.classTypeIndex = classTypeIndex
        var removed = [Bool](repeating: false, count: entries.count)
        var added: [Entry] = []
        added.reserveCapacity(transitions.count)
        HugePages.adviseCapacity(of: added)     // not filled when cards are removed
        var removedCount = 0
        for t in transitions {
            if let old = t.old, let at = find(old), !removed[at] {
                removed[at] = true
                removedCount += 1
            }
            if let new = t.new { added.append(Entry(new, classType: next.classTypeID(new.classType))) }
        }
        added = Self.inFeedOrder(added)
        if entries.isEmpty {
            // A first sync: the new entries are the index (no second array of them to merge into).
            next.entries = added
            return next
        }
        // Exactly the entries it will hold: it becomes the index, and a sync that replaces
        // every card (each an entry removed and one added) reserved twice that for as long as
        // the index lived.
        var merged: [Entry] = []
        merged.reserveCapacity(entries.count - removedCount + added.count)
        HugePages.prepareFilling(capacityOf: merged)
        var i = 0, j = 0
        while i < entries.count || j < added.count {
            if i < entries.count && removed[i] { i += 1; continue }
            if j == added.count || (i < entries.count && Self.precedes(entries[i], added[j])) {
                merged.append(entries[i]); i += 1
            } else {
                merged.append(added[j]); j += 1
            }
        }
        next.entries = merged
        return next
    }
}
