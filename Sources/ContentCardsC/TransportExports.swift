import CContentCardsABI
import ContentCards
/// The answer a host transport callback fills in (`AnswerBoxes`: C sees only an opaque pointer
/// to it, checked before any use).
final class TransportResponseBox {
    var response: TransportResponse?
    var failure: String?
    /// A success's body over the request's bound: the request fails as libcurl's does then
    /// (`CC_E_PARSE`, "too large"), not as a transport that broke.
    var tooLarge: String?
    /// From cc_transport_response_set_etag, in whichever order it came with the response.
    var validator: String?
    /// The request's bound on its response's body (`TransportRequest.maxResponseBytes`).
    let maxBytes: Int

    init(maxBytes: Int) { self.maxBytes = maxBytes }

    static let answers = AnswerBoxes<TransportResponseBox>(what: "a response", inside: "the transport callback")
}

/// The host's transport callback as a `Transport`.
final class CTransport: Transport, @unchecked Sendable {
    let fn: cc_transport_fn
    let data: UserData

    init(fn: cc_transport_fn, data: UserData) { self.fn = fn; self.data = data }

    func send(_ request: TransportRequest) -> Result<TransportResponse, ContentCardsError> {
        var body = request.body
        body.append(0)   // NUL-terminated for C readers; body_len excludes it
        let headerLines = request.headers.map { "\($0.name): \($0.value)" }
        let cHeaders: [UnsafeMutablePointer<CChar>?] = headerLines.map { strdup($0) }
        defer { cHeaders.forEach { free($0) } }
        // A header the host would read through a NULL: the request is not made.
        if cHeaders.contains(where: { $0 == nil }) {
            return .failure(ContentCardsError(.noMemory, "out of memory copying the \(request.kind.rawValue) request's headers"))
        }
        let box = TransportResponseBox(maxBytes: request.maxResponseBytes)
        let handle = TransportResponseBox.answers.open(box)
        let status: Int32 = request.kind.rawValue.withCString { kind in
            request.url.withCString { url in
                body.withUnsafeBufferPointer { bodyBytes in
                    cHeaders.withUnsafeBufferPointer { headers in
                        headers.withMemoryRebound(to: UnsafePointer<CChar>?.self) { headerPointers in
                            bodyBytes.withMemoryRebound(to: CChar.self) { bodyChars in
                                var c = cc_transport_request(
                                    kind: kind, url: url, headers: headerPointers.baseAddress, header_count: headerPointers.count,
                                    body: bodyChars.baseAddress, body_len: max(bodyChars.count - 1, 0),
                                    timeout_seconds: request.timeout)
                                return fn(data.pointer, &c, handle)
                            }
                        }
                    }
                }
            }
        }
        TransportResponseBox.answers.close(handle)
        // Whatever the callback returned after its answer was refused (a binding raises).
        if let tooLarge = box.tooLarge {
            let raise = request.kind == .sync ? " (raise \"maxPayloadBytes\" in the configuration to accept it)" : ""
            return .failure(ContentCardsError(.parse, "\(request.kind.rawValue) response is too large: \(tooLarge)\(raise)"))
        }
        if status != CC_OK {
            let why = box.failure ?? "the host transport returned \(status)"
            return .failure(ContentCardsError(.transport, "\(request.kind.rawValue) request failed in the host transport: \(why)"))
        }
        guard var response = box.response else {
            let why = box.failure ?? "the host transport returned CC_OK without cc_transport_response_set"
            return .failure(ContentCardsError(.transport, "\(request.kind.rawValue) request failed in the host transport: \(why)"))
        }
        if let validator = box.validator { response.etag = validator }
        return .success(response)
    }
}

@_cdecl("cc_transport_response_set")
public func cc_transport_response_set(_ response: OpaquePointer?, _ status: Int32, _ body: UnsafePointer<CChar>?,
                                      _ bodyLen: Int, _ retryAfterSeconds: Double) -> Int32 {
    entry { () throws(ContentCardsError) in
        guard bodyLen >= 0 else { throw ContentCardsError(.invalidArgument, "body_len is negative") }
        guard body != nil || bodyLen == 0 else { throw ContentCardsError(.invalidArgument, "body is NULL but body_len is \(bodyLen)") }
        guard status >= 100 && status <= 999 else { throw ContentCardsError(.invalidArgument, "status \(status) is not an HTTP status") }
        // Bounded to a year: a huge value is no more meaningful, and stays safe to convert.
        let retry = retryAfterSeconds.isFinite && retryAfterSeconds >= 0 ? min(retryAfterSeconds, 31_536_000) : nil
        // Before any copy: a body over the request's bound is never an allocation of whatever
        // size the host says (a wrong body_len of 2^60 ended the process).
        let limit = try TransportResponseBox.answers.read(response) { $0.maxBytes }
        guard bodyLen > limit else { return try keep(response, status: status, body: body, count: bodyLen, retry: retry) }
        guard (200...299).contains(status) else {
            // An error answer keeps its status and Retry-After (CC_E_SERVER, the backoff), as
            // libcurl's transport keeps them: its body is only read for a message, so the
            // beginning of it is kept.
            return try keep(response, status: status, body: body, count: min(limit, errorBodyKept), retry: retry)
        }
        // A success's body over the bound fails the request as libcurl's does (CC_E_PARSE).
        try TransportResponseBox.answers.answer(response) { box in
            box.tooLarge = "the body is \(bodyLen) bytes, over the limit of \(limit)"
        }
        throw ContentCardsError(.invalidArgument, "body_len \(bodyLen) is over the response limit of \(limit) bytes (maxPayloadBytes, or the image limit)")
    }
}

/// How much of an error answer's body over the request's bound is kept (a message shows 200
/// characters of it).
private let errorBodyKept = 64 * 1024

/// Records the answer: the first `count` bytes of the body, copied outside the lock, which every
/// controller's transport answers share.
private func keep(_ response: OpaquePointer?, status: Int32, body: UnsafePointer<CChar>?, count: Int,
                  retry: Double?) throws(ContentCardsError) {
    var bytes: [UInt8] = []
    if let body, count > 0 {
        bytes = body.withMemoryRebound(to: UInt8.self, capacity: count) { Array(UnsafeBufferPointer(start: $0, count: count)) }
    }
    let answer = TransportResponse(status: Int(status), body: bytes, retryAfter: retry)
    try TransportResponseBox.answers.answer(response) { box in box.response = answer }
}

@_cdecl("cc_transport_response_set_etag")
public func cc_transport_response_set_etag(_ response: OpaquePointer?, _ etag: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let validator = try CStrings.required(etag, "etag")
        try TransportResponseBox.answers.answer(response) { box in box.validator = validator }
    }
}

@_cdecl("cc_transport_response_fail")
public func cc_transport_response_fail(_ response: OpaquePointer?, _ message: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let failure = try CStrings.required(message, "message")
        try TransportResponseBox.answers.answer(response) { box in box.failure = failure }
    }
}

@_cdecl("cc_controller_set_transport")
public func cc_controller_set_transport(_ controller: OpaquePointer?, _ fn: cc_transport_fn?, _ userdata: UnsafeMutableRawPointer?,
                                        _ freeUserdata: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) -> Int32 {
    let data = UserData(userdata, free: freeUserdata)
    return entry { () throws(ContentCardsError) in
        try setCallback(controller, fn, data) { (c, fn) throws(ContentCardsError) in
            try c.setTransport(fn.map { CTransport(fn: $0, data: data) })
        }
    }
}
