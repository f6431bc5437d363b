import CSQLite
/// Checkpoints of a file store's WAL on a library thread of the store's own, never on the
/// writer's: SQLite's automatic checkpoint runs inside the commit that crosses 1,000 WAL frames,
/// and with its fsyncs (synchronous=NORMAL syncs at each checkpoint) that commit took
/// milliseconds: one logged impression in about 300 was 1 to 25 ms. The writer's connection
/// gets a WAL hook instead (which turns its automatic checkpoints off) that, past the same
/// 1,000 frames, asks this object for a PASSIVE checkpoint on a second connection to the file:
/// it copies what no reader still needs and never blocks the writer, who goes on appending.
///
/// Under writes that never pause the background cannot finish (see `highWater`): the writer
/// then checkpoints itself, once per 4,000 frames instead of 1,000, and copies only what the
/// background has not.
///
/// Durability is as before: a commit is in the WAL when the call returns (a killed process
/// loses nothing); only where the copy into the database file runs has moved.
final class Checkpointer: @unchecked Sendable {
    /// WAL frames after a commit that start a checkpoint: SQLite's own default.
    static let frames: Int32 = 1000
    /// WAL frames past which the writer checkpoints itself: the bound on the WAL (16.5 MB of
    /// 4 KiB pages, each frame a page and a 24-byte header) under writes that never pause.
    static let highWater: Int32 = 4000
    /// What a WAL is cut back to after a checkpoint (`journal_size_limit`): above its size at
    /// `highWater`, so that the WAL the writer's own checkpoint lets start over is reused as
    /// it is, not cut back first (an `ftruncate` and an `fdatasync`: 3 to 4 ms of the next
    /// logged impression, measured with the limit at 4 MiB). The WAL is no larger at its
    /// largest than before; a WAL that a large sync grew past the limit is still cut back, and
    /// a closed store's to nothing.
    static let walSizeLimit = 20 << 20

    private let path: String
    private let queue = WorkQueue()
    /// Guards the state below, and is never held while SQLite runs: the WAL hook takes it from
    /// inside a commit (a fork-guarded section of SQLite), so a checkpoint waiting for that
    /// guard with it held would deadlock against a fork() waiting for the commit to end.
    private let lock = Lock()
    private let idle = Condition()
    private var connection: SQLiteDatabase?
    private var scheduled = false
    private var closed = false
    /// The WAL's frames when a checkpoint was last asked for (0: none since it started over).
    private var askedAt: Int32 = 0
    /// A checkpoint (this object's, or the writer's own through `exclusive`) is running.
    private var running = false
    private var completed = 0
    /// The most WAL frames a background checkpoint found copied into the database file.
    private var copied: Int32 = 0
    /// Checkpoints the writer ran itself at `highWater`.
    private var writerCopies = 0
    /// The WAL's frames after the latest commit, and what the latest background run found
    /// copied of them.
    private var lastFrames: Int32 = 0
    private var copiedThrough: Int32 = -1
    /// A run is waiting on the scheduler for the frames written during the last one.
    private var tailArmed = false
    /// How long after a run the frames written during it are copied (see `run`).
    static let tailDelay = 0.1

    init(path: String) { self.path = path }

    /// Checkpoints run so far (tests, diagnostics).
    var runs: Int { lock.withLock { completed } }
    /// The most WAL frames one of them found copied (tests: a checkpoint that copies nothing
    /// is no checkpoint).
    var framesCopied: Int { lock.withLock { Int(copied) } }
    /// Checkpoints the writer had to run itself, the background having fallen behind.
    var writerCheckpoints: Int { lock.withLock { writerCopies } }
    /// Whether the latest background run copied every frame written so far (the next commit
    /// then starts the WAL over).
    var caughtUp: Bool { lock.withLock { copiedThrough == lastFrames } }

    /// Hooks the writer's connection: from now on its commits ask for checkpoints here.
    func install(on db: SQLiteDatabase) {
        sqlite3_wal_hook(db.handle, { context, handle, _, frames in
            guard let context else { return SQLITE_OK }
            let checkpointer = Unmanaged<Checkpointer>.fromOpaque(context).takeUnretainedValue()
            if frames >= Checkpointer.highWater {
                // Writes outpaced the background checkpoints, whose copies never catch up with
                // a WAL that keeps growing (a WAL restarts only once wholly copied): the writer
                // copies what is left itself, as SQLite would, so the next commit restarts it.
                checkpointer.lock.withLock { checkpointer.writerCopies += 1 }
                _ = sqlite3_wal_checkpoint_v2(handle, "main", SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            } else {
                // Every commit, also below the mark: the frame count falling is how a restart
                // of the WAL is seen (asked only past the mark, a restart went unseen whenever
                // the count came back to exactly where the last checkpoint was asked for, and
                // the next was asked for at twice the mark).
                checkpointer.schedule(frames: frames)
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Removes the hook (before the writer's connection closes: the hook's context is this
    /// object, unretained).
    func uninstall(from db: SQLiteDatabase) {
        if db.handle != nil && !db.isInherited { sqlite3_wal_hook(db.handle, nil, nil) }
    }

    /// Asks for a checkpoint when the WAL grew another `frames` since the last one asked for.
    /// Once a background checkpoint has run, the WAL stays over the mark until the writer finds
    /// it wholly copied and starts it over, which under writes that never pause it rarely
    /// does: asking at every commit queued a run on a library thread for almost every commit
    /// (3,800 thread wake-ups in 6,000 logged impressions) that had next to nothing to copy.
    private func schedule(frames: Int32) {
        let start: Bool = lock.withLock {
            if frames < lastFrames {                // the WAL started over: none of it copied
                askedAt = 0
                copiedThrough = -1
            }
            lastFrames = frames
            guard frames >= askedAt + Self.frames, !scheduled && !closed && !running else { return false }
            askedAt = frames
            scheduled = true
            return true
        }
        if start { queue.async { [self] in run() } }
    }

    private func run(tail: Bool = false) {
        // The run is this thread's from here: `close` and `exclusive` wait for `running` to
        // end before they touch `connection`, so it is used below without the lock (which is
        // never held while SQLite runs: see `lock`).
        let claimed: Bool = lock.withLock {
            if !tail { scheduled = false }
            guard !closed, !running else { return false }
            // A follow-up that finds nothing written since the last copy has nothing to do.
            if tail && copiedThrough == lastFrames { return false }
            running = true
            return true
        }
        guard claimed else { return }
        var copiedNow: Int32 = -1
        defer {
            // A run copies the frames written before it began; those written meanwhile wait
            // for the next. Under writes that go on, that is the next mark; when they stop
            // (a burst of logging, then a pause) nothing would ask, the WAL could not start
            // over, and it would grow burst after burst to `highWater`, where the writer
            // copies it itself (4-5 ms of one call). So a run that copied something is
            // followed by another `tailDelay` later, until one finds nothing new: the writer
            // has paused, the WAL is wholly copied, and its next commit starts it over.
            let armTail: Bool = lock.withLock {
                running = false
                var progressed = false
                if copiedNow >= 0 {
                    completed += 1
                    copied = max(copied, copiedNow)
                    progressed = copiedNow != copiedThrough
                    copiedThrough = copiedNow
                }
                idle.broadcast()
                guard progressed, !closed, !tailArmed else { return false }
                tailArmed = true
                return true
            }
            if armTail {
                Scheduler.shared.schedule(after: Self.tailDelay, on: queue) { [self] in
                    lock.withLock { tailArmed = false }
                    run(tail: true)
                }
            }
        }
        if connection == nil {
            // A connection that has read nothing has not opened the WAL, and SQLite takes a
            // checkpoint asked of it for one of a database not in WAL mode: it returns at
            // once, copying nothing (its frame counts are -1). Every background checkpoint
            // before this read did just that, and the writer copied the whole WAL itself at
            // `highWater`: a logged impression in 4,000 took 12 to 20 ms (docs/PERFORMANCE.md).
            // A failure here only leaves the WAL longer: the next commit past the mark asks
            // again, and the writer's close checkpoints whatever is left.
            if let opened = try? SQLiteDatabase(path: path), (try? opened.execute("PRAGMA schema_version")) != nil {
                connection = opened
            }
        }
        guard let connection, let handle = connection.handle, !connection.isInherited else { return }
        var inLog: Int32 = -1, done: Int32 = -1
        let rc = ForkSafety.sqlite { sqlite3_wal_checkpoint_v2(handle, "main", SQLITE_CHECKPOINT_PASSIVE, &inLog, &done) }
        // Counted only when it checkpointed a WAL (a failure, or a connection that sees no
        // WAL, reports -1).
        if rc == SQLITE_OK && done >= 0 { copiedNow = done }
    }

    /// Runs `body` (a checkpoint of the writer's own, e.g. one that truncates the WAL) with no
    /// checkpoint of this object's running meanwhile: two at once, one would find the other
    /// busy and leave frames behind.
    func exclusive<T>(_ body: () -> T) -> T {
        lock.withLock {
            while running { idle.wait(lock, until: nil) }
            running = true
        }
        defer {
            lock.withLock {
                running = false
                idle.broadcast()
            }
        }
        return body()
    }

    /// Waits for a checkpoint running, and closes the second connection (before the writer's
    /// own, which then is the last and checkpoints the rest as it closes).
    func close() {
        let last: SQLiteDatabase? = lock.withLock {
            closed = true
            while running { idle.wait(lock, until: nil) }
            defer { connection = nil }
            return connection
        }
        // A run waiting for the tail of the WAL is not needed (the writer's close checkpoints
        // everything), and the scheduler would hold this object until its deadline.
        Scheduler.shared.cancel(on: [queue])
        last?.close()
    }
}
