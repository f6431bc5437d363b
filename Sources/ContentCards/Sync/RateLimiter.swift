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

/// Capped exponential backoff for event delivery, honouring the server's `Retry-After`.
struct Backoff {
    var base: Double = 1
    var cap: Double = 300
    /// The longest `Retry-After` obeyed, so a bad header cannot stop delivery for days.
    var maxRetryAfter: Double = 3600

    /// The delay before retry number `attempt` (1 for the first retry). Half of it is random,
    /// so many clients do not retry in step.
    func delay(attempt: Int, retryAfter: Double?, random: Double) -> Double {
        let exponent = min(max(attempt - 1, 0), 30)
        let full = min(cap, base * Double(1 << exponent))
        let jittered = full / 2 + full / 2 * min(max(random, 0), 1)
        guard let retryAfter, retryAfter.isFinite, retryAfter > 0 else { return jittered }
        return max(jittered, min(retryAfter, maxRetryAfter))
    }
}
