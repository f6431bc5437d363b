#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A small pool of threads shared by every controller, running jobs now or at a deadline:
/// non-blocking refreshes, and event delivery with its backoff. Threads start on first use,
/// so a process that never refreshes in the background starts none, and a thousand
/// controllers share the same few threads.
final class Scheduler: @unchecked Sendable {
    static let shared = Scheduler(threads: 4)

    private struct Job {
        let deadline: Double
        let order: UInt64
        let work: () -> Void
    }

    private let lock = Lock()
    private let condition = Condition()
    private var jobs: [Job] = []           // kept sorted by (deadline, order)
    private var order: UInt64 = 0
    private var started = 0
    private var idle = 0
    private let maxThreads: Int

    init(threads: Int) { maxThreads = max(threads, 1) }

    /// Runs `work` on a pool thread after `delay` seconds (monotonic).
    func schedule(after delay: Double = 0, _ work: @escaping () -> Void) {
        lock.withLock {
            order &+= 1
            let job = Job(deadline: monotonicSeconds() + max(delay, 0), order: order, work: work)
            let index = jobs.firstIndex { ($0.deadline, $0.order) > (job.deadline, job.order) } ?? jobs.count
            jobs.insert(job, at: index)
            if idle == 0 && started < maxThreads { startThread() }
            condition.broadcast()
        }
    }

    /// Called with the lock held.
    private func startThread() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { context in
            guard let context else { return nil }
            let scheduler = Unmanaged<Scheduler>.fromOpaque(context).takeRetainedValue()
            scheduler.run()
            return nil
        }, box)
        if rc == 0 {
            pthread_detach(thread)
            started += 1
        } else {
            Unmanaged<Scheduler>.fromOpaque(box).release()
        }
    }

    private func run() {
        while true {
            lock.lock()
            var job: Job?
            while job == nil {
                let now = monotonicSeconds()
                if let first = jobs.first, first.deadline <= now {
                    job = jobs.removeFirst()
                } else {
                    idle += 1
                    condition.wait(lock, until: jobs.first?.deadline)
                    idle -= 1
                }
            }
            lock.unlock()
            job?.work()
        }
    }
}
