/// Hints (docs/SYNC.md, "Hints"): a hint says only that the current user's cards may have
/// changed; it is answered with the controller's own conditional refresh, never trusted for
/// content. Hints coalesce: at most one hint refresh runs and one waits on the refresh queue,
/// however many hints come; a hint that comes while a refresh that started before it is in
/// flight gets a refresh of its own after that one (the server may have answered it before
/// the change). A hint refused by the rate limit or a Retry-After is answered once they allow.
struct HintState {
    /// A hint refresh waits on the refresh queue (a later hint joins it).
    var queued = false
    var received = 0
    /// Hints for another user than the current one.
    var ignored = 0
    /// Hints that joined one waiting.
    var coalesced = 0
    var refreshes = 0
    var failed = 0
    /// Periodic refreshes not made because the hint stream was up for the whole period.
    var periodicSkipped = 0
}

extension ContentCardsController {
    /// Hands in a hint that `user`'s cards (nil: the current user's) may have changed; see
    /// `HintState`. Returns at once; a hint for another user is ignored.
    public func hint(user: String? = nil) throws(ContentCardsError) {
        try refuseIfInherited()
        let hintAt = monotonicSeconds()
        let enqueue: Bool = try lock.withLock { () throws(ContentCardsError) -> Bool in
            try checkOpen()
            guard refresher.source != nil else {
                throw ContentCardsError(.noSource, "a hint needs a source to refresh from: set \"source\" to a url or a callback")
            }
            if let user, !sameUser(user, userID) {
                refresher.hints.ignored += 1
                return false
            }
            refresher.hints.received += 1
            if refresher.hints.queued {
                refresher.hints.coalesced += 1
                return false
            }
            refresher.hints.queued = true
            return true
        }
        guard enqueue else { return }
        refresher.queue.async { [weak self] in self?.answerHint(at: hintAt) }
    }

    /// Runs on the refresh queue: the hint's refresh.
    private func answerHint(at hintAt: Double) {
        let older: Bool = lock.withLock {
            refresher.hints.queued = false
            return refresher.inFlight.map { $0.startedAt < hintAt } ?? false
        }
        if older { _ = try? refresh() }      // join the one that may have missed the change
        do {
            _ = try refresh()
            lock.withLock { refresher.hints.refreshes += 1 }
        } catch {
            if error.code == .closed { return }
            let again: Bool = lock.withLock {
                refresher.hints.failed += 1
                // A wait of 0 (`Retry-After: 0`, or a date past) is no wait to honour: asked
                // again at once, a server that always answers so was asked in a loop.
                guard !refresher.hints.queued, let after = error.retryAfter, after > 0 else { return false }
                refresher.hints.queued = true
                return true
            }
            if again, let after = error.retryAfter {
                Scheduler.shared.schedule(after: min(after, RetryAfter.maxSeconds), on: refresher.queue) { [weak self] in
                    self?.answerHint(at: hintAt)
                }
            }
        }
    }

    /// Starts the hint stream when the configuration asks for one (at open).
    func startHintStream() {
        guard let settings = configuration.hints, case .url(let base, let apiKey)? = configuration.source else { return }
        let stream = HintStream(base: base, apiKey: apiKey, settings: settings, tokens: tokens,
                                currentUser: { [weak self] in
                                    guard let self else { return nil }
                                    return self.lock.withLock { self.isOpenLocked ? self.userID : nil }
                                },
                                onHint: { [weak self] user in try? self?.hint(user: user) })
        lock.withLock { refresher.hintStream = stream }
        if !stream.start() {
            ContentCardsLog.emit(.warning, "the hint stream could not be started (no thread): the periodic refresh, if any, keeps the feed fresh")
        }
    }
}
