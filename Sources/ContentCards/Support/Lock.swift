/// A pthread mutex. Chosen over `Synchronization.Mutex` because ThreadSanitizer reports false
/// races on the latter when contended, and the concurrency tests run under TSan.
package final class Lock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    package init() {
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }
    package func unlock() { pthread_mutex_unlock(mutex) }
    /// Takes the lock if it is free; false (at once) when any thread holds it, this one too.
    package func tryLock() -> Bool { pthread_mutex_trylock(mutex) == 0 }

    @inline(__always)
    package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    fileprivate var raw: UnsafeMutablePointer<pthread_mutex_t> { mutex }
}

/// A condition variable paired with a `Lock`. Deadlines are monotonic seconds; on Linux the
/// variable waits on the monotonic clock itself, elsewhere on the real-time clock with each
/// deadline converted (`Platform.conditionsUseMonotonicClock` says why that is safe).
package final class Condition: @unchecked Sendable {
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    package init() {
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        #if os(Linux) && !CC_PORTABLE
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond)
        cond.deallocate()
    }

    /// Waits with `lock` held until signalled or until `deadline` (monotonic seconds) passes.
    /// Returns false on timeout.
    @discardableResult
    package func wait(_ lock: Lock, until deadline: Double?) -> Bool {
        guard let deadline else {
            pthread_cond_wait(cond, lock.raw)
            return true
        }
        var clamped = min(max(deadline, 0), 1e12)
        if !Platform.conditionsUseMonotonicClock {
            // The same instant on the real-time clock the variable waits on.
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let wall = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
            clamped = min(max(wall + (clamped - monotonicSeconds()), 0), 1e12)
        }
        var ts = timespec()
        ts.tv_sec = Int(clamped)
        ts.tv_nsec = Int((clamped - Double(Int(clamped))) * 1e9)
        return pthread_cond_timedwait(cond, lock.raw, &ts) == 0
    }

    package func signal() { pthread_cond_signal(cond) }
    package func broadcast() { pthread_cond_broadcast(cond) }
}
