/// The form a card is stored in: the server's short keys (docs/WIRE.md, "Cards on the wire") with default values left
/// out, and the local flags (`v`, `cl`, `d`, `rd`) in it. Less than half the size of the
/// boundary JSON, and read back by the same streaming decoder as payloads; the class type is
/// not stored but normalized again on reading, under the configuration of the day.
public enum StoredCardJSON {
    private static let id = JSONWriter.Key("id"), tp = JSONWriter.Key("tp"), ca = JSONWriter.Key("ca")
    private static let ea = JSONWriter.Key("ea"), v = JSONWriter.Key("v"), cl = JSONWriter.Key("cl")
    private static let d = JSONWriter.Key("d"), p = JSONWriter.Key("p"), db = JSONWriter.Key("db")
    private static let t = JSONWriter.Key("t"), uw = JSONWriter.Key("uw"), e = JSONWriter.Key("e")
    private static let u = JSONWriter.Key("u"), i = JSONWriter.Key("i"), alt = JSONWriter.Key("image_alt")
    private static let ar = JSONWriter.Key("ar"), tt = JSONWriter.Key("tt"), ds = JSONWriter.Key("ds")
    private static let dm = JSONWriter.Key("dm"), rd = JSONWriter.Key("rd")

    public static func encode(_ c: Card) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 512)
        w.beginObject()
        w.key(id); w.string(c.id)
        w.key(tp)
        switch c.type {
        case .classic: w.string("short_news")
        case .banner: w.string("banner_image")
        case .captionedImage: w.string("captioned_image")
        case .control: w.string("control")
        }
        w.key(ca); w.int(c.created)
        if c.expiresAt != Card.neverExpires { w.key(ea); w.int(c.expiresAt) }
        if c.viewed { w.key(v); w.bool(true) }
        if c.clicked { w.key(cl); w.bool(true) }
        if c.dismissed { w.key(d); w.bool(true) }
        if c.read { w.key(rd); w.bool(true) }
        if c.pinned { w.key(p); w.bool(true) }
        if c.dismissible { w.key(db); w.bool(true) }
        if c.isTest { w.key(t); w.bool(true) }
        // The body's values are already JSON in the form this one takes: each is copied under
        // its short key (the class type is left out, as above).
        c.body.forEachValue { member, value in
            let key: JSONWriter.Key
            switch member {
            case .url: key = u
            case .openURLInWebView: key = uw
            case .extras: key = e
            case .classType: return
            case .image: key = i
            case .imageAltText: key = alt
            case .imageAspectRatio: key = ar
            case .title: key = tt
            case .cardDescription: key = ds
            case .domain: key = dm
            }
            w.key(key)
            w.rawJSON(value)
        }
        w.endObject()
        return w.bytes
    }
}
