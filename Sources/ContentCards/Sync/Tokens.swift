/// Per-user tokens (docs/WIRE.md, "Per-user tokens"): every request for a user (a sync, an
/// event batch, the hint stream) carries `Authorization: Bearer TOKEN`, where the token comes
/// from the host's provider, asked for that user.
///
/// The rules, each a complaint of users of other SDKs:
/// - a token is only ever sent for the user it was given for (the cache is keyed by user, and a
///   user change needs no flush of it);
/// - it is asked for again before it expires (`refreshMargin`), and once after a server refused
///   it with 401, after which the request is retried once;
/// - the provider runs on a library thread of its own and is bounded by the request's
///   deadline: one that hangs is abandoned (at most `maxAbandoned` at a time, then requests fail
///   at once until one returns), one that fails or gives a token that cannot go in a header is
///   an error (`.auth`), and no request goes out without a good header.

/// A token and, when the provider knows it, when it stops working (unix seconds).
public struct AuthToken: Sendable, Equatable {
    public var token: String
    public var expiresAt: Double?
    public init(_ token: String, expiresAt: Double? = nil) {
        self.token = token
        self.expiresAt = expiresAt.flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
    }
}

/// Asked for a user's token (the argument): the token, or an error saying why there is none.
public typealias TokenProvider = @Sendable (_ userID: String) -> Result<AuthToken, ContentCardsError>

/// The controller's token provider, its tokens per user, and its calls in flight. Shared by the
/// controller's source, event sink and hint stream, read when they send.
package final class TokenSlot: @unchecked Sendable {
    /// Longest token sent (bytes). Servers refuse header lines of more than 8 to 16 KiB.
    package static let maxBytes = 8192
    /// Provider calls abandoned at their caller's deadline and still running, at most.
    static let maxAbandoned = 4
    /// Users whose tokens are kept (the current user, and the users whose events are pending).
    static let maxUsers = 16

    private final class Ask {
        let generation: Int
        var result: Result<AuthToken, ContentCardsError>?
        var abandoned = false
        /// Requests waiting for the answer now: the call is abandoned only when the last one
        /// gives up (one with a shorter deadline leaving does not throw away the answer the
        /// others still wait for, nor count the call against `maxAbandoned`).
        var waiters = 0
        /// Its user was forgotten while it was asked: the answer goes to the requests waiting
        /// for it (of the user just forgotten, whose results are discarded) and is not kept.
        var forgotten = false
        init(generation: Int) { self.generation = generation }
    }

    private struct Cached {
        let auth: AuthToken
        let obtainedAt: Double
    }

    private let lock = Lock()
    private let answered = Condition()
    private var provider: TokenProvider?
    /// Bumped when the provider is replaced: tokens and answers of an earlier one are not used.
    private var generation = 0
    private var cache: [UserKey: Cached] = [:]
    private var asking: [UserKey: Ask] = [:]
    /// Bumped at each forget; with the users forgotten last (at most `maxUsers`), so that a
    /// request that began before a forget of its user (one already out, for a user no longer
    /// current, answered 401 later) asks no token for the forgotten user: the provider's answer
    /// would have gone back into the cache.
    private var forgets = 0
    private var forgotten: [(user: UserKey, at: Int)] = []
    /// The threads running the provider now: a call from one of them that waits for a request
    /// (a refresh, a flush, a forget's delivery) would wait for the provider's own answer.
    private var providing: [pthread_t] = []
    private var abandoned = 0
    private var counts = Diagnostics.Tokens()

    var isSet: Bool { lock.withLock { provider != nil } }
    var diagnostics: Diagnostics.Tokens { lock.withLock { var c = counts; c.abandoned = abandoned; c.provider = provider != nil; return c } }

    /// Replaces the provider (nil removes it): its tokens are forgotten. False (`new` not
    /// kept) once the slot is closed. The old provider is released outside the lock
    /// (releasing a host's provider runs its free_userdata).
    @discardableResult
    func set(_ new: TokenProvider?) -> Bool { replace(with: new, closing: false) }

    /// Removes the provider for good (the controller closed): a `set` that raced the close is
    /// refused, where it installed a provider on a closed controller.
    func close() { replace(with: nil, closing: true) }
    private var closed = false

    @discardableResult
    private func replace(with new: TokenProvider?, closing: Bool) -> Bool {
        let (old, kept): (TokenProvider?, Bool) = lock.withLock {
            if closed { return (nil, false) }
            if closing { closed = true }
            let old = provider
            provider = new
            generation += 1
            cache.removeAll()
            // Calls still running are abandoned (their answers are an earlier provider's):
            // counted, so that providers that never return cannot pile up threads unseen.
            for ask in asking.values where !ask.abandoned {
                ask.abandoned = true
                abandoned += 1
            }
            asking.removeAll()
            answered.broadcast()
            return (old, true)
        }
        withExtendedLifetime(old) {}
        return kept
    }

    /// Whether `thread` is running this slot's provider now (see `providing`).
    func isProviding(_ thread: pthread_t) -> Bool {
        lock.withLock { providing.contains { pthread_equal($0, thread) != 0 } }
    }

    /// A request is sent again after a 401, with a token asked for anew.
    func noteRetry() { lock.withLock { counts.retriedAfter401 += 1 } }

    /// Drops `token` of `user` from the cache (a server refused it): the next request asks anew.
    func discard(_ token: String, of user: String) {
        lock.withLock { if cache[UserKey(user)]?.auth.token == token { cache[UserKey(user)] = nil } }
    }

    /// Forgets a user's token (the user was forgotten), and the answer of a request for one
    /// in flight: kept when it came, it would have put the forgotten user's token back.
    func forget(_ user: String) {
        lock.withLock {
            forgets += 1
            forgotten.removeAll { $0.user == UserKey(user) }
            if forgotten.count >= Self.maxUsers { forgotten.removeFirst() }
            forgotten.append((UserKey(user), forgets))
            cache[UserKey(user)] = nil
            if let running = asking[UserKey(user)] {
                running.forgotten = true
                asking[UserKey(user)] = nil
            }
        }
    }

    /// How long before its expiry a token is asked for again: 30 s, or half its lifetime when
    /// that is shorter, so a token is never sent in its last moments.
    static func refreshMargin(_ token: AuthToken, obtainedAt: Double) -> Double {
        guard let expiresAt = token.expiresAt else { return 0 }
        return min(30, max(0, (expiresAt - obtainedAt) / 2))
    }

    /// The `Authorization` header for `user`, nil when no provider is set. `rejected`: the
    /// token a server just refused with 401; it is not used again, the provider is asked anew.
    /// Waits for the provider at most until `deadline` (monotonic seconds).
    func header(for user: String, deadline: Double, rejected: String? = nil) -> Result<(name: String, value: String), ContentCardsError>? {
        guard let result = token(for: user, deadline: deadline, rejected: rejected) else { return nil }
        return result.map { ("Authorization", "Bearer " + $0.token) }
    }

    /// Where the forgets stand now: a request takes it at its start (`token(for:since:)`).
    var forgetMark: Int { lock.withLock { forgets } }

    /// `cancelled` (asked every 0.1 s while the answer is awaited, without this slot's lock):
    /// the caller no longer needs the token (the hint stream restarting for another user).
    func token(for user: String, deadline: Double, rejected: String? = nil, since mark: Int? = nil,
               cancelled: (() -> Bool)? = nil) -> Result<AuthToken, ContentCardsError>? {
        lock.lock()
        defer { lock.unlock() }
        guard let provider else { return nil }
        if let mark, mark != forgets, forgotten.contains(where: { $0.user == UserKey(user) && $0.at > mark }) {
            return .failure(ContentCardsError(.auth, "no token for the request: its user was forgotten since it began"))
        }
        let now = SystemClock().now()
        if let cached = cache[UserKey(user)] {
            if cached.auth.token == rejected {
                cache[UserKey(user)] = nil
            } else if let expiresAt = cached.auth.expiresAt,
                      now >= expiresAt - Self.refreshMargin(cached.auth, obtainedAt: cached.obtainedAt) {
                cache[UserKey(user)] = nil
            } else {
                counts.reused += 1
                return .success(cached.auth)
            }
        }
        let ask: Ask
        if let running = asking[UserKey(user)], running.generation == generation {
            ask = running            // another request asked already: wait for the same answer
        } else {
            guard abandoned < Self.maxAbandoned else {
                counts.failures += 1
                return .failure(ContentCardsError(.auth, "no token for the request: \(abandoned) earlier calls of the token provider have not returned (abandoned at their timeouts); requests fail until one does"))
            }
            ask = Ask(generation: generation)
            asking[UserKey(user)] = ask
            counts.asked += 1
            let started = spawnThread { [self] in
                let me = pthread_self()
                lock.withLock { providing.append(me) }
                let answer = CallbackContext.run { provider(user) }
                lock.withLock { providing.removeAll { pthread_equal($0, me) != 0 } }
                finish(ask, user: user, answer: Self.checked(answer))
            }
            if !started {
                asking[UserKey(user)] = nil
                counts.failures += 1
                return .failure(ContentCardsError(.auth, "no token for the request: the token provider could not be called (no thread could be started)"))
            }
        }
        ask.waiters += 1
        defer { ask.waiters -= 1 }
        while ask.result == nil && ask.generation == generation {
            if let cancelled {
                lock.unlock()
                let gone = cancelled()
                lock.lock()
                if gone && ask.result == nil {
                    leave(ask, user: user)
                    return .failure(ContentCardsError(.auth, "no token: the request was given up while the token provider was asked"))
                }
                if ask.result != nil || ask.generation != generation { break }
            }
            let until = cancelled == nil ? deadline : min(deadline, monotonicSeconds() + 0.1)
            if !answered.wait(lock, until: until) && monotonicSeconds() >= deadline { break }
        }
        if let result = ask.result { return result }
        if ask.generation != generation {
            return .failure(ContentCardsError(.auth, "no token for the request: the token provider was replaced while it was asked"))
        }
        leave(ask, user: user)
        counts.failures += 1
        counts.timeouts += 1
        return .failure(ContentCardsError(.auth, "no token for the request: the token provider did not answer in time (abandoned; a late answer is discarded)"))
    }

    /// A request stops waiting for `ask` without its answer: the last one to leave abandons
    /// the call (counted until it returns; its late answer is not kept). Called with the lock.
    private func leave(_ ask: Ask, user: String) {
        guard ask.waiters == 1, !ask.abandoned else { return }     // others still wait for it
        ask.abandoned = true
        abandoned += 1
        if asking[UserKey(user)] === ask { asking[UserKey(user)] = nil }
    }

    private func finish(_ ask: Ask, user: String, answer: Result<AuthToken, ContentCardsError>) {
        lock.withLock {
            if ask.abandoned { abandoned -= 1 }
            ask.result = answer
            if asking[UserKey(user)] === ask { asking[UserKey(user)] = nil }
            if case .failure = answer { counts.failures += 1 }
            if case .success(let token) = answer, ask.generation == generation, !ask.abandoned, !ask.forgotten {
                if cache.count >= Self.maxUsers, cache[UserKey(user)] == nil,
                   let oldest = cache.min(by: { $0.value.obtainedAt < $1.value.obtainedAt })?.key {
                    cache[oldest] = nil
                }
                cache[UserKey(user)] = Cached(auth: token, obtainedAt: SystemClock().now())
            }
            answered.broadcast()
        }
    }

    /// The provider's answer, refused when the token cannot go in a header as it is: 1 to
    /// `maxBytes` bytes of printable ASCII (0x21-0x7E). The message never shows the token.
    static func checked(_ answer: Result<AuthToken, ContentCardsError>) -> Result<AuthToken, ContentCardsError> {
        switch answer {
        case .failure(let e):
            return .failure(ContentCardsError(.auth, "the token provider failed: \(e.message)"))
        case .success(let token):
            if let why = invalidity(token.token) {
                return .failure(ContentCardsError(.auth, "the token provider gave a token that cannot be sent: \(why)"))
            }
            return .success(token)
        }
    }

    /// Why `value` cannot be a bearer token, or nil.
    static func invalidity(_ value: String) -> String? { invalidity(bytes: value.utf8) }

    package static func invalidity<Bytes: Collection>(bytes: Bytes) -> String? where Bytes.Element == UInt8 {
        if bytes.isEmpty { return "it is empty" }
        if bytes.count > maxBytes { return "it is \(bytes.count) bytes, over the limit of \(maxBytes)" }
        for (offset, byte) in bytes.enumerated() where byte < 0x21 || byte > 0x7E {
            return "byte 0x\(String(byte, radix: 16, uppercase: true)) at offset \(offset) (a token is printable ASCII, 0x21 to 0x7E)"
        }
        return nil
    }
}

extension TokenSlot {
    /// Sends a request for `user` with its token, and once more with a new token when the
    /// server answers 401 to the first (docs/WIRE.md, "Per-user tokens"). With no provider set,
    /// sends it as it is. `send` gets the extra header (nil without a provider) and the time
    /// left. A second 401 is an `.auth` failure; everything else is the caller's to judge.
    static func send(_ slot: TokenSlot?, user: String, timeout: Double, what: String,
                     _ send: ((name: String, value: String)?, Double) -> Result<TransportResponse, ContentCardsError>)
        -> Result<TransportResponse, ContentCardsError> {
        let deadline = monotonicSeconds() + timeout
        guard let slot else { return send(nil, timeout) }
        let mark = slot.forgetMark
        var rejected: String? = nil
        for attempt in 0..<2 {
            // The provider gets at most 80% of the time left: one that hangs is reported as
            // what it is (`.auth`) before the request's own deadline makes it a timeout.
            let now = monotonicSeconds()
            guard let asked = slot.token(for: user, deadline: now + max(deadline - now, 0) * 0.8, rejected: rejected, since: mark) else {
                return send(nil, max(deadline - monotonicSeconds(), 0.001))   // the provider was removed
            }
            let token: AuthToken
            switch asked {
            case .failure(let e): return .failure(e)
            case .success(let t): token = t
            }
            let left = deadline - monotonicSeconds()
            if left <= 0 {
                return .failure(ContentCardsError(.timeout, "\(what) not sent: the token provider took the whole timeout (\(timeout) s)"))
            }
            let result = send(("Authorization", "Bearer " + token.token), left)
            guard case .success(let response) = result, response.status == 401 else { return result }
            if attempt == 0 {
                slot.noteRetry()
                rejected = token.token
                continue
            }
            slot.discard(token.token, of: user)
            let detail = Redact.serverText(response.body, limit: 200)
            // Its Retry-After is kept, as on any other refused sync (docs/WIRE.md): the
            // refreshes wait for it.
            return .failure(ContentCardsError(.auth, "\(what) refused: the server did not accept the user's token (HTTP 401), also after a new one was asked for\(detail.isEmpty ? "" : ": " + detail)",
                                              retryAfter: RetryAfter.bounded(response.retryAfter)))
        }
        return .failure(ContentCardsError(.internal, "unreachable"))
    }
}
