/// Group commit for logging (docs/PERFORMANCE.md, "Durable logging"): calls from several
/// threads at once share one SQLite transaction instead of queueing for one each.
///
/// A log call joins the batch's queue. When no thread is writing, it becomes the writer: it
/// takes every call queued, its own and those of the threads that joined while the last
/// batch was written, and writes them in one transaction (in the order they joined, each
/// decided against the state the calls before it left); meanwhile the threads that join wait
/// on a condition, not on the controller's lock. The writer then hands each call its outcome
/// and wakes them. So every call returns only after the transaction holding its event
/// committed; with one thread logging each batch holds one call, the same transaction as
/// before.
///
/// Why not queue on the controller's lock: a mutex is not fair, and a thread that lets it go
/// and calls again takes it back before a woken waiter runs. Waiters then sleep for
/// milliseconds while their calls, taken from the queue by the thread that keeps the lock,
/// are long written (measured: p99 4 ms with 4 threads, almost every batch of one).
///
/// Why a writer waits, and waiters spin, a few microseconds: a transaction takes about 15 µs,
/// less than a sleeping thread takes to wake. Left alone, the threads of a batch are still
/// waking when the thread that wrote it calls again, finds no writer and writes its next
/// call alone: batches of one, and 4 threads logging no more than one (0.9×). So after a
/// writer wrote calls of several threads, the next writer waits (about `gatherWindow` at
/// most: the deadline is checked between yields) for a call of each to queue, and a waiting
/// call yields its core instead of sleeping for about its first `spinWindow`, so that it sees
/// its outcome and calls again without a wake-up. Both are bounded, and neither happens to a
/// thread logging alone (docs/PERFORMANCE.md, "Group commit").
final class LogBatch {
    private let lock = Lock()
    private let written = Condition()
    private var waiting: [PendingLog] = []
    private var writing = false
    private var transactions = 0
    /// Threads whose calls the last writer wrote, in all its batches (each thread once: one
    /// that called again within the session is still one thread to wait for), and when a
    /// session of several threads last finished (monotonic).
    private var lastSessionThreads = 0
    private var lastSessionEnd = 0.0
    /// Writers that waited and got the calls they waited for, gave up at the deadline, or did
    /// not wait because the last session of several threads was too long ago.
    private var gathered = 0, gaveUp = 0, stale = 0
    private let gatherWindow: Double
    /// The most threads a writer waits for.
    static let maxGathered = 64

    /// Batches a writer writes for other threads after its own.
    static let extraBatches = 2
    /// The longest a writer waits for the threads of the last session to call again.
    static let gatherWindow = 50e-6
    /// How long a waiting call yields before it sleeps on the condition.
    static let spinWindow = 30e-6

    init(gatherWindow: Double = LogBatch.gatherWindow) {
        self.gatherWindow = gatherWindow
    }

    /// What the tests look at: the calls queued behind a writer, whether one writes, how many
    /// batches were written, and what writers did about the threads of the last session.
    var state: (queued: Int, writing: Bool, batches: Int, gathered: Int, gaveUp: Int, stale: Int) {
        lock.withLock { (waiting.count, writing, transactions, gathered, gaveUp, stale) }
    }

    /// Returns `call`'s outcome once it is written, by this thread (`write`, given the calls
    /// queued, returns their outcomes in order) or by another one.
    func submit(_ call: PendingLog,
                write: ([PendingLog]) -> [Result<(LogResult, UpdateState), ContentCardsError>])
        -> Result<(LogResult, UpdateState), ContentCardsError> {
        lock.lock()
        defer { lock.unlock() }
        waiting.append(call)
        var spinUntil: Double? = nil
        while true {
            if let outcome = call.outcome { return outcome }
            if writing {
                let now = monotonicSeconds()
                if now < spinUntil ?? now + Self.spinWindow {
                    if spinUntil == nil { spinUntil = now + Self.spinWindow }
                    yieldLock()
                } else {
                    written.wait(lock, until: nil)
                }
                continue
            }
            // The writer: this call's batch, then (at most `extraBatches` times) the calls that
            // queued meanwhile, whose threads would otherwise have to wake and run first.
            writing = true
            gatherLastSession()
            var threads: [pthread_t] = []
            var rounds = 0
            while !waiting.isEmpty && (call.outcome == nil || rounds <= Self.extraBatches) {
                rounds += 1
                var batch: [PendingLog] = []
                swap(&batch, &waiting)
                for c in batch where threads.count < Self.maxGathered && !threads.contains(where: { pthread_equal($0, c.thread) != 0 }) {
                    threads.append(c.thread)
                }
                lock.unlock()
                let outcomes = write(batch)
                lock.lock()
                // Outcomes are set with this lock held, where their threads read them; a call
                // left without one would have its thread wait for a writer that never comes.
                for (i, c) in batch.enumerated() {
                    c.outcome = i < outcomes.count ? outcomes[i] : .failure(ContentCardsError(.internal, "a log call was not written"))
                }
                transactions += 1
                written.broadcast()
            }
            writing = false
            lastSessionThreads = threads.count
            if threads.count > 1 { lastSessionEnd = monotonicSeconds() }
        }
    }

    /// With the lock held and `writing` set: when the last session wrote calls of several
    /// threads and ended less than a window ago, waits (yielding; the deadline is checked
    /// between yields) until a call of each of them could be queued. A thread that logs alone
    /// never waits: its sessions hold its calls only. Threads that stopped logging cost one
    /// window, once: the session that follows holds fewer threads.
    private func gatherLastSession() {
        let target = lastSessionThreads
        guard target > 1, waiting.count < target else { return }
        let now = monotonicSeconds()
        guard now - lastSessionEnd < gatherWindow else { stale += 1; return }
        let deadline = now + gatherWindow
        while waiting.count < target {
            if monotonicSeconds() >= deadline { gaveUp += 1; return }
            yieldLock()
        }
        gathered += 1
    }

    /// Lets the lock go and the core to another thread, then takes the lock again.
    private func yieldLock() {
        lock.unlock()
        sched_yield()
        lock.lock()
    }
}

/// One log call: its card (nil: the feed was displayed), what it decides given the card, and
/// its outcome once written (the result and the counts after its batch), or why not.
final class PendingLog {
    typealias Decide = (Card) throws(ContentCardsError) -> (Event.Kind, Card?)

    let cardID: String?
    let decide: Decide?
    /// The calling thread: a writer waits for as many threads as its last session had.
    let thread: pthread_t
    /// Set by the writer with the batch's lock held.
    fileprivate(set) var outcome: Result<(LogResult, UpdateState), ContentCardsError>?

    init(cardID: String?, decide: Decide?, thread: pthread_t = pthread_self()) {
        self.cardID = cardID
        self.decide = decide
        self.thread = thread
    }
}
