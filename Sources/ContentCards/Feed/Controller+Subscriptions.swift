/// Subscriptions (docs/BEHAVIOUR.md, "Users, subscriptions, threads, processes"): the
/// controller's side of them; the list, its locking and the order of callbacks are
/// Subscribers.swift's.
extension ContentCardsController {
    /// Adds a subscriber, called after every refresh, apply, user change and logged change.
    /// `onRemove` runs exactly once, when the subscriber is removed or the controller closes.
    @discardableResult
    public func subscribe(_ callback: @escaping @Sendable (FeedUpdate) -> Void,
                          onRemove: (@Sendable () -> Void)? = nil) throws(ContentCardsError) -> Subscription {
        // The subscriber list itself refuses once close has emptied it, so a subscribe that
        // crosses a close on another thread is either removed by that close or refused here.
        if isInherited { onRemove?(); throw Self.inheritedError }
        // A deferred open is finished first: the expiry timer a subscriber hears needs the cards.
        let opened: ContentCardsError? = lock.withLock {
            do throws(ContentCardsError) { _ = try liveStore(); return nil } catch { return error }
        }
        if let opened { onRemove?(); throw opened }
        guard let id = subscribers.add(callback, onRemove: onRemove) else {
            onRemove?()
            throw Self.closedError
        }
        return Subscription(id: id, subscribers: subscribers)
    }

    /// The state as an update (reason `.current`, the counts of the whole visible feed now):
    /// what a new subscriber draws before the first change reaches it. It is numbered as the
    /// updates are (`FeedUpdate.sequence`), so an update of an earlier state reaching the
    /// subscriber after it is known for one. (Not served from a kept feed: its counts and
    /// number are taken together from the store's state.)
    public func currentUpdate() throws(ContentCardsError) -> FeedUpdate {
        try refuseIfInherited()
        let state = try read { () -> UpdateState in
            let state = feed.updateState(now: clock.now())
            feed.publishBadge()       // a count may have recounted (a card expired)
            return state
        }
        return FeedUpdate(reason: .current, state: state)
    }

    /// Removes a subscriber by id; false when there is none (already removed, or closed).
    @discardableResult
    public func unsubscribe(_ id: UInt64) -> Bool { subscribers.remove(id) }
}

/// A subscription; `cancel()` unsubscribes (immediately, and idempotently).
///
/// It holds the controller's subscriber list (not the controller), so it stays valid after the
/// controller is gone; cancelling then does nothing. (Not a weak reference: Swift keeps weak
/// references in a side table that leak checkers cannot trace, and nothing here needs one.)
public final class Subscription: @unchecked Sendable {
    public let id: UInt64
    private let subscribers: Subscribers

    init(id: UInt64, subscribers: Subscribers) {
        self.id = id; self.subscribers = subscribers
    }

    /// Returns false when it was already cancelled.
    @discardableResult
    public func cancel() -> Bool { subscribers.remove(id) }
}
