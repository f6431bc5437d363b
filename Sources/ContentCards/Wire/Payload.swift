/// A decoded server payload: a sync response, or cards handed in by the application.
public struct Payload: Sendable, Equatable {
    /// One card as the server sent it, with the server-only `removed` flag.
    public struct ServerCard: Sendable, Equatable {
        public var card: Card
        /// The server removed this card (wire `r`); it is a tombstone, not shown.
        public var removed: Bool
        /// The server's read state (wire `rd`) when the card carries the key; nil when it does
        /// not (merge keeps the local state then).
        public var read: Bool?
        public init(card: Card, removed: Bool = false, read: Bool? = nil) {
            self.card = card; self.removed = removed; self.read = read
        }
    }

    /// A card that was left out of the payload, and why.
    public struct LeftOut: Sendable, Equatable, CustomStringConvertible {
        /// The card's position in the `cards` array.
        public var index: Int
        /// The card's id, when it had a usable one.
        public var id: String?
        public var reason: String
        public var description: String { "card \(id.map { "\"\($0)\"" } ?? "#\(index)"): \(reason)" }
    }

    public var cards: [ServerCard] { didSet { listedIDs = nil } }   // (the set describes these cards)
    public var leftOut: [LeftOut]
    /// A full sync lists every card of the user: stored cards it does not list are deleted.
    public var fullSync: Bool
    /// Sync cursors; -1 means unchanged.
    public var lastFullSyncAt: Int64
    public var lastCardUpdatedAt: Int64
    /// The user the response is for, when the server says so.
    public var userID: String?
    /// The ids of `cards`, when the decoder collected them (it refuses a repeated id): the
    /// merge takes this set rather than hashing every id again. Any change to
    /// `cards` drops it. Not part of the value: `==` compares what the payload says, not this
    /// cache of it.
    var listedIDs: CardIDSet?

    public static func == (a: Payload, b: Payload) -> Bool {
        a.cards == b.cards && a.leftOut == b.leftOut && a.fullSync == b.fullSync
            && a.lastFullSyncAt == b.lastFullSyncAt && a.lastCardUpdatedAt == b.lastCardUpdatedAt
            && a.userID == b.userID
    }

    public init(cards: [ServerCard] = [], leftOut: [LeftOut] = [], fullSync: Bool = false,
                lastFullSyncAt: Int64 = -1, lastCardUpdatedAt: Int64 = -1, userID: String? = nil) {
        self.cards = cards; self.leftOut = leftOut; self.fullSync = fullSync
        self.lastFullSyncAt = lastFullSyncAt; self.lastCardUpdatedAt = lastCardUpdatedAt; self.userID = userID
    }
}

/// Why a whole payload was refused (the cards already stored are left untouched).
public struct PayloadError: Error, Equatable, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
    public init(_ message: String) { self.message = message }
}
