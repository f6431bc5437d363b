/// Event delivery (docs/BEHAVIOUR.md, "Events and delivery"): batches from the durable outbox to the sink, at least once;
/// retried with capped exponential backoff on network errors, timeouts, 408, 429 and 5xx
/// (honouring Retry-After); a batch the sink refuses for good (another 4xx) is dropped and the
/// diagnostics say so. Events are removed from the outbox only once delivered or dropped.
extension ContentCardsController {
    /// Events in the outbox of this store, every user's (each event keeps its own user).
    public func pendingEvents() throws(ContentCardsError) -> Int {
        try lock.withLock { () throws(ContentCardsError) in
            guard let store else { throw Self.closedError }
            do throws(StoreError) { return try store.pendingEventCount() } catch { throw ContentCardsError(.storage, error.message) }
        }
    }

    /// The events waiting in the outbox (every user's), oldest first, at most `limit` of them
    /// (0: all), with the number pending, the delivery attempts that failed in a row since
    /// the last delivery by this controller, and each event's failed attempts in this process.
    public func listPendingEvents(limit: Int = 0) throws(ContentCardsError) -> PendingEvents {
        try lock.withLock { () throws(ContentCardsError) in
            guard let store else { throw Self.closedError }
            do throws(StoreError) {
                let rows = try store.pendingEvents(limit: limit > 0 ? limit : Int.max, maxBytes: Int.max)
                return PendingEvents(pending: try store.pendingEventCount(), failedAttempts: deliveryAttempt,
                                     events: rows.map(\.event), attempts: rows.map { eventAttempts[$0.sequence] ?? 0 })
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
        let timeout = Self.clampTimeout(timeout ?? configuration.timeoutSeconds)
        Scheduler.shared.kick()
        return try deliver(until: monotonicSeconds() + timeout)
    }

    private func deliver(until deadline: Double) throws(ContentCardsError) -> FlushResult {
        guard let sink else {
            throw ContentCardsError(.noSource, "no event sink is configured (\"events\"): events are kept in the outbox")
        }
        // One delivery at a time per controller, so a batch is never sent twice by this process
        // (but for a batch abandoned in a sink that never returned: at least once).
        let me = pthread_self()
        try lock.withLock { () throws(ContentCardsError) in
            if deliveryInFlight, let thread = background.deliveryThread, pthread_equal(thread, me) != 0 {
                throw ContentCardsError(.refused, "flush called from inside this controller's events transport callback, which the running delivery is waiting for: return from the callback first")
            }
            while deliveryInFlight {
                if store == nil { throw Self.closedError }
                if !changed.wait(lock, until: deadline) && monotonicSeconds() >= deadline {
                    throw ContentCardsError(.timeout, "another delivery is still running")
                }
            }
            try checkOpen()
            deliveryInFlight = true
        }
        var result = FlushResult()
        var failure: ContentCardsError?
        // Logged once this delivery is over: a log handler that flushes must not wait for the
        // very delivery that is calling it.
        var notes: [(LogLevel, String)] = []
        while failure == nil {
            let remaining = deadline - monotonicSeconds()
            if remaining <= 0 {
                failure = ContentCardsError(.timeout, "flush ran out of time with events still pending")
                break
            }
            let batch: [PendingEvent]
            do throws(ContentCardsError) {
                batch = try lock.withLock { () throws(ContentCardsError) in
                    guard let store else { throw Self.closedError }
                    do throws(StoreError) { return try store.pendingEvents(limit: configuration.eventBatchSize, maxBytes: configuration.eventBatchBytes) }
                    catch { throw ContentCardsError(.storage, error.message) }
                }
            } catch {
                failure = error
                break
            }
            if batch.isEmpty { break }
            notes.append((.debug, "delivering \(batch.count) events to \(Self.describe(configuration.events))"))
            let outcome = send(batch.map(\.event), to: sink, timeout: min(remaining, configuration.timeoutSeconds))
            if let notice = (sink as? RemoteEventSink)?.compression?.takeNotice() { notes.append((.info, notice)) }
            lock.withLock {
                switch outcome {
                case .delivered, .drop:
                    do throws(StoreError) { try store?.deleteEvents(batch.map(\.sequence)) } catch {
                        failure = ContentCardsError(.storage, error.message)
                        return
                    }
                    if case .drop(let e) = outcome {
                        result.dropped += batch.count
                        record.droppedEvents += batch.count
                        record.lastError = ContentCardsError(e.code, "\(batch.count) events dropped: \(e.message)")
                    } else {
                        result.delivered += batch.count
                        record.deliveredEvents += batch.count
                    }
                    deliveryAttempt = 0
                    for row in batch { eventAttempts[row.sequence] = nil }
                case .retry(let e):
                    failure = e
                    for row in batch { eventAttempts[row.sequence, default: 0] += 1 }
                }
            }
            switch outcome {
            case .delivered where failure == nil: notes.append((.info, "delivered \(batch.count) events"))
            case .drop(let e) where failure == nil:
                notes.append((.error, "dropped \(batch.count) events the sink refused for good (\(e.code.statusName)): \(e.message)"))
            default: break
            }
        }
        lock.withLock {
            deliveryInFlight = false
            background.deliveryThread = nil
            if let store { result.pending = (try? store.pendingEventCount()) ?? 0 }
            record.lastDelivery = .init(time: clock.now(), error: failure, delivered: result.delivered, dropped: result.dropped)
            if let failure { record.lastError = failure }
            changed.broadcast()
        }
        // Outside the lock, delivery over: the log handler may call back into the library.
        for (level, text) in notes { ContentCardsLog.emit(level, text) }
        if let failure {
            if failure.code != .closed {
                ContentCardsLog.emit(.warning, "event delivery failed (\(failure.code.statusName)): \(failure.message); \(result.pending) events stay pending")
                scheduleRetry(after: failure)
            }
            throw failure
        }
        return result
    }

    /// Hands one batch to the sink on a thread of its own and waits for it until `timeout`
    /// seconds have passed: a sink that blocks (a FIFO, a stalled mount, a host transport that
    /// never returns) cannot hold the caller past its timeout. An abandoned batch stays in the
    /// outbox and is sent again later; its late outcome is ignored (delivery is at least once:
    /// the server drops a repeated event id). At most `Background.maxFetches` abandoned sink
    /// calls at a time, so a stuck sink cannot pile up threads.
    private func send(_ events: [Event], to sink: EventSink, timeout: Double) -> DeliveryOutcome {
        final class Slot { var outcome: DeliveryOutcome?; var abandoned = false }
        let slot = Slot()
        let deadline = monotonicSeconds() + timeout
        let stuck: Int = lock.withLock { background.stuckDeliveries }
        if stuck >= Background.maxFetches {
            return .retry(ContentCardsError(.timeout, "events not sent: \(stuck) earlier deliveries are still blocked in the event sink (abandoned at their timeout); the events stay pending"))
        }
        let launched = spawnThread { [self] in
            let me = pthread_self()
            lock.withLock { background.deliveryThread = me }
            let outcome = CallbackContext.run { sink.deliver(events, timeout: timeout) }
            lock.withLock {
                if let thread = background.deliveryThread, pthread_equal(thread, me) != 0 { background.deliveryThread = nil }
                if slot.abandoned { background.stuckDeliveries -= 1 } else { slot.outcome = outcome }
                changed.broadcast()
            }
        }
        guard launched else {
            return .retry(ContentCardsError(.noMemory, "cannot start a thread for the event delivery; the events stay pending"))
        }
        return lock.withLock {
            while slot.outcome == nil {
                if store == nil {       // closed meanwhile: nothing to wait for
                    slot.abandoned = true
                    background.stuckDeliveries += 1
                    return .retry(Self.closedError)
                }
                if !changed.wait(lock, until: deadline) && monotonicSeconds() >= deadline && slot.outcome == nil {
                    slot.abandoned = true
                    background.stuckDeliveries += 1
                    return .retry(ContentCardsError(.timeout, "the event sink did not return within \(timeout) s: the delivery was abandoned and the events stay pending"))
                }
            }
            return slot.outcome!
        }
    }

    /// Schedules a background delivery after the configured interval, if there is a sink, the
    /// interval is not 0, and none is scheduled yet.
    func scheduleDelivery() {
        guard sink != nil, configuration.eventFlushIntervalSeconds > 0 else { return }
        let schedule: Bool = lock.withLock {
            guard store != nil, !deliveryScheduled else { return false }
            deliveryScheduled = true
            return true
        }
        if schedule { runDelivery(after: configuration.eventFlushIntervalSeconds) }
    }

    /// At open: events left by an earlier run (a crash, a kill) go out within a second (unless
    /// the application delivers only when it flushes, eventFlushIntervalSeconds 0).
    func scheduleDeliveryIfPending() {
        guard let store, sink != nil, configuration.eventFlushIntervalSeconds > 0,
              ((try? store.pendingEventCount()) ?? 0) > 0 else { return }
        let schedule: Bool = lock.withLock {
            guard !deliveryScheduled else { return false }
            deliveryScheduled = true
            return true
        }
        if schedule { runDelivery(after: min(configuration.eventFlushIntervalSeconds, 1)) }
    }

    private func scheduleRetry(after error: ContentCardsError) {
        guard sink != nil else { return }
        let retry: (delay: Double, attempt: Int)? = lock.withLock {
            guard store != nil else { return nil }
            deliveryAttempt += 1
            if deliveryScheduled { return nil }   // one retry pending is enough
            deliveryScheduled = true
            let backoff = Backoff(base: configuration.retryBaseSeconds, cap: configuration.retryMaxSeconds)
            return (backoff.delay(attempt: deliveryAttempt, retryAfter: error.retryAfter, random: Double.random(in: 0...1)), deliveryAttempt)
        }
        if let retry {
            ContentCardsLog.emit(.info, "event delivery retry in \((retry.delay * 1000).rounded() / 1000) s (failed attempt \(retry.attempt))")
            runDelivery(after: retry.delay)
        }
    }

    private func runDelivery(after delay: Double) {
        Scheduler.shared.schedule(after: delay, on: background.deliveryQueue) { [weak self] in
            guard let self else { return }
            let open: Bool = self.lock.withLock {
                self.deliveryScheduled = false
                return self.store != nil
            }
            guard open else { return }
            _ = try? self.deliver(until: monotonicSeconds() + self.configuration.timeoutSeconds * 4)
        }
    }
}
