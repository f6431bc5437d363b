/// Subscribers see expiry (issue 11, item 6; docs/BEHAVIOUR.md, "Users, subscriptions,
/// threads, processes"): when a visible card expires, the counts go down with no call at all,
/// so a badge drawn from updates would stay stale. The feed index knows when its counts stop
/// being exact (the next expiry, `FeedIndex.Badge.validBefore`); a timer of the process's
/// `Scheduler` fires then, on this controller's `expiryQueue`, and the subscribers get an update
/// with reason `.expired` and the new counts (by the controller's clock: a test's manual clock
/// that has not reached the expiry gives no update, only the next timer).
extension ContentCardsController {
    /// Sets the timer for the next expiry, unless one is set for then or earlier. Called with
    /// the readers' lock held (from `publishBadge`, after every change and count).
    func armExpiryTimer() {
        // Cheap when a timer is set already: this runs on every count (a polled badge).
        guard isOpen, let at = index.validBefore, at.isFinite else { return }
        if let set = expiryTimerAt, set <= at { return }
        let now = clock.now()
        guard at > now else { return }
        expiryTimerAt = at
        // A weak reference: a timer set for a card that expires next year must not keep a
        // controller the application dropped alive until then.
        Scheduler.shared.schedule(after: at - now, on: expiryQueue) { [weak self] in
            self?.expiryTimerFired(at: at)
        }
    }

    private func expiryTimerFired(at: Double) {
        let update: FeedUpdate? = lock.withLock {
            guard store != nil else { return nil }
            return readLock.withLock {
                guard expiryTimerAt == at else { return nil }   // replaced by an earlier one
                expiryTimerAt = nil
                let now = clock.now()
                let counts = index.counts(.all, now: now)
                publishBadge()                                  // and the next timer
                guard now >= at else { return nil }
                return FeedUpdate(reason: .expired, error: nil, cardID: nil, counts: counts, sync: nil)
            }
        }
        if let update { subscribers.notify(update) }
    }
}
