extension ContentCardsController {
    /// The controller's diagnostics; available after close too (with `closed` true).
    public func diagnostics() -> Diagnostics {
        if isInherited { return inheritedDiagnostics() }
        return lock.withLock {
            let now = clock.now()
            let limit = refresher.limiter.state(now: now)
            // A deferred open is finished: the figures are the store's (a failure is the last error).
            do throws(ContentCardsError) { _ = try liveStore() } catch { if error.code != .closed { record.lastError = error } }
            let pending = (try? store?.pendingEventCount()) ?? 0
            var d = Diagnostics(
                userID: userID, storagePath: configuration.storagePath, closed: !isOpenLocked,
                refreshInFlight: refresher.inFlight != nil, lastRefresh: record.lastRefresh,
                lastDelivery: record.lastDelivery, lastError: record.lastError,
                rateLimit: .init(enabled: refresher.limiter.isEnabled, capacity: refresher.limiter.capacity, tokens: limit.tokens,
                                 intervalSeconds: configuration.refreshIntervalSeconds, nextTokenInSeconds: limit.nextTokenIn),
                leftOut: record.leftOut, storedCards: feed.stored.cards.count,
                counts: store == nil ? FeedCounts() : currentCounts(),
                pendingEvents: pending, deliveredEvents: record.deliveredEvents,
                droppedEvents: record.droppedEvents, subscribers: subscribers.count)
            // The store's rows for the user that did not become cards when loaded.
            if let rows = try? store?.cardRowCount(user: userID) { d.unreadableStoredCards = max(0, rows - feed.stored.cards.count) }
            d.lastSuccessfulRefreshAt = refresher.lastSyncedAt > 0 ? refresher.lastSyncedAt : nil
            d.threadStartsRefused = ThreadStarts.refused.count
            d.tokens = tokens.diagnostics
            let h = refresher.hints
            d.hints.received = h.received
            d.hints.ignored = h.ignored
            d.hints.coalesced = h.coalesced
            d.hints.refreshes = h.refreshes
            d.hints.failed = h.failed
            d.hints.periodicSkipped = h.periodicSkipped
            if let stream = refresher.hintStream?.snapshot {
                d.hints.stream = true
                d.hints.connected = stream.connected
                d.hints.connects = stream.connects
                d.hints.streamHints = stream.hints
                d.hints.lastEventID = stream.lastEventID
                d.hints.lastError = stream.lastError
            }
            return d
        }
    }
}
