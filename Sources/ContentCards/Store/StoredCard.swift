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

    static func encode(_ c: Card) -> [UInt8] {
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
        return w.bytes
    }

    /// Whether a stored row is in this form (the earlier one is a JSON object).
    static func isRecord(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool { bytes.first == 0x22 }

    /// The card of a record, with the class type normalized again under the configuration of
    /// the day; nil when any value is not what its place needs.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, id: String, knownClassTypes: Set<String>?) -> Card? {
        guard UTF8Validation.isValid(bytes) else { return nil }
        var p = Parser(bytes: bytes, maxDepth: 4)
        p.validUTF8 = true
        var header = Header()
        var bodyStart = 0
        var storedClassType = ""
        var rawClassType: String?
        do throws(JSONError) {
            for place in 0..<14 {
                if place == 4 { bodyStart = p.pos }
                guard p.pos < bytes.count else { return nil }
                switch place {
                case 0:
                    guard let type = try cardType(&p) else { return nil }
                    header.type = type
                case 1, 2, 3:
                    guard let n = CardFields.plainInteger(UnsafeBufferPointer(rebasing: bytes[try p.scanNumber()])) else {
                        return nil
                    }
                    if place == 1 { header.created = n } else if place == 2 { header.expiresAt = n } else { header.flags = n }
                case 5:                                    // openURLInWebView
                    guard bytes[p.pos] == 0x74 || bytes[p.pos] == 0x66 else { return nil }
                    try p.skipValue()
                case 6:                                    // extras: strings only
                    guard bytes[p.pos] == 0x7B, let extras = try checkExtras(&p) else { return nil }
                    rawClassType = extras.classType
                case 7:                                    // classType
                    guard let s = try string(&p) else { return nil }
                    storedClassType = s
                case 10:                                   // imageAspectRatio
                    if bytes[p.pos] == 0x6E { try p.literal("null") } else {
                        guard bytes[p.pos] == 0x2D || (bytes[p.pos] >= 0x30 && bytes[p.pos] <= 0x39) else { return nil }
                        _ = try p.scanNumber()
                    }
                default:                                   // url, image, alt text, title, description, domain
                    if bytes[p.pos] == 0x6E { try p.literal("null") } else {
                        guard bytes[p.pos] == 0x22 else { return nil }
                        let span = try p.scanString()
                        if span.escaped { _ = try p.string(span) }    // checks the escapes
                    }
                }
                guard p.pos < bytes.count, bytes[p.pos] == CardBody.separator else { return nil }
                p.pos += 1
            }
        } catch {
            return nil
        }
        guard p.pos == bytes.count else { return nil }
        var card = Card(id: id, created: header.created, expiresAt: header.expiresAt,
                        viewed: header.flags & viewed != 0, clicked: header.flags & clicked != 0,
                        dismissed: header.flags & dismissed != 0, read: header.flags & read != 0,
                        dismissible: header.flags & dismissible != 0, pinned: header.flags & pinned != 0,
                        isTest: header.flags & isTest != 0, type: header.type, classType: storedClassType,
                        body: CardBody(json: Array(UnsafeBufferPointer(rebasing: bytes[bodyStart...]))))
        // Stored under the configuration of its day: normalized again under today's.
        let classType = ClassType.normalize(rawClassType ?? "", known: knownClassTypes)
        if classType != storedClassType { card.classType = classType }
        return card
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
        for type in [CardType.classic, .banner, .captionedImage, .control] where b.elementsEqual(type.rawValue.utf8) { return type }
        return nil
    }

    /// A string value's text; nil for any other value.
    private static func string(_ p: inout Parser) throws(JSONError) -> String? {
        guard p.peek() == 0x22 else { return nil }
        return try p.string(try p.scanString())
    }

    private struct Extras {
        var classType: String?
    }

    private static let classTypeKey = Array(ClassType.extrasKey.utf8)

    /// Checks an extras object (string values only) and finds its `class_type`; nil when the
    /// object holds anything else.
    private static func checkExtras(_ p: inout Parser) throws(JSONError) -> Extras? {
        var extras = Extras()
        var cursor = try p.beginObject()
        while try p.toNextMember(&cursor) {
            let key = try p.scanString()
            let isClassType = key.escaped
                ? try p.string(key) == ClassType.extrasKey
                : p.bytes(key).elementsEqual(classTypeKey)
            try p.afterMemberName()
            guard p.peek() == 0x22 else { return nil }
            let value = try p.scanString()
            if isClassType { extras.classType = try p.string(value) } else if value.escaped { _ = try p.string(value) }
        }
        return extras
    }
}
