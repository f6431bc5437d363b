/// A serial queue of background work for one controller: one thread at most, started when
/// work arrives and ending when there is none, so a controller that never works in the
/// background has no thread, and one controller's blocked work (a host callback that never
/// returns, a slow event endpoint) delays only that controller's own queue, never another's.
///
/// When the system refuses the thread, the work stays queued: the start is retried by the
/// process's `Scheduler` with backoff (and by the next work queued), so a moment without
/// threads delays background work but never loses it.
final class WorkQueue: @unchecked Sendable {
    private let lock = Lock()
    private var jobs: [() -> Void] = []
    private var running = false
    /// Jobs are waiting for a thread the system refused; a retry is scheduled.
    private var stranded = false
    /// Failed starts in a row: the retry's backoff.
    private var failedStarts = 0
    /// Tests: this queue's next starts are refused as if by the system (this queue only, so
    /// tests running beside it keep their threads). Guarded by `lock`: use the accessor.
    private var refuseStarts = 0

    /// Tests: the number of this queue's next starts to refuse (set and read under the lock).
    var refuseStartsForTesting: Int {
        get { lock.withLock { refuseStarts } }
        set { lock.withLock { refuseStarts = newValue } }
    }

    init() {}

    /// Runs `work` on this queue's thread, after the work queued before it.
    func async(_ work: @escaping () -> Void) {
        lock.withLock { jobs.append(work) }
        start()
    }

    /// Starts the thread when there is work and none runs; on a refusal, schedules a retry.
    fileprivate func start() {
        let go: Bool = lock.withLock {
            if running || jobs.isEmpty { return false }
            running = true
            return true
        }
        guard go else { return }
        let refused: Bool = lock.withLock {
            guard refuseStarts > 0 else { return false }
            refuseStarts -= 1
            return true
        }
        if refused { ThreadStarts.noteRefusal(EAGAIN) }
        if !refused && spawnThread({ [self] in drain() }) {
            lock.withLock { stranded = false; failedStarts = 0 }
            return
        }
        let retry: Double? = lock.withLock {
            running = false
            failedStarts += 1
            if stranded { return nil }          // a retry is already scheduled
            stranded = true
            return min(0.01 * Double(1 << min(failedStarts, 10)), 5)
        }
        if let retry { Scheduler.shared.retryStart(of: self, after: retry) }
    }

    /// Called by the scheduler's retry: tries the start again.
    fileprivate func retryStart() {
        lock.withLock { stranded = false }
        start()
    }

    /// Jobs waiting (tests).
    var waiting: Int { lock.withLock { jobs.count } }

    private func drain() {
        while true {
            let job: (() -> Void)? = lock.withLock {
                if jobs.isEmpty { running = false; return nil }
                return jobs.removeFirst()
            }
            guard let job else { return }
            job()
        }
    }
}

/// One timer thread for the whole process that only hands due jobs to their controller's
/// `WorkQueue`: it never runs the work itself, so nothing a controller does can delay it.
///
/// Its cost follows the timers of open controllers only: `cancel(on:)` (a controller's close)
/// removes a controller's timers at once, however far off their deadlines, and a timer is
/// inserted by binary search.
final class Scheduler: @unchecked Sendable {
    static let shared = Scheduler()

    private struct Job {
        let deadline: Double
        let order: UInt64
        let queue: WorkQueue
        /// Nil: a retry of the queue's thread start (`WorkQueue.retryStart`), not work.
        let work: (() -> Void)?
    }

    let lock = Lock()
    private let condition = Condition()
    /// The jobs a child of fork() inherited, kept (never released).
    private final class KeptJobs {
        let jobs: [Job]
        init(_ jobs: [Job]) { self.jobs = jobs }
    }
    private var jobs: [Job] = []           // kept sorted by (deadline, order)
    private var order: UInt64 = 0
    private var started = false
    /// Failed starts of the timer thread in a row (the next `schedule` tries again).
    private var failedStarts = 0

    private init() {
        // The thread cache registers with ForkSafety at its creation, which takes the fork
        // registry's lock: created here, not on the timer thread's first start, which holds
        // this scheduler's lock (registered too) and would take the two in the order opposite
        // to fork()'s prepare handler.
        _ = ThreadCache.shared
        // A child of fork() has no timer thread, and the jobs are the parent's controllers'
        // (inherited, unusable there): forget both. The jobs are leaked, not released: their
        // release could run any deinit in the child, code the parent may never have run
        // (ForkSafety.swift says why that matters).
        _ = KeptJobs([])   // its metadata made here, not first in a child
        ForkSafety.holdAcrossFork(lock) { [self] in
            _ = Unmanaged.passRetained(KeptJobs(jobs))
            jobs = []
            started = false
        }
    }

    /// Runs `work` on `queue` after `delay` seconds (monotonic).
    func schedule(after delay: Double = 0, on queue: WorkQueue, _ work: @escaping () -> Void) {
        if delay <= 0 {
            queue.async(work)
            return
        }
        insert(after: delay, on: queue, work)
    }

    /// A retry of `queue`'s thread start after `delay` seconds.
    fileprivate func retryStart(of queue: WorkQueue, after delay: Double) {
        insert(after: delay, on: queue, nil)
    }

    private func insert(after delay: Double, on queue: WorkQueue, _ work: (() -> Void)?) {
        lock.withLock {
            order &+= 1
            let job = Job(deadline: monotonicSeconds() + delay, order: order, queue: queue, work: work)
            // The first job due after this one (binary search: the list is sorted).
            var low = 0, high = jobs.count
            while low < high {
                let mid = (low + high) / 2
                if (jobs[mid].deadline, jobs[mid].order) > (job.deadline, job.order) { high = mid } else { low = mid + 1 }
            }
            jobs.insert(job, at: low)
            startTimerThread()
            condition.broadcast()
        }
    }

    /// Starts the timer thread when none runs. Called with `lock` held. A refusal leaves the
    /// jobs in place: the next `schedule` (or `kick`) tries again.
    private func startTimerThread() {
        guard !started else { return }
        started = spawnThread { [self] in run() }
        failedStarts = started ? 0 : failedStarts + 1
    }

    /// Starts the timer thread if an earlier start was refused and timers wait: called from the
    /// host's own calls (refresh, flush), so timers stranded without a thread move again.
    /// Called without any lock held (the log handler may call back into the library).
    func kick() {
        let refused: Bool = lock.withLock {
            guard !started, !jobs.isEmpty else { return false }
            startTimerThread()
            return !started
        }
        if refused {
            let r = ThreadStarts.refused
            ContentCardsLog.emit(.warning, "the timer thread could not be started (\(Files.describeErrno(r.lastError))); \(r.count) thread starts refused so far: timers wait for the next try")
        }
    }

    /// Removes every timer of these queues (a controller that closes): nothing of a closed
    /// controller stays in the process-wide list, whatever its deadlines.
    func cancel(on queues: [WorkQueue]) {
        let removed: [Job] = lock.withLock {
            let gone = jobs.filter { job in queues.contains { $0 === job.queue } }
            if !gone.isEmpty { jobs.removeAll { job in queues.contains { $0 === job.queue } } }
            return gone
        }
        // The closures (and what they hold) are released here, outside the lock.
        withExtendedLifetime(removed) {}
    }

    /// Timers waiting, of every controller or of these queues only.
    var pending: Int { lock.withLock { jobs.count } }
    func pending(on queues: [WorkQueue]) -> Int {
        lock.withLock { jobs.filter { job in queues.contains { $0 === job.queue } }.count }
    }

    private func run() {
        lock.lock()
        while true {
            let now = monotonicSeconds()
            if let first = jobs.first, first.deadline <= now {
                jobs.removeFirst()
                lock.unlock()
                if let work = first.work {
                    first.queue.async(work)
                } else {
                    // On this thread no lock of any controller is held: the host's log handler
                    // may call back into the library.
                    let refused = ThreadStarts.refused
                    ContentCardsLog.emit(.warning, "a background thread could not be started (\(Files.describeErrno(refused.lastError))); \(refused.count) refused so far: the waiting work is retried")
                    first.queue.retryStart()
                }
                lock.lock()
            } else {
                condition.wait(lock, until: jobs.first?.deadline)
            }
        }
    }
}
