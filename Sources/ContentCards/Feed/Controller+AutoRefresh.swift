/// Automatic refresh (docs/BEHAVIOUR.md, "Automatic refresh"): the two policies an application
/// may configure, both run on the controller's own refresh queue (`Background.refreshQueue`),
/// both within the rate limit and the server's Retry-After like any refresh, both ending at
/// close:
/// - `refreshOnOpenAfterSeconds`: at open and at a user change, one refresh when the user's
///   last sync is older than that (or there was none);
/// - `refreshPeriodSeconds`: a refresh every period, each wait uniform in
///   period × (1 ± `refreshPeriodJitter`).
/// A failed automatic refresh is retried with exponential backoff and full jitter (`Backoff`,
/// `retryBaseSeconds` / `retryMaxSeconds`) after any Retry-After, until one succeeds; then the
/// period (if any) takes over again. Refreshes the application asks for itself are not retried.
struct AutoRefreshState {
    /// Automatic refreshes that failed in a row.
    var failures = 0
    /// When the tick waiting in the scheduler is due (monotonic seconds); nil when none is.
    /// One tick counts per controller: an earlier request (a user change while the next
    /// period is far off) replaces a later one.
    var scheduledAt: Double?
    /// The generation of the tick that counts; a replaced tick finds another and does nothing.
    var generation: UInt64 = 0
}

extension ContentCardsController {
    /// At open: the refresh-on-open check, else the first periodic tick.
    func startAutoRefresh() {
        guard source != nil else { return }
        if !refreshOnOpenIfStale(), configuration.refreshPeriodSeconds > 0 {
            scheduleAutoRefresh(after: periodicDelay())
        }
    }

    /// Starts a background refresh now when `refreshOnOpenAfterSeconds` is set and the current
    /// user's last sync is older; true when it did.
    @discardableResult
    func refreshOnOpenIfStale() -> Bool {
        guard source != nil, let after = configuration.refreshOnOpenAfterSeconds else { return false }
        let stale = lock.withLock { store != nil && clock.now() - lastSyncedAt >= after }
        guard stale else { return false }
        scheduleAutoRefresh(after: 0)
        return true
    }

    /// One periodic wait: period × (1 ± jitter), uniform.
    func periodicDelay() -> Double {
        let period = configuration.refreshPeriodSeconds
        let jitter = configuration.refreshPeriodJitter
        return max(0.001, period * (1 + jitter * Double.random(in: -1...1)))
    }

    /// Schedules the tick after `delay` seconds, unless one is due by then already: so the
    /// refresh of a user change (delay 0) is never held back by a periodic tick due later.
    private func scheduleAutoRefresh(after delay: Double) {
        let generation: UInt64? = lock.withLock {
            let due = monotonicSeconds() + delay
            guard store != nil else { return nil }
            if let at = autoRefresh.scheduledAt, at <= due { return nil }
            autoRefresh.scheduledAt = due
            autoRefresh.generation &+= 1
            return autoRefresh.generation
        }
        guard let generation else { return }
        Scheduler.shared.schedule(after: delay, on: background.refreshQueue) { [weak self] in
            self?.autoRefreshTick(generation)
        }
    }

    /// Runs on the refresh queue: one refresh, then the next tick (period, or backoff).
    private func autoRefreshTick(_ generation: UInt64) {
        let open: Bool = lock.withLock {
            guard autoRefresh.generation == generation else { return false }   // replaced
            autoRefresh.scheduledAt = nil
            return store != nil
        }
        guard open else { return }
        let next: Double?
        do {
            try refresh()
            lock.withLock { autoRefresh.failures = 0 }
            next = configuration.refreshPeriodSeconds > 0 ? periodicDelay() : nil
        } catch {
            if error.code == .closed { return }
            let failures: Int = lock.withLock {
                autoRefresh.failures += 1
                return autoRefresh.failures
            }
            // A refusal before sending (the rate limit, the server's Retry-After still
            // running) carries its wait in retryAfter too: it is waited first, like a 429's.
            let backoff = Backoff(base: configuration.retryBaseSeconds, cap: configuration.retryMaxSeconds)
            next = backoff.delay(attempt: failures, retryAfter: error.retryAfter, random: Double.random(in: 0...1))
        }
        if let next { scheduleAutoRefresh(after: next) }
    }
}
