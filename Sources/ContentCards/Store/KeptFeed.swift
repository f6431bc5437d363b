/// The visible feed as a clean close left it, kept beside the store
/// (`contentcards.sqlite-feed`), so that the next open can serve its first feed and counts
/// without opening SQLite (docs/BEHAVIOUR.md, "The kept feed").
///
/// Why: a process that opens a store of 1,000 cards, reads the feed and exits spent most of
/// its time in SQLite's open, reading and checking the records and building the index, none of
/// which a first screen needs when nothing changed since the last close. SQLite alone reading
/// the same rows is 2.7–3× an empty process, the goal for the whole process is 3×
/// (docs/PERFORMANCE.md, "Cold start").
///
/// The copy is trusted only for the store file it was written for, byte for byte: it holds
/// the file's `CheckStamp` and the XXH64 of all its bytes, both taken while the writer held
/// SQLite's write lock and the WAL was empty (so the file held every commit and none could
/// land). An open uses it only when the stamp is the file's now, the WAL is empty, and the
/// file's times are older than `settled`; and, until one open has found the file's bytes
/// summing to the copy's sum with the times settled, only when they do (a write in the same
/// clock tick as the copy's could leave the same times; once the times are settled any later
/// write moves them). It is also tied to the user, the configuration options that shape a
/// card (`knownClassTypes`), the library's build (`BuildIdentity`) and the controller's clock:
/// written at one time and exact until the next expiry among its cards. Any mismatch: the
/// open opens the store as it always did; a stale copy is never served, whatever its age.
/// The file's layout: KeptFeedFile.swift.
final class KeptFeed {
    let textLength: Int
    let cardCount: Int
    let counts: FeedCounts
    /// The controller's time when the copy was written, and until when the feed is exact (the
    /// next expiry; +infinity: none): a copy serves only between the two (a clock set back
    /// would see cards the copy left out as expired).
    let writtenAt: Double
    let validBefore: Double
    /// The user's last sync (`SyncState.syncedAt`), which the automatic refresh compares with.
    let syncedAt: Double
    /// Events waiting in the store's outbox at the close: an open that would schedule their
    /// delivery opens the store.
    let pendingEvents: Int
    /// The store file's stamp when the copy was written (`CheckStamp.current`).
    let stamp: String

    /// The visible feed's JSON with its card offsets, in `malloc`ed memory laid out as
    /// `cc_controller_feed_indexed` hands it out: the text, a NUL, then (aligned for `Int`) the
    /// card count + 1 offsets. Read from the file straight into it, and handed out by the
    /// first feed without a copy; nil after that (a later feed opens the store).
    private var body: UnsafeMutableRawPointer?
    let bodyLength: Int

    init(body: UnsafeMutableRawPointer, bodyLength: Int, textLength: Int, cardCount: Int, counts: FeedCounts,
         writtenAt: Double, validBefore: Double, syncedAt: Double, pendingEvents: Int, stamp: String) {
        self.body = body; self.bodyLength = bodyLength; self.textLength = textLength; self.cardCount = cardCount
        self.counts = counts; self.writtenAt = writtenAt; self.validBefore = validBefore; self.syncedAt = syncedAt
        self.pendingEvents = pendingEvents; self.stamp = stamp
    }

    deinit { free(body) }

    /// A file's times must be this much older than now for an open to trust its stamp alone
    /// afterwards: file systems stamp times from a clock that moves in ticks (4 ms at 250 Hz),
    /// so a write in the same tick as an earlier one can leave the same times.
    static let settled = 0.05
    /// No copy for a store file or a feed larger than this: summing the file and reading the
    /// copy grow with them, where the open they replace grows more slowly.
    static let maxBytes = 16 << 20

    static func path(of store: String) -> String { store + "-feed" }

    /// What ties a copy to the controller reading it: the library's build, the user and the
    /// options that change how a stored card reads back, each part prefixed with its length;
    /// nil when the build cannot be told (then no copy is written or read).
    static func identity(user: String, knownClassTypes: Set<String>?) -> String? {
        guard let build = BuildIdentity.current else { return nil }
        var identity = ""
        func add(_ part: String) { identity += String(part.utf8.count); identity += ":"; identity += part }
        add(build)
        add(user)
        if let types = knownClassTypes {
            add("known")
            for t in types.sorted() { add(t) }
        } else {
            add("any")
        }
        return identity
    }

    // MARK: Reading

    /// The copy beside `store`, when it can be served at `now` (the controller's clock, for the
    /// expiries) for `identity` (see the type's comment); nil otherwise, and then the open
    /// proceeds as if there were none.
    static func load(store: String, identity: String, now: Double) -> KeptFeed? {
        guard let stamp = CheckStamp.current(of: store), settledTimes(store) else { return nil }
        // Not confirmed: the store's bytes must sum to the copy's sum; then, the times being
        // settled, from now on the stamp alone says whether the file changed (the read marks it).
        return KeptFeedFile.read(path(of: store), identity: identity, stamp: stamp) { read in
            read.feed.serves(at: now) && (read.confirmed || StoreFileSum.of(store) == read.storeSum)
        }
    }

    /// Whether the copy still stands for the store: the file's stamp unchanged since it was
    /// loaded (the times were settled then, so any write since moved them) and no expiry yet.
    func stillServes(store: String, now: Double) -> Bool {
        serves(at: now) && CheckStamp.current(of: store) == stamp
    }

    func serves(at now: Double) -> Bool { writtenAt <= now && now < validBefore }

    /// The body for the caller to own (freed with `free`), and where its parts are; nil once
    /// handed out.
    func takeBody() -> (text: UnsafeMutablePointer<CChar>, length: Int, offsets: UnsafePointer<Int>, count: Int)? {
        guard let raw = body else { return nil }
        body = nil
        let offsets = raw + (bodyLength - (cardCount + 1) * MemoryLayout<Int>.stride)
        return (raw.assumingMemoryBound(to: CChar.self), textLength, UnsafePointer(offsets.assumingMemoryBound(to: Int.self)), cardCount)
    }

    /// The text as a `String` (a copy; the body stays); nil once handed out.
    func text() -> String? {
        guard let raw = body else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: raw, count: textLength), as: UTF8.self)
    }

    /// The file's times against `now` (a time the file system gave) or the wall clock (the
    /// file system's on a local one, the only kind SQLite's WAL works on; never a controller's
    /// clock, which tests set to any time).
    static func settledTimes(_ store: String, now given: (seconds: Int, nanoseconds: Int)? = nil) -> Bool {
        var st = stat()
        var wall = timespec()
        guard lstat(store, &st) == 0, clock_gettime(CLOCK_REALTIME, &wall) == 0 else { return false }
        func seconds(_ t: (seconds: Int, nanoseconds: Int)) -> Double { Double(t.seconds) + Double(t.nanoseconds) / 1e9 }
        let now = seconds(given ?? (Int(wall.tv_sec), Int(wall.tv_nsec)))
        let latest = max(seconds(Platform.modificationTime(st)), seconds(Platform.changeTime(st)))
        return now - latest >= settled
    }
}
