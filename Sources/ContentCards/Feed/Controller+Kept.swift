/// The deferred open: a controller whose store has a kept feed that still stands for it
/// (`KeptFeed`) opens without SQLite, serves the unfiltered feed and counts from the copy, and
/// opens the store for anything else (docs/BEHAVIOUR.md, "The kept feed").
///
/// The rule that keeps it safe: every path that reads or changes the published feed with the
/// writer's lock held gets the store through `liveStore()` first (directly, or through
/// `reloadIfChangedElsewhere`, `inWriteTransaction` and `persist`, which do), and that finishes
/// a deferred open before anything else. Readers that find the open deferred wait for the
/// writer's lock and finish it too (`read`). Only the three reads below are served from the copy.
extension ContentCardsController {
    /// The kept feed an open may serve from, when the configuration allows one (a file store
    /// without an image cache, whose cached paths a copy cannot know) and the copy stands for
    /// the store now. Runs the store's trust checks first: an open that would fail still fails,
    /// the usual way, when the store is opened.
    static func keptFeed(_ configuration: Configuration, now: Double) -> KeptFeed? {
        guard let directory = configuration.storagePath, configuration.images == nil,
              let identity = KeptFeed.identity(user: configuration.userID, knownClassTypes: configuration.knownClassTypes)
        else { return nil }
        let location = CardStore.location(in: directory)
        guard access(KeptFeed.path(of: location), F_OK) == 0 else { return nil }
        do {
            try Files.prepareStorageDirectory(directory)
            try Files.prepareStoreFile(location)
        } catch {
            return nil
        }
        guard let kept = KeptFeed.load(store: location, identity: identity, now: now) else { return nil }
        // Events left waiting are delivered soon after an open: that needs the store.
        if kept.pendingEvents > 0 && configuration.events != nil && configuration.eventFlushIntervalSeconds > 0 { return nil }
        return kept
    }

    /// Open, or deferred (no store yet, but not closed). Called with the lock held.
    var isOpenLocked: Bool { store != nil || deferred != nil }

    /// The store, opened now when the open was deferred; `.closed` once closed, `.storage`
    /// when the deferred open fails (the controller stays deferred, and a later call tries
    /// again). Called with the lock held.
    func liveStore() throws(ContentCardsError) -> CardStore {
        if let store { return store }
        guard deferred != nil, let directory = configuration.storagePath else { throw Self.closedError }
        do {
            let store = try CardStore(directory: directory)
            let (loaded, version) = try store.loadWithVersion(user: userID, decoder: decoder)
            feed.publish(replacing: loaded)
            storeVersion = version
            refresher.lastSyncedAt = loaded.sync.syncedAt
            self.store = store
            // The copy stands for the file as it was loaded: a close that finds the file still so
            // leaves it as it is.
            if let kept = deferred, CheckStamp.current(of: store.location) == kept.stamp {
                keptStanding = (kept.stamp, kept.validBefore)
            }
            deferred = nil
            // A store changed since the copy was checked (the copy no longer served) may hold
            // events another run left: delivered as an open would have.
            delivery.scheduleDeliveryIfPendingLocked(for: self)
            return store
        } catch {
            throw ContentCardsError(.storage, error.message)
        }
    }

    /// What `body` makes of the kept feed, when the open is deferred and the copy still stands
    /// for the store; nil otherwise, and then the open is finished (when the copy no longer
    /// stands, or `body` had nothing: the feed's text was handed out already) so that the
    /// caller reads the store. Only for unfiltered reads.
    func servingKept<T>(_ filter: ClassTypeFilter, _ body: (KeptFeed) -> T?) throws(ContentCardsError) -> T? {
        try refuseIfInherited()     // a child of fork() reads nothing of its parent's
        guard !storeIsInMemory, filter.selectsAll, feed.lock.withLock({ feed.isDeferred }) else { return nil }
        return try lock.withLock { () throws(ContentCardsError) -> T? in
            guard let kept = deferred else {
                if store == nil { throw Self.closedError }
                return nil
            }
            if kept.stillServes(store: CardStore.location(in: configuration.storagePath ?? ""), now: clock.now()),
               let served = body(kept) {
                return served
            }
            _ = try liveStore()
            return nil
        }
    }

    /// The unfiltered feed for a kept copy at close, and what else a copy holds; nil when the
    /// feed is too large to be worth one. Called with the lock held, the store open.
    private func keptFeedAtClose() -> (writer: JSONWriter, offsets: [Int], counts: FeedCounts,
                                       writtenAt: Double, validBefore: Double, syncedAt: Double)? {
        feed.lock.withLock {
            guard feed.index.entries.count <= KeptFeed.maxBytes / 256 else { return nil }
            let now = clock.now()
            var offsets: [Int]? = []
            let writer = feed.writeVisible(.all, now: now, offsets: &offsets)
            guard !writer.failed, writer.byteCount <= KeptFeed.maxBytes, let offsets else { return nil }
            return (writer, offsets, feed.index.counts(.all, now: now), now,
                    feed.index.validBefore ?? .infinity, feed.stored.sync.syncedAt)
        }
    }

    /// Closes the store, leaving a kept feed beside it when one may be written (not with an
    /// image cache, whose paths a copy cannot know) and the one there does not stand for the
    /// file already (`keptStanding`): `CardStore.close(keeping:)`. Called with the lock held.
    func closeStore(_ store: CardStore) {
        guard !storeIsInMemory, images == nil,
              let identity = KeptFeed.identity(user: userID, knownClassTypes: configuration.knownClassTypes) else {
            store.close()
            return
        }
        store.close(keeping: { stamp, sum, pending in
            guard let kept = self.keptFeedAtClose() else { return false }
            kept.writer.withBytes { text in
                let contents = KeptFeedFile.Contents(text: text, offsets: kept.offsets, counts: kept.counts,
                                                     writtenAt: kept.writtenAt, validBefore: kept.validBefore,
                                                     syncedAt: kept.syncedAt, pendingEvents: pending)
                KeptFeedFile.save(store: store.location, identity: identity, stamp: stamp, storeSum: sum, feed: contents)
            }
            return true
        }, standing: standingKeptStamp(), version: storeVersion)
    }

    /// The stamp the kept feed beside the store stands for, if it is the current user's and
    /// no card of it expired since (a copy to write again otherwise).
    private func standingKeptStamp() -> String? {
        guard let standing = keptStanding, sameUser(userID, openedUserID), clock.now() < standing.validBefore else { return nil }
        return standing.stamp
    }
}
