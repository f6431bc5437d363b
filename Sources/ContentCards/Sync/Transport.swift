import CCurl
/// One request the library needs sent: a sync or an event batch, as a JSON body (POST); or an
/// image of the image cache (GET, no body).
public struct TransportRequest: Sendable {
    public enum Kind: String, Sendable { case sync, events, image }
    public var kind: Kind
    /// The full URL for HTTP transports (`{base}/content_cards/sync`, `{base}/events`); for a
    /// host transport configured with `{"callback": true}`, the path alone.
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Seconds the request may take in all.
    public var timeout: Double
    public var maxResponseBytes: Int
    /// Ask for a compressed response and decode it (docs/WIRE.md, "Compression"). Only the
    /// library's own HTTP transport does; a host transport hands over decoded bytes.
    public var acceptsCompression = false
}

extension TransportRequest {
    /// Refuses a header whose name or value holds a control character (CR or LF would inject
    /// a header of its own). The configuration refuses such an `apiKey` already; this is the
    /// second check, where headers are built, for any other way a value gets here.
    static func checkHeaders(_ headers: [(name: String, value: String)], kind: Kind) -> ContentCardsError? {
        for h in headers {
            if let c = Redact.controlCharacter(inHeaderValue: h.value) ?? Redact.controlCharacter(inHeaderValue: h.name) {
                return ContentCardsError(.config, "\(kind.rawValue) request not sent: the \(Redact.escape(h.name, limit: 40)) header holds a control character (U+\(String(c, radix: 16, uppercase: true))); check \"apiKey\" in the configuration")
            }
        }
        return nil
    }
}

/// What came back.
public struct TransportResponse: Sendable {
    public var status: Int
    public var body: [UInt8]
    /// Seconds from a `Retry-After` header, when present.
    public var retryAfter: Double?
    /// The `ETag` of a sync response: the validator sent back as `If-None-Match` on the next
    /// sync (docs/WIRE.md, "Conditional sync"). Named as C (`cc_transport_response_set_etag`)
    /// and Python (`TransportResponse(etag=)`) name it.
    public var etag: String?
    public init(status: Int, body: [UInt8], retryAfter: Double? = nil, etag: String? = nil) {
        self.status = status; self.body = body; self.retryAfter = retryAfter; self.etag = etag
    }
    @available(*, deprecated, renamed: "etag")
    public var validator: String? { get { etag } set { etag = newValue } }
    @available(*, deprecated, renamed: "init(status:body:retryAfter:etag:)")
    public init(status: Int, body: [UInt8], retryAfter: Double? = nil, validator: String?) {
        self.init(status: status, body: body, retryAfter: retryAfter, etag: validator)
    }
}

/// Sends requests. The library's own is `CurlTransport`; the host may supply its own.
public protocol Transport: Sendable {
    func send(_ request: TransportRequest) -> Result<TransportResponse, ContentCardsError>
}

/// A transport made of a closure: how the host does the HTTP itself (its own networking, or a
/// C callback through the ABI).
public struct ClosureTransport: Transport {
    let body: @Sendable (TransportRequest) -> Result<TransportResponse, ContentCardsError>
    public init(_ body: @escaping @Sendable (TransportRequest) -> Result<TransportResponse, ContentCardsError>) {
        self.body = body
    }
    public func send(_ request: TransportRequest) -> Result<TransportResponse, ContentCardsError> { body(request) }
}

/// HTTP over the system's libcurl, loaded at first use.
public struct CurlTransport: Transport {
    public init() {}

    public func send(_ request: TransportRequest) -> Result<TransportResponse, ContentCardsError> {
        if let bad = TransportRequest.checkHeaders(request.headers, kind: request.kind) { return .failure(bad) }
        let lines = request.headers.map { "\($0.name): \($0.value)" }
        var response = cc_http_response()
        let timeoutMs = Int(min(max(request.timeout, 0.001), 86_400) * 1000)
        let outcome: Int32 = withCStrings(lines) { headers in
            if request.kind == .image {   // a GET: cc_http_post with no body
                return cc_http_post(request.url, headers.baseAddress, headers.count, nil, 0, timeoutMs,
                                    max(request.maxResponseBytes, 0), 0, &response)
            }
            // A POST always passes a body pointer (NULL asks for a GET), also for an empty body.
            var body = request.body
            body.append(0)
            return body.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { chars in
                    cc_http_post(request.url, headers.baseAddress, headers.count, chars.baseAddress,
                                 request.body.count, timeoutMs, max(request.maxResponseBytes, 0),
                                 request.acceptsCompression ? 1 : 0, &response)
                }
            }
        }
        defer { cc_http_response_free(&response) }
        // curl's text may quote the URL: no credentials, no control characters in a message.
        let message = Redact.scrub(withUnsafeBytes(of: response.error) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }, url: request.url)
        switch Int(outcome) {
        case Int(CC_HTTP_OK):
            let body: [UInt8] = response.body.map { Array(UnsafeRawBufferPointer(start: $0, count: response.body_len)) } ?? []
            let retryAfter = withUnsafeBytes(of: response.retry_after) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            let etag = withUnsafeBytes(of: response.etag) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            return .success(TransportResponse(status: response.status, body: body,
                                              retryAfter: RetryAfter.parse(retryAfter, now: SystemClock().now()),
                                              etag: etag.isEmpty ? nil : etag))
        case Int(CC_HTTP_UNAVAILABLE):
            return .failure(ContentCardsError(.unavailable, message))
        case Int(CC_HTTP_TIMEOUT):
            return .failure(ContentCardsError(.timeout, "\(request.kind.rawValue) request timed out after \(request.timeout) s (\(message))"))
        case Int(CC_HTTP_TOO_LARGE):
            let raise = request.kind == .sync ? " (raise \"maxPayloadBytes\" in the configuration to accept it)" : ""
            return .failure(ContentCardsError(.parse, "\(request.kind.rawValue) response is too large: \(message)\(raise)"))
        case Int(CC_HTTP_HEADER_TOO_LARGE):
            return .failure(ContentCardsError(.network, "\(request.kind.rawValue) response refused: \(message); the server (or a proxy on the way) sent more header data than a response may have"))
        case Int(CC_HTTP_NO_MEMORY):
            return .failure(ContentCardsError(.noMemory, "out of memory during the \(request.kind.rawValue) request"))
        case Int(CC_HTTP_BAD_ENCODING):
            return .failure(ContentCardsError(.parse, "\(request.kind.rawValue) response refused: its body does not decode as its Content-Encoding says (\(message))"))
        default:
            return .failure(ContentCardsError(.network, "\(request.kind.rawValue) request failed: \(message)"))
        }
    }
}

/// Calls `body` with a NULL-free array of C strings that live for the call.
func withCStrings<R>(_ strings: [String], _ body: (UnsafeBufferPointer<UnsafePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    defer { for p in pointers { free(p) } }
    return pointers.withUnsafeMutableBufferPointer { buffer in
        buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { body(UnsafeBufferPointer($0)) }
    }
}

/// Where the host's transport is kept: set by the controller, read by the sources and sinks
/// configured with `{"callback": true}` at the moment they send.
final class HostTransportSlot: @unchecked Sendable {
    private let lock = Lock()
    private var transport: Transport?
    /// The controller closed: no transport is taken any more.
    private var closed = false

    /// Replaces the transport; false (`t` not kept) once the slot is closed. The old one is
    /// released after the lock is, because releasing a host's transport runs its
    /// free_userdata callback, and no callback runs under a lock.
    @discardableResult
    func set(_ t: Transport?) -> Bool { replace(with: t, closing: false) }

    /// Removes the transport for good (the controller closed): a `set` that raced the close
    /// is refused, where it installed a transport on a closed controller.
    func close() { replace(with: nil, closing: true) }

    @discardableResult
    private func replace(with t: Transport?, closing: Bool) -> Bool {
        let (old, kept): (Transport?, Bool) = lock.withLock {
            if closed { return (nil, false) }
            if closing { closed = true }
            let old = transport
            transport = t
            return (old, true)
        }
        withExtendedLifetime(old) {}
        return kept
    }

    @Sendable func get() -> Result<Transport, ContentCardsError> {
        lock.withLock {
            guard let transport else {
                return .failure(ContentCardsError(.transport, "the configuration asks for a host transport (\"callback\": true) but none is set"))
            }
            return .success(transport)
        }
    }
}
