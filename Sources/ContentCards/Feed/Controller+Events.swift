/// The outbox and its delivery at the front door (the work is `EventDelivery`'s).
extension ContentCardsController {
    /// Events in the outbox of this store, every user's (each event keeps its own user).
    public func pendingEvents() throws(ContentCardsError) -> Int {
        try refuseIfInherited()
        return try lock.withLock { () throws(ContentCardsError) in
            let store = try liveStore()
            do throws(StoreError) { return try store.pendingEventCount() } catch { throw ContentCardsError(.storage, error.message) }
        }
    }

    /// The events waiting in the outbox (every user's), oldest first, at most `limit` of them
    /// (0: all), with the number pending, the delivery attempts that failed in a row since
    /// the last delivery by this controller, and each event's failed attempts in this process.
    public func listPendingEvents(limit: Int = 0) throws(ContentCardsError) -> PendingEvents {
        try refuseIfInherited()
        return try lock.withLock { () throws(ContentCardsError) in
            let store = try liveStore()
            do throws(StoreError) {
                let rows = try store.pendingEvents(limit: limit > 0 ? limit : Int.max, maxBytes: Int.max)
                return PendingEvents(pending: try store.pendingEventCount(), failedAttempts: delivery.attempt,
                                     events: rows.map(\.event), attempts: rows.map { delivery.eventAttempts[$0.event.id] ?? 0 })
            } catch { throw ContentCardsError(.storage, error.message) }
        }
    }

    @available(*, deprecated, renamed: "listPendingEvents(limit:)")
    public func pendingEventList(limit: Int = 0) throws(ContentCardsError) -> PendingEvents {
        try listPendingEvents(limit: limit)
    }

    /// Delivers every pending event now, waiting at most `timeout` seconds. Throws the error
    /// that stopped delivery (the undelivered events stay pending and are retried in the
    /// background with backoff); `.noSource` when no event sink is configured.
    @discardableResult
    public func flushEvents(timeout: Double? = nil) throws(ContentCardsError) -> FlushResult {
        try flushEvents(timeout: timeout, only: nil)
    }

    /// `flushEvents`, of `user`'s events only when given (a forget delivers the user's own).
    @discardableResult
    func flushEvents(timeout: Double?, only user: String?) throws(ContentCardsError) -> FlushResult {
        try refuseIfInherited()
        let timeout = Self.clampTimeout(timeout ?? configuration.timeoutSeconds)
        Scheduler.shared.kick()
        return try delivery.deliver(for: self, until: monotonicSeconds() + timeout, only: user)
    }
}

