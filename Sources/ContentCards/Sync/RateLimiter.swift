/// The refresh token bucket (docs/BEHAVIOUR.md, "Refresh"): `capacity` tokens, one more every `interval`
/// seconds up to the capacity; each refresh takes one. A capacity of 0 disables the limit.
struct RateLimiter {
    let capacity: Int
    let interval: Double
    private(set) var tokens: Double
    private var lastRefill: Double

    init(capacity: Int, interval: Double, now: Double) {
        self.capacity = capacity
        self.interval = max(interval, 0.001)
        tokens = Double(capacity)
        lastRefill = now
    }

    var isEnabled: Bool { capacity > 0 }

    private mutating func refill(now: Double) {
        guard isEnabled else { return }
        if now < lastRefill { lastRefill = now }   // the wall clock went back: start again from here
        let earned = (now - lastRefill) / interval
        if earned >= 1 {
            let whole = earned.rounded(.down)
            tokens = min(Double(capacity), tokens + whole)
            lastRefill += whole * interval
        }
        if tokens >= Double(capacity) { lastRefill = now }
    }

    /// Takes a token: nil when taken, else the seconds until the next token.
    mutating func take(now: Double) -> Double? {
        guard isEnabled else { return nil }
        refill(now: now)
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return max(0, lastRefill + interval - now)
    }

    /// Tokens available now, and seconds until the next one (0 when full).
    mutating func state(now: Double) -> (tokens: Int, nextTokenIn: Double) {
        guard isEnabled else { return (0, 0) }
        refill(now: now)
        let full = tokens >= Double(capacity)
        return (Int(tokens), full ? 0 : max(0, lastRefill + interval - now))
    }
}

/// Capped exponential backoff with full jitter, for event delivery and automatic refreshes
/// (docs/BEHAVIOUR.md, "Retries"), honouring the server's `Retry-After`.
///
/// Full jitter (each wait uniform between 0 and the exponential bound) rather than a fixed or
/// half-random wait: clients that failed together (a server outage) come back spread over the
/// whole window instead of in step, which is what keeps the recovery from being a herd.
struct Backoff {
    var base: Double = 1
    var cap: Double = 300
    /// The longest `Retry-After` obeyed, so a bad header cannot stop delivery for days.
    var maxRetryAfter: Double = RetryAfter.maxSeconds

    /// The exponential bound for failure number `attempt` (1 for the first):
    /// min(cap, base × 2^(attempt − 1)).
    func window(attempt: Int) -> Double {
        let exponent = min(max(attempt - 1, 0), 40)
        return min(cap, base * Double(UInt64(1) << UInt64(exponent)))
    }

    /// The delay before retry number `attempt`: uniform in [0, window) (`random` in 0...1). With
    /// a `Retry-After`, that many seconds (bounded) first, then the jittered part: the server's
    /// wait is honoured, and clients told the same wait still do not return in the same second.
    func delay(attempt: Int, retryAfter: Double?, random: Double) -> Double {
        let jittered = window(attempt: attempt) * min(max(random, 0), 1)
        guard let retryAfter, retryAfter.isFinite, retryAfter > 0 else { return jittered }
        return min(retryAfter, maxRetryAfter) + jittered
    }
}
