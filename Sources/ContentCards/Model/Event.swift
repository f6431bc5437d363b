/// An event the library records for delivery to the event sink (docs/BEHAVIOUR.md, "Events and delivery"; docs/WIRE.md, "Events").
public struct Event: Hashable, Sendable {
    public enum Kind: String, CaseIterable, Sendable {
        case impression
        case controlImpression = "control_impression"
        case click
        case dismissal
        case feedDisplayed = "feed_displayed"
        /// The application marked the card read, or unread (docs/BEHAVIOUR.md, "Read state").
        case read
        case unread
    }

    /// Unique; the server drops a duplicate delivery by this id.
    public var id: String
    public var kind: Kind
    /// The card, or nil for `feedDisplayed`.
    public var cardID: String?
    public var classType: String?
    /// The user the event was logged for (kept across a later user change).
    public var userID: String
    /// Unix seconds.
    public var time: Double

    public init(id: String, kind: Kind, cardID: String?, classType: String?, userID: String, time: Double) {
        self.id = id; self.kind = kind; self.cardID = cardID; self.classType = classType
        self.userID = userID; self.time = time
    }
}

/// The sync cursors saved per user (docs/WIRE.md, "Sync request").
public struct SyncCursors: Hashable, Sendable {
    public var lastFullSyncAt: Int64
    public var lastCardUpdatedAt: Int64
    public init(lastFullSyncAt: Int64 = 0, lastCardUpdatedAt: Int64 = 0) {
        self.lastFullSyncAt = lastFullSyncAt; self.lastCardUpdatedAt = lastCardUpdatedAt
    }
}

/// The event outbox as `ContentCardsController.listPendingEvents` reads it.
public struct PendingEvents: Sendable, Equatable {
    /// Events in the outbox (all of them, also when `events` was limited).
    public var pending: Int
    /// Delivery attempts that failed in a row since this controller last delivered (0 in a new
    /// process): they concern the oldest events, which go out first.
    public var failedAttempts: Int
    /// Oldest first.
    public var events: [Event]
    /// For each of `events`, the delivery attempts of it that failed in this process (the
    /// store keeps no count, so a new process starts from 0).
    public var attempts: [Int]
    public init(pending: Int, failedAttempts: Int, events: [Event], attempts: [Int]? = nil) {
        self.pending = pending; self.failedAttempts = failedAttempts; self.events = events
        self.attempts = attempts ?? Array(repeating: 0, count: events.count)
    }
}
