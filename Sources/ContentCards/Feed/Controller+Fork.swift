/// A controller in a child of fork() (docs/BEHAVIOUR.md, "Users, subscriptions, threads,
/// processes"): opened in the parent, it is inherited, not open, in the child.
///
/// Its locks may be held by parent threads that do not exist in the child (a log call's
/// batch, a refresh's merge, a reader), and what they guard may be half changed; its SQLite
/// connection must never be used there (ForkSafety.swift). So nothing the child calls on it
/// takes a lock or reads that state: every throwing call fails at once with `.storage`, the
/// message naming fork(); `close()` lets it go without touching the store (its memory is left,
/// as the C API leaves an inherited handle's); the other members answer from what was fixed
/// when it was opened. The C API refuses such a handle before it reaches the controller
/// (HandleTable.swift); this is the same rule for the Swift API.
extension ContentCardsController {
    static let inheritedError = ContentCardsError(.storage, SQLiteDatabase.inheritedError.message)

    /// Called by every open: makes `inheritedError` in the process that opens the controller,
    /// so that a child of fork() only reads it (its first use runs a one-time initializer,
    /// whose lock a parent thread may hold at the fork).
    static func prepareForFork() { _ = inheritedError }

    /// True in a child of fork() for a controller opened before the fork.
    var isInherited: Bool { forkGeneration != ForkSafety.generation }

    /// The first thing every throwing public call does.
    @inline(__always)
    func refuseIfInherited() throws(ContentCardsError) {
        if isInherited { throw Self.inheritedError }
    }

    /// `diagnostics()` of an inherited controller: closed, the user and storage it was opened
    /// with, the error every call gets; nothing read from the parent's state.
    func inheritedDiagnostics() -> Diagnostics {
        Diagnostics(userID: openedUserID, storagePath: configuration.storagePath, closed: true,
                    refreshInFlight: false, lastRefresh: nil, lastDelivery: nil, lastError: Self.inheritedError,
                    rateLimit: .init(enabled: false, capacity: 0, tokens: 0, intervalSeconds: 0, nextTokenInSeconds: 0),
                    leftOut: [], storedCards: 0, counts: FeedCounts(), pendingEvents: 0, deliveredEvents: 0,
                    droppedEvents: 0, subscribers: 0)
    }
}
