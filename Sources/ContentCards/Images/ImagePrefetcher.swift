/// What the image cache did, for `waitForImages` (and tests).
public struct ImageStats: Sendable, Equatable {
    /// Images fetched by this controller since it opened: stored, or known not to fit beside
    /// the feed's earlier images (then not written).
    public var fetched = 0
    /// Fetches that failed (network, HTTP status, over `maxImageBytes`, a write), since open.
    public var failed = 0
    /// Images the current user's cache holds now, and their bytes.
    public var cached = 0
    public var bytes = 0
    /// Prefetches still queued or running (0 after a wait that did not time out): at most 2,
    /// one running and the latest feed's waiting (prefetches coalesce: the latest feed wins).
    public var pending = 0
    public init() {}
}

/// Prefetches the images of the visible cards after a refresh (docs/BEHAVIOUR.md, "Images"), on a
/// background queue of its own, through the controller's transport for the source (libcurl, or
/// the host transport). A failure is counted and logged, never thrown: the refresh that
/// scheduled it has already returned.
///
/// Prefetches coalesce: at most one runs and one waits, the latest feed's. A newer feed
/// replaces the waiting one, and the running one stops after its current image, so an image
/// server that never answers costs one stuck fetch at a time, never a queue that grows with
/// every refresh.
final class ImagePrefetcher: @unchecked Sendable {
    let root: String
    let limits: Configuration.Images
    let timeout: Double
    private let transport: @Sendable () -> Result<Transport, ContentCardsError>
    private let queue = WorkQueue()
    private let lock = Lock()
    private let done = Condition()
    private var cache: ImageCache
    private var stats = ImageStats()
    private var closed = false
    /// The latest feed's prefetch, waiting for the running one.
    private var next: Request?
    /// A prefetch runs (or its drain is queued).
    private var running = false
    /// The directory of the cache the running prefetch writes to, and the thread running it
    /// (nil between prefetches).
    private var runningDirectory: String?
    private var worker: pthread_t?
    /// The running prefetch may write nothing more (its user was forgotten): set by
    /// `stopWrites`, cleared when the next prefetch starts.
    private var writesStopped = false

    private struct Request {
        let cache: ImageCache
        let visible: [String]
        /// Every stored card's image URL (repeats allowed: compared by their files' names).
        let stored: [String]
    }

    init(root: String, userID: String, limits: Configuration.Images, timeout: Double,
         transport: @escaping @Sendable () -> Result<Transport, ContentCardsError>) throws(Files.Failure) {
        self.root = root; self.limits = limits; self.timeout = timeout; self.transport = transport
        cache = try ImageCache(root: root, userID: userID, limits: limits)
    }

    /// The current user's cache.
    var current: ImageCache { lock.withLock { cache } }

    /// Another user's cache, opened (created if needed) but not used yet: a user change opens
    /// it first, and switches to it (`use`) only once the rest of the change succeeded.
    func cache(for userID: String) throws(Files.Failure) -> ImageCache {
        try ImageCache(root: root, userID: userID, limits: limits)
    }

    /// Another user's cache when its directory exists (nothing is created): for reading it
    /// (an export) or emptying it (a forgotten user).
    func existingCache(for userID: String) -> ImageCache? {
        let base = root.hasSuffix("/") ? root + "images" : root + "/images"
        guard access(base + "/" + ImageCache.hash(userID), F_OK) == 0 else { return nil }
        do throws(Files.Failure) { return try ImageCache(root: root, userID: userID, limits: limits) } catch {
            // Not emptied nor read (a link, or open to others): said, not passed over in silence.
            ContentCardsLog.emit(.warning, "image cache of another user left as it is: \(error.message)")
            return nil
        }
    }

    /// Switches to another user's cache. A prefetch running for the previous user's feed
    /// stops after its current image (`superseded`): it would go on filling the cache of a
    /// user no longer current, whom a forget may be emptying.
    func use(_ next: ImageCache) {
        lock.withLock { cache = next }
    }

    /// Nothing is queued or running (for tests).
    var isIdle: Bool { lock.withLock { !running } }

    /// The calling thread runs the prefetch (its transport call, or a log handler it called):
    /// a wait for the prefetches would wait for itself.
    var isWorkerThread: Bool {
        lock.withLock { worker.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Waits at most `timeout` seconds until no prefetch runs on the cache in `directory` (a
    /// user no longer current, being forgotten); true if none does (or the caller is the
    /// prefetch itself, which cannot be waited for).
    @discardableResult
    func waitUntilNotWriting(to directory: String, timeout: Double) -> Bool {
        let deadline = monotonicSeconds() + timeout
        return lock.withLock {
            if let worker, pthread_equal(worker, pthread_self()) != 0 { return true }
            while runningDirectory == directory {
                if !done.wait(lock, until: deadline) && monotonicSeconds() >= deadline { return false }
            }
            return true
        }
    }

    /// From now on, the running prefetch writes nothing more into `directory` (the user whose
    /// cache it is is being forgotten): an image it fetches is dropped, even one whose file is
    /// being written (its rename is checked under this lock). So a wait for it that times out
    /// leaves nothing behind.
    func stopWrites(to directory: String) {
        lock.withLock {
            if runningDirectory == directory { writesStopped = true }
            // A prefetch of the same cache still queued (the feed from before the forget) would
            // start with writes allowed again: dropped (the forget schedules the empty feed's).
            if next?.cache.directory == directory {
                next = nil
                stats.pending = running ? 1 : 0
            }
        }
    }

    func close() {
        lock.withLock {
            closed = true
            done.broadcast()
        }
    }

    /// Queues a prefetch: the images of `visible` (feed order) up to `maxCount`, after dropping
    /// the cached images of no stored card (`stored`: every stored card's image). It replaces
    /// a prefetch still waiting, and stops the running one after its current image.
    /// `into`: the cache of the user whose feed this is, read with the feed (a user change may
    /// have switched `cache` since); a feed of a user no longer current is not fetched.
    func schedule(visible: [String], stored: [String], into target: ImageCache) {
        let start: Bool = lock.withLock {
            if closed || target !== cache { return false }
            next = Request(cache: target, visible: visible, stored: stored)
            stats.pending = running ? 2 : 1
            if running { return false }
            running = true
            return true
        }
        if start { queue.async { [self] in drain() } }
    }

    /// Runs the waiting prefetch, and the next one, until none waits.
    private func drain() {
        while true {
            let request: Request? = lock.withLock {
                guard !closed, let request = next else {
                    next = nil
                    running = false
                    stats.pending = 0
                    done.broadcast()
                    return nil
                }
                next = nil
                stats.pending = 1
                runningDirectory = request.cache.directory
                writesStopped = false
                worker = pthread_self()
                return request
            }
            guard let request else { return }
            prefetch(request)
            lock.withLock {
                runningDirectory = nil
                worker = nil
                done.broadcast()
            }
        }
    }

    /// True when the running prefetch should stop: closed, a newer feed waits, or the user
    /// changed (the request's cache is no longer the current one).
    private func superseded(_ request: Request) -> Bool {
        lock.withLock { closed || next != nil || cache !== request.cache }
    }

    /// Closed since the request was sent: a fetch that comes back then keeps nothing (the host
    /// may be removing the storage directory after the close returned).
    private var isClosed: Bool { lock.withLock { closed } }

    private func prefetch(_ request: Request) {
        let cache = request.cache
        // The directory may have gone since the open (another controller forgot this user, the
        // host removed it): made again, for the current user only (a request queued before a
        // user change must not make a forgotten user's directory again: it only cleans what
        // is there, then stops). One that became a link or open to others is not written
        // into, nor cleaned.
        if lock.withLock({ self.cache === request.cache }) {
            do throws(Files.Failure) { try cache.ensureDirectory() } catch {
                ContentCardsLog.emit(.warning, "image cache: \(error.message); no image fetched")
                return
            }
        }
        // The disk is the truth: other controllers of this user may have fetched or evicted.
        cache.scan()
        let removed = cache.keepOnly(request.stored)
        if removed > 0 { ContentCardsLog.emit(.debug, "image cache: removed \(removed) images of cards that are gone") }
        var wanted: [String] = []
        var feed: [String] = []
        // By the URL's file name, a hash of its bytes: a set of `String`s took two canonically
        // equivalent URLs (two files on the server) for one, and fetched only the first.
        var seen = Set<String>()
        for url in request.visible where wanted.count < limits.maxCount {
            // One that would not be fetched takes no slot, and an old copy of it is not kept.
            guard ImageCache.holdsNoControl(url), Self.isHTTP(url) else { continue }
            let file = ImageCache.hash(url)
            if seen.insert(file).inserted { wanted.append(url); feed.append(file) }
        }
        // Within the bounds before any fetch (they may have been lowered since, or other
        // controllers added files), the feed's first images kept longest.
        cache.evict(keeping: feed)
        // Bytes of this feed's images kept so far, in feed order: an image known not to fit
        // beside them is not fetched again (it would be evicted at once).
        var used = 0
        for url in wanted {
            if superseded(request) { break }
            if cache.touch(url, now: Self.now()) {
                used += cache.size(of: url) ?? 0
                continue
            }
            if let size = cache.sizeThatDidNotFit(url), used + size > limits.maxBytes { continue }
            let outcome = fetch(url, into: cache, room: limits.maxBytes - used)
            lock.withLock { if outcome != .failed { stats.fetched += 1 } else { stats.failed += 1 } }
            if case .didNotFit(let size) = outcome {
                // Known before it is written: stored, it would have pushed out the images of
                // the feed's later cards first, then itself.
                cache.noteDidNotFit(url, bytes: size)
                ContentCardsLog.emit(.debug, "image cache: \(Redact.url(url)) (\(size) bytes) does not fit beside the feed's earlier images; not fetched again for this feed")
                continue
            }
            guard outcome == .stored, !isClosed else { continue }
            // Within bounds after every image, this feed's first images kept longest.
            used += cache.size(of: url) ?? 0
            cache.evict(keeping: feed)
        }
    }

    private static func now() -> Double { SystemClock().now() }

    private static func isHTTP(_ url: String) -> Bool {
        let scheme = url.prefix(8).lowercased()
        return scheme.hasPrefix("http://") || scheme.hasPrefix("https://")
    }

    private enum Fetched: Equatable {
        case stored, failed
        /// Fetched, over the room left beside the feed's earlier images: not written.
        case didNotFit(Int)
    }

    private func fetch(_ url: String, into cache: ImageCache, room: Int) -> Fetched {
        let shown = Redact.url(url)
        let sent: Result<TransportResponse, ContentCardsError> = transport().flatMap { t in
            CallbackContext.run {
                t.send(TransportRequest(kind: .image, url: url, headers: [], body: [], timeout: timeout,
                                        maxResponseBytes: limits.maxImageBytes))
            }
        }
        switch sent {
        case .failure(let e):
            ContentCardsLog.emit(.info, "image fetch failed (\(e.code.statusName)) for \(shown): \(e.message)")
            return .failed
        case .success(let response):
            // 200 (or 203, the same through a proxy): a 206 is part of an image (the library
            // asks for no range), another 2xx no image at all.
            guard response.status == 200 || response.status == 203, !response.body.isEmpty else {
                ContentCardsLog.emit(.info, "image fetch failed for \(shown): HTTP \(response.status)\(response.body.isEmpty ? ", empty body" : "")")
                return .failed
            }
            guard response.body.count <= limits.maxImageBytes else {
                ContentCardsLog.emit(.info, "image not kept: \(shown) is \(response.body.count) bytes, over images.maxImageBytes (\(limits.maxImageBytes))")
                return .failed
            }
            guard response.body.count <= room else { return .didNotFit(response.body.count) }
            // The file renamed into place under the lock that `close` and `stopWrites` take: once
            // either returned, no image of this prefetch appears.
            let publish: (() -> Bool) -> Bool = { [self] rename in lock.withLock { closed || writesStopped ? false : rename() } }
            guard cache.store(url, response.body, now: Self.now(), publish: publish) else {
                if lock.withLock({ closed || writesStopped }) {
                    ContentCardsLog.emit(.debug, "image not kept: \(shown) came after the controller closed or its user was forgotten")
                } else {
                    ContentCardsLog.emit(.warning, "image cache: cannot write the image of \(shown) in \(cache.directory): \(Files.describeErrno(errno))")
                }
                return .failed
            }
            ContentCardsLog.emit(.debug, "image cached: \(shown) (\(response.body.count) bytes)")
            return .stored
        }
    }

    /// Waits until no prefetch is queued or running, at most `timeout` seconds; the stats then.
    func wait(timeout: Double) -> ImageStats {
        let deadline = monotonicSeconds() + timeout
        var s: ImageStats = lock.withLock {
            while running && !closed {
                if !done.wait(lock, until: deadline) && monotonicSeconds() >= deadline { break }
            }
            return stats
        }
        (s.cached, s.bytes) = current.usage
        return s
    }
}
