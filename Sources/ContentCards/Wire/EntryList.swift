/// The extras members of the card being read (`CardFields.entries`), as plain data in one block
/// of memory reused from card to card, as `CardFields.Slots` keeps the fields: appending one is
/// two stores and a count, where a Swift array's append went through a call that checked its
/// uniqueness and capacity (a third of reading a card's extras). A `CardFields` and its copies
/// share one list, as they share their slots.
final class EntryList: RandomAccessCollection {
    typealias Element = CardFields.Entry
    private var base: UnsafeMutablePointer<CardFields.Entry>
    private var capacity: Int
    private(set) var count = 0

    init() {
        capacity = 16
        base = UnsafeMutablePointer<CardFields.Entry>.allocate(capacity: capacity)
    }

    // Entries are plain data (two `Field`s): nothing to deinitialize.
    deinit { base.deallocate() }

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    /// The entry at `i`; an absent one outside the list (as `Slots` answers: never a trap in
    /// the host's process).
    subscript(i: Int) -> CardFields.Entry {
        @inline(__always) get { i >= 0 && i < count ? base[i] : CardFields.Entry() }
    }

    /// The key of the last entry, if there is one.
    var lastKey: CardFields.Field? { count > 0 ? base[count &- 1].key : nil }

    @inline(__always)
    func append(_ entry: CardFields.Entry) {
        if count == capacity { grow() }
        (base + count).initialize(to: entry)
        count &+= 1
    }

    /// Twice the room (a card may hold any number of extras).
    private func grow() {
        let larger = UnsafeMutablePointer<CardFields.Entry>.allocate(capacity: capacity * 2)
        larger.moveInitialize(from: base, count: count)
        base.deallocate()
        base = larger
        capacity *= 2
    }

    func removeAll() { count = 0 }

    func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<CardFields.Entry>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }
}
