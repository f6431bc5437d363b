/// Cards at the boundary (docs/WIRE.md, "Cards at the boundary"): long keys, every field present (null where the kind has
/// none), keys always in the order of docs/BEHAVIOUR.md, "Cards", and extras sorted by key, so the same card
/// gives byte-identical JSON on every call and in every binding.
package enum CardJSON {
    /// The boundary keys, in the order they are written.
    package static let keys = [
        "id", "type", "created", "expiresAt", "viewed", "clicked", "dismissed", "read", "dismissible",
        "pinned", "isTest", "isControl", "url", "openURLInWebView", "extras", "classType",
        "image", "imageAltText", "imageAspectRatio", "title", "cardDescription", "domain", "imagePath",
    ]

    package static func encode(_ card: Card) -> String {
        var writer = JSONWriter(reservingCapacity: 512)
        write(card, to: &writer)
        return writer.string
    }

    // The feed functions take an array: their callers are in other files and modules, where
    // a function generic over the collection is not specialized and every card went through
    // the iterator's witness (500 instructions a card of a feed). Any other collection of
    // cards is made an array first.

    package static func encode(_ cards: [Card]) -> String {
        String(decoding: encodeBytes(cards), as: UTF8.self)
    }

    package static func encode<C: Collection>(_ cards: C) -> String where C.Element == Card {
        encode(Array(cards))
    }

    /// The same JSON as UTF-8 bytes, with no String between.
    package static func encodeBytes(_ cards: [Card]) -> [UInt8] {
        withEncoded(cards) { Array($0) }
    }

    package static func encodeBytes<C: Collection>(_ cards: C) -> [UInt8] where C.Element == Card {
        encodeBytes(Array(cards))
    }

    /// Calls `body` with the JSON of `cards`, in the writer's own buffer (what the C boundary
    /// copies out: one copy instead of two).
    package static func withEncoded<R>(_ cards: [Card], _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try feed(cards).withBytes(body)
    }

    package static func withEncoded<C: Collection, R>(_ cards: C, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R
    where C.Element == Card {
        try withEncoded(Array(cards), body)
    }

    static func feed(_ cards: [Card]) -> JSONWriter {
        var none: [Int]? = nil
        return feed(cards, offsets: &none)
    }

    /// The feed of `cards`; `offsets`, when not nil, gets where each card begins and, last, the
    /// text's length (`recordCard`).
    static func feed(_ cards: [Card], offsets: inout [Int]?) -> JSONWriter {
        var writer = feedWriter(count: cards.count, offsets: &offsets)
        for card in cards {
            write(card, to: &writer)
            recordCard(writer, in: &offsets)
        }
        endFeed(&writer, offsets: &offsets)
        return writer
    }

    /// A feed writer (`feedWriter(count:)`) whose caller notes where the cards begin: `offsets`,
    /// when not nil, starts with the first card's, after the `[`.
    static func feedWriter(count: Int, offsets: inout [Int]?) -> JSONWriter {
        offsets?.reserveCapacity(count + 1)
        offsets?.append(1)
        return feedWriter(count: count)
    }

    /// Notes, after a card was written, where the next one begins: past the one byte that
    /// follows every card of a feed (the `,` before the next, or the closing `]`). After the
    /// last card that is the text's length, so card i is the bytes from offsets[i] up to
    /// offsets[i + 1] - 1.
    @inline(__always)
    static func recordCard(_ writer: JSONWriter, in offsets: inout [Int]?) {
        offsets?.append(writer.byteCount + 1)
    }

    /// Ends a feed's array; its last offset becomes the text's length (for a feed with cards
    /// it is already: the `]` is the byte after the last card; the empty feed's one offset,
    /// 1, becomes 2).
    static func endFeed(_ writer: inout JSONWriter, offsets: inout [Int]?) {
        writer.endArray()
        if let last = offsets?.indices.last { offsets?[last] = writer.byteCount }
    }

    /// A writer for a feed of `count` cards, its array begun: the caller writes each card and
    /// ends the array. Sized once for the whole feed (a card's JSON rarely passes 720 bytes).
    static func feedWriter(count: Int) -> JSONWriter {
        var writer = JSONWriter(reservingFilled: 720 * max(count, 1))
        writer.beginArray()
        return writer
    }

    /// Writes one card. The layout is fixed, so it goes in as literal pieces and values, with
    /// no comma bookkeeping per member; `keys` is the order (tested).
    package static func write(_ card: Card, to w: inout JSONWriter) {
        w.beginRawValue()
        // The head in one piece, with one check for room (a dozen pieces written one call each
        // were half of writing a card), when the id needs no escape (ids are plain text).
        var id = card.id
        let wrote = id.withUTF8 { idBytes in
            guard RawPieces.needsNoEscape(idBytes) else { return false }
            w.appendRaw(maxCount: idBytes.count + headMaxCount) { out in
                var at = 0
                RawPieces.put("{\"id\":\"", out, &at)
                if let base = idBytes.baseAddress { RawPieces.copy(base, to: out + at, count: idBytes.count) }
                at += idBytes.count
                out[at] = 0x22; at += 1
                writeTypeAndTimes(card, out, &at)
                at += writeFlags(card, to: out + at)
                return at
            }
            return true
        }
        if !wrote {
            w.raw("{\"id\":"); w.rawString(card.id)
            w.appendRaw(maxCount: headMaxCount) { out in
                var at = 0
                writeTypeAndTimes(card, out, &at)
                return at + writeFlags(card, to: out + at)
            }
        }
        // url ... domain: the values kept in the card's body (`CardBody`), copied under their keys.
        card.body.writeMembers(to: &w)
        if let path = card.imagePath {
            w.raw(",\"imagePath\":"); w.rawString(path); w.raw(0x7D)
        } else {
            w.raw(",\"imagePath\":null}")
        }
    }

    /// The room the head takes at most, past the id's text: its key and quotes, the type,
    /// the two times (each 20 digits at most) and the eight flags (each `,"name":false`).
    private static let headMaxCount = 8 + 27 + 11 + RawPieces.maxDigits + 13 + RawPieces.maxDigits + 130

    @inline(__always)
    private static func writeTypeAndTimes(_ card: Card, _ out: UnsafeMutablePointer<UInt8>, _ at: inout Int) {
        switch card.type {
        case .classic: RawPieces.put(",\"type\":\"classic\"", out, &at)
        case .banner: RawPieces.put(",\"type\":\"banner\"", out, &at)
        case .captionedImage: RawPieces.put(",\"type\":\"captioned_image\"", out, &at)
        case .control: RawPieces.put(",\"type\":\"control\"", out, &at)
        }
        RawPieces.put(",\"created\":", out, &at)
        at += RawPieces.putDigits(card.created, out + at)
        RawPieces.put(",\"expiresAt\":", out, &at)
        at += RawPieces.putDigits(card.expiresAt, out + at)
    }

    /// The flags as one piece with one check for room: written one call each they were a
    /// fifth of writing a card (docs/PERFORMANCE.md, "Cold start"). The bytes written.
    @inline(__always)
    private static func writeFlags(_ card: Card, to out: UnsafeMutablePointer<UInt8>) -> Int {
        var at = 0
        RawPieces.put(card.viewed ? ",\"viewed\":true" : ",\"viewed\":false", out, &at)
        RawPieces.put(card.clicked ? ",\"clicked\":true" : ",\"clicked\":false", out, &at)
        RawPieces.put(card.dismissed ? ",\"dismissed\":true" : ",\"dismissed\":false", out, &at)
        RawPieces.put(card.read ? ",\"read\":true" : ",\"read\":false", out, &at)
        RawPieces.put(card.dismissible ? ",\"dismissible\":true" : ",\"dismissible\":false", out, &at)
        RawPieces.put(card.pinned ? ",\"pinned\":true" : ",\"pinned\":false", out, &at)
        RawPieces.put(card.isTest ? ",\"isTest\":true" : ",\"isTest\":false", out, &at)
        RawPieces.put(card.isControl ? ",\"isControl\":true" : ",\"isControl\":false", out, &at)
        return at
    }

    /// Reads one card back from its boundary JSON (the inverse of `encode`).
    package static func decode(_ text: String, limits: JSONReader.Limits = JSONReader.Limits()) throws(PayloadError) -> Card {
        let value: JSONValue
        do { value = try JSONReader.parse(text, limits: limits) } catch {
            throw PayloadError("card JSON is not valid: \(error)")
        }
        do { return try decode(value) } catch { throw PayloadError(error.reason) }
    }

    /// Reads a JSON array of boundary cards.
    package static func decodeList(_ text: String, limits: JSONReader.Limits = JSONReader.Limits()) throws(PayloadError) -> [Card] {
        let value: JSONValue
        do { value = try JSONReader.parse(text, limits: limits) } catch {
            throw PayloadError("card list JSON is not valid: \(error)")
        }
        guard case .array(let items) = value else { throw PayloadError("card list is \(value.typeName), expected an array") }
        var cards: [Card] = []
        for (i, item) in items.enumerated() {
            do { cards.append(try decode(item)) } catch { throw PayloadError("card #\(i): \(error.reason)") }
        }
        return cards
    }

    package static func decode(_ v: JSONValue) throws(CardProblem) -> Card {
        guard case .object = v else { throw CardProblem(id: nil, reason: "a card must be an object, not \(v.typeName)") }
        var r = BoundaryFields(value: v, id: nil)
        guard let id = try r.string("id"), !id.isEmpty else { throw r.problem("missing \"id\"") }
        r.id = id
        guard let typeName = try r.string("type"), let type = CardType(rawValue: typeName) else {
            throw r.problem("missing or unknown \"type\"")
        }
        guard let created = try r.int("created") else { throw r.problem("missing \"created\"") }
        let content: Card.Content
        switch type {
        case .classic:
            content = .classic(Card.Classic(title: try r.string("title"), cardDescription: try r.required("cardDescription"),
                                            image: try r.string("image"), imageAltText: try r.string("imageAltText"),
                                            domain: try r.string("domain")))
        case .banner:
            content = .banner(Card.Banner(image: try r.required("image"), imageAltText: try r.string("imageAltText"),
                                          imageAspectRatio: try r.double("imageAspectRatio"), domain: try r.string("domain")))
        case .captionedImage:
            content = .captionedImage(Card.CaptionedImage(
                image: try r.required("image"), imageAltText: try r.string("imageAltText"),
                imageAspectRatio: try r.double("imageAspectRatio"), title: try r.required("title"),
                cardDescription: try r.required("cardDescription"), domain: try r.string("domain")))
        case .control:
            content = .control
        }
        var extras: [String: String] = [:]
        if let e = v["extras"], e != .null {
            guard case .object(let members) = e else { throw r.problem("\"extras\" must be an object") }
            for m in members {
                guard let s = m.value.stringValue else { throw r.problem("extras \"\(m.key)\" must be a string") }
                extras[m.key] = s
            }
        }
        var card = Card(id: id, created: created, expiresAt: try r.int("expiresAt") ?? Card.neverExpires,
                    viewed: try r.bool("viewed"), clicked: try r.bool("clicked"), dismissed: try r.bool("dismissed"), read: try r.bool("read"),
                    dismissible: try r.bool("dismissible"), pinned: try r.bool("pinned"), isTest: try r.bool("isTest"),
                    url: try r.string("url"), openURLInWebView: try r.bool("openURLInWebView"), extras: extras,
                    classType: try r.string("classType"), content: content)
        card.imagePath = try r.string("imagePath")
        return card
    }
}

private struct BoundaryFields {
    let value: JSONValue
    var id: String?
    func problem(_ reason: String) -> CardProblem { CardProblem(id: id, reason: reason) }
    func string(_ k: String) throws(CardProblem) -> String? {
        guard let v = value[k], v != .null else { return nil }
        guard let s = v.stringValue else { throw problem("\"\(k)\" must be a string") }
        return s
    }
    func required(_ k: String) throws(CardProblem) -> String {
        guard let s = try string(k) else { throw problem("missing \"\(k)\"") }
        return s
    }
    func bool(_ k: String) throws(CardProblem) -> Bool {
        guard let v = value[k], v != .null else { return false }
        guard let b = v.boolValue else { throw problem("\"\(k)\" must be a boolean") }
        return b
    }
    func int(_ k: String) throws(CardProblem) -> Int64? {
        guard let v = value[k], v != .null else { return nil }
        guard let n = v.int64Value else { throw problem("\"\(k)\" must be a whole number") }
        return n
    }
    func double(_ k: String) throws(CardProblem) -> Double? {
        guard let v = value[k], v != .null else { return nil }
        guard let d = v.doubleValue else { throw problem("\"\(k)\" must be a number") }
        return d
    }
}
