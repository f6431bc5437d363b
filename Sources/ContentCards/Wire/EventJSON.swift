/// Events on the wire (docs/WIRE.md, "Events"): `{"events":[{"id","type","card_id","class_type","user_id","time"}]}`.
enum EventJSON {
    static func write(_ e: Event, to w: inout JSONWriter) {
        w.beginObject()
        w.key("id"); w.string(e.id)
        w.key("type"); w.string(e.kind.rawValue)
        w.key("card_id"); w.string(e.cardID)
        w.key("class_type"); w.string(e.classType)
        w.key("user_id"); w.string(e.userID)
        w.key("time"); w.double(e.time)
        w.endObject()
    }

    static func encode(_ e: Event) -> String {
        var w = JSONWriter()
        write(e, to: &w)
        return w.string
    }

    /// The body of one delivery batch.
    static func batch(_ events: [Event]) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 160 * max(events.count, 1))
        w.beginObject()
        w.key("events")
        w.beginArray()
        for e in events { write(e, to: &w) }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    /// One event's encoded size at most, for batching by bytes: the fixed text, and each string
    /// as the writer escapes it (a control character is six bytes, a quote two): counted raw, ids
    /// full of them made a batch several times `eventBatchBytes`, which a server's limit then
    /// refused whole.
    static func encodedSize(_ e: Event) -> Int {
        100 + escapedCount(e.id) + (e.cardID.map(escapedCount) ?? 0) + (e.classType.map(escapedCount) ?? 0)
            + escapedCount(e.userID)
    }

    /// The bytes of `s` written as a JSON string's contents (`JSONWriter`'s escapes).
    static func escapedCount(_ s: String) -> Int {
        var n = 0
        for b in s.utf8 {
            switch b {
            case 0x22, 0x5C, 0x0A, 0x0D, 0x09, 0x08, 0x0C: n += 2
            case _ where JSONWriter.needsEscape(b): n += 6
            default: n += 1
            }
        }
        return n
    }
}
