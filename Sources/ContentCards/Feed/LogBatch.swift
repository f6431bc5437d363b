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
final class LogBatch {
    private let lock = Lock()
    private let written = Condition()
    private var waiting: [PendingLog] = []
    private var writing = false
    private var transactions = 0
    /// Batches a writer writes for other threads after its own.
    static let extraBatches = 2

    /// What the tests look at: the calls queued behind a writer, whether one writes, and how
    /// many batches were written.
    var state: (queued: Int, writing: Bool, batches: Int) {
        lock.withLock { (waiting.count, writing, transactions) }
    }

    /// Returns `call`'s outcome once it is written, by this thread (`write`, given the calls
    /// queued, returns their outcomes in order) or by another one.
    func submit(_ call: PendingLog,
                write: ([PendingLog]) -> [Result<(LogResult, FeedCounts), ContentCardsError>])
        -> Result<(LogResult, FeedCounts), ContentCardsError> {
        lock.lock()
        defer { lock.unlock() }
        waiting.append(call)
        while true {
            if let outcome = call.outcome { return outcome }
            if writing {
                written.wait(lock, until: nil)
                continue
            }
            // The writer: this call's batch, then (at most `extraBatches` times) the calls that
            // queued meanwhile, whose threads would otherwise have to wake and run first.
            writing = true
            var rounds = 0
            while !waiting.isEmpty && (call.outcome == nil || rounds <= Self.extraBatches) {
                rounds += 1
                var batch: [PendingLog] = []
                swap(&batch, &waiting)
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
        }
    }
}

/// One log call: its card (nil: the feed was displayed), what it decides given the card, and
/// its outcome once written (the result and the counts after its batch), or why not.
final class PendingLog {
    typealias Decide = (Card) throws(ContentCardsError) -> (Event.Kind, Card?)

    let cardID: String?
    let decide: Decide?
    /// Set by the writer with the batch's lock held.
    fileprivate(set) var outcome: Result<(LogResult, FeedCounts), ContentCardsError>?

    init(cardID: String?, decide: Decide?) {
        self.cardID = cardID
        self.decide = decide
    }
}
