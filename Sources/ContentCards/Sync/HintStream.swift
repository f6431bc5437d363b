import CCurl
/// The hint stream (docs/WIRE.md, "Hint stream"): one connection per controller to
/// `BASE/content_cards/stream?user_id=U`, kept by a library thread of its own. A hint carries
/// no card data: each one only asks the controller for its conditional refresh (`onHint`),
/// which coalesces them.
///
/// - Only a `200` is a stream: another status is a failure, its body not read.
/// - Reconnects with `Last-Event-ID`, after a wait uniform in [0, min(retryMax, retry ×
///   2^(failures−1))] (full jitter, from the server's `retry`), so a fleet that lost its server
///   does not come back at one instant. A stream that stayed open 10 s from its first byte
///   resets the backoff, and the wait after it is retry × [0.5, 1]; a connection refused, timed
///   out, answered with another status or silent from the start never does, however long it
///   took to fail.
/// - A server that sends nothing, not even a keepalive, for `idleSeconds` is dropped; a line
///   that never ends is cut at 4 KiB and the connection dropped; a flood of hints is the
///   controller's to coalesce.
/// - `stop` (close) ends the connection at once: its socket is shut down, not waited on.
/// - `restart` (a user change) ends it and connects again for the new user, without a wait;
///   `restart(forgetting: true)` (the current user forgotten) also drops the last event id and
///   the backoff, so nothing of the forgotten user's stream is sent again.
/// While the stream is down, the periodic refresh (if configured) keeps the feed fresh.
final class HintStream: @unchecked Sendable {
    struct Status: Equatable, Sendable {
        var connected = false
        var connects = 0
        var hints = 0
        var lastEventID: String?
        var lastError: String?
        /// Since when the stream is connected (monotonic seconds), nil when it is not.
        var connectedSince: Double?
        /// Connections that failed since the last success (the backoff's exponent).
        var failures = 0
    }

    let base: String
    let apiKey: String
    let settings: Configuration.Hints
    let tokens: TokenSlot
    /// The user to connect for; nil ends the stream (the controller went away).
    private let currentUser: @Sendable () -> String?
    private let onHint: @Sendable (_ user: String) -> Void

    private let lock = Lock()
    private let wake = Condition()
    private var stopped = false
    private var restarting = false
    private var forgetting = false
    private var status = Status()
    private let control: UnsafeMutablePointer<cc_stream_control>

    init(base: String, apiKey: String, settings: Configuration.Hints, tokens: TokenSlot,
         currentUser: @escaping @Sendable () -> String?, onHint: @escaping @Sendable (String) -> Void) {
        self.base = base; self.apiKey = apiKey; self.settings = settings; self.tokens = tokens
        self.currentUser = currentUser; self.onHint = onHint
        control = .allocate(capacity: 1)
        cc_stream_control_init(control)
    }

    deinit {
        cc_stream_control_destroy(control)
        control.deallocate()
    }

    var snapshot: Status { lock.withLock { status } }

    /// Starts the stream's thread; false when no thread could be started.
    func start() -> Bool { spawnThread { [self] in run() } }

    func stop() {
        lock.withLock {
            stopped = true
            wake.broadcast()
        }
        cc_stream_stop(control)
    }

    /// Connects again at once (the user changed). The interrupt holds until the stream's
    /// thread takes it (`run`, under the same lock), so a connection being made when it came
    /// (the token asked for, the name resolved, the socket connecting) ends too, and the next
    /// one reads the new user.
    func restart(forgetting: Bool = false) {
        lock.withLock {
            restarting = true
            if forgetting {
                self.forgetting = true
                status.lastEventID = nil
            }
            cc_stream_interrupt(control)
            wake.broadcast()
        }
    }

    private func run() {
        var failures = 0
        var retry = 1.0
        var lastEventID: String?
        var streamUser: String?
        while true {
            let (go, forget): (Bool, Bool) = lock.withLock {
                defer { restarting = false; forgetting = false }
                cc_stream_resume(control)
                return (!stopped, forgetting)
            }
            guard go, let user = currentUser() else { break }
            if forget || !sameUser(user, streamUser) {
                // Another user's stream: the last one's event id (which the server would
                // read as this user's) and its backoff are not carried over.
                streamUser = user
                lastEventID = nil
                lock.withLock { status.lastEventID = nil }
                failures = 0
                retry = 1.0
            }
            let outcome = connect(user: user, lastEventID: lastEventID)
            lastEventID = outcome.lastEventID ?? lastEventID
            if let ms = outcome.retryMilliseconds { retry = min(max(Double(ms) / 1000, 0.05), settings.retryMaxSeconds) }
            var delay: Double
            // Only a stream that lasted counts as a success, timed from its first byte: one
            // that brought a hint and closed at once (a hostile or broken server) backs off like
            // any failure, so it can never make the client reconnect, and refresh, in a tight
            // loop; and one that failed slowly (a connect timeout, a silent server, a late
            // error status) does too, or a fleet would come back every 30 s in step.
            if outcome.lasted >= settings.lastingSeconds {
                failures = 0
                delay = retry * Double.random(in: 0.5...1)
            } else {
                failures += 1
                let cap = min(settings.retryMaxSeconds, retry * Double(1 << min(failures - 1, 16)))
                delay = Double.random(in: 0...max(cap, 0.05))
            }
            if let after = outcome.retryAfter { delay = max(delay, min(after, 3600)) }
            lock.withLock {
                status.failures = failures
                let until = monotonicSeconds() + delay
                while !stopped && !restarting && monotonicSeconds() < until { wake.wait(lock, until: until) }
            }
        }
        lock.withLock {
            status.connected = false
            status.connectedSince = nil
        }
    }

    private struct Outcome {
        var hints = 0
        var lasted = 0.0
        var lastEventID: String?
        var retryMilliseconds: Int?
        var retryAfter: Double?
    }

    /// One connection, until it ends.
    private func connect(user: String, lastEventID: String?) -> Outcome {
        var headers = ["Accept: text/event-stream", "Cache-Control: no-store"]
        if !apiKey.isEmpty { headers.append("X-Api-Key: \(apiKey)") }
        // An id that cannot be sent back (a control character, over 256 bytes) asks for no
        // catch-up hint: the stream hints once itself when it opens, so a change made while it
        // was away is not missed. An empty id is "none", as the format says.
        var unsendableID = false
        if let lastEventID, !lastEventID.isEmpty {
            if Redact.controlCharacter(inHeaderValue: lastEventID) == nil, lastEventID.utf8.count <= 256 {
                headers.append("Last-Event-ID: \(lastEventID)")
            } else {
                unsendableID = true
            }
        }
        let hintAtOpen = unsendableID
        let timeout = min(max(settings.idleSeconds, 1), 30)
        var sentToken: String?
        // The provider gets 80% of the connection's time, as on every request; a user change
        // or a stop gives the wait up at once (the provider's call goes on, for whoever else
        // waits for it).
        if let asked = tokens.token(for: user, deadline: monotonicSeconds() + timeout * 0.8,
                                    cancelled: { [self] in lock.withLock { restarting || stopped } }) {
            switch asked {
            case .failure(let e):
                note(error: e.message)
                return Outcome()
            case .success(let token):
                sentToken = token.token
                headers.append("Authorization: Bearer \(token.token)")
            }
        }
        // A user change or a stop while the token was asked for: not connected for the user
        // read before it (the loop reads the user again, without a wait).
        if lock.withLock({ restarting || stopped }) { return Outcome() }
        let reader = StreamReader(onHint: { [self] id in
            lock.withLock {
                status.hints += 1
                if !forgetting { status.lastEventID = id }
            }
            onHint(user)
        })
        let url = base + "/content_cards/stream?user_id=" + Self.percentEncoded(user)
        var response = cc_http_response()
        let connected: @Sendable () -> Void = { [self] in
            lock.withLock {
                status.connected = true
                status.connects += 1
                status.connectedSince = monotonicSeconds()
            }
            if hintAtOpen { onHint(user) }
        }
        reader.onOpen = connected
        let box = Unmanaged.passRetained(reader)
        let rc = withCStrings(headers) { pointers in
            cc_http_stream(url, pointers.baseAddress, pointers.count, Int(timeout * 1000), Int(settings.idleSeconds * 1000),
                           { context, data, length in
                               guard let context, let data else { return 0 }
                               let reader = Unmanaged<StreamReader>.fromOpaque(context).takeUnretainedValue()
                               return reader.feed(UnsafeRawBufferPointer(start: data, count: length)) ? 0 : 1
                           }, box.toOpaque(), control, &response)
        }
        box.release()
        defer { cc_http_response_free(&response) }
        var outcome = Outcome(hints: reader.hints, lasted: reader.openedAt.map { monotonicSeconds() - $0 } ?? 0,
                              lastEventID: reader.parser.lastEventID, retryMilliseconds: reader.parser.retryMilliseconds)
        if response.status != 200 {     // a refusal's Retry-After; a stream's own means nothing
            let retryAfter = withUnsafeBytes(of: response.retry_after) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            outcome.retryAfter = RetryAfter.parse(retryAfter, now: SystemClock().now())
        }
        let message = withUnsafeBytes(of: response.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if response.status == 401, let sentToken { tokens.discard(sentToken, of: user) }
        if reader.tooLong {
            note(error: "the hint stream sent a line over \(ServerSentEvents.maxLineBytes) bytes: dropped")
        } else if response.status != 0 && response.status != 200 {
            note(error: "the hint stream answered HTTP \(response.status)")
        } else if rc != Int32(CC_HTTP_OK) {
            note(error: "the hint stream ended: \(Redact.scrub(message, url: url))")
        } else {
            note(error: "the hint stream ended (the server closed it)")
        }
        return outcome
    }

    private func note(error: String) {
        lock.withLock {
            status.connected = false
            status.connectedSince = nil
            status.lastError = error
        }
    }

    /// The user id as a query value: unreserved characters as they are, the rest %XX.
    static func percentEncoded(_ s: String) -> String {
        var out = ""
        for byte in s.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: out.unicodeScalars.append(UnicodeScalar(byte))
            default: out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }
}

/// The stream's body as it arrives (called on the stream's thread only).
private final class StreamReader {
    var parser = ServerSentEvents()
    var hints = 0
    var tooLong = false
    /// When the first byte of the body came (monotonic seconds): the stream opened.
    var openedAt: Double?
    var onOpen: (@Sendable () -> Void)?
    /// Called with each hint's id (the last event id, as it stands once the hint is read).
    let onHint: (String?) -> Void

    init(onHint: @escaping (String?) -> Void) { self.onHint = onHint }

    /// False ends the connection.
    func feed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if openedAt == nil {
            openedAt = monotonicSeconds()
            onOpen?()
        }
        do {
            try parser.feed(bytes) { event in
                guard event.type == "hint" else { return }
                hints += 1
                onHint(event.id)
            }
        } catch {
            tooLong = true
            return false
        }
        return true
    }
}
