/// Subscribers see expiry (docs/BEHAVIOUR.md, "Users, subscriptions,
/// threads, processes"): when a visible card expires, the counts go down with no call at all,
/// so a badge drawn from updates would stay stale. The feed index knows when its counts stop
/// being exact (the next expiry, `FeedIndex.Badge.validBefore`); a timer of the process's
/// `Scheduler` fires then, on this controller's `expiryQueue`, and the subscribers get an update
/// with reason `.expired` and the new counts (by the controller's clock: a test's manual clock
/// that has not reached the expiry gives no update, only the next timer).
extension ContentCardsController {
    /// Sets a timer for `at` (wall clock) on this controller's expiry queue. Called by the
    /// published feed (`PublishedFeed.armExpiryTimer`) with the readers' lock held.
    func setExpiryTimer(at: Double) {
        // A weak reference: a timer set for a card that expires next year must not keep a
        // controller the application dropped alive until then.
        // At most `expiryRecheckSeconds` ahead: the expiry is a wall-clock time, the wait a
        // monotonic one, and a wall clock set forward (the first NTP answer after a boot at
        // 1970) or a suspend (the monotonic clock stops) would leave the timer years late.
        // A timer that fires before `at` only sets the next one.
        let wait = min(max(at - clock.now(), 0.001), expiryRecheckSeconds)
        Scheduler.shared.schedule(after: wait, on: expiryQueue) { [weak self] in
            self?.expiryTimerFired(at: at)
        }
    }

    private func expiryTimerFired(at: Double) {
        let update: FeedUpdate? = lock.withLock {
            guard store != nil else { return nil }
            return feed.lock.withLock {
                guard feed.expiryTimerAt == at else { return nil }   // replaced by an earlier one
                feed.expiryTimerAt = nil
                let now = clock.now()
                let state = feed.updateState(now: now)
                feed.publishBadge()                             // and the next timer
                guard now >= at else { return nil }
                return FeedUpdate(reason: .expired, state: state)
            }
        }
        if let update { subscribers.notify(update) }
    }
}
