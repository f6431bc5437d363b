/// Where events are delivered, and what happened to one batch.
enum DeliveryOutcome: Equatable {
    case delivered
    /// Keep the batch and try again later: every failure that is not a verdict on the events
    /// (network error, timeout, 3xx, 401, 403, 404, 408, 429, 5xx, ...).
    case retry(ContentCardsError)
    /// The sink refused the batch's content for good (`EventStatus.isVerdict`): drop it.
    case drop(ContentCardsError)
}

protocol EventSink: Sendable {
    func deliver(_ events: [Event], timeout: Double) -> DeliveryOutcome
}

/// Appends events as JSON lines, fsynced.
struct FileEventSink: EventSink {
    let path: String
    func deliver(_ events: [Event], timeout: Double) -> DeliveryOutcome {
        var bytes: [UInt8] = []
        for e in events {
            bytes.append(contentsOf: EventJSON.encode(e).utf8)
            bytes.append(0x0A)
        }
        do { try Files.append(path, bytes) } catch {
            return .retry(ContentCardsError(.storage, "cannot write events to \(path): \(error.message)"))
        }
        return .delivered
    }
}

/// The events protocol (docs/WIRE.md, "Events") over a transport.
struct RemoteEventSink: EventSink {
    let url: String
    let apiKey: String
    /// Send batches gzip-compressed (docs/WIRE.md, "Compression"): the library's own HTTP
    /// transport only; a host transport gets the JSON as it is.
    var compression: EventCompression? = nil
    let transport: @Sendable () -> Result<Transport, ContentCardsError>
    /// The controller's token provider: each batch carries its user's token when one is set.
    var tokens: TokenSlot? = nil

    func deliver(_ events: [Event], timeout: Double) -> DeliveryOutcome {
        let transport: Transport
        switch self.transport() {
        case .success(let t): transport = t
        case .failure(let e): return .retry(e)
        }
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
        if !apiKey.isEmpty { headers.append(("X-Api-Key", apiKey)) }
        if let bad = TransportRequest.checkHeaders(headers, kind: .events) { return .retry(bad) }
        let json = EventJSON.batch(events)
        // One deadline for the call, a plain resend after a 415 included: each send with the
        // whole timeout made one delivery up to twice it.
        let deadline = monotonicSeconds() + timeout
        // A batch is of one user when tokens are used (EventDelivery cuts it so): its token.
        let user = events.first?.userID ?? ""
        if let compression, let gzipped = compression.compress(json) {
            let sent = TokenSlot.send(tokens, user: user, timeout: timeout, what: "event delivery") { auth, left in
                var request = TransportRequest(kind: .events, url: url,
                                               headers: headers + [("Content-Encoding", "gzip")] + (auth.map { [$0] } ?? []),
                                               body: gzipped, timeout: left, maxResponseBytes: 1 << 20)
                request.acceptsCompression = false
                return transport.send(request)
            }
            switch sent {
            case .failure(let e):
                return .retry(e)
            case .success(let response) where response.status == 415:
                // The endpoint does not take compressed batches: send this one as it is, and
                // the later ones too (for the life of the controller).
                compression.refused()
            case .success(let response):
                return Self.outcome(response)
            }
        }
        let remaining = deadline - monotonicSeconds()
        guard remaining > 0 else {
            return .retry(ContentCardsError(.timeout, "event delivery: no time left to send the batch uncompressed after the endpoint refused gzip (415); it stays pending"))
        }
        let sent = TokenSlot.send(tokens, user: user, timeout: remaining, what: "event delivery") { auth, left in
            transport.send(TransportRequest(kind: .events, url: url, headers: headers + (auth.map { [$0] } ?? []),
                                            body: json, timeout: left, maxResponseBytes: 1 << 20))
        }
        switch sent {
        case .failure(let e):
            return .retry(e)
        case .success(let response):
            return Self.outcome(response)
        }
    }

    private static func outcome(_ response: TransportResponse) -> DeliveryOutcome {
        if (200..<300).contains(response.status) { return .delivered }
        let error = HTTPStatus.error(for: response, what: "event delivery")
        if EventStatus.isVerdict(response.status) { return .drop(error) }
        let why = EventStatus.refusesCredentials(response.status)
            ? "the endpoint refused the credentials; the events stay pending and are sent once they are accepted"
            : "the events stay pending and are retried"
        return .retry(ContentCardsError(error.code, "\(error.message); \(why)", retryAfter: error.retryAfter))
    }
}

/// What an event endpoint's status says about a batch (docs/WIRE.md, "Status codes").
enum EventStatus {
    /// A verdict on the events themselves: the server read the batch and will never take it
    /// (400 Bad Request, 413 Content Too Large, 415 to a plain JSON batch, 422 Unprocessable
    /// Content). Only these drop a batch. Every other answer is about the credentials (401,
    /// 403, 407: keys get rotated, tokens expire), the endpoint (3xx from a misconfigured
    /// proxy, 404 or 410 while an endpoint moves, 405, 421) or the server's state (408, 409,
    /// 425, 429, 5xx): none says the events are bad, and each is fixed on the server's side,
    /// after which the same events go through. So they are kept and retried with backoff.
    static func isVerdict(_ status: Int) -> Bool {
        status == 400 || status == 413 || status == 415 || status == 422
    }

    /// The endpoint refused who is asking, not what was sent.
    static func refusesCredentials(_ status: Int) -> Bool {
        status == 401 || status == 403 || status == 407
    }
}
