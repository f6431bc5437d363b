/// A snapshot of a controller's health: what the last refresh and delivery did, the rate limit,
/// the cards left out of the last payload, pending events, and the last error.
public struct Diagnostics: Sendable, Equatable {
    public struct Refresh: Sendable, Equatable {
        public var time: Double
        public var error: ContentCardsError?
        public var summary: SyncSummary?
    }

    public struct Delivery: Sendable, Equatable {
        public var time: Double
        public var error: ContentCardsError?
        public var delivered: Int
        public var dropped: Int
    }

    public struct RateLimit: Sendable, Equatable {
        public var enabled: Bool
        public var capacity: Int
        public var tokens: Int
        public var intervalSeconds: Double
        public var nextTokenInSeconds: Double
    }

    public var userID: String
    public var storagePath: String?
    public var closed: Bool
    public var refreshInFlight: Bool
    public var lastRefresh: Refresh?
    public var lastDelivery: Delivery?
    public var lastError: ContentCardsError?
    public var rateLimit: RateLimit
    public var leftOut: [Payload.LeftOut]
    public var storedCards: Int
    public var counts: FeedCounts
    public var pendingEvents: Int
    public var deliveredEvents: Int
    public var droppedEvents: Int
    public var subscribers: Int
    /// Rows of the current user's cards in the store that do not decode (damaged or written
    /// by something else): left out of the feed, and counted here rather than dropped silently.
    public var unreadableStoredCards: Int = 0
    /// When the current user's cards last came from a successful refresh (unix seconds), nil
    /// when never. It is kept in the store with the user's sync state, so it survives a reopen;
    /// a 304 answer confirms the cards without writing anything, so its time is this process's
    /// only (after a reopen the time shown is that of the last refresh that brought cards).
    public var lastSuccessfulRefreshAt: Double? = nil
    /// Thread starts the system refused in this process (all controllers): the background
    /// work they were for waited and was retried, never dropped (docs/BEHAVIOUR.md, "Threads").
    public var threadStartsRefused: Int = 0
    /// The token provider's work (docs/WIRE.md, "Per-user tokens").
    public var tokens = Tokens()

    /// Hints and the hint stream (docs/SYNC.md, "Hints").
    public var hints = Hints()

    public struct Hints: Equatable, Sendable {
        public var received = 0
        /// For another user than the current one.
        public var ignored = 0
        /// Joined a hint refresh already waiting.
        public var coalesced = 0
        /// Refreshes made for hints, and those that failed.
        public var refreshes = 0
        public var failed = 0
        /// Periodic refreshes not made: the stream was up for the whole period.
        public var periodicSkipped = 0
        /// The configuration asks for a hint stream.
        public var stream = false
        public var connected = false
        /// Connections made (the first and every reconnection).
        public var connects = 0
        /// Hints that came over the stream.
        public var streamHints = 0
        public var lastEventID: String? = nil
        public var lastError: String? = nil
        public init() {}
    }

    public struct Tokens: Equatable, Sendable {
        /// A provider is set.
        public var provider = false
        /// Calls of the provider.
        public var asked = 0
        /// Requests that used a token asked for earlier.
        public var reused = 0
        /// Requests not sent for want of a token: the provider failed, timed out or gave a bad one.
        public var failures = 0
        public var timeouts = 0
        /// Provider calls abandoned at their deadline and still running.
        public var abandoned = 0
        /// Requests sent again after a 401, with a token asked for anew.
        public var retriedAfter401 = 0
        public init() {}
    }
}

/// The parts of the diagnostics the controller records as it goes.
struct DiagnosticsRecord {
    var lastRefresh: Diagnostics.Refresh?
    var lastDelivery: Diagnostics.Delivery?
    var lastError: ContentCardsError?
    var leftOut: [Payload.LeftOut] = []
    var deliveredEvents = 0
    var droppedEvents = 0
}
