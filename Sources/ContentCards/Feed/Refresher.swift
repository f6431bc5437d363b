/// Refreshing (docs/BEHAVIOUR.md, "Refresh" and "Automatic refresh"): the owner of the source,
/// the rate limit, the server's Retry-After circuit, the refresh in flight (its ticket, which
/// later callers join) and the threads fetching from the source, and the automatic refresh's
/// schedule. The controller performs a refresh (fetch, merge, tell the subscribers) and asks
/// this object whether one may start and what its outcome leaves.
///
/// Its state is guarded by the controller's lock: the controller stays the front door and the
/// keeper of the lock order, and hands itself to the calls that need it (this object keeps no
/// reference to it).
final class Refresher: @unchecked Sendable {
    /// Where refreshes ask for cards; nil when no source is configured.
    let source: CardSource?
    /// `refreshTokens` per `refreshIntervalSeconds`.
    var limiter: RateLimiter
    /// When the server answered 429 or 503 with Retry-After: no refresh goes out before this
    /// time (wall clock), so a client does not hammer a server that asked it to wait.
    var serverRetryAt: Double = 0
    /// When the user's cards were last known to be the server's (a merge of a refresh, or a
    /// 304), unix seconds; starts from the store's `SyncState.syncedAt`.
    var lastSyncedAt: Double = 0
    /// The refresh running for the current user, which later callers join.
    var inFlight: RefreshTicket?
    /// The automatic refresh policies' state (Refresher+Auto.swift).
    var auto = AutoRefreshState()
    /// Hints: their coalescing and counts (Refresher+Hints.swift).
    var hints = HintState()
    /// The hint stream, when the configuration asks for one (started at open, stopped at close).
    var hintStream: HintStream?
    /// Runs background refreshes and the automatic refresh's ticks.
    let queue = WorkQueue()
    /// Fetch threads still running, including those abandoned at their deadline (a source
    /// that never answers): at most `Background.maxFetches`, so a stuck source cannot pile up
    /// threads.
    var fetches = 0
    /// The threads inside this controller's source (its transport callback) right now.
    var fetchThreads: [pthread_t] = []

    init(source: CardSource?, limiter: RateLimiter) {
        self.source = source
        self.limiter = limiter
    }

    func isFetching(_ thread: pthread_t) -> Bool { fetchThreads.contains { pthread_equal($0, thread) != 0 } }

    /// Why a refresh may not start now (no source, blocked fetches, the server's Retry-After,
    /// the rate limit), or nil when it may: then a rate-limit token has been taken.
    func refusal(now: Double, configuration: Configuration) -> ContentCardsError? {
        guard source != nil else {
            return ContentCardsError(.noSource, "no source is configured: set \"source\" to a file, a url or a callback, or hand cards in with apply")
        }
        if fetches >= Background.maxFetches {
            return ContentCardsError(.timeout, "refresh not started: \(fetches) earlier fetches from the source are still blocked (abandoned at their timeout); the cached feed stays readable")
        }
        if now < serverRetryAt {
            // The wait was bounded to an hour when it was set; more means the wall clock
            // went back since (a correction, a user setting the time), not a longer wait.
            if serverRetryAt - now > RetryAfter.maxSeconds { serverRetryAt = now + RetryAfter.maxSeconds }
            let wait = serverRetryAt - now
            return ContentCardsError(.rateLimited, "refresh not sent: the server asked to wait (Retry-After); retry after \(Int(wait.rounded(.up))) s; the cached feed stays readable", retryAfter: wait)
        }
        if let wait = limiter.take(now: now) {
            return ContentCardsError(.rateLimited, "refresh refused by the rate limit (\(configuration.refreshTokens) per \(Int(configuration.refreshIntervalSeconds)) s): next token in \(Int(wait.rounded(.up))) s; the cached feed stays readable", retryAfter: wait)
        }
        return nil
    }

    /// What a finished refresh leaves: the time of the last sync (on success), the server's
    /// Retry-After (bounded to an hour) for the next refreshes, and the slot of the refresh in
    /// flight (unless a newer one, of another user, took it).
    func finish(_ ticket: RefreshTicket, with result: Result<SyncSummary, ContentCardsError>, at finishedAt: Double, now: Double) {
        switch result {
        case .success: lastSyncedAt = finishedAt
        case .failure(let e):
            if let after = e.retryAfter, e.code == .rateLimited || e.code == .server || e.code == .auth, after > 0 {
                serverRetryAt = now + min(after, RetryAfter.maxSeconds)
            }
        }
        ticket.result = result
        if inFlight === ticket { inFlight = nil }
    }
}

/// One refresh in flight; callers that ask for a refresh meanwhile wait for this one instead of
/// starting another (and taking another token).
final class RefreshTicket {
    /// The user the refresh is for: only a refresh of the current user is joined.
    let userID: String
    /// The controller's `userChanges` when it started: a refresh for the same user id after
    /// a change away and back is another refresh (this one's answer is discarded).
    let userChanges: Int
    /// When it started (monotonic): a hint that came later is not answered by joining it.
    let startedAt = monotonicSeconds()
    init(userID: String, userChanges: Int) { self.userID = userID; self.userChanges = userChanges }
    /// A background refresh's run, until a thread takes it (`claim`): the refresh queue's job,
    /// or a blocking refresh that joins it first. A joiner that waited for the queue instead
    /// could be the very job the queue runs (an automatic refresh, a hint's, a completion
    /// that refreshes), and waited its whole timeout for a request never sent.
    var unclaimed: (@Sendable () -> Void)?

    /// Takes the run if no thread has; under the controller's lock.
    func claim() -> (@Sendable () -> Void)? {
        defer { unclaimed = nil }
        return unclaimed
    }
    /// Cards whose read state this device changed while the sync was out: a read or unread
    /// event pending when it started, or one logged since (delivered meanwhile or not). The
    /// server may have answered before it heard of them, so their local state wins in this
    /// sync's merge (rule 9). Guarded by the controller's lock.
    var readCrossing = Set<CardKey>()
    var result: Result<SyncSummary, ContentCardsError>?
    /// What the fetch thread got (set under the controller's lock); ignored once the refresh
    /// was abandoned at its deadline.
    var fetched: Result<SyncAnswer, ContentCardsError>?
    /// What the fetch did, for the log (emitted once the refresh is over).
    var fetchNote: String?
    /// Called once with the outcome (after the subscribers), outside the lock: the completions
    /// of `refreshInBackground(timeout:completion:)`, including those that joined this refresh.
    var completions: [@Sendable (Result<SyncSummary, ContentCardsError>) -> Void] = []
}


/// The bound on a controller's calls into host code or the file system left running after
/// their caller's deadline (fetches from a source, event sink calls), per kind: past it, new
/// calls fail at once instead of starting more threads.
enum Background {
    static let maxFetches = 4
}
