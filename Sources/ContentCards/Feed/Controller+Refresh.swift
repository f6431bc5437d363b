/// A sync's outcome once decoded: cards to merge, or the server's "not modified".
enum SyncAnswer {
    case payload(Payload, validator: String?)
    case notModified
}

extension Result where Success == SyncAnswer {
    /// The payload, taken out: `self` no longer holds its cards, so the merge is handed the
    /// only reference and can move them (`Merge.plan`) instead of copying the whole array.
    mutating func takePayload() -> (payload: Payload, validator: String?)? {
        guard case .success(.payload(let payload, let validator)) = self else { return nil }
        self = .success(.notModified)
        return (payload, validator)
    }
}

extension ContentCardsController {
    static func forgottenDuringRefresh(_ user: String) -> ContentCardsError {
        ContentCardsError(.wrongUser, "user \"\(user)\" was forgotten during the refresh: response discarded")
    }

    static func userChangedDuringRefresh(from old: String, to new: String) -> ContentCardsError {
        let change = sameUser(old, new) ? "changed (and back to \"\(new)\")" : "changed to \"\(new)\""
        return ContentCardsError(.wrongUser, "the user \(change) during the refresh for \"\(old)\": response discarded")
    }

    /// The user's stored state was erased by another controller or process (its
    /// `forgetUser`) while the refresh was out: nothing of the user is left, and an answer asked
    /// for from the erased cursors would put back a delta onto nothing, or the user's cards.
    static func forgottenElsewhereDuringRefresh(_ user: String) -> ContentCardsError {
        ContentCardsError(.wrongUser, "user \"\(user)\" was forgotten by another controller or process during the refresh: response discarded; the next refresh asks for a full sync")
    }

    private struct RefreshStart {
        let ticket: RefreshTicket
        let source: CardSource
        let userID: String
        let cursors: SyncCursors
        let validator: String?
        /// The controller's `forgotten` at the start: the user's data was erased since when it
        /// differs at the merge, and the answer is discarded.
        let forgotten: Int
        /// The store held a sync of the user at the start (`StoredUser.hasSyncState`). Only a
        /// forget takes that away, so finding none at the merge means another controller or
        /// process forgot the user meanwhile.
        let heldState: Bool
    }

    private enum Begin {
        case started(RefreshStart)
        case joined(RefreshTicket)
    }

    /// Refreshes and waits for the outcome, at most `timeout` seconds (the network request is
    /// also bounded by the configuration's `timeoutSeconds`). When a refresh is already running,
    /// waits for that one. Subscribers are told of the outcome too. On failure the cached cards
    /// stay as they were.
    ///
    /// The source is asked on a thread of its own while this thread waits, so the call returns
    /// by its timeout whatever the source does (a FIFO, a stalled mount, a host transport that
    /// never returns): at the deadline the fetch is abandoned and its late answer discarded.
    /// Called from inside this controller's own transport callback, it fails at once
    /// (`.refused`): that refresh is the one waiting for the callback.
    @discardableResult
    public func refresh(timeout: Double? = nil) throws(ContentCardsError) -> SyncSummary {
        try refuseIfInherited()
        let timeout = Self.clampTimeout(timeout ?? configuration.timeoutSeconds)
        let deadline = monotonicSeconds() + timeout
        let me = pthread_self()
        Scheduler.shared.kick()
        if lock.withLock({ refresher.isFetching(me) }) {
            throw ContentCardsError(.refused, "refresh called from inside this controller's transport callback, which the running refresh is waiting for: return from the callback first (refresh_async does not wait)")
        }
        if tokens.isProviding(me) {
            throw ContentCardsError(.refused, "refresh called from inside this controller's token provider, which its request is waiting for: return from the provider first (refresh_async does not wait)")
        }
        switch try beginRefresh() {
        case .started(let start):
            return try perform(start, timeout: min(timeout, configuration.timeoutSeconds)).get()
        case .joined(let ticket):
            while true {
                // A background refresh not yet begun is started here, on a thread of its own
                // with its own bound (see `RefreshTicket.unclaimed`); this call waits for it to
                // its own deadline, as for any refresh it joins.
                let step: JoinStep = lock.withLock {
                    if let result = ticket.result { return .done(result) }
                    if !isOpenLocked { return .done(.failure(Self.closedError)) }
                    if let run = ticket.claim() { return .start(run) }
                    if !changed.wait(lock, until: deadline) && monotonicSeconds() >= deadline && ticket.result == nil {
                        return .done(.failure(ContentCardsError(.timeout, "the refresh already running did not finish within \(timeout) s; its outcome will reach the subscribers")))
                    }
                    return .again
                }
                switch step {
                case .done(let result): return try result.get()
                case .start(let run): if !spawnThread(run) { run() }
                case .again: continue
                }
            }
        }
    }

    private enum JoinStep {
        case done(Result<SyncSummary, ContentCardsError>)
        case start(@Sendable () -> Void)
        case again
    }

    /// Starts a refresh on a background thread and returns at once; the outcome reaches the
    /// subscribers, then `completion` (when given), on that thread. Returns false when a
    /// refresh was already running: this request joins it, and `completion` gets its outcome.
    /// Refusals known at once (closed, no source, rate limit) are thrown, and told to the
    /// subscribers too; `completion` is then never called. The source is waited for at most
    /// min(`timeout`, the configuration's `timeoutSeconds`) (nil: `timeoutSeconds`).
    /// This is "refresh in background" of docs/API.md: fire and forget, or a completion;
    /// `refresh() async` is built on it (an awaiting task that is cancelled stops waiting at
    /// once, and the refresh finishes on its own).
    @discardableResult
    public func refreshInBackground(timeout: Double? = nil,
                                    completion: (@Sendable (Result<SyncSummary, ContentCardsError>) -> Void)? = nil) throws(ContentCardsError) -> Bool {
        try refuseIfInherited()
        let limit = min(Self.clampTimeout(timeout ?? configuration.timeoutSeconds), configuration.timeoutSeconds)
        switch try beginRefresh(inBackground: limit, completion: completion) {
        case .joined(let ticket):
            guard let completion else { return false }
            let done: Result<SyncSummary, ContentCardsError>? = lock.withLock {
                if let result = ticket.result { return result }
                ticket.completions.append(completion)
                return nil
            }
            if let done { CallbackContext.run { completion(done) } }
            return false
        case .started(let start):
            refresher.queue.async { [self] in
                if let run = lock.withLock({ start.ticket.claim() }) { run() }
            }
            return true
        }
    }

    static func clampTimeout(_ t: Double) -> Double {
        guard t.isFinite else { return 86_400 }
        return min(max(t, 0.001), 86_400)
    }

    /// `inBackground`: the bound of a background refresh, whose run (and `completion`) is set
    /// on its ticket here, in the same locked section that makes it the refresh in flight: a
    /// blocking refresh that joins it from then on finds the run to start.
    private func beginRefresh(inBackground limit: Double? = nil,
                              completion: (@Sendable (Result<SyncSummary, ContentCardsError>) -> Void)? = nil) throws(ContentCardsError) -> Begin {
        let outcome: Result<Begin, ContentCardsError> = lock.withLock {
            // The request carries the stored cursors and validator: a deferred open is finished.
            // Read again if another controller or process committed since this one last looked:
            // the cursors it sends must be the store's, not this controller's memory of them
            // (after another's forget, the old cursors asked for a delta onto nothing).
            do throws(ContentCardsError) {
                _ = try liveStore()
                try reloadIfChangedElsewhere()
            } catch { return .failure(error) }
            // A refresh still running for the user before a change is not joined: its answer
            // will be discarded, and the new user's refresh starts now (that one's late
            // outcome leaves `inFlight` to this one: see `Refresher.finish`).
            if let ticket = refresher.inFlight, sameUser(ticket.userID, userID), ticket.userChanges == userChanges {
                return .success(.joined(ticket))
            }
            if let e = refresher.refusal(now: clock.now(), configuration: configuration) {
                noteRefreshFailure(e)
                return .failure(e)
            }
            guard let source = refresher.source else { return .failure(ContentCardsError(.internal, "no source")) }
            let ticket = RefreshTicket(userID: userID, userChanges: userChanges)
            // A read event pending now may be delivered before the answer comes, yet after the
            // server wrote it: remembered here, not only looked up in the outbox at the merge.
            if let store { ticket.readCrossing = (try? store.pendingReadStateCards(user: userID)) ?? [] }
            refresher.inFlight = ticket
            let start = RefreshStart(ticket: ticket, source: source, userID: userID, cursors: feed.stored.cursors,
                                     validator: feed.stored.sync.validator, forgotten: forgotten,
                                     heldState: feed.stored.hasSyncState)
            if let limit {
                if let completion { ticket.completions.append(completion) }
                ticket.unclaimed = { [self] in _ = perform(start, timeout: limit) }
            }
            return .success(.started(start))
        }
        switch outcome {
        case .success(let begin): return begin
        case .failure(let e):
            if e.code != .closed {
                ContentCardsLog.emit(.warning, "refresh refused (\(e.code.statusName)): \(e.message)")
                notifyRefresh(.failure(e))
            }
            throw e
        }
    }

    /// `reloadIfChangedElsewhere`'s failure, if it fails. Called with the lock held.
    private func reloadFailure() -> ContentCardsError? {
        do { try reloadIfChangedElsewhere() } catch { return error }
        return nil
    }

    /// Records a failed refresh. Called with the lock held.
    private func noteRefreshFailure(_ e: ContentCardsError) {
        record.lastRefresh = .init(time: clock.now(), error: e, summary: nil)
        record.lastError = e
    }

    /// Fetches on a thread of its own and waits for it until `timeout` seconds have passed, then
    /// merges (on this thread) and tells the subscribers.
    private func perform(_ start: RefreshStart, timeout: Double) -> Result<SyncSummary, ContentCardsError> {
        let deadline = monotonicSeconds() + timeout
        let ticket = start.ticket
        // A background refresh whose run starts after a close (its queue job, or a joiner)
        // sends nothing: it ends with `closed`, and its completion still runs once.
        let open: Bool = lock.withLock {
            refresher.fetches += 1
            return isOpenLocked
        }
        let launched = open && spawnThread { [self, configuration, decoder] in
            let me = pthread_self()
            lock.withLock { refresher.fetchThreads.append(me) }
            var fetched = CallbackContext.run {
                start.source.fetch(userID: start.userID, deviceID: configuration.deviceID,
                                   cursors: start.cursors, validator: start.validator, timeout: timeout)
            }
            lock.withLock {
                if let i = refresher.fetchThreads.firstIndex(where: { pthread_equal($0, me) != 0 }) {
                    refresher.fetchThreads.remove(at: i)
                }
            }
            let note: String
            switch fetched {
            case .success(.payload(let bytes, _)): note = "refresh fetched \(bytes.count) bytes from the source"
            case .success(.notModified): note = "refresh: the source answered not modified (304) to the stored validator"
            case .failure(let e): note = "refresh fetch failed (\(e.code.statusName)): \(e.message)"
            }
            // Decoding happens outside the lock: it is pure, and can take a while on a big payload.
            var decoded: Result<SyncAnswer, ContentCardsError>? = fetched.flatMap { answer in
                guard case .payload(let bytes, let validator) = answer else { return .success(.notModified) }
                do throws(PayloadError) { return .success(.payload(try decoder.decode(bytes), validator: validator)) } catch {
                    return .failure(ContentCardsError(.parse, "the sync response was refused: \(error.message)"))
                }
            }
            fetched = .failure(ContentCardsError(.internal, "consumed"))
            lock.withLock {
                refresher.fetches -= 1
                // Handed over, not shared: this thread keeps no reference to the cards once the
                // caller may have them (a thread still unwinding when the process exits would
                // otherwise hold a payload nothing else can reach).
                ticket.fetched = decoded
                decoded = nil
                ticket.fetchNote = note
                changed.broadcast()
            }
        }
        var decoded: Result<SyncAnswer, ContentCardsError> = lock.withLock {
            guard launched else {
                refresher.fetches -= 1
                return .failure(open ? ContentCardsError(.noMemory, "cannot start a thread for the refresh") : Self.closedError)
            }
            while true {
                if let fetched = ticket.fetched {
                    ticket.fetched = nil        // the merge below owns the payload now
                    return fetched
                }
                if store == nil { return .failure(Self.closedError) }
                if !changed.wait(lock, until: deadline) && monotonicSeconds() >= deadline && ticket.fetched == nil {
                    return .failure(ContentCardsError(.timeout, "the source did not answer within \(timeout) s: the refresh was abandoned (a late answer is discarded); the cached feed stays readable"))
                }
            }
        }
        let result: Result<SyncSummary, ContentCardsError> = lock.withLock {
            // One time for the stored sync state, the diagnostics and the automatic refresh,
            // so that what a reopen reads back is what this process reported.
            let finishedAt = clock.now()
            let result: Result<SyncSummary, ContentCardsError>
            var answer = decoded.takePayload()
            switch decoded {
            case .failure(let e):
                result = .failure(e)
            case .success(.notModified) where answer == nil:
                // The cards held are the server's: no decode, no merge, no write. The time of
                // this check is kept in memory only (refreshOnOpenAfterSeconds reads the stored
                // time of the last merge, so a reopen may check once more: a cheap 304).
                if store == nil {
                    result = .failure(Self.closedError)
                } else if userChanges != start.ticket.userChanges {
                    result = .failure(Self.userChangedDuringRefresh(from: start.userID, to: userID))
                } else if forgotten != start.forgotten {
                    result = .failure(Self.forgottenDuringRefresh(start.userID))
                } else if let e = reloadFailure() {
                    result = .failure(e)
                } else if start.heldState && !feed.stored.hasSyncState {
                    result = .failure(Self.forgottenElsewhereDuringRefresh(start.userID))
                } else {
                    var summary = SyncSummary()
                    summary.notModified = true
                    summary.counts = currentCounts()
                    result = .success(summary)
                }
            case .success:
                guard var payload = answer?.payload else {
                    result = .failure(ContentCardsError(.internal, "a sync answer without a payload"))
                    break
                }
                let validator = answer?.validator
                answer = nil    // `payload` is now the cards' only holder
                if store == nil {
                    result = .failure(Self.closedError)
                } else if let other = payload.userID, !sameUser(other, start.userID) {
                    // Discarded whole: its cards left out are not this user's diagnostics.
                    result = .failure(ContentCardsError(.wrongUser, "the sync response is for user \(Self.quoted(other)), not \(Self.quoted(start.userID)): discarded"))
                } else if userChanges != start.ticket.userChanges {
                    result = .failure(Self.userChangedDuringRefresh(from: start.userID, to: userID))
                } else if forgotten != start.forgotten {
                    result = .failure(Self.forgottenDuringRefresh(start.userID))
                } else {
                    result = mergeLocked(&payload, sync: SyncState(validator: validator, syncedAt: finishedAt),
                                         readCrossing: start.ticket.readCrossing, basedOnState: start.heldState)
                }
            }
            switch result {
            case .success(let summary): record.lastRefresh = .init(time: finishedAt, error: nil, summary: summary)
            case .failure(let e): noteRefreshFailure(e)
            }
            refresher.finish(start.ticket, with: result, at: finishedAt, now: clock.now())
            changed.broadcast()
            return result
        }
        let completions: [@Sendable (Result<SyncSummary, ContentCardsError>) -> Void] = lock.withLock {
            defer { ticket.completions = [] }
            return ticket.completions
        }
        defer { if !completions.isEmpty { CallbackContext.run { for c in completions { c(result) } } } }
        if case .failure(let e) = result, e.code == .closed { return result }
        // Logged only now that the refresh is over: a log handler that refreshes (joining a
        // refresh in flight) must not wait for the very refresh that is calling it.
        ContentCardsLog.emit(.debug, "refresh started for user \(Self.quoted(start.userID)) (\(Self.describe(configuration.source)))")
        if let note = lock.withLock({ ticket.fetchNote }) { ContentCardsLog.emit(.debug, note) }
        switch result {
        case .success(let summary) where summary.notModified:
            ContentCardsLog.emit(.info, "refresh for user \(Self.quoted(start.userID)): not modified (304); the cached feed is current")
        case .success(let summary): Self.logMerge("refresh for user \(Self.quoted(start.userID))", summary)
        case .failure(let e): ContentCardsLog.emit(.warning, "refresh failed (\(e.code.statusName)): \(e.message); the cached feed stays readable")
        }
        notifyRefresh(result)
        if case .success = result { prefetchImages() }
        return result
    }

    /// An endpoint for a log message: a URL without its credentials.
    static func describe(_ endpoint: Configuration.Endpoint?) -> String {
        switch endpoint {
        case nil: return "none"
        case .file(let path)?: return "file \(Redact.escape(path, limit: 300))"
        case .url(let base, _)?: return "url \(Redact.url(base))"
        case .callback?: return "the host transport"
        }
    }

    /// Logs what a merge did, and each card left out of the payload. Called without a lock.
    static func logMerge(_ what: String, _ s: SyncSummary) {
        ContentCardsLog.emit(.info, "\(what): added \(s.added), updated \(s.updated), removed \(s.removed), kept newer \(s.keptNewer)\(s.fullSync ? " (full sync)" : ""), \(s.leftOut.count) left out; feed: \(s.counts.total) cards, \(s.counts.unviewed) unviewed")
        for item in s.leftOut {
            ContentCardsLog.emit(.warning, "card left out of the payload (index \(item.index), id \(item.id.map { quoted($0) } ?? "none")): \(item.reason)")
        }
    }

    private func notifyRefresh(_ result: Result<SyncSummary, ContentCardsError>) {
        // None after a close (as an apply's: Controller+Apply.swift).
        guard let state = lock.withLock({ store == nil ? nil : updateState() }) else { return }
        switch result {
        case .success(let summary):
            subscribers.notify(FeedUpdate(reason: .refresh, state: state, sync: summary))
        case .failure(let e):
            subscribers.notify(FeedUpdate(reason: .refresh, error: e, state: state))
        }
    }
}
