/// Event delivery (docs/BEHAVIOUR.md, "Events and delivery"): the owner of the event sink, the
/// background schedule, the backoff (with the server's Retry-After) and each event's failed
/// attempts. Batches go from the durable outbox to the sink at least once, each on a thread of
/// its own bounded by the caller's deadline; a failure that is not a verdict on the events is
/// retried with capped exponential backoff and full jitter; a verdict (EventSink.swift) drops
/// the batch and the diagnostics say so. Events leave the outbox only once delivered or dropped.
///
/// Its state is guarded by the controller's lock: the controller stays the front door and the
/// keeper of the lock order; this reaches the store and the diagnostics through it.
final class EventDelivery: @unchecked Sendable {
    /// Where batches go; nil when no sink is configured (events stay in the outbox).
    let sink: EventSink?
    /// Runs background deliveries.
    let queue = WorkQueue()

    /// A delivery is running: one at a time per controller, so this process never sends a
    /// batch twice (but for a batch abandoned in a sink that never returned).
    var inFlight = false
    /// A background delivery (or retry) is waiting in the scheduler.
    var scheduled = false
    /// Failed delivery attempts in a row since the last delivery (the backoff's exponent).
    var attempt = 0
    /// Failed delivery attempts of each event in this process, by event id (not its outbox
    /// number, which schema 4 may give again, `deleteEvents`): only events of batches that
    /// failed (the oldest, which go out first), removed once delivered or dropped (the outbox's
    /// listing shows them; the store keeps no count).
    var eventAttempts: [String: Int] = [:]
    /// The thread inside the sink (the events transport) while a delivery waits for it.
    var thread: pthread_t?
    /// The user whose batch is out (read from the outbox, not yet deleted or kept): a forget
    /// of that user waits for it (Controller+Forget.swift).
    var batchUser: String?
    /// Sink calls still running that a delivery abandoned at its deadline (a FIFO, a stalled
    /// mount, a host transport that never returns): at most `Background.maxFetches`.
    var stuck = 0

    /// Each method takes the controller it delivers for (the owner of this object), for its
    /// lock, store and diagnostics record: this object keeps no reference to it.
    init(sink: EventSink?) {
        self.sink = sink
    }

    /// True when `me` is the thread inside this controller's sink.
    func isInsideSink(_ me: pthread_t) -> Bool {
        inFlight && thread.map { pthread_equal($0, me) != 0 } == true
    }

    /// Delivers batches until the outbox is empty (of `user`'s events, when given), a batch
    /// fails, or `deadline` (monotonic) passes; the failure is thrown after a retry is
    /// scheduled. Called without the lock.
    func deliver(for controller: ContentCardsController, until deadline: Double, only user: String? = nil) throws(ContentCardsError) -> FlushResult {
        guard let sink else {
            throw ContentCardsError(.noSource, "no event sink is configured (\"events\"): events are kept in the outbox")
        }
        // One delivery at a time per controller, so a batch is never sent twice by this process
        // (but for a batch abandoned in a sink that never returned: at least once).
        let me = pthread_self()
        try controller.lock.withLock { () throws(ContentCardsError) in
            if isInsideSink(me) {
                throw ContentCardsError(.refused, "flush called from inside this controller's events transport callback, which the running delivery is waiting for: return from the callback first")
            }
            if controller.tokens.isProviding(me) {
                throw ContentCardsError(.refused, "flush called from inside this controller's token provider, which its request is waiting for: return from the provider first")
            }
            while inFlight {
                if !controller.isOpenLocked { throw ContentCardsController.closedError }
                if !controller.changed.wait(controller.lock, until: deadline) && monotonicSeconds() >= deadline {
                    throw ContentCardsError(.timeout, "another delivery is still running")
                }
            }
            _ = try controller.liveStore()
            inFlight = true
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
                batch = try controller.lock.withLock { () throws(ContentCardsError) in
                    let store = try controller.liveStore()
                    let pending: [PendingEvent]
                    do throws(StoreError) { pending = try store.pendingEvents(limit: controller.configuration.eventBatchSize, maxBytes: controller.configuration.eventBatchBytes, of: user) }
                    catch { throw ContentCardsError(.storage, error.message) }
                    // A batch is one user's events: the first user's only (the next batch
                    // takes the next user's), so that with per-user tokens it goes with that
                    // user's token. Cut so even with no provider set: one set between the cut
                    // and the send gave every user's events of the batch the first one's token.
                    guard let user = pending.first?.event.userID else { return pending }
                    batchUser = user
                    return Array(pending.prefix { sameUser($0.event.userID, user) })
                }
            } catch {
                failure = error
                break
            }
            if batch.isEmpty { break }
            notes.append((.debug, "delivering \(batch.count) events to \(ContentCardsController.describe(controller.configuration.events))"))
            let outcome = send(batch.map(\.event), to: sink, timeout: min(remaining, controller.configuration.timeoutSeconds), for: controller)
            if let notice = (sink as? RemoteEventSink)?.compression?.takeNotice() { notes.append((.info, notice)) }
            controller.lock.withLock {
                defer {
                    batchUser = nil
                    controller.changed.broadcast()
                }
                switch outcome {
                case .delivered, .drop:
                    do throws(StoreError) { try controller.store?.deleteEvents(batch) } catch {
                        failure = ContentCardsError(.storage, error.message)
                        return
                    }
                    if case .drop(let e) = outcome {
                        result.dropped += batch.count
                        controller.record.droppedEvents += batch.count
                        controller.record.lastError = ContentCardsError(e.code, "\(batch.count) events dropped: \(e.message)")
                    } else {
                        result.delivered += batch.count
                        controller.record.deliveredEvents += batch.count
                    }
                    attempt = 0
                    for row in batch { eventAttempts[row.event.id] = nil }
                case .retry(let e):
                    failure = e
                    for row in batch { eventAttempts[row.event.id, default: 0] += 1 }
                }
            }
            switch outcome {
            case .delivered where failure == nil: notes.append((.info, "delivered \(batch.count) events"))
            case .drop(let e) where failure == nil:
                notes.append((.error, "dropped \(batch.count) events the sink refused for good (\(e.code.statusName)): \(e.message)"))
            default: break
            }
        }
        controller.lock.withLock {
            inFlight = false
            thread = nil
            batchUser = nil
            if let store = controller.store { result.pending = (try? store.pendingEventCount()) ?? 0 }
            controller.record.lastDelivery = .init(time: controller.clock.now(), error: failure, delivered: result.delivered, dropped: result.dropped)
            if let failure { controller.record.lastError = failure }
            controller.changed.broadcast()
        }
        // Outside the lock, delivery over: the log handler may call back into the library.
        for (level, text) in notes { ContentCardsLog.emit(level, text) }
        if let failure {
            if failure.code != .closed {
                ContentCardsLog.emit(.warning, "event delivery failed (\(failure.code.statusName)): \(failure.message); \(result.pending) events stay pending")
                scheduleRetry(after: failure, for: controller)
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
    private func send(_ events: [Event], to sink: EventSink, timeout: Double, for controller: ContentCardsController) -> DeliveryOutcome {
        final class Slot { var outcome: DeliveryOutcome?; var abandoned = false }
        let slot = Slot()
        let deadline = monotonicSeconds() + timeout
        let abandoned: Int = controller.lock.withLock { stuck }
        if abandoned >= Background.maxFetches {
            return .retry(ContentCardsError(.timeout, "events not sent: \(abandoned) earlier deliveries are still blocked in the event sink (abandoned at their timeout); the events stay pending"))
        }
        let launched = spawnThread { [self, controller] in
            let me = pthread_self()
            controller.lock.withLock { thread = me }
            let outcome = CallbackContext.run { sink.deliver(events, timeout: timeout) }
            controller.lock.withLock {
                if let running = thread, pthread_equal(running, me) != 0 { thread = nil }
                if slot.abandoned { stuck -= 1 } else { slot.outcome = outcome }
                controller.changed.broadcast()
            }
        }
        guard launched else {
            return .retry(ContentCardsError(.noMemory, "cannot start a thread for the event delivery; the events stay pending"))
        }
        return controller.lock.withLock {
            while true {
                if let outcome = slot.outcome { return outcome }
                if !controller.isOpenLocked {       // closed meanwhile: nothing to wait for
                    slot.abandoned = true
                    stuck += 1
                    return .retry(ContentCardsController.closedError)
                }
                if !controller.changed.wait(controller.lock, until: deadline) && monotonicSeconds() >= deadline && slot.outcome == nil {
                    slot.abandoned = true
                    stuck += 1
                    return .retry(ContentCardsError(.timeout, "the event sink did not return within \(Double(Int((timeout * 1000).rounded())) / 1000) s: the delivery was abandoned and the events stay pending"))
                }
            }
        }
    }

    /// Schedules a background delivery after the configured interval, if there is a sink, the
    /// interval is not 0, and none is scheduled yet.
    func scheduleDelivery(for controller: ContentCardsController) {
        guard sink != nil, controller.configuration.eventFlushIntervalSeconds > 0 else { return }
        let schedule: Bool = controller.lock.withLock {
            guard controller.isOpenLocked, !scheduled else { return false }
            scheduled = true
            return true
        }
        if schedule { runDelivery(after: controller.configuration.eventFlushIntervalSeconds, for: controller) }
    }

    /// At open: events left by an earlier run (a crash, a kill) go out within a second (unless
    /// the application delivers only when it flushes, eventFlushIntervalSeconds 0).
    func scheduleDeliveryIfPending(for controller: ContentCardsController) {
        controller.lock.withLock { scheduleDeliveryIfPendingLocked(for: controller) }
    }

    /// The same, with the controller's lock held (a deferred open finished: Controller+Kept.swift).
    func scheduleDeliveryIfPendingLocked(for controller: ContentCardsController) {
        guard let store = controller.store, sink != nil, controller.configuration.eventFlushIntervalSeconds > 0,
              !scheduled, ((try? store.pendingEventCount()) ?? 0) > 0 else { return }
        scheduled = true
        runDelivery(after: min(controller.configuration.eventFlushIntervalSeconds, 1), for: controller)
    }

    private func scheduleRetry(after error: ContentCardsError, for controller: ContentCardsController) {
        guard sink != nil else { return }
        let retry: (delay: Double, attempt: Int)? = controller.lock.withLock {
            guard controller.isOpenLocked else { return nil }
            attempt += 1
            if scheduled { return nil }   // one retry pending is enough
            scheduled = true
            let backoff = Backoff(base: controller.configuration.retryBaseSeconds, cap: controller.configuration.retryMaxSeconds)
            return (backoff.delay(attempt: attempt, retryAfter: error.retryAfter, random: Double.random(in: 0...1)), attempt)
        }
        if let retry {
            ContentCardsLog.emit(.info, "event delivery retry in \((retry.delay * 1000).rounded() / 1000) s (failed attempt \(retry.attempt))")
            runDelivery(after: retry.delay, for: controller)
        }
    }

    private func runDelivery(after delay: Double, for controller: ContentCardsController) {
        // A weak reference: a retry due in an hour must not keep a dropped controller alive.
        Scheduler.shared.schedule(after: delay, on: queue) { [weak controller] in
            guard let controller else { return }
            let delivery = controller.delivery
            let open: Bool = controller.lock.withLock {
                delivery.scheduled = false
                return controller.isOpenLocked
            }
            guard open else { return }
            _ = try? delivery.deliver(for: controller, until: monotonicSeconds() + controller.configuration.timeoutSeconds * 4)
        }
    }
}
