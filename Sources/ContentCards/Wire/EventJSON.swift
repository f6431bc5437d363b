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

    /// An estimate of one event's encoded size, for batching by bytes.
    static func encodedSize(_ e: Event) -> Int {
        100 + e.id.utf8.count + (e.cardID?.utf8.count ?? 0) + (e.classType?.utf8.count ?? 0) + e.userID.utf8.count
    }
}
