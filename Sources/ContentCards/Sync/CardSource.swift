/// What a source answered.
enum Fetched: Equatable {
    /// A payload, and the server's validator for it (its ETag; nil when it sent none).
    case payload([UInt8], validator: String?)
    /// HTTP 304 to the validator sent: the cards did not change, nothing to decode or merge
    /// (docs/WIRE.md, "Conditional sync").
    case notModified
}

/// Where a refresh gets its payload from. Sources only fetch bytes; decoding and merging belong
/// to the controller, so every source gets the same rules.
protocol CardSource: Sendable {
    /// `validator` is the stored ETag of the user's last sync (nil when none): a source that
    /// can, asks the server whether anything changed since.
    func fetch(userID: String, deviceID: String, cursors: SyncCursors, validator: String?, timeout: Double) -> Result<Fetched, ContentCardsError>
}

/// A payload file, read on each refresh.
struct FileSource: CardSource {
    let path: String
    let maxBytes: Int

    func fetch(userID: String, deviceID: String, cursors: SyncCursors, validator: String?, timeout: Double) -> Result<Fetched, ContentCardsError> {
        // Only a regular file: reading a FIFO with no writer, or a device, would block (or
        // never end). stat does not open it, so it cannot block on a FIFO; a stalled mount
        // is bounded by the refresh's own wait.
        var st = stat()
        if stat(path, &st) == 0 && (st.st_mode & S_IFMT) != S_IFREG {
            let kind: String
            switch st.st_mode & S_IFMT {
            case S_IFIFO: kind = "a FIFO (named pipe)"
            case S_IFDIR: kind = "a directory"
            case S_IFCHR, S_IFBLK: kind = "a device"
            case S_IFSOCK: kind = "a socket"
            default: kind = "not a regular file"
            }
            return .failure(ContentCardsError(.sourceFile, "cannot read the source file: \(path) is \(kind), not a regular file"))
        }
        do { return .success(.payload(try Files.read(path, limit: maxBytes), validator: nil)) } catch {
            if error.tooLarge {
                return .failure(ContentCardsError(.parse, "the source file \(path) is too large: over the limit of \(maxBytes) bytes (raise \"maxPayloadBytes\" in the configuration to read it)"))
            }
            return .failure(ContentCardsError(.sourceFile, "cannot read the source file: \(error.message)"))
        }
    }
}

/// The sync protocol (docs/WIRE.md, "Sync request", "Sync response") over a transport: libcurl for `{"url": ...}`, the host's own for
/// `{"callback": true}`.
struct RemoteSource: CardSource {
    let url: String
    let apiKey: String
    let maxBytes: Int
    /// Ask for a compressed response: the library's own HTTP transport (libcurl decodes it,
    /// bounded by maxBytes of decoded bytes); a host transport decodes on its side.
    var acceptsCompression = false
    let transport: @Sendable () -> Result<Transport, ContentCardsError>
    /// The controller's token provider: each sync carries the user's token when one is set.
    var tokens: TokenSlot? = nil

    func fetch(userID: String, deviceID: String, cursors: SyncCursors, validator: String?, timeout: Double) -> Result<Fetched, ContentCardsError> {
        let transport: Transport
        switch self.transport() {
        case .success(let t): transport = t
        case .failure(let e): return .failure(e)
        }
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json"), ("Accept", "application/json")]
        if !apiKey.isEmpty { headers.append(("X-Api-Key", apiKey)) }
        // The validator goes only with cursors: a client asking for a full sync (no cursors)
        // wants the cards, whatever it kept.
        let conditional = validator.map { !$0.isEmpty && cursors.lastFullSyncAt > 0 } ?? false
        if conditional, let validator { headers.append(("If-None-Match", validator)) }
        if let bad = TransportRequest.checkHeaders(headers, kind: .sync) { return .failure(bad) }
        let body = SyncJSON.request(userID: userID, deviceID: deviceID, cursors: cursors)
        let sent = TokenSlot.send(tokens, user: userID, timeout: timeout, what: "sync") { auth, left in
            var request = TransportRequest(kind: .sync, url: url, headers: headers + (auth.map { [$0] } ?? []),
                                           body: body, timeout: left, maxResponseBytes: maxBytes)
            request.acceptsCompression = acceptsCompression
            return transport.send(request)
        }
        switch sent {
        case .failure(let e):
            return .failure(e)
        case .success(let response):
            if response.status == 304 {
                guard conditional else {
                    return .failure(ContentCardsError(.server, "sync answered 304 (not modified) to a request without If-None-Match: there is nothing it could refer to"))
                }
                return .success(.notModified)
            }
            if (200..<300).contains(response.status) {
                if response.body.count > maxBytes {
                    return .failure(ContentCardsError(.parse, "sync response is \(response.body.count) bytes, over the limit of \(maxBytes)"))
                }
                // A validator is kept only if it can go back in a header as it is.
                let tag = response.etag.flatMap { v in
                    v.isEmpty || v.utf8.count > 255 || Redact.controlCharacter(inHeaderValue: v) != nil ? nil : v
                }
                return .success(.payload(response.body, validator: tag))
            }
            return .failure(HTTPStatus.error(for: response, what: "sync"))
        }
    }
}

enum HTTPStatus {
    /// The error for a non-2xx answer. 429 is the server's rate limit; the others are server errors.
    static func error(for response: TransportResponse, what: String) -> ContentCardsError {
        // The server's text goes into a message people read, maybe on a terminal: control
        // characters (escape sequences) are written out as \u001b, and it is bounded.
        let excerpt = Redact.serverText(response.body, limit: 200)
        var detail = excerpt.isEmpty ? "" : ": \(excerpt)"
        // The wait reported is the one enforced: bounded to RetryAfter.maxSeconds.
        let after = RetryAfter.bounded(response.retryAfter)
        if let after {
            detail = "; retry after \(Int(after.rounded(.up))) s" + detail
        }
        if response.status == 429 {
            return ContentCardsError(.rateLimited, "\(what) refused by the server's rate limit (HTTP 429)\(detail)", retryAfter: after)
        }
        return ContentCardsError(.server, "\(what) failed with HTTP \(response.status)\(detail)", retryAfter: after)
    }

    /// Worth retrying: timeouts (408), rate limits (429) and server errors (5xx).
    static func isRetryable(_ status: Int) -> Bool { status == 408 || status == 429 || status >= 500 }
}
