extension ContentCardsController {
    /// The controller's diagnostics; available after close too (with `closed` true).
    public func diagnostics() -> Diagnostics {
        lock.withLock {
            let now = clock.now()
            let limit = limiter.state(now: now)
            let pending = (try? store?.pendingEventCount()) ?? 0
            return Diagnostics(
                userID: userID, storagePath: configuration.storagePath, closed: store == nil,
                refreshInFlight: refreshInFlight != nil, lastRefresh: record.lastRefresh,
                lastDelivery: record.lastDelivery, lastError: record.lastError,
                rateLimit: .init(enabled: limiter.isEnabled, capacity: limiter.capacity, tokens: limit.tokens,
                                 intervalSeconds: configuration.refreshIntervalSeconds, nextTokenInSeconds: limit.nextTokenIn),
                leftOut: record.leftOut, storedCards: stored.cards.count,
                counts: store == nil ? FeedCounts() : currentCounts(),
                pendingEvents: pending, deliveredEvents: record.deliveredEvents,
                droppedEvents: record.droppedEvents, subscribers: subscribers.count)
        }
    }
}
