/// One refresh in flight; callers that ask for a refresh meanwhile wait for this one instead of
/// starting another (and taking another token).
final class RefreshTicket {
    var result: Result<SyncSummary, ContentCardsError>?
}

extension ContentCardsController {
    private struct RefreshStart {
        let ticket: RefreshTicket
        let source: CardSource
        let userID: String
        let cursors: SyncCursors
    }

    private enum Begin {
        case started(RefreshStart)
        case joined(RefreshTicket)
    }

    /// Refreshes and waits for the outcome, at most `timeout` seconds (the network request is
    /// also bounded by the configuration's `timeoutSeconds`). When a refresh is already running,
    /// waits for that one. Subscribers are told of the outcome too. On failure the cached cards
    /// stay as they were.
    @discardableResult
    public func refresh(timeout: Double? = nil) throws(ContentCardsError) -> SyncSummary {
        let timeout = Self.clampTimeout(timeout ?? configuration.timeoutSeconds)
        let deadline = monotonicSeconds() + timeout
        switch try beginRefresh() {
        case .started(let start):
            return try perform(start, timeout: min(timeout, configuration.timeoutSeconds)).get()
        case .joined(let ticket):
            return try lock.withLock { () throws(ContentCardsError) in
                while true {
                    if let result = ticket.result { return try result.get() }
                    if store == nil { throw Self.closedError }
                    if !changed.wait(lock, until: deadline) && monotonicSeconds() >= deadline {
                        throw ContentCardsError(.timeout, "the refresh already running did not finish within \(timeout) s; its outcome will reach the subscribers")
                    }
                }
            }
        }
    }

    /// Starts a refresh on a background thread and returns at once; the outcome reaches the
    /// subscribers. Returns false when a refresh was already running (this request joins it).
    /// Refusals known at once (closed, no source, rate limit) are thrown, and told to the
    /// subscribers too.
    @discardableResult
    public func refreshInBackground() throws(ContentCardsError) -> Bool {
        switch try beginRefresh() {
        case .joined:
            return false
        case .started(let start):
            let timeout = configuration.timeoutSeconds
            Scheduler.shared.schedule { [self] in _ = perform(start, timeout: timeout) }
            return true
        }
    }

    static func clampTimeout(_ t: Double) -> Double {
        guard t.isFinite else { return 86_400 }
        return min(max(t, 0.001), 86_400)
    }

    private func beginRefresh() throws(ContentCardsError) -> Begin {
        let outcome: Result<Begin, ContentCardsError> = lock.withLock {
            if store == nil { return .failure(Self.closedError) }
            if let ticket = refreshInFlight { return .success(.joined(ticket)) }
            guard let source else {
                let e = ContentCardsError(.noSource, "no source is configured: set \"source\" to a file, a url or a callback, or hand cards in with apply")
                noteRefreshFailure(e)
                return .failure(e)
            }
            let now = clock.now()
            if now < serverRetryAt {
                let wait = serverRetryAt - now
                let e = ContentCardsError(.rateLimited, "refresh not sent: the server asked to wait (Retry-After); retry after \(Int(wait.rounded(.up))) s; the cached feed stays readable", retryAfter: wait)
                noteRefreshFailure(e)
                return .failure(e)
            }
            if let wait = limiter.take(now: now) {
                let e = ContentCardsError(.rateLimited, "refresh refused by the rate limit (\(configuration.refreshTokens) per \(Int(configuration.refreshIntervalSeconds)) s): next token in \(Int(wait.rounded(.up))) s; the cached feed stays readable", retryAfter: wait)
                noteRefreshFailure(e)
                return .failure(e)
            }
            let ticket = RefreshTicket()
            refreshInFlight = ticket
            return .success(.started(RefreshStart(ticket: ticket, source: source, userID: userID, cursors: stored.cursors)))
        }
        switch outcome {
        case .success(let begin): return begin
        case .failure(let e):
            if e.code != .closed { notifyRefresh(.failure(e)) }
            throw e
        }
    }

    /// Records a failed refresh. Called with the lock held.
    private func noteRefreshFailure(_ e: ContentCardsError) {
        record.lastRefresh = .init(time: clock.now(), error: e, summary: nil)
        record.lastError = e
    }

    private func perform(_ start: RefreshStart, timeout: Double) -> Result<SyncSummary, ContentCardsError> {
        let fetched = start.source.fetch(userID: start.userID, deviceID: configuration.deviceID,
                                         cursors: start.cursors, timeout: timeout)
        // Decoding happens outside the lock: it is pure, and can take a while on a big payload.
        let decoded: Result<Payload, ContentCardsError> = fetched.flatMap { bytes in
            do throws(PayloadError) { return .success(try decoder.decode(bytes)) } catch {
                return .failure(ContentCardsError(.parse, "the sync response was refused: \(error.message)"))
            }
        }
        let result: Result<SyncSummary, ContentCardsError> = lock.withLock {
            let result: Result<SyncSummary, ContentCardsError>
            switch decoded {
            case .failure(let e):
                result = .failure(e)
            case .success(let payload):
                if store == nil {
                    result = .failure(Self.closedError)
                } else if let other = payload.userID, other != start.userID {
                    record.leftOut = payload.leftOut
                    result = .failure(ContentCardsError(.wrongUser, "the sync response is for user \"\(other)\", not \"\(start.userID)\": discarded"))
                } else if userID != start.userID {
                    result = .failure(ContentCardsError(.wrongUser, "the user changed to \"\(userID)\" during the refresh for \"\(start.userID)\": response discarded"))
                } else {
                    result = mergeLocked(payload)
                }
            }
            switch result {
            case .success(let summary): record.lastRefresh = .init(time: clock.now(), error: nil, summary: summary)
            case .failure(let e):
                noteRefreshFailure(e)
                // Honour a server's Retry-After (bounded to an hour) for the next refreshes.
                if let after = e.retryAfter, e.code == .rateLimited || e.code == .server, after > 0 {
                    serverRetryAt = clock.now() + min(after, 3600)
                }
            }
            start.ticket.result = result
            if refreshInFlight === start.ticket { refreshInFlight = nil }
            changed.broadcast()
            return result
        }
        if case .failure(let e) = result, e.code == .closed { return result }
        notifyRefresh(result)
        return result
    }

    private func notifyRefresh(_ result: Result<SyncSummary, ContentCardsError>) {
        let counts = lock.withLock { store == nil ? FeedCounts() : currentCounts() }
        switch result {
        case .success(let summary):
            subscribers.notify(FeedUpdate(reason: .refresh, error: nil, cardID: nil, counts: counts, sync: summary))
        case .failure(let e):
            subscribers.notify(FeedUpdate(reason: .refresh, error: e, cardID: nil, counts: counts, sync: nil))
        }
    }

    /// Merges a decoded payload into the current user's state and persists it. Called with the
    /// lock held; on failure nothing changes.
    func mergeLocked(_ payload: Payload) -> Result<SyncSummary, ContentCardsError> {
        do {
            try reloadIfChangedElsewhere()
        } catch {
            return .failure(error)
        }
        let merge = Merge.plan(payload, from: stored)
        do { try persist(merge.changes, for: userID) } catch { return .failure(error) }
        publish(merge.changes)
        record.leftOut = payload.leftOut
        var summary = SyncSummary()
        summary.added = merge.stats.added
        summary.updated = merge.stats.updated
        summary.removed = merge.stats.removed
        summary.keptNewer = merge.stats.keptNewer
        summary.fullSync = payload.fullSync
        summary.leftOut = payload.leftOut
        summary.counts = currentCounts()
        return .success(summary)
    }

    /// Hands in cards the application got itself (a push message, its own networking): the same
    /// merge as a refresh, with no rate limit. A bare array is a non-full sync.
    @discardableResult
    public func apply(_ payload: String) throws(ContentCardsError) -> SyncSummary {
        var copy = payload
        return try copy.withUTF8 { bytes in Result { () throws(ContentCardsError) in try apply(bytes: bytes) } }.get()
    }

    @discardableResult
    public func apply(bytes: UnsafeBufferPointer<UInt8>) throws(ContentCardsError) -> SyncSummary {
        let decoded: Result<Payload, ContentCardsError>
        do { decoded = .success(try decoder.decode(bytes)) } catch {
            decoded = .failure(ContentCardsError(.parse, error.message))
        }
        let result: Result<SyncSummary, ContentCardsError> = lock.withLock {
            if store == nil { return .failure(Self.closedError) }
            let result: Result<SyncSummary, ContentCardsError>
            switch decoded {
            case .failure(let e): result = .failure(e)
            case .success(let payload):
                if let other = payload.userID, other != userID {
                    result = .failure(ContentCardsError(.wrongUser, "the payload is for user \"\(other)\", not the current user \"\(userID)\": discarded"))
                } else {
                    result = mergeLocked(payload)
                }
            }
            if case .failure(let e) = result { record.lastError = e }
            return result
        }
        if case .failure(let e) = result, e.code == .closed { throw e }
        let counts = lock.withLock { store == nil ? FeedCounts() : currentCounts() }
        switch result {
        case .success(let summary):
            subscribers.notify(FeedUpdate(reason: .cardsApplied, error: nil, cardID: nil, counts: counts, sync: summary))
            return summary
        case .failure(let e):
            subscribers.notify(FeedUpdate(reason: .cardsApplied, error: e, cardID: nil, counts: counts, sync: nil))
            throw e
        }
    }
}
