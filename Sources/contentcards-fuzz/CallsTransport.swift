// The `calls` target's host transport: a server in memory that answers sync, events and image
// requests from its tables and from the input itself.
import CContentCardsABI
import ContentCardsC
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

/// The server, in memory: the answers the grammar queued, and a deed done from inside the
/// callback. One per controller; the transport's userdata.
final class Server: @unchecked Sendable {
    let lock = Lock()
    var syncAnswers: [SyncAnswer] = []
    var fuzzedBody: [UInt8] = []
    var events: EventsAnswer = .ok
    var image: ImageAnswer = .ok
    var inside: Hook?

    func answer(_ request: cc_transport_request, _ response: OpaquePointer?) -> Int32 {
        let kind = request.kind.map { String(cString: $0) } ?? ""
        // Touch what the library handed over: every header, the whole body.
        for h in 0..<request.header_count { if let line = request.headers?[h] { _ = strlen(line) } }
        if let url = request.url { _ = strlen(url) }
        if request.body_len > 0, let body = request.body {
            let bytes = UnsafeRawBufferPointer(start: body, count: request.body_len)
            if kind != "image", (try? JSONReader.parse(Array(bytes))) == nil {
                finding("a \(kind) request's body is not JSON: \(String(decoding: bytes.prefix(400), as: UTF8.self))")
            }
        }
        let (sync, fuzzed, events, image, inside): (SyncAnswer, [UInt8], EventsAnswer, ImageAnswer, Hook?) = lock.withLock {
            let s = kind == "sync" && !syncAnswers.isEmpty ? syncAnswers.removeFirst() : .full
            return (s, fuzzedBody, self.events, self.image, self.inside)
        }
        if let inside {
            perform(inside)
            // A refresh from inside this controller's own sync callback must not wait for it.
            if kind == "sync" && inside.deed == .refresh {
                let rc = cc_controller_refresh(nil, inside.controller, 0.05)
                if rc == CC_OK { finding("refresh from inside its own sync transport succeeded") }
            }
        }
        switch kind {
        case "sync": return Self.sync(sync, fuzzed, response)
        case "events":
            switch events {
            case .ok: return set(response, 200, "{}")
            case .accepted: return set(response, 202, "")
            case .badRequest: return set(response, 400, "no")
            case .unsupported: return set(response, 415, "")
            case .tooMany: return set(response, 429, "", retryAfter: 0)
            case .serverError: return set(response, 500, "")
            case .fail: _ = cc_transport_response_fail(response, "down"); return CC_E_NETWORK
            case .noAnswer: return CC_OK
            }
        default:
            switch image {
            case .ok:
                let size = request.url.map { strstr($0, "big") != nil ? 1500 : 300 } ?? 300
                return set(response, 200, String(repeating: "\u{89}PNG", count: size / 4))
            case .notFound: return set(response, 404, "")
            case .empty: return set(response, 200, "")
            case .tooLarge: return set(response, 200, String(repeating: "x", count: 5000))
            case .fail: return CC_E_NETWORK
            }
        }
    }

    static func sync(_ answer: SyncAnswer, _ fuzzed: [UInt8], _ response: OpaquePointer?) -> Int32 {
        switch answer {
        case .full:
            status(cc_transport_response_set_etag(response, "\"v1\""), "set_etag")
            return set(response, 200, fullSync)
        case .incremental: return set(response, 200, incremental)
        case .notModified: return set(response, 304, "")
        case .tooMany: return set(response, 429, "slow down", retryAfter: 0.01)
        case .unavailable: return set(response, 503, "", retryAfter: -1)
        case .serverError: return set(response, 500, String(repeating: "\u{1b}[31m", count: 100))
        case .fail:
            status(cc_transport_response_fail(response, "no route\r\n"), "response_fail")
            return CC_E_NETWORK
        case .noAnswer: return CC_OK
        case .garbage: return set(response, 200, "{\"cards\":[")
        case .wrongUser: return set(response, 200, #"{"cards":[],"user_id":"someone else"}"#)
        case .slow:
            usleep(4_000)   // past the 2 ms refresh timeout the grammar may use
            return set(response, 200, incremental)
        case .badValidator:
            status(cc_transport_response_set_etag(response, "\"a\r\nb\""), "set_etag")
            status(cc_transport_response_set_etag(response, String(repeating: "e", count: 300)), "set_etag")
            return set(response, 200, "[]")
        case .misuse:
            if cc_transport_response_set(response, 42, nil, 0, -1) == CC_OK { finding("status 42 was accepted") }
            if cc_transport_response_set(response, 200, nil, 5, -1) == CC_OK { finding("a NULL body of 5 bytes was accepted") }
            if cc_transport_response_set(OpaquePointer(bitPattern: 0x40), 200, nil, 0, -1) == CC_OK { finding("a forged response was accepted") }
            _ = set(response, 200, "[]")
            return set(response, 200, incremental)   // a second answer replaces the first
        case .fuzzed:
            return fuzzed.withUnsafeBufferPointer { b in
                b.withMemoryRebound(to: CChar.self) { status(cc_transport_response_set(response, 200, $0.baseAddress, $0.count, -1), "response_set") }
            }
        }
    }
}

@discardableResult
func set(_ response: OpaquePointer?, _ code: Int32, _ body: String, retryAfter: Double = -1) -> Int32 {
    var body = body
    return body.withUTF8 { b in
        b.withMemoryRebound(to: CChar.self) { status(cc_transport_response_set(response, code, $0.baseAddress, $0.count, retryAfter), "response_set") }
    }
}

let onTransport: cc_transport_fn = { userdata, request, response in
    guard let request else { finding("a transport request is NULL") }
    return Unmanaged<Server>.fromOpaque(userdata!).takeUnretainedValue().answer(request.pointee, response)
}

let freeServer: @convention(c) (UnsafeMutableRawPointer?) -> Void = { p in
    Unmanaged<Server>.fromOpaque(p!).release()
}

func install(_ server: Server, on c: OpaquePointer?) {
    status(cc_controller_set_transport(c, onTransport, Unmanaged.passRetained(server).toOpaque(), freeServer), "set_transport")
}
