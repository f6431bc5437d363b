/// Time as the library sees it. Injected so tests control expiry, rate limits and event times.
public protocol Clock: Sendable {
    /// Wall-clock time, unix seconds.
    func now() -> Double
}

/// The system's real-time clock.
public struct SystemClock: Clock {
    public init() {}
    public func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// A clock that only moves when told to: for tests.
public final class ManualClock: Clock, @unchecked Sendable {
    private let lock = Lock()
    private var current: Double
    public init(_ start: Double = 1_763_800_000) { current = start }
    public func now() -> Double { lock.withLock { current } }
    public func advance(_ seconds: Double) { lock.withLock { current += seconds } }
    public func set(_ value: Double) { lock.withLock { current = value } }
}

/// Monotonic seconds, for timeouts and backoff (never jumps with the wall clock).
public func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
