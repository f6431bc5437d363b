/// Forgetting and exporting a user (docs/BEHAVIOUR.md, "Forgetting and exporting a user"): a
/// logout that leaves nothing behind, an erasure request, an access request.
///
/// What is a user's: the cards (visible or not, with their local state), the dismissals, the
/// cursors and the sync state with its ETag, the events in the outbox logged for the user, the
/// image files of the user's cache, and the token the provider gave for the user. Erasure
/// leaves no recoverable bytes in the store's files (`CardStore.erase`).

/// What to do with a forgotten user's events still in the outbox.
public enum PendingEventsChoice: String, Sendable, CaseIterable {
    /// Deliver them first; when they cannot be delivered, nothing is removed.
    case flush
    /// Remove them undelivered.
    case discard
}

/// What `forgetUser` removed.
public struct ForgetReceipt: Sendable, Equatable {
    public var userID: String
    public var cards = 0
    public var dismissals = 0
    public var eventsDelivered = 0
    public var eventsDiscarded = 0
    /// Cursors, sync state or ETag were stored and are gone.
    public var syncState = false
    public var images = 0
    /// The store's WAL was emptied and cut to nothing. False when another connection (another
    /// process) kept it: the bytes are overwritten at that connection's next checkpoint.
    public var walTruncated = false
    public init(userID: String) { self.userID = userID }
}

extension ContentCardsController {
    /// Everything stored for `user` (nil: the current user) as one JSON document, the same
    /// bytes in C, Python and Swift (docs/schema/export.schema.json).
    public func exportUser(_ user: String? = nil) throws(ContentCardsError) -> String {
        try refuseIfInherited()
        let (user, stored, events): (String, StoredUser, [Event]) = try lock.withLock { () throws(ContentCardsError) in
            let store = try liveStore()
            let user = user ?? userID
            do throws(StoreError) {
                return (user, try storedState(of: user, in: store), try store.events(of: user))
            } catch { throw ContentCardsError(.storage, "cannot read user \(Self.quoted(user)): \(error.message)") }
        }
        let cache = images.flatMap { sameUser(user, userIDNow) ? $0.current : $0.existingCache(for: user) }
        return Self.exportJSON(user: user, stored: stored, events: events, images: cache, now: clock.now())
    }

    /// Removes everything stored for `user` (nil: the current user); see the type's comment.
    /// With `.flush`, the user's pending events are delivered first (within `timeout`, default
    /// the configuration's) and nothing is removed when they cannot be. A batch of the user's
    /// events already out is waited for first, within `timeout` (`.timeout`, nothing removed;
    /// `.refused` from inside the events transport). Forgetting the current
    /// user leaves the controller open for it with nothing stored: subscribers are told
    /// (`.userForgotten`) and a refresh in flight is discarded.
    @discardableResult
    public func forgetUser(_ user: String? = nil, pending: PendingEventsChoice = .flush,
                           timeout: Double? = nil) throws(ContentCardsError) -> ForgetReceipt {
        try refuseIfInherited()
        let user = try lock.withLock { () throws(ContentCardsError) -> String in
            try checkOpen()
            return user ?? userID
        }
        // The flush first, then the wait for a delivery still running: both within the timeout.
        let deadline = monotonicSeconds() + Self.clampTimeout(timeout ?? configuration.timeoutSeconds)
        var delivered = 0
        if pending == .flush {
            let before = try pendingEvents(of: user)
            if before > 0 {
                guard delivery.sink != nil else {
                    throw ContentCardsError(.noSource, "user \(Self.quoted(user)) has \(before) events pending and no event sink is configured to deliver them: nothing was removed (forget with pending \"discard\" to remove them undelivered)")
                }
                // The user's own events: another user's that cannot go (a provider that has
                // no token for a user logged out) do not keep this one from being forgotten.
                do throws(ContentCardsError) { try flushEvents(timeout: timeout, only: user) } catch {
                    throw ContentCardsError(error.code, "user \(Self.quoted(user)) was not forgotten: its pending events could not be delivered first (\(error.message)); nothing was removed", retryAfter: error.retryAfter)
                }
                delivered = max(0, before - (try pendingEvents(of: user)))
            }
        }
        var receipt = ForgetReceipt(userID: user)
        receipt.eventsDelivered = delivered
        var compactionFailure: String?
        // The current user's image cache is taken under the lock, with the erase: read after
        // it, a user change in between made it the next user's, whose images were removed.
        let (imageURLs, currentCache, state): (Set<String>, ImageCache?, UpdateState?) = try lock.withLock { () throws(ContentCardsError) in
            // A delivery running now holds a batch it read before the erase, perhaps this
            // user's, and with a 401 would ask the provider for the user's token again after
            // the forget: waited for (bounded by the forget's timeout), and none can start
            // while the lock is held for the erase.
            try waitForNoDelivery(of: user, until: deadline)
            let store = try liveStore()
            let wasCurrent = sameUser(user, userID)
            do throws(StoreError) {
                let stored = try storedState(of: user, in: store)
                let erased = try store.erase(user: user)
                // An in-memory store keeps only the events: the rest is counted from memory.
                receipt.cards = store.isInMemory ? stored.cards.count : erased.cards
                receipt.dismissals = store.isInMemory ? stored.dismissed.count : erased.dismissals
                receipt.syncState = store.isInMemory ? (stored.cursors != SyncCursors() || stored.sync != SyncState()) : erased.syncState
                receipt.eventsDiscarded = erased.events
                receipt.walTruncated = erased.walTruncated || store.isInMemory
                compactionFailure = erased.compactionFailure
                otherUsers[UserKey(user)] = nil
                tokens.forget(user)
                let urls = Set(stored.cards.values.compactMap(\.image))
                guard wasCurrent else { return (urls, nil, nil) }
                // What the store holds for the user now, read with its data_version in one
                // snapshot (a commit of another process since the erase is loaded, not skipped).
                let (left, version) = try store.loadWithVersion(user: user, decoder: decoder)
                feed.publish(replacing: left)
                storeVersion = version
                refresher.lastSyncedAt = 0
                // A refresh in flight was for the cards just erased: its answer is discarded
                // (`forgotten` differs at its merge) and later refreshes start anew.
                forgotten &+= 1
                refresher.inFlight = nil
                record.leftOut = []
                return (urls, images?.current, updateState())
            } catch {
                // Partly erased, perhaps: what is in memory no longer vouches for the store. The
                // next read reloads it, and a close keeps no feed from it.
                storeVersion = -1
                throw ContentCardsError(.storage, "cannot forget user \(Self.quoted(user)): \(error.message) (the store is as it was, or partly erased: call again)")
            }
        }
        if state != nil {
            // The current user's stream: its connection (with the forgotten token), its last
            // event id and its backoff are dropped at once, not after the images' wait; it
            // connects again from nothing.
            lock.withLock { refresher.hintStream }?.restart(forgetting: true)
        }
        receipt.images = forgetImages(of: user, current: currentCache, urls: imageURLs, until: deadline)
        if let compactionFailure {
            ContentCardsLog.emit(.warning, "forgot user \(Self.quoted(user)), but the store could not be rewritten afterwards (\(compactionFailure)): the user's rows are gone and their bytes were zeroed; the file keeps its freed pages")
        }
        if let state {
            subscribers.notify(FeedUpdate(reason: .userForgotten, state: state))
        }
        ContentCardsLog.emit(.info, "forgot user \(Self.quoted(user)): \(receipt.cards) cards, \(receipt.eventsDelivered) events delivered, \(receipt.eventsDiscarded) discarded, \(receipt.images) images")
        return receipt
    }

    /// The user's events in the outbox.
    private func pendingEvents(of user: String) throws(ContentCardsError) -> Int {
        try lock.withLock { () throws(ContentCardsError) in
            let store = try liveStore()
            do throws(StoreError) { return try store.events(of: user).count } catch { throw ContentCardsError(.storage, error.message) }
        }
    }

    /// The user's stored state: the published one for the current user, else the store's (or,
    /// for an in-memory store, the copy kept in memory). Called with the lock held.
    private func storedState(of user: String, in store: CardStore) throws(StoreError) -> StoredUser {
        if sameUser(user, userID) { return feed.stored }
        if store.isInMemory { return otherUsers[UserKey(user)] ?? StoredUser() }
        return try store.load(user: user, decoder: decoder)
    }

    private var userIDNow: String { lock.withLock { userID } }

    /// Waits until no batch of `user`'s events is out, at most until `deadline` (monotonic):
    /// another user's delivery, or a drain of the whole outbox, is not waited for (once the
    /// erase has run, no batch of the user can be cut). Called with the lock held; refused from
    /// inside the events transport while the user's batch is out (it would wait for itself).
    private func waitForNoDelivery(of user: String, until deadline: Double) throws(ContentCardsError) {
        func userBatchOut() -> Bool { delivery.batchUser.map { sameUser($0, user) } ?? false }
        if userBatchOut() && delivery.isInsideSink(pthread_self()) {
            throw ContentCardsError(.refused, "forgetUser called from inside this controller's events transport callback, which the running delivery is waiting for: return from the callback first; nothing was removed")
        }
        if userBatchOut() && tokens.isProviding(pthread_self()) {
            throw ContentCardsError(.refused, "forgetUser called from inside this controller's token provider while the user's events are out, which wait for it: return from the provider first; nothing was removed")
        }
        while userBatchOut() {
            try checkOpen()
            if !changed.wait(lock, until: deadline) && monotonicSeconds() >= deadline && userBatchOut() {
                throw ContentCardsError(.timeout, "a delivery of events still runs (its sink has not answered): nothing was removed; forget again once it is over")
            }
        }
    }

    /// Removes the user's image files: the current user's cache (`current`, taken with the
    /// erase) is emptied and stays, in use; another user's is emptied and its directory
    /// removed. The files are those on the disk, not those this controller knew of: another
    /// controller or process of the user may have fetched some since.
    private func forgetImages(of user: String, current: ImageCache?, urls: Set<String>, until deadline: Double) -> Int {
        guard let images else { return 0 }
        // What is left of the forget's own timeout (at least a moment, to see a prefetch end):
        // the prefetch writes nothing more anyway (`stopWrites`), so a wait cut short leaves
        // no image behind; it only lets the fetch in flight finish before the last wipe.
        let wait = min(max(deadline - monotonicSeconds(), 0.01), Self.clampTimeout(configuration.timeoutSeconds * 2))
        if let current {
            var removed = current.removeEverything()
            // A prefetch running for the feed just emptied stops after its current image, which
            // it may not keep: its writes stop now, it is waited for (the empty feed's prefetch,
            // scheduled here, is what stops it), then the disk is wiped again.
            images.stopWrites(to: current.directory)
            prefetchImages()
            // Not from the prefetch itself (its transport callback or a log handler): it
            // would wait for itself.
            if !images.isWorkerThread { _ = images.wait(timeout: wait) }
            removed += current.removeEverything()
            return removed
        }
        guard let cache = images.existingCache(for: user) else { return 0 }
        var removed = cache.removeEverything()
        // A prefetch of the user's feed from before a user change stops after its current
        // image, which it may not keep: its writes stop now, it is waited for, then the disk
        // is wiped again.
        images.stopWrites(to: cache.directory)
        images.waitUntilNotWriting(to: cache.directory, timeout: wait)
        removed += cache.removeEverything()
        rmdir(cache.directory)
        return removed
    }

    /// The export document (docs/schema/export.schema.json).
    static func exportJSON(user: String, stored: StoredUser, events: [Event], images: ImageCache?, now: Double) -> String {
        var w = JSONWriter(reservingCapacity: 4096)
        w.beginObject()
        w.key("format"); w.int(1)
        w.key("user_id"); w.string(user)
        w.key("exported_at"); w.double(now)
        w.key("cards")
        w.beginArray()
        // In the feed's order of ids, so that two exports of the same state are the same bytes.
        for card in stored.cards.values.sorted(by: { $0.id < $1.id }) { appendJSON(CardJSON.encode(card), to: &w) }
        w.endArray()
        w.key("dismissed")
        w.beginArray()
        for id in stored.dismissed.map(\.id).sorted() { w.string(id) }
        w.endArray()
        w.key("sync")
        w.beginObject()
        w.key("last_full_sync_at"); w.int(stored.cursors.lastFullSyncAt)
        w.key("last_card_updated_at"); w.int(stored.cursors.lastCardUpdatedAt)
        w.key("etag"); w.string(stored.sync.validator)
        w.key("synced_at"); w.double(stored.sync.syncedAt)
        w.endObject()
        w.key("pending_events")
        w.beginArray()
        for event in events { appendJSON(EventJSON.encode(event), to: &w) }
        w.endArray()
        w.key("images")
        w.beginArray()
        if let images {
            for url in Set(stored.cards.values.compactMap(\.image)).sorted() {
                guard let bytes = images.size(of: url) else { continue }
                w.beginObject()
                w.key("url"); w.string(url)
                w.key("bytes"); w.int(bytes)
                w.endObject()
            }
        }
        w.endArray()
        w.endObject()
        return w.string
    }

    /// A value that is JSON already (a card's, an event's), as the next value of `w`.
    private static func appendJSON(_ json: String, to w: inout JSONWriter) {
        let bytes = Array(json.utf8)
        w.beginRawValue()
        bytes.withUnsafeBufferPointer { w.appendRaw($0) }
    }
}
