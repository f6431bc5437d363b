/// A reader of Server-Sent Events (the WHATWG event-stream format) as the hint stream needs
/// it, bounded against a hostile server: a line over `maxLineBytes` (one that never ends) or
/// data over `maxLineBytes` for one event is an error, after which the connection is dropped.
///
/// Lines end with CR LF, LF or CR; a UTF-8 byte order mark at the start is skipped; a line
/// starting with ":" is a comment (the keepalive); fields are `event`, `data`, `id` and
/// `retry`; a blank line dispatches the event. As the format says, an `id` becomes the last
/// event id only when its event is dispatched (an event cut off by a broken connection must be
/// sent again, so its id is not acknowledged), and a `retry` is any run of digits (one too
/// large for an `Int` is read as the largest, which the stream bounds anyway). One departure:
/// an event with a type and no `data` is dispatched too (the format drops it), since a hint
/// needs no data.
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
    /// The id of the event being read (the format's "last event ID buffer").
    private var idBuffer: String?
    /// Bytes of the byte order mark matched so far, until `pastStart`.
    private var bomMatched = 0
    private var pastStart = false
    /// The id of the last event dispatched (kept across events, as the format says), for
    /// Last-Event-ID.
    private(set) var lastEventID: String?
    /// The server's `retry`, milliseconds, when it sent one.
    private(set) var retryMilliseconds: Int?

    enum Failure: Error, Equatable { case lineTooLong }

    /// Reads `bytes`, calling `dispatch` for each complete event; stops at the first failure.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, dispatch: (Event) -> Void) throws(Failure) {
        for byte in bytes {
            if !pastStart {
                if byte == Self.byteOrderMark[bomMatched] {
                    bomMatched += 1
                    pastStart = bomMatched == Self.byteOrderMark.count
                    continue
                }
                // Not a byte order mark after all: what was taken for one is text.
                pastStart = true
                for early in Self.byteOrderMark.prefix(bomMatched) { try take(early, dispatch) }
            }
            try take(byte, dispatch)
        }
    }

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    private mutating func take(_ byte: UInt8, _ dispatch: (Event) -> Void) throws(Failure) {
        if lastWasCR && byte == 0x0A { lastWasCR = false; return }   // the LF of a CR LF
        lastWasCR = byte == 0x0D
        if byte == 0x0A || byte == 0x0D {
            try endLine(dispatch)
            return
        }
        guard line.count < Self.maxLineBytes else { throw .lineTooLong }
        line.append(byte)
    }

    private mutating func endLine(_ dispatch: (Event) -> Void) throws(Failure) {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            lastEventID = idBuffer
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
            if !value.contains(0) { idBuffer = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                var ms = 0
                for digit in value { ms = ms > (Int.max - 9) / 10 ? Int.max : ms * 10 + Int(digit - 0x30) }
                retryMilliseconds = ms
            }
        default: break
        }
    }
}
