/// Automatic refresh (docs/BEHAVIOUR.md, "Automatic refresh"): the two policies an application
/// may configure, both run on the controller's own refresh queue (`Refresher.queue`),
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

extension Refresher {
    private func failuresNow(_ controller: ContentCardsController) -> Int { controller.lock.withLock { auto.failures } }

    /// At open: the refresh-on-open check, else the first periodic tick.
    func startAutoRefresh(for controller: ContentCardsController) {
        guard source != nil else { return }
        if !refreshOnOpenIfStale(for: controller), controller.configuration.refreshPeriodSeconds > 0 {
            scheduleAutoRefresh(after: periodicDelay(controller.configuration), periodic: true, for: controller)
        }
    }

    /// Starts a background refresh now when `refreshOnOpenAfterSeconds` is set and the current
    /// user's last sync is older; true when it did.
    @discardableResult
    func refreshOnOpenIfStale(for controller: ContentCardsController) -> Bool {
        guard source != nil, let after = controller.configuration.refreshOnOpenAfterSeconds else { return false }
        let stale = controller.lock.withLock { controller.isOpenLocked && controller.clock.now() - lastSyncedAt >= after }
        guard stale else { return false }
        scheduleAutoRefresh(after: 0, for: controller)
        return true
    }

    /// One periodic wait: period × (1 ± jitter), uniform.
    func periodicDelay(_ configuration: Configuration) -> Double {
        let period = configuration.refreshPeriodSeconds
        let jitter = configuration.refreshPeriodJitter
        return max(0.001, period * (1 + jitter * Double.random(in: -1...1)))
    }

    /// Schedules the tick after `delay` seconds, unless one is due by then already: so the
    /// refresh of a user change (delay 0) is never held back by a periodic tick due later.
    private func scheduleAutoRefresh(after delay: Double, periodic: Bool = false, for controller: ContentCardsController) {
        let generation: UInt64? = controller.lock.withLock {
            let due = monotonicSeconds() + delay
            guard controller.isOpenLocked else { return nil }
            if let at = auto.scheduledAt, at <= due { return nil }
            auto.scheduledAt = due
            auto.generation &+= 1
            return auto.generation
        }
        guard let generation else { return }
        // A weak reference: a tick due next year must not keep a dropped controller alive.
        Scheduler.shared.schedule(after: delay, on: queue) { [weak controller] in
            guard let controller else { return }
            controller.refresher.autoRefreshTick(generation, periodic: periodic, for: controller)
        }
    }

    /// Runs on the refresh queue: one refresh, then the next tick (period, or backoff).
    private func autoRefreshTick(_ generation: UInt64, periodic: Bool, for controller: ContentCardsController) {
        let open: Bool = controller.lock.withLock {
            guard auto.generation == generation else { return false }   // replaced
            auto.scheduledAt = nil
            return controller.isOpenLocked
        }
        guard open else { return }
        // The hint stream was up for the whole period: every change was hinted and answered,
        // so the periodic refresh has nothing to find. It takes over as soon as the stream is down.
        let period = controller.configuration.refreshPeriodSeconds
        if periodic, let since = controller.lock.withLock({ hintStream })?.snapshot.connectedSince,
           monotonicSeconds() - since >= period * (1 - controller.configuration.refreshPeriodJitter) {
            controller.lock.withLock { hints.periodicSkipped += 1 }
            scheduleAutoRefresh(after: periodicDelay(controller.configuration), periodic: true, for: controller)
            return
        }
        let next: Double?
        do {
            try controller.refresh()
            controller.lock.withLock { auto.failures = 0 }
            next = controller.configuration.refreshPeriodSeconds > 0 ? periodicDelay(controller.configuration) : nil
        } catch {
            if error.code == .closed { return }
            let failures: Int = controller.lock.withLock {
                auto.failures += 1
                return auto.failures
            }
            // A refusal before sending (the rate limit, the server's Retry-After still
            // running) carries its wait in retryAfter too: it is waited first, like a 429's.
            let backoff = Backoff(base: controller.configuration.retryBaseSeconds, cap: controller.configuration.retryMaxSeconds)
            next = backoff.delay(attempt: failures, retryAfter: error.retryAfter, random: Double.random(in: 0...1))
        }
        if let next { scheduleAutoRefresh(after: next, periodic: failuresNow(controller) == 0, for: controller) }
    }
}
