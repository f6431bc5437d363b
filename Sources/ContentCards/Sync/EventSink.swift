/// Where events are delivered, and what happened to one batch.
enum DeliveryOutcome: Equatable {
    case delivered
    /// Keep the batch and try again later (network error, timeout, 408, 429, 5xx).
    case retry(ContentCardsError)
    /// The sink refused the batch for good (a 4xx other than 408 and 429): drop it.
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
        if let compression, let gzipped = compression.compress(json) {
            var request = TransportRequest(kind: .events, url: url, headers: headers + [("Content-Encoding", "gzip")],
                                           body: gzipped, timeout: timeout, maxResponseBytes: 1 << 20)
            request.acceptsCompression = false
            switch transport.send(request) {
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
        let request = TransportRequest(kind: .events, url: url, headers: headers, body: json,
                                       timeout: timeout, maxResponseBytes: 1 << 20)
        switch transport.send(request) {
        case .failure(let e):
            return .retry(e)
        case .success(let response):
            return Self.outcome(response)
        }
    }

    private static func outcome(_ response: TransportResponse) -> DeliveryOutcome {
        if (200..<300).contains(response.status) { return .delivered }
        let error = HTTPStatus.error(for: response, what: "event delivery")
        return HTTPStatus.isRetryable(response.status) ? .retry(error) : .drop(error)
    }
}
