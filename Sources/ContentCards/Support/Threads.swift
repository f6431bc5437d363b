/// The library's own threads: every background thread (a refresh reading its source, a batch
/// going to a sink, a controller's work queue, the timer) starts through `spawnThread`.
///
/// A thread that finishes its work waits a few seconds for more before it ends
/// (`ThreadCache`): a refresh then costs a hand-over on a condition variable (microseconds)
/// instead of a thread start (tens of microseconds natively, about a millisecond under
/// AddressSanitizer, which the `calls` fuzz target spent most of its time on). A thread whose
/// work hangs (a host source or sink that never returns) is simply not idle: the next work
/// gets another thread, so nothing waits behind it.

/// Runs `body` on a thread of the library's: an idle one when there is one, else a new
/// detached thread. False when the system refuses a thread (counted in `ThreadStarts`).
@discardableResult
func spawnThread(_ body: @escaping () -> Void) -> Bool {
    let rc = ThreadCache.shared.run(body)
    if rc != 0 { ThreadStarts.noteRefusal(rc) }
    return rc == 0
}

/// A new thread's entry (`Platform.startDetachedThread`): runs its body, then whatever work
/// its cache hands it while it waits idle, and ends when none comes.
func runThreadBody(_ context: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let context else { return nil }
    var next: ThreadBody? = Unmanaged<ThreadBody>.fromOpaque(context).takeRetainedValue()
    let cache = next?.cache
    repeat {
        next?.body()
        next = nil          // released before waiting: what the body held goes now, not later
        next = cache?.waitForWork()
    } while next != nil
    return nil
}

final class ThreadBody {
    let body: () -> Void
    let cache: ThreadCache
    init(_ body: @escaping () -> Void, cache: ThreadCache) {
        self.body = body
        self.cache = cache
    }
}

/// Threads kept idle after their work, at most `maxIdle` of them, each for `idleSeconds`.
///
/// Invariant (under `lock`): `handed.count <= idle`, so every body handed over has a waiting
/// thread that will take it (a thread whose wait times out still takes a body if one is there).
final class ThreadCache: @unchecked Sendable {
    /// The library's threads. Four idle at most: enough for a controller's refresh, its
    /// delivery and its queue to reuse threads, and a few controllers at once; more would only
    /// hold stacks. Two seconds: long enough for a burst of calls or a short refresh period to
    /// reuse a thread, short enough that a library gone quiet soon has no idle threads.
    static let shared = ThreadCache(maxIdle: 4, idleSeconds: 2)

    let maxIdle: Int
    let idleSeconds: Double

    private var lock = Lock()
    private var wake = Condition()
    private var idle = 0
    private var handed: [ThreadBody] = []
    private var started = 0
    /// Bodies a parent had handed over at a fork, kept (never released) in the child: boxed
    /// and leaked, not appended to a list, so that the child runs no code the parent never
    /// ran (ForkSafety.swift says why).
    private final class Kept {
        let bodies: [ThreadBody]
        init(_ bodies: [ThreadBody]) { self.bodies = bodies }
    }

    init(maxIdle: Int, idleSeconds: Double) {
        self.maxIdle = maxIdle
        self.idleSeconds = idleSeconds
        // A child of fork() has none of the parent's idle threads: nothing may be handed to
        // them. The child starts this cache anew, with a lock and a condition of its own: the
        // parent's lock may have been held at the fork (and stays held in the child), the
        // bodies handed over are the parent's (they run there), the condition's waiters the
        // parent's threads; all are left alone (leaked), never destroyed.
        //
        // The cache's own lock is *not* held across the fork (a lock of nobody's is, to get the
        // child hook): `Scheduler` starts its timer thread with its lock held, so holding both
        // across a fork, in whatever order they were registered, could deadlock the parent
        // against a thread taking them in the other order.
        _ = Kept([])   // its metadata made here, not first in a child
        ForkSafety.holdAcrossFork(Lock()) { [self] in
            _ = Unmanaged.passRetained(lock)
            lock = Lock()
            _ = Unmanaged.passRetained(wake)
            wake = Condition()
            _ = Unmanaged.passRetained(Kept(handed))
            handed = []
            idle = 0
        }
    }

    /// Runs `body` on an idle thread, or on a new one: 0, or the error `pthread_create` gave.
    func run(_ body: @escaping () -> Void) -> Int32 {
        let work = ThreadBody(body, cache: self)
        let handedOff: Bool = lock.withLock {
            guard idle > handed.count else { return false }
            handed.append(work)
            wake.signal()
            return true
        }
        if handedOff { return 0 }
        let box = Unmanaged.passRetained(work).toOpaque()
        let rc = Platform.startDetachedThread(box)
        if rc == 0 {
            lock.withLock { started += 1 }
        } else {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
        }
        return rc
    }

    /// Called by a thread whose work is done: the next body handed to it, or nil (end the
    /// thread) when enough threads are idle already or none comes within `idleSeconds`.
    fileprivate func waitForWork() -> ThreadBody? {
        lock.withLock {
            guard idle < maxIdle else { return nil }
            idle += 1
            let deadline = monotonicSeconds() + idleSeconds
            while handed.isEmpty && monotonicSeconds() < deadline {
                wake.wait(lock, until: deadline)
            }
            idle -= 1
            return handed.isEmpty ? nil : handed.removeFirst()
        }
    }

    /// Threads idle now, and threads started in all (tests, diagnostics).
    var idleCount: Int { lock.withLock { idle } }
    var threadsStarted: Int { lock.withLock { started } }
}

/// The process's refused thread starts (`pthread_create` failing: EAGAIN when the process is
/// at its thread or memory limit for a moment). Work that could not start is never dropped: it
/// waits in its queue and the start is retried (`WorkQueue`, `Scheduler`); these counts are in
/// every controller's diagnostics.
enum ThreadStarts {
    private static let lock = Lock()
    nonisolated(unsafe) private static var refusals = 0
    nonisolated(unsafe) private static var lastError: Int32 = 0

    static func noteRefusal(_ error: Int32) {
        lock.withLock {
            refusals += 1
            lastError = error
        }
    }

    /// Thread starts refused since the process started, and the last refusal's errno.
    static var refused: (count: Int, lastError: Int32) { lock.withLock { (refusals, lastError) } }
}
