/// What a subscriber is told (docs/BEHAVIOUR.md, "Users, subscriptions, threads, processes").
public struct FeedUpdate: Sendable, Equatable {
    public enum Reason: String, Sendable, CaseIterable {
        /// A refresh finished: `error` is nil on success.
        case refresh
        /// The application handed cards in (`apply`).
        case cardsApplied = "cards_applied"
        case userChanged = "user_changed"
        case impression
        case click
        case dismissal
        /// Cards marked read (one card, or `markAllRead`: `cardID` nil), or one marked unread.
        case read
        case unread
        /// Not a change: the state as it is, from `currentUpdate()` (a new subscriber's start).
        case current
        /// A visible card expired: the counts went down without any call (a badge drawn from
        /// updates stays true).
        case expired
        /// The current user was forgotten (`forgetUser`): nothing of it is stored any more.
        case userForgotten = "user_forgotten"
    }

    public var reason: Reason
    /// Why it failed, for a failed refresh or apply.
    public var error: ContentCardsError?
    /// The card concerned, for impression, click and dismissal.
    public var cardID: String?
    /// Counts of the whole visible feed after the change.
    public var counts: FeedCounts
    /// What a refresh or apply changed.
    public var sync: SyncSummary?
    /// Where `counts` stand among the controller's updates: taken with them, so an update of a
    /// larger number holds counts no older (increasing, with gaps; the calls of one group
    /// commit share their counts). Updates made on several threads may reach a subscriber in
    /// another order than their numbers: the one with the largest holds the newest counts.
    /// `sync.counts` are the merge's own, taken before. 0: not numbered (an update no
    /// controller made; in Python, a current update from a library built before the numbers).
    public var sequence: UInt64 = 0

    public var succeeded: Bool { error == nil }

    /// Where the cards the update describes came from: `.server` for a refresh that succeeded,
    /// `.application` for cards handed in with `apply`, `.store` for everything else (a failed
    /// refresh or apply keeps the stored cards; logging, a user change, an expiry, the current
    /// state read the store).
    public enum Origin: String, Sendable, CaseIterable {
        case server, application, store
    }

    public var origin: Origin {
        guard error == nil else { return .store }
        switch reason {
        case .refresh: return .server
        case .cardsApplied: return .application
        default: return .store
        }
    }
}

extension FeedUpdate {
    /// (In an extension: the memberwise initializer stays.)
    init(reason: Reason, error: ContentCardsError? = nil, cardID: String? = nil, state: UpdateState,
         sync: SyncSummary? = nil) {
        self.init(reason: reason, error: error, cardID: cardID, counts: state.counts, sync: sync,
                  sequence: state.sequence)
    }
}

/// The counts an update carries and its number among the controller's updates
/// (`FeedUpdate.sequence`), taken together under the readers' lock.
struct UpdateState: Sendable {
    var counts: FeedCounts
    var sequence: UInt64
}

/// The outcome of a refresh or of cards handed in.
public struct SyncSummary: Sendable, Equatable {
    public var added = 0
    public var updated = 0
    public var removed = 0
    /// Server copies older than the stored ones, ignored (merge rule 2).
    public var keptNewer = 0
    public var fullSync = false
    /// The server answered 304 (not modified) to the stored validator: nothing was decoded,
    /// merged or written (docs/BEHAVIOUR.md, "Conditional refresh").
    public var notModified = false
    /// Cards of the payload that were left out, and why.
    public var leftOut: [Payload.LeftOut] = []
    public var counts = FeedCounts()
    public init() {}
}

/// What a logging call did: the same four fields in Swift, C (`cc_controller_log`'s JSON) and
/// Python (docs/API.md). A refusal (a click on a card without a valid url, a dismissal of a card
/// that is not dismissible or dismissed already) is a result, not an error: `recorded` is false
/// and `reason` says why. An unknown card is an error (`.notFound`).
public struct LogResult: Sendable, Equatable {
    /// An event was written to the outbox.
    public var recorded: Bool
    /// Why nothing was recorded (nil when `recorded`).
    public var reason: String?
    /// The event's id (nil when nothing was recorded).
    public var eventID: String?
    /// The card's state changed (first impression, first click, the dismissal).
    public var stateChanged: Bool

    public init(recorded: Bool, reason: String?, eventID: String?, stateChanged: Bool) {
        self.recorded = recorded; self.reason = reason; self.eventID = eventID; self.stateChanged = stateChanged
    }

    /// A recorded event.
    public static func recorded(eventID: String, stateChanged: Bool) -> LogResult {
        LogResult(recorded: true, reason: nil, eventID: eventID, stateChanged: stateChanged)
    }

    /// Nothing recorded, and why.
    public static func refused(_ reason: String) -> LogResult {
        LogResult(recorded: false, reason: reason, eventID: nil, stateChanged: false)
    }
}

/// What a flush of the event outbox did.
public struct FlushResult: Sendable, Equatable {
    public var delivered = 0
    public var dropped = 0
    /// Still in the outbox afterwards.
    public var pending = 0
    public init() {}
}
