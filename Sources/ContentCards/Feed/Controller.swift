/// The Content Cards controller: one per open configuration (the rules: docs/BEHAVIOUR.md).
///
/// It refreshes cards from the configured source, merges them into a persistent per-user
/// store, serves the visible feed and its counts, logs impressions, clicks, dismissals and feed
/// displays as durable events, delivers those events, and notifies subscribers.
///
/// Threads: every method may be called from any thread. Two locks, taken in this order:
/// - `lock`, the writer's: it serializes every change (merges, logging, user changes) and guards
///   the state of the owners of refreshing (`refresher`) and event delivery (`delivery`). It is
///   held while a change is persisted, never during network I/O or while a subscriber runs.
/// - `feed.lock`, the readers': it guards the published feed (`feed`: the stored cards and
///   their index) and is held only for reads and for changes made in place, which cost
///   O(changes · log n). A change too large for that (a big sync) is built beside the published
///   state with only `lock` held, and swapped in. So counts and feeds never wait for a merge or
///   a store write, however big.
public final class ContentCardsController: @unchecked Sendable {
    public let configuration: Configuration
    let clock: Clock
    let eventIDs: EventIDGenerator
    let decoder: PayloadDecoder
    let subscribers = Subscribers()

    /// The writer's lock: guards everything below but the published feed.
    let lock = Lock()
    let changed = Condition()
    /// Log calls waiting to be written, together (LogBatch.swift); its own lock guards it.
    let logBatch = LogBatch()
    /// Its fork generation and first user: inherited in a child of fork() (Controller+Fork.swift).
    let forkGeneration = ForkSafety.generation
    let openedUserID: String
    /// The store; nil once closed, and while the open is deferred (`deferred`).
    var store: CardStore?
    /// The kept feed a deferred open serves from until the store is opened
    /// (Controller+Kept.swift); nil once the store is open.
    var deferred: KeptFeed?
    /// The store file's stamp the kept feed beside it was written for, and until when it is
    /// exact, when the deferred open was finished with the copy still standing (a close that
    /// finds the file so writes none again).
    var keptStanding: (stamp: String, validBefore: Double)?
    var userID: String
    /// The published feed (PublishedFeed.swift): the current user's cards, the index, the
    /// badge and the expiry timer, under the readers' lock (`feed.lock`, see the type's
    /// comment); changed only with both locks held, so a writer reads it with `lock` alone.
    let feed: PublishedFeed
    /// An in-memory store has no other connection to hear from: reads skip the version check.
    let storeIsInMemory: Bool
    /// An in-memory store's users other than the current one (its SQLite keeps only events).
    var otherUsers: [UserKey: StoredUser] = [:]
    /// Times the current user was forgotten: a refresh started before discards its answer.
    var forgotten = 0
    /// Times the user changed: a refresh started before discards its answer, even when the
    /// user changed back to its user meanwhile (its answer may be older than a later refresh's).
    var userChanges = 0
    /// The store's data_version when `stored` was loaded: another process's commit changes it.
    var storeVersion: Int64 = 0
    /// Refreshing: the source, the rate limit, the Retry-After circuit, the refresh in flight,
    /// the automatic refresh (Refresher.swift); its state is guarded by `lock`.
    let refresher: Refresher
    /// Tells the subscribers when a visible card expires (Controller+Expiry.swift).
    let expiryQueue = WorkQueue()
    /// The longest wait of an expiry timer before it looks at the wall clock again
    /// (`setExpiryTimer`); a test shortens it before arming.
    var expiryRecheckSeconds: Double = 60
    /// Event delivery: the sink, its schedule, backoff and attempts (EventDelivery.swift); its
    /// state is guarded by `lock`.
    let delivery: EventDelivery
    /// The host's transport, shared with the sources and sinks that use it.
    let hostTransport = HostTransportSlot()
    /// The host's token provider and the users' tokens (Sync/Tokens.swift), read by the source,
    /// the event sink and the hint stream when they send.
    let tokens = TokenSlot()
    var record = DiagnosticsRecord()

    /// The image cache and its prefetches, when `images` is configured.
    private(set) var images: ImagePrefetcher?

    /// Opens a controller. The clock and the event id generator are injected for tests; a
    /// transport may be given now or later with `setTransport`.
    public init(configuration given: Configuration, clock: Clock = SystemClock(),
                eventIDs: EventIDGenerator = RandomEventIDs(), transport: Transport? = nil) throws(ContentCardsError) {
        let configuration: Configuration
        // A configuration built in Swift has not been through the JSON reader's checks.
        do throws(ConfigurationError) { try ConfigurationRules.check(given) } catch {
            throw ContentCardsError(.config, error.message)
        }
        do { configuration = try given.resolvingRelativePaths() } catch { throw ContentCardsError(.storage, error.message) }
        self.configuration = configuration
        self.clock = clock
        self.eventIDs = eventIDs
        hostTransport.set(transport)
        delivery = EventDelivery(sink: Self.makeSink(configuration, hostTransport, tokens))
        decoder = PayloadDecoder(limits: .init(maxBytes: configuration.maxPayloadBytes, maxDepth: 64),
                                 knownClassTypes: configuration.knownClassTypes)
        userID = configuration.userID
        openedUserID = configuration.userID
        Self.prepareForFork()
        storeIsInMemory = configuration.storagePath == nil
        refresher = Refresher(source: Self.makeSource(configuration, hostTransport, tokens),
                              limiter: RateLimiter(capacity: configuration.refreshTokens,
                                                   interval: configuration.refreshIntervalSeconds, now: clock.now()))
        if let kept = Self.keptFeed(configuration, now: clock.now()) {
            // Opened without SQLite: the store is opened by the first call that needs it.
            feed = PublishedFeed(deferred: clock)
            deferred = kept
            refresher.lastSyncedAt = kept.syncedAt
        } else {
            do {
                let store = try CardStore(directory: configuration.storagePath)
                let (loaded, version) = try store.loadWithVersion(user: configuration.userID, decoder: decoder)
                feed = PublishedFeed(loaded, clock: clock)
                storeVersion = version
                refresher.lastSyncedAt = loaded.sync.syncedAt
                self.store = store
            } catch {
                throw ContentCardsError(.storage, error.message)
            }
        }
        if let limits = configuration.images, let root = configuration.storagePath {
            // Images go through the source's transport: the host's when it does the sync.
            let transport: @Sendable () -> Result<Transport, ContentCardsError>
            if case .callback? = configuration.source { transport = hostTransport.get } else { transport = { .success(CurlTransport()) } }
            do {
                images = try ImagePrefetcher(root: root, userID: configuration.userID, limits: limits,
                                             timeout: configuration.timeoutSeconds, transport: transport)
            } catch {
                store?.close()
                throw ContentCardsError(.storage, error.message)
            }
        }
        // The expiry timer, armed now: otherwise only a count would arm it, and a subscriber
        // of a reopened store would hear of no expiry until something read the counts.
        feed.armTimer = { [weak self] at in self?.setExpiryTimer(at: at) }
        feed.lock.withLock { feed.armExpiryTimer() }
        delivery.scheduleDeliveryIfPending(for: self)
        refresher.startAutoRefresh(for: self)
        startHintStream()
    }

    /// Opens a controller from configuration JSON (README.md, "Configuration").
    public convenience init(json: String, clock: Clock = SystemClock(),
                            eventIDs: EventIDGenerator = RandomEventIDs(), transport: Transport? = nil) throws(ContentCardsError) {
        let configuration: Configuration
        do { configuration = try ConfigurationJSON.decode(json) } catch {
            throw ContentCardsError(.config, error.message)
        }
        try self.init(configuration: configuration, clock: clock, eventIDs: eventIDs, transport: transport)
    }

    deinit { close() }

    private static func makeSource(_ configuration: Configuration, _ hostTransport: HostTransportSlot,
                                   _ tokens: TokenSlot) -> CardSource? {
        let max = configuration.maxPayloadBytes
        switch configuration.source {
        case nil: return nil
        case .file(let path): return FileSource(path: path, maxBytes: max)
        case .url(let base, let apiKey):
            return RemoteSource(url: base + "/content_cards/sync", apiKey: apiKey, maxBytes: max,
                                acceptsCompression: true, transport: { .success(CurlTransport()) }, tokens: tokens)
        case .callback:
            return RemoteSource(url: "/content_cards/sync", apiKey: "", maxBytes: max, transport: hostTransport.get, tokens: tokens)
        }
    }

    private static func makeSink(_ configuration: Configuration, _ hostTransport: HostTransportSlot,
                                 _ tokens: TokenSlot) -> EventSink? {
        switch configuration.events {
        case nil: return nil
        case .file(let path): return FileEventSink(path: path)
        case .url(let base, let apiKey):
            return RemoteEventSink(url: base + "/events", apiKey: apiKey, compression: EventCompression(),
                                   transport: { .success(CurlTransport()) }, tokens: tokens)
        case .callback:
            return RemoteEventSink(url: "/events", apiKey: "", transport: hostTransport.get, tokens: tokens)
        }
    }

    /// Sets (or with nil, removes) the host's token provider: from then on every sync, event
    /// batch and hint stream carries `Authorization: Bearer TOKEN` with the token it gives for
    /// the request's user (docs/WIRE.md, "Per-user tokens"). Tokens of an earlier provider are
    /// forgotten.
    public func setTokenProvider(_ provider: TokenProvider?) throws(ContentCardsError) {
        try refuseIfInherited()
        try lock.withLock { () throws(ContentCardsError) in try checkOpen() }
        // Refused when a close came in between (the slot closed): not installed on a closed
        // controller, and the provider is let go now (a C provider's free_userdata runs).
        guard tokens.set(provider) else { throw Self.closedError }
    }

    /// Sets (or with nil, removes) the host's transport, used where the configuration says
    /// `{"callback": true}`.
    public func setTransport(_ transport: Transport?) throws(ContentCardsError) {
        try refuseIfInherited()
        try lock.withLock { () throws(ContentCardsError) in try checkOpen() }
        guard hostTransport.set(transport) else { throw Self.closedError }
    }

    static let closedError = ContentCardsError(.closed, "the controller is closed")

    /// Fails with `.closed` once closed; a deferred open is open. Called with the lock held.
    func checkOpen() throws(ContentCardsError) {
        if !isOpenLocked { throw Self.closedError }
    }

    /// Reloads the user's state when another connection (another process, or another
    /// controller on the same storage) committed changes. Called with the lock held.
    func reloadIfChangedElsewhere() throws(ContentCardsError) {
        let store = try liveStore()
        guard !store.isInMemory else { return }
        do {
            if try store.dataVersion() != storeVersion {
                let (loaded, version) = try store.loadWithVersion(user: userID, decoder: decoder)
                feed.publish(replacing: loaded)
                storeVersion = version
            }
        } catch {
            throw ContentCardsError(.storage, error.message)
        }
    }

    /// Runs `body` in one write transaction of the store (the writes of `persist` and the reads
    /// of `reloadIfChangedElsewhere` inside it join it), committed when `body` returns and
    /// rolled back when it throws, its error rethrown as it is; a failed BEGIN or COMMIT is
    /// `.storage`. Called with the lock held.
    func inWriteTransaction(_ body: () throws(ContentCardsError) -> Void) throws(ContentCardsError) {
        let store = try liveStore()
        var failure: ContentCardsError?
        do throws(StoreError) {
            try store.db.transaction { () throws(StoreError) in
                do throws(ContentCardsError) { try body() } catch {
                    failure = error
                    throw StoreError(error.message)   // rolls the transaction back
                }
            }
        } catch {
            throw failure ?? ContentCardsError(.storage, "cannot save to the store: \(error.message)")
        }
    }

    /// Persists changes; on failure nothing in memory changes either. Called with the lock held.
    func persist(_ changes: StoreChanges, for user: String) throws(ContentCardsError) {
        let store = try liveStore()
        do { try store.apply(changes, user: user) } catch {
            throw ContentCardsError(.storage, "cannot save to the store: \(error.message)")
        }
    }

    /// Closes the store and removes every subscriber. Idempotent; later calls fail with `.closed`.
    /// A refresh or delivery still running finishes without touching anything. In a child of
    /// fork(), a controller opened before the fork is let go without touching anything
    /// (Controller+Fork.swift).
    public func close() {
        if isInherited { return }
        let wasOpen: Bool = lock.withLock {
            guard isOpenLocked else { return false }
            if let store { closeStore(store) }      // a deferred open has no store to close
            self.store = nil
            deferred = nil
            feed.close()
            changed.broadcast()
            return true
        }
        // Outside the lock: both run the host's free_userdata callbacks.
        if wasOpen {
            // Its timers leave the process-wide list now, not at their deadlines (a period
            // can be a year): the scheduler holds nothing of closed controllers.
            Scheduler.shared.cancel(on: timerQueues)
            lock.withLock { refresher.hintStream }?.stop()
            images?.close()
            hostTransport.close()
            tokens.close()
            subscribers.removeAll()
        }
    }

    /// True once closed; also in a child of fork() for a controller opened before the fork,
    /// which is not open there (Controller+Fork.swift).
    public var isClosed: Bool { isInherited || lock.withLock { !isOpenLocked } }

    /// The queues the process's `Scheduler` may hold this controller's timers for (the
    /// automatic refresh, expiry, delivery): cancelled at close.
    var timerQueues: [WorkQueue] { [refresher.queue, expiryQueue, delivery.queue] }

    // MARK: Reading (never any network I/O, never waiting for a writer)

    /// The visible feed in order (pinned, newest, id), optionally filtered by class types.
    public func cards(_ filter: ClassTypeFilter = .all) throws(ContentCardsError) -> [Card] {
        try refuseIfInherited()
        return withImagePaths(try read { () throws(ContentCardsError) in
            // Sized once (`compactMap` grows by doubling: new memory, new page faults, each time).
            let ids = feed.index.ids(filter, now: clock.now())
            var cards: [Card] = []
            cards.reserveCapacity(ids.count)
            for id in ids { if let card = feed.stored.cards[id] { cards.append(card) } }
            return cards
        })
    }

    /// The same cards as their boundary JSON (docs/WIRE.md, "Cards at the boundary"), the
    /// text `cc_controller_feed` returns: for handing a feed on (a web view, a cache, another
    /// process) without building a `Card` of each.
    public func cardsJSON(_ filter: ClassTypeFilter = .all) throws(ContentCardsError) -> String {
        try refuseIfInherited()
        if let kept = try servingKept(filter, { $0.text() }) { return kept }
        var none: [Int]? = nil
        return try feedJSON(filter, offsets: &none).string
    }

    /// The same JSON, NUL-terminated, in `malloc`ed memory the caller owns (what
    /// `cc_controller_feed` hands out, without a copy; a C caller frees it with
    /// `cc_string_free`, never `free`); nil when memory ran out.
    package func cardsJSONMalloced(_ filter: ClassTypeFilter = .all) throws(ContentCardsError) -> UnsafeMutablePointer<CChar>? {
        if let kept = try servingKept(filter, { $0.takeBody()?.text }) { return kept }
        var none: [Int]? = nil
        var writer = try feedJSON(filter, offsets: &none)
        return writer.takeMalloced()
    }

    /// The same JSON with where each card of it begins (`CardJSON.recordCard`): the card count
    /// plus one offsets, stored after the text in the same allocation (what
    /// `cc_controller_feed_indexed` hands out, for a binding that makes one object a card
    /// without scanning the text for where each begins). Nil when memory ran out.
    package func cardsJSONMallocedIndexed(_ filter: ClassTypeFilter = .all) throws(ContentCardsError)
        -> (text: UnsafeMutablePointer<CChar>, length: Int, offsets: UnsafePointer<Int>, count: Int)? {
        if let kept = try servingKept(filter, { $0.takeBody() }) { return kept }
        var offsets: [Int]? = []
        var writer = try feedJSON(filter, offsets: &offsets)
        let length = writer.byteCount
        guard let recorded = offsets, let taken = writer.takeMalloced(trailer: recorded) else { return nil }
        return (taken.text, length, taken.trailer, recorded.count - 1)
    }

    /// The visible feed's JSON, written under the readers' lock straight from the published
    /// cards: no array of copied cards between. Copying a card retains its strings and body,
    /// and releasing the array releases them again; in a large feed each of those is a cache
    /// miss (at 100,000 cards the copies and their release were a third of the feed's time).
    /// The lock is held while writing, about as long as the copies held it. With an image
    /// cache the cards are copied as before: their cached files are looked up outside the
    /// lock. `offsets`, when not nil, gets where each card begins (`CardJSON.recordCard`).
    private func feedJSON(_ filter: ClassTypeFilter, offsets: inout [Int]?) throws(ContentCardsError) -> JSONWriter {
        if images?.current != nil { return CardJSON.feed(try cards(filter), offsets: &offsets) }
        return try read { () throws(ContentCardsError) in feed.writeVisible(filter, now: clock.now(), offsets: &offsets) }
    }

    /// A stored card by id, visible or not (dismissed and expired cards are returned too, with
    /// their flags); `.notFound` when the user has no such card.
    public func card(id: String) throws(ContentCardsError) -> Card {
        try refuseIfInherited()
        return try read { () throws(ContentCardsError) in
            guard let card = feed.stored.cards[id] else { throw Self.unknownCard(id) }
            return withImagePaths([card])[0]
        }
    }

    static func unknownCard(_ id: String) -> ContentCardsError {
        ContentCardsError(.notFound, "no card with id \(quoted(id)) for the current user")
    }

    /// An id for a message: quoted, escaped and cut (`Redact.quoted`: an id can be megabytes
    /// long, and hold control characters).
    static func quoted(_ id: String) -> String { Redact.quoted(id) }

    /// Total and unviewed counts of the visible feed, optionally for a filter (one screen's badge).
    public func counts(_ filter: ClassTypeFilter = .all) throws(ContentCardsError) -> FeedCounts {
        try refuseIfInherited()
        if let kept = try servingKept(filter, { $0.counts }) { return kept }
        return try read { () throws(ContentCardsError) in
            let counts = feed.index.counts(filter, now: clock.now())
            feed.publishBadge()       // a count may have recounted (a card expired)
            return counts
        }
    }

    public func unviewedCount(_ filter: ClassTypeFilter = .all) throws(ContentCardsError) -> Int { try counts(filter).unviewed }
    public func totalCount(_ filter: ClassTypeFilter = .all) throws(ContentCardsError) -> Int { try counts(filter).total }

    /// The current user (in a child of fork(), of a controller opened before the fork: the
    /// user it was opened with, Controller+Fork.swift).
    public var currentUserID: String { isInherited ? openedUserID : lock.withLock { userID } }

    /// The counts of the visible feed now. Called with the lock held.
    func currentCounts() -> FeedCounts {
        feed.lock.withLock { feed.index.counts(.all, now: clock.now()) }
    }

    /// The counts for an update, numbered (`FeedUpdate.sequence`). Called with the lock held.
    func updateState(count: Int = 1) -> UpdateState {
        feed.lock.withLock { feed.updateState(now: clock.now(), count: count) }
    }
}
