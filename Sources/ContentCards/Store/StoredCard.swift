/// The form a card is stored in (schema 3): fourteen JSON values, each followed by the byte
/// 0x01, as in `CardBody`: the boundary type (`"classic"`), created, expiresAt, the local and
/// server flags as one integer, then the card's body as it is in memory (url ... domain).
///
/// Why: a card is read back by checking these values and copying the body, with nothing to
/// transcode, so opening a store costs a check of each card's bytes instead of decoding it
/// (the short-key JSON of schema 1 and 2 was decoded like a payload: 17,000 instructions a
/// card, most of a cold start). Writing one is a copy too. Rows of the earlier form are still
/// read (`PayloadDecoder.decodeStoredCard`), and rewritten in this form when next written.
///
/// Every value is checked on reading, type by type, so a damaged or edited row is skipped (and
/// counted in the diagnostics) rather than put into a feed as JSON that does not parse.
enum StoredCard {
    private static let viewed: Int64 = 1, clicked: Int64 = 2, dismissed: Int64 = 4, read: Int64 = 8
    private static let pinned: Int64 = 16, dismissible: Int64 = 32, isTest: Int64 = 64

    /// The record of a card; nil when memory ran out writing it.
    static func encode(_ c: Card) -> [UInt8]? {
        var w = JSONWriter(reservingCapacity: c.body.json.count + 48)
        let end = CardBody.separator
        switch c.type {
        case .classic: w.raw("\"classic\"")
        case .banner: w.raw("\"banner\"")
        case .captionedImage: w.raw("\"captioned_image\"")
        case .control: w.raw("\"control\"")
        }
        w.raw(end)
        w.rawInt(c.created); w.raw(end)
        w.rawInt(c.expiresAt); w.raw(end)
        var flags: Int64 = 0
        if c.viewed { flags |= viewed }
        if c.clicked { flags |= clicked }
        if c.dismissed { flags |= dismissed }
        if c.read { flags |= read }
        if c.pinned { flags |= pinned }
        if c.dismissible { flags |= dismissible }
        if c.isTest { flags |= isTest }
        w.rawInt(flags); w.raw(end)
        c.body.json.withUnsafeBufferPointer { w.appendRaw($0) }
        return w.failed ? nil : w.bytes
    }

    /// Whether a stored row is in this form (the earlier one is a JSON object).
    static func isRecord(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool { bytes.first == 0x22 }

    /// The id of a row of schema 3 (the record does not repeat it): one a payload could give,
    /// non-empty, valid UTF-8, no NUL; nil otherwise.
    static func checkedID(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard bytes.count > 0, let base = bytes.baseAddress, memchr(base, 0, bytes.count) == nil,
              UTF8Validation.isValid(bytes) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The card of a record, with the class type normalized again under the configuration of
    /// the day; nil when any value is not what its place needs, or the body is not exactly the
    /// bytes the library writes for those values (a record edited by hand must not put into a
    /// feed JSON that another card with the same fields would not give, nor make two equal
    /// cards compare unequal).
    ///
    /// The check is strict and cheap for what the library writes (strings without escapes,
    /// extras with ASCII keys in order, no white space); a record with anything else (an
    /// escape, a non-ASCII key) is accepted only if writing its values again gives the same
    /// bytes.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, id: String, knownClassTypes: Set<String>?) -> Card? {
        var scratch = JSONWriter(reservingCapacity: 32)
        return decode(bytes, id: id, knownClassTypes: knownClassTypes, scratch: &scratch)
    }

    /// `decode`, with a writer kept from one record to the next (a store's load reads
    /// thousands in a row).
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, id: String, knownClassTypes: Set<String>?,
                       scratch w: inout JSONWriter) -> Card? {
        guard UTF8Validation.isValid(bytes) else { return nil }
        var p = Parser(bytes: bytes, maxDepth: 4)
        p.validUTF8 = true
        var header = Header()
        var bodyStart = 0
        var storedClassType = ""
        var rawClassType: String?
        var plain = true          // false: compare with the values written again
        var nulls: UInt16 = 0     // bit i: place i holds null
        do throws(JSONError) {
            for place in 0..<14 {
                if place == 4 { bodyStart = p.pos }
                guard p.pos < bytes.count else { return nil }
                let first = bytes[p.pos]
                switch place {
                case 0:
                    guard first == 0x22, let type = try cardType(&p) else { return nil }
                    header.type = type
                case 1, 2, 3:
                    guard first == 0x2D || (first >= 0x30 && first <= 0x39) else { return nil }
                    let digits = UnsafeBufferPointer(rebasing: bytes[try p.scanNumber()])
                    // Written by `rawInt`: digits, at most 19 and a sign.
                    guard let n = CardFields.plainInteger(digits) ?? Int64(String(decoding: digits, as: UTF8.self)) else {
                        return nil
                    }
                    if place == 1 { header.created = n } else if place == 2 { header.expiresAt = n } else { header.flags = n }
                case 5:                                    // openURLInWebView
                    guard first == 0x74 || first == 0x66 else { return nil }
                    try p.skipValue()
                case 6:                                    // extras: strings only
                    guard first == 0x7B, let extras = try checkExtras(&p) else { return nil }
                    rawClassType = extras.classType
                    if !extras.plain { plain = false }
                case 7:                                    // classType
                    guard first == 0x22 else { return nil }
                    let span = try p.scanString()
                    if !span.plain { plain = false }
                    storedClassType = try p.string(span)
                case 10:                                   // imageAspectRatio: as `rawDouble` writes it
                    if first == 0x6E { try p.literal("null"); nulls |= 1 << place } else {
                        guard first == 0x2D || (first >= 0x30 && first <= 0x39) else { return nil }
                        let text = UnsafeBufferPointer(rebasing: bytes[try p.scanNumber()])
                        guard let value = CardFields.shortDecimal(text) ?? Double(String(decoding: text, as: UTF8.self)),
                              value.isFinite else { return nil }
                        w.removeAll()
                        w.rawDouble(value)
                        guard w.withBytes({ $0.bytesEqual(text) }) else { return nil }
                    }
                default:                                   // url, image, alt text, title, description, domain
                    if first == 0x6E { try p.literal("null"); nulls |= 1 << place } else {
                        guard first == 0x22 else { return nil }
                        let span = try p.scanString()
                        if span.escaped { _ = try p.string(span) }    // checks the escapes
                        if !span.plain { plain = false }
                    }
                }
                guard p.pos < bytes.count, bytes[p.pos] == CardBody.separator else { return nil }
                p.pos += 1
            }
        } catch {
            return nil
        }
        guard p.pos == bytes.count, hasItsKindsFields(header.type, nulls: nulls) else { return nil }
        var card = Card(id: id, created: header.created, expiresAt: header.expiresAt,
                        viewed: header.flags & viewed != 0, clicked: header.flags & clicked != 0,
                        dismissed: header.flags & dismissed != 0, read: header.flags & read != 0,
                        dismissible: header.flags & dismissible != 0, pinned: header.flags & pinned != 0,
                        isTest: header.flags & isTest != 0, type: header.type, classType: storedClassType,
                        body: CardBody(json: Array(UnsafeBufferPointer(rebasing: bytes[bodyStart...]))))
        if !plain && CardBody(card.body.fields(type: card.type)) != card.body { return nil }
        // Stored under the configuration of its day: normalized again under today's.
        let classType = ClassType.normalize(rawClassType ?? "", known: knownClassTypes)
        if classType != storedClassType { card.classType = classType }
        return card
    }

    /// `decode` for a record whose check sum matched (`RecordSum`): the bytes the library wrote
    /// for a card it had checked, so only what a `Card` holds apart from its body is read (the
    /// kind, the times, the flags, the class type), with no check of each value. Nil when the
    /// record is not laid out as written, holds what this reading leaves to the full check (an
    /// escaped class type, a time of 19 digits), or has the class type `""` while its extras
    /// hold a `class_type` (a value the configuration of its day did not know, which today's
    /// may): the caller then checks it in full with `decode`.
    static func decodeSummed(_ bytes: UnsafeBufferPointer<UInt8>, id: String, knownClassTypes: Set<String>?) -> Card? {
        guard let base = bytes.baseAddress else { return nil }
        // Where each of the fourteen values ends: the record's only 0x01 bytes (JSON text holds
        // no raw control byte).
        var ends = (0, 0, 0, 0, 0, 0, 0)             // of places 0, 1, 2, 3, 5, 6, 7
        var start = 0
        for place in 0..<14 {
            guard start < bytes.count, let hit = memchr(base + start, Int32(CardBody.separator), bytes.count - start) else {
                return nil
            }
            let end = UnsafePointer<UInt8>(hit.assumingMemoryBound(to: UInt8.self)) - base
            switch place {
            case 0: ends.0 = end
            case 1: ends.1 = end
            case 2: ends.2 = end
            case 3: ends.3 = end
            case 5: ends.4 = end
            case 6: ends.5 = end
            case 7: ends.6 = end
            default: break
            }
            start = end + 1
        }
        guard start == bytes.count else { return nil }
        func slice(_ from: Int, _ to: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[from..<to]) }
        let type: CardType
        let name = slice(0, ends.0)
        if name.bytesEqual("\"classic\"") { type = .classic }
        else if name.bytesEqual("\"captioned_image\"") { type = .captionedImage }
        else if name.bytesEqual("\"banner\"") { type = .banner }
        else if name.bytesEqual("\"control\"") { type = .control }
        else { return nil }
        guard let created = CardFields.plainInteger(slice(ends.0 + 1, ends.1)),
              let expiresAt = CardFields.plainInteger(slice(ends.1 + 1, ends.2)),
              let flags = CardFields.plainInteger(slice(ends.2 + 1, ends.3)) else { return nil }
        // The class type as written: a string without escapes (anything else: in full).
        let quoted = slice(ends.5 + 1, ends.6)
        guard quoted.count >= 2, quoted[0] == 0x22, quoted[quoted.count - 1] == 0x22,
              memchr(quoted.baseAddress! + 1, 0x5C, quoted.count - 2) == nil else { return nil }
        // "" with a `class_type` among the extras: a value the configuration of its day did not
        // know, which today's may (in full). With none, it is "" under any configuration.
        if quoted.count == 2 && hasClassTypeKey(slice(ends.4 + 1, ends.5)) { return nil }
        let stored = String(decoding: UnsafeBufferPointer(rebasing: quoted[1..<(quoted.count - 1)]), as: UTF8.self)
        // A class type that is not "" is the extras' value normalized (a set of known types
        // holds normalized values), so today's configuration only decides whether it is known.
        var card = Card(id: id, created: created, expiresAt: expiresAt,
                        viewed: flags & viewed != 0, clicked: flags & clicked != 0,
                        dismissed: flags & dismissed != 0, read: flags & read != 0,
                        dismissible: flags & dismissible != 0, pinned: flags & pinned != 0,
                        isTest: flags & isTest != 0, type: type, classType: stored,
                        body: CardBody(json: Array(UnsafeBufferPointer(rebasing: bytes[(ends.3 + 1)...]))))
        // The body holds the class type too: setting it rewrites both.
        if !stored.isEmpty, let known = knownClassTypes, !known.contains(stored) { card.classType = "" }
        return card
    }

    /// Whether the extras object as the library writes it has the key `class_type`: the bytes
    /// `"class_type":` right after `{` or `,`. Inside a string every quote is escaped (`\"`),
    /// so a quote after `{` or `,` always opens a key.
    private static func hasClassTypeKey(_ extras: UnsafeBufferPointer<UInt8>) -> Bool {
        let key: StaticString = "\"class_type\":"
        let n = key.utf8CodeUnitCount
        guard extras.count > n, let base = extras.baseAddress else { return false }
        var at = 0
        while at + n < extras.count, let hit = memchr(base + at + 1, 0x22, extras.count - at - 1 - n) {
            let q = UnsafePointer<UInt8>(hit.assumingMemoryBound(to: UInt8.self)) - base
            if (base[q - 1] == 0x7B || base[q - 1] == 0x2C) && memcmp(base + q, key.utf8Start, n) == 0 { return true }
            at = q
        }
        return false
    }

    /// The kind's fields are strings where the kind has them (a classic card's description,
    /// an image card's image, a captioned card's title and description) and null where it has
    /// none, as `CardBody` writes them. Places: image 8, alt text 9, ratio 10, title 11,
    /// description 12, domain 13.
    private static func hasItsKindsFields(_ type: CardType, nulls: UInt16) -> Bool {
        func isNull(_ place: Int) -> Bool { nulls & (1 << place) != 0 }
        switch type {
        case .classic: return !isNull(12) && isNull(10)
        case .banner: return !isNull(8) && isNull(11) && isNull(12)
        case .captionedImage: return !isNull(8) && !isNull(11) && !isNull(12)
        case .control: return (8...13).allSatisfy(isNull)
        }
    }

    private struct Header {
        var type = CardType.control
        var created: Int64 = 0
        var expiresAt: Int64 = Card.neverExpires
        var flags: Int64 = 0
    }

    /// The boundary type at the parser, compared as bytes.
    private static func cardType(_ p: inout Parser) throws(JSONError) -> CardType? {
        guard p.peek() == 0x22 else { return nil }
        let span = try p.scanString()
        if span.escaped { return CardType(rawValue: try p.string(span)) }
        let b = p.bytes(span)
        // Compared as bytes with literals (`ByteCompare.swift`), not through each case's
        // `rawValue` (a String made per case).
        if b.bytesEqual("classic") { return .classic }
        if b.bytesEqual("captioned_image") { return .captionedImage }
        if b.bytesEqual("banner") { return .banner }
        if b.bytesEqual("control") { return .control }
        return nil
    }


    private struct Extras {
        var classType: String?
        /// What the library writes: keys ASCII without escapes and in strictly ascending
        /// order, values without escapes or DEL, no white space.
        var plain = true
    }

    /// Checks an extras object (string values only) and finds its `class_type`; nil when the
    /// object holds anything else.
    private static func checkExtras(_ p: inout Parser) throws(JSONError) -> Extras? {
        var extras = Extras()
        let bytes = p.bytes
        var previous: StringSpan?
        var cursor = try p.beginObject()
        while true {
            let at = p.pos
            guard try p.toNextMember(&cursor) else { break }
            // No white space, a comma only between members: as written.
            let expected = at + (previous == nil ? 0 : 1)
            if p.pos != expected { extras.plain = false }
            let key = try p.scanString()
            let isClassType = key.escaped
                ? try p.string(key) == ClassType.extrasKey
                : p.bytes(key).bytesEqual("class_type")
            if key.escaped || !key.ascii || !key.plain { extras.plain = false }
            if let previous, !isAscending(p.bytes(previous), p.bytes(key)) { extras.plain = false }
            previous = key
            let colon = p.pos
            try p.afterMemberName()
            guard p.peek() == 0x22 else { return nil }
            if p.pos != colon + 1 { extras.plain = false }
            let value = try p.scanString()
            if !value.plain { extras.plain = false }
            if isClassType { extras.classType = try p.string(value) } else if value.escaped { _ = try p.string(value) }
        }
        // No white space before the closing brace either.
        if p.pos >= 2 && bytes[p.pos - 2] != (previous == nil ? 0x7B : 0x22) { extras.plain = false }
        return extras
    }

    /// Strictly ascending byte order (what the writer's sorted, duplicate-free keys give).
    private static func isAscending(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        a.bytesCompare(b) < 0
    }
}
