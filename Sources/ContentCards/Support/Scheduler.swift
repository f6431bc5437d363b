#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Starts a detached thread running `body`; false when the system refuses a thread.
@discardableResult
func spawnThread(_ body: @escaping () -> Void) -> Bool {
    let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { context in
        guard let context else { return nil }
        Unmanaged<ThreadBody>.fromOpaque(context).takeRetainedValue().body()
        return nil
    }, box)
    if rc == 0 {
        pthread_detach(thread)
        return true
    }
    Unmanaged<ThreadBody>.fromOpaque(box).release()
    return false
}

private final class ThreadBody {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

/// A serial queue of background work for one controller (issue 10, item 2): one thread at most,
/// started when work arrives and ending when there is none, so a controller that never works in
/// the background has no thread, and one controller's blocked work (a host callback that never
/// returns, a slow event endpoint) delays only that controller's own queue, never another's.
final class WorkQueue: @unchecked Sendable {
    private let lock = Lock()
    private var jobs: [() -> Void] = []
    private var running = false

    init() {}

    /// Runs `work` on this queue's thread, after the work queued before it.
    func async(_ work: @escaping () -> Void) {
        let start: Bool = lock.withLock {
            jobs.append(work)
            if running { return false }
            running = true
            return true
        }
        guard start else { return }
        if !spawnThread({ [self] in drain() }) {
            // No thread to be had: run nothing rather than trap; the work is dropped, as a
            // refused thread leaves no better choice. Keep the queue usable for later work.
            lock.withLock { jobs.removeAll(); running = false }
        }
    }

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
final class Scheduler: @unchecked Sendable {
    static let shared = Scheduler()

    private struct Job {
        let deadline: Double
        let order: UInt64
        let queue: WorkQueue
        let work: () -> Void
    }

    let lock = Lock()
    private let condition = Condition()
    private var jobs: [Job] = []           // kept sorted by (deadline, order)
    private var order: UInt64 = 0
    private var started = false

    private init() {
        // A child of fork() has no timer thread, and the jobs are the parent's controllers'
        // (inherited, unusable there): forget both.
        ForkSafety.holdAcrossFork(lock) { [self] in
            jobs.removeAll()
            started = false
        }
    }

    /// Runs `work` on `queue` after `delay` seconds (monotonic).
    func schedule(after delay: Double = 0, on queue: WorkQueue, _ work: @escaping () -> Void) {
        if delay <= 0 {
            queue.async(work)
            return
        }
        lock.withLock {
            order &+= 1
            let job = Job(deadline: monotonicSeconds() + delay, order: order, queue: queue, work: work)
            let index = jobs.firstIndex { ($0.deadline, $0.order) > (job.deadline, job.order) } ?? jobs.count
            jobs.insert(job, at: index)
            if !started { started = spawnThread { [self] in run() } }
            condition.broadcast()
        }
    }

    private func run() {
        lock.lock()
        while true {
            let now = monotonicSeconds()
            if let first = jobs.first, first.deadline <= now {
                jobs.removeFirst()
                lock.unlock()
                first.queue.async(first.work)
                lock.lock()
            } else {
                condition.wait(lock, until: jobs.first?.deadline)
            }
        }
    }
}
