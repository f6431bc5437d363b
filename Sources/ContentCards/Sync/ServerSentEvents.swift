/// A reader of Server-Sent Events (the WHATWG event-stream format) as the hint stream needs
/// it, bounded against a hostile server: a line over `maxLineBytes` (one that never ends) or
/// data over `maxLineBytes` for one event is an error, after which the connection is dropped.
///
/// Lines end with CR LF, LF or CR; a line starting with ":" is a comment (the keepalive);
/// fields are `event`, `data`, `id` and `retry`; a blank line dispatches the event.
struct ServerSentEvents {
    struct Event: Equatable {
        var type: String
        var id: String?
        var data: String
    }

    static let maxLineBytes = 4096

    private var line: [UInt8] = []
    private var lastWasCR = false
    private var type = ""
    private var data: [UInt8] = []
    private var hasData = false
    /// The last event id (kept across events, as the format says), for Last-Event-ID.
    private(set) var lastEventID: String?
    /// The server's `retry`, milliseconds, when it sent one.
    private(set) var retryMilliseconds: Int?

    enum Failure: Error, Equatable { case lineTooLong }

    /// Reads `bytes`, calling `dispatch` for each complete event; stops at the first failure.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, dispatch: (Event) -> Void) throws(Failure) {
        for byte in bytes {
            if lastWasCR && byte == 0x0A { lastWasCR = false; continue }   // the LF of a CR LF
            lastWasCR = byte == 0x0D
            if byte == 0x0A || byte == 0x0D {
                try endLine(dispatch)
                continue
            }
            guard line.count < Self.maxLineBytes else { throw .lineTooLong }
            line.append(byte)
        }
    }

    private mutating func endLine(_ dispatch: (Event) -> Void) throws(Failure) {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            if hasData || !type.isEmpty {
                dispatch(Event(type: type.isEmpty ? "message" : type, id: lastEventID, data: String(decoding: data, as: UTF8.self)))
            }
            type = ""
            data.removeAll(keepingCapacity: true)
            hasData = false
            return
        }
        if line[0] == 0x3A { return }    // ":" a comment: the keepalive
        let colon = line.firstIndex(of: 0x3A) ?? line.count
        let name = String(decoding: line[..<colon], as: UTF8.self)
        var valueStart = colon < line.count ? colon + 1 : colon
        if valueStart < line.count && line[valueStart] == 0x20 { valueStart += 1 }
        let value = line[valueStart...]
        switch name {
        case "event": type = String(decoding: value, as: UTF8.self)
        case "data":
            if hasData { data.append(0x0A) }
            guard data.count + value.count <= Self.maxLineBytes else { throw .lineTooLong }
            data.append(contentsOf: value)
            hasData = true
        case "id":
            if !value.contains(0) { lastEventID = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), value.count <= 9 {
                retryMilliseconds = Int(String(decoding: value, as: UTF8.self))
            }
        default: break
        }
    }
}
