#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Decodes server payloads (short keys, docs/WIRE.md) into cards.
///
/// One bad card never fails the payload: it is left out and reported with its index, its id
/// when it has one, and the reason. Only a payload that is not JSON, or not an array of cards or
/// an object with a `cards` array, is an error.
///
/// Cards are read straight from the token stream into their fields (`CardFields`): building a
/// generic JSON tree of the whole payload first cost more than everything else put together.
public struct PayloadDecoder: Sendable {
    public var limits: JSONReader.Limits
    /// Normalized class types the application knows; nil accepts every class type.
    public var knownClassTypes: Set<String>?

    public init(limits: JSONReader.Limits = JSONReader.Limits(), knownClassTypes: Set<String>? = nil) {
        self.limits = limits
        self.knownClassTypes = knownClassTypes.map { Set($0.map { ClassType.normalize($0) }) }
    }

    public func decode(_ text: String) throws(PayloadError) -> Payload {
        var copy = text
        let result = copy.withUTF8 { bytes in Result { () throws(PayloadError) in try decode(bytes) } }
        return try result.get()
    }

    public func decode(_ bytes: [UInt8]) throws(PayloadError) -> Payload {
        let result = bytes.withUnsafeBufferPointer { buffer in Result { () throws(PayloadError) in try decode(buffer) } }
        return try result.get()
    }

    public func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws(PayloadError) -> Payload {
        if bytes.count > limits.maxBytes {
            throw PayloadError("payload is too large: \(bytes.count) bytes, over the limit of \(limits.maxBytes) (maxPayloadBytes)")
        }
        var parser = Parser(bytes: bytes, maxDepth: limits.maxDepth)
        var payload = Payload()
        // A wrong shape is reported after the whole document parsed, so that a syntax error
        // anywhere wins (it says more about what went wrong).
        var shapeError: String?
        var envelope: [(String, JSONValue)] = []
        do throws(JSONError) {
            try parser.beginDocument()
            switch parser.peek() {
            case 0x5B:
                try readCards(&parser, into: &payload)
            case 0x7B:
                var cursor = try parser.beginObject()
                var sawCards = false
                while let key = try parser.nextKey(&cursor) {
                    if key.known == .cards {
                        if parser.peek() == 0x5B {
                            payload.cards = []
                            payload.leftOut = []
                            try readCards(&parser, into: &payload)
                            sawCards = true
                            shapeError = nil
                        } else {
                            let value = try parser.parseValue()
                            shapeError = "payload \"cards\" is \(value.typeName), expected an array"
                            sawCards = true
                        }
                    } else if key.known == .full_sync || key.known == .user_id
                                || key.name == "last_full_sync_at" || key.name == "last_card_updated_at" {
                        envelope.append((key.name, try parser.parseValue()))
                    } else {
                        _ = try parser.parseValue()
                    }
                }
                if !sawCards { shapeError = "payload is an object without a \"cards\" array" }
            default:
                let value = try parser.parseValue()
                shapeError = "payload is \(value.typeName), expected an array of cards or an object with \"cards\""
            }
            try parser.endDocument()
        } catch {
            throw PayloadError("payload is not valid JSON: \(error)")
        }
        if let shapeError { throw PayloadError(shapeError) }
        try readEnvelope(JSONValue.object(envelope.map { (key: $0.0, value: $0.1) }), into: &payload)
        return payload
    }

    /// Decodes a payload already parsed (a sync response object or a bare array).
    public func decode(_ root: JSONValue) throws(PayloadError) -> Payload {
        var payload = Payload()
        let items: [JSONValue]
        switch root {
        case .array(let array):
            items = array
        case .object:
            guard let cards = root["cards"] else {
                throw PayloadError("payload is an object without a \"cards\" array")
            }
            guard case .array(let array) = cards else {
                throw PayloadError("payload \"cards\" is \(cards.typeName), expected an array")
            }
            items = array
            try readEnvelope(root, into: &payload)
        default:
            throw PayloadError("payload is \(root.typeName), expected an array of cards or an object with \"cards\"")
        }
        var seen = Set<CardKey>()
        var fields = CardFields()
        var writer = JSONWriter(reservingCapacity: 1024)
        for (index, item) in items.enumerated() {
            guard case .object(let members) = item else {
                payload.leftOut.append(Payload.LeftOut(index: index, id: nil, reason: "not an object but \(item.typeName)"))
                continue
            }
            fields.reset(source: nil)
            for member in members { fields.set(member.key, member.value) }
            add(&fields, index: index, seen: &seen, writer: &writer, to: &payload)
        }
        return payload
    }

    /// Decodes one card from its JSON object, or says why it is left out.
    public func decodeCard(_ value: JSONValue) throws(CardProblem) -> Payload.ServerCard {
        guard case .object(let members) = value else { throw CardProblem(id: nil, reason: "not an object but \(value.typeName)") }
        var fields = CardFields()
        for member in members { fields.set(member.key, member.value) }
        var writer = JSONWriter(reservingCapacity: 1024)
        return try fields.build(knownClassTypes: knownClassTypes, writer: &writer)
    }

    /// Reads a card in its stored form (`StoredCardJSON`); nil if it does not decode.
    func decodeStoredCard(_ bytes: UnsafeBufferPointer<UInt8>) -> Card? {
        var writer = JSONWriter(reservingCapacity: 1024)
        var fields = CardFields()
        return decodeStoredCard(bytes, fields: &fields, writer: &writer)
    }

    /// `decodeStoredCard`, with the scratch space of the previous card (a store's load reads
    /// thousands in a row).
    func decodeStoredCard(_ bytes: UnsafeBufferPointer<UInt8>, fields: inout CardFields, writer: inout JSONWriter) -> Card? {
        var parser = Parser(bytes: bytes, maxDepth: limits.maxDepth)
        fields.reset(source: bytes)
        do throws(JSONError) {
            try parser.beginDocument()
            guard parser.peek() == 0x7B else { return nil }
            try readCard(&parser, into: &fields)
            try parser.endDocument()
        } catch {
            return nil
        }
        return try? fields.build(knownClassTypes: knownClassTypes, writer: &writer).card
    }

    // MARK: Reading from the token stream

    private func readCards(_ parser: inout Parser, into payload: inout Payload) throws(JSONError) {
        var cursor = try parser.beginArray()
        var seen = Set<CardKey>()
        var index = 0
        // One card's scratch space, reused for the next: its extras list and the body writer.
        var fields = CardFields()
        var writer = JSONWriter(reservingCapacity: 1024)
        while try parser.nextElement(&cursor) {
            if parser.peek() == 0x7B {
                fields.reset(source: parser.bytes)
                try readCard(&parser, into: &fields)
                add(&fields, index: index, seen: &seen, writer: &writer, to: &payload)
            } else {
                let value = try parser.parseValue()
                payload.leftOut.append(Payload.LeftOut(index: index, id: nil, reason: "not an object but \(value.typeName)"))
            }
            index += 1
        }
    }

    private func readCard(_ parser: inout Parser, into fields: inout CardFields) throws(JSONError) {
        var cursor = try parser.beginObject()
        while let key = try parser.nextKey(&cursor) {
            if key.known == .e && parser.peek() == 0x7B {
                // Extras: strings as they are, any other value as its JSON text. Kept as the
                // tokens' places in the input; the body is written from them.
                fields.beginExtras()
                var inner = try parser.beginObject()
                while try parser.toNextMember(&inner) {
                    let name = try parser.text()
                    try parser.afterMemberName()
                    let value: CardFields.Text
                    if parser.peek() == 0x22 {
                        value = try parser.text()
                    } else {
                        value = .string(try parser.parseValue().jsonText)
                    }
                    fields.addExtra(name, value)
                }
            } else if let known = key.known, CardFields.slot(known) != nil || known == .e {
                fields.set(known, try parser.readRaw())
            } else {
                _ = try parser.parseValue()
            }
        }
    }

    private func add(_ fields: inout CardFields, index: Int, seen: inout Set<CardKey>, writer: inout JSONWriter,
                     to payload: inout Payload) {
        do throws(CardProblem) {
            let card = try fields.build(knownClassTypes: knownClassTypes, writer: &writer)
            if !seen.insert(card.card.id).inserted {
                throw CardProblem(id: card.card.id, reason: "duplicate id: an earlier card in the payload has it")
            }
            payload.cards.append(card)
        } catch {
            payload.leftOut.append(Payload.LeftOut(index: index, id: error.id, reason: error.reason))
        }
    }

    private func readEnvelope(_ root: JSONValue, into payload: inout Payload) throws(PayloadError) {
        func bool(_ key: String) throws(PayloadError) -> Bool? {
            guard let v = root[key], v != .null else { return nil }
            guard let b = v.boolValue else { throw PayloadError("payload \"\(key)\" is \(v.typeName), expected a boolean") }
            return b
        }
        func int(_ key: String) throws(PayloadError) -> Int64? {
            guard let v = root[key], v != .null else { return nil }
            guard let n = v.int64Value else { throw PayloadError("payload \"\(key)\" is \(v.typeName), expected an integer") }
            return n
        }
        payload.fullSync = try bool("full_sync") ?? false
        payload.lastFullSyncAt = try int("last_full_sync_at") ?? -1
        payload.lastCardUpdatedAt = try int("last_card_updated_at") ?? -1
        if let user = root["user_id"], user != .null {
            guard let id = user.stringValue else {
                throw PayloadError("payload \"user_id\" is \(user.typeName), expected a string")
            }
            payload.userID = id
        }
    }
}

/// Why one card was left out.
public struct CardProblem: Error, Sendable {
    public let id: String?
    public let reason: String
}

/// A field's value as read, before its type is checked against what the field needs.
enum JSONRaw {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    /// A string token without escapes, by its place in the input (`CardFields.source`).
    case span(StringSpan)
    /// An object or array, by its type name (no card field but extras takes one).
    case other(String)

    init(_ value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .number(let n): self = .number(n)
        case .string(let s): self = .string(s)
        case .array, .object: self = .other(value.typeName)
        }
    }

    var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string, .span: return "a string"
        case .other(let name): return name
        }
    }
}

extension Parser {
    /// A string token: by its place when it has no escapes, else as its unescaped text.
    mutating func text() throws(JSONError) -> CardFields.Text {
        let span = try scanString()
        return span.escaped ? .string(try string(span)) : .span(span)
    }

    /// Reads a scalar value in place; an object or array is read whole and kept only by type.
    mutating func readRaw() throws(JSONError) -> JSONRaw {
        switch peek() {
        case 0x22:
            switch try text() {
            case .span(let span): return .span(span)
            case .string(let s): return .string(s)
            }
        case 0x74: try literal("true"); return .bool(true)
        case 0x66: try literal("false"); return .bool(false)
        case 0x6E: try literal("null"); return .null
        default:
            let value = try parseValue()
            if case .number(let n) = value { return .number(n) }
            return .other(value.typeName)
        }
    }
}

/// The fields of one server card as read, then checked and built into a card. The one place
/// the card rules of docs/WIRE.md, "Cards on the wire", live, whichever way the JSON was read.
struct CardFields {
    enum Extras {
        case absent
        case object([String: String])
        /// Read from the token stream: the members are in `entries`.
        case entries
        case wrongType(String)
    }

    /// A text as read: the place of a token without escapes in `source`, or the text itself.
    enum Text {
        case span(StringSpan)
        case string(String)
    }

    struct Entry {
        var key: Text
        var value: Text
    }

    /// The input the spans point into (empty for fields set from parsed values).
    private var source = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    /// The extras members in input order, when read from the token stream.
    private var entries: [Entry] = []
    /// Scratch: `entries` in key order.
    private var order: [Int] = []

    private static let slotCount = 20
    private var raw = Slots()

    /// The fields' values, one stored property each: an array of them cost an allocation and
    /// a uniqueness check per write for every card of a payload.
    private struct Slots {
        var s0: JSONRaw?
        var s1: JSONRaw?
        var s2: JSONRaw?
        var s3: JSONRaw?
        var s4: JSONRaw?
        var s5: JSONRaw?
        var s6: JSONRaw?
        var s7: JSONRaw?
        var s8: JSONRaw?
        var s9: JSONRaw?
        var s10: JSONRaw?
        var s11: JSONRaw?
        var s12: JSONRaw?
        var s13: JSONRaw?
        var s14: JSONRaw?
        var s15: JSONRaw?
        var s16: JSONRaw?
        var s17: JSONRaw?
        var s18: JSONRaw?
        var s19: JSONRaw?

        subscript(i: Int) -> JSONRaw? {
            get {
                switch i {
            case 0: return s0
            case 1: return s1
            case 2: return s2
            case 3: return s3
            case 4: return s4
            case 5: return s5
            case 6: return s6
            case 7: return s7
            case 8: return s8
            case 9: return s9
            case 10: return s10
            case 11: return s11
            case 12: return s12
            case 13: return s13
            case 14: return s14
            case 15: return s15
            case 16: return s16
            case 17: return s17
            case 18: return s18
            case 19: return s19
                default: return nil
                }
            }
            set {
                switch i {
            case 0: s0 = newValue
            case 1: s1 = newValue
            case 2: s2 = newValue
            case 3: s3 = newValue
            case 4: s4 = newValue
            case 5: s5 = newValue
            case 6: s6 = newValue
            case 7: s7 = newValue
            case 8: s8 = newValue
            case 9: s9 = newValue
            case 10: s10 = newValue
            case 11: s11 = newValue
            case 12: s12 = newValue
            case 13: s13 = newValue
            case 14: s14 = newValue
            case 15: s15 = newValue
            case 16: s16 = newValue
            case 17: s17 = newValue
            case 18: s18 = newValue
            case 19: s19 = newValue
                default: break
                }
            }
        }
    }
    var extras: Extras = .absent

    /// Empties the fields for the next card, keeping their memory.
    mutating func reset(source: UnsafeBufferPointer<UInt8>?) {
        raw = Slots()
        extras = .absent
        entries.removeAll(keepingCapacity: true)
        self.source = source ?? UnsafeBufferPointer(start: nil, count: 0)
    }

    mutating func beginExtras() {
        entries.removeAll(keepingCapacity: true)
        extras = .entries
    }

    mutating func addExtra(_ key: Text, _ value: Text) { entries.append(Entry(key: key, value: value)) }

    private func bytes(_ span: StringSpan) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: source[span.start..<span.end])
    }

    private func string(_ text: Text) -> String {
        switch text {
        case .span(let span): return String(decoding: bytes(span), as: UTF8.self)
        case .string(let s): return s
        }
    }

    /// The slot of each card field (extras are kept apart).
    static func slot(_ key: KnownKey) -> Int? {
        switch key {
        case .id: return 0
        case .tp: return 1
        case .ca: return 2
        case .ea: return 3
        case .v: return 4
        case .cl: return 5
        case .d: return 6
        case .r: return 7
        case .p: return 8
        case .db: return 9
        case .t: return 10
        case .uw: return 11
        case .u: return 12
        case .i: return 13
        case .image_alt: return 14
        case .ar: return 15
        case .tt: return 16
        case .ds: return 17
        case .dm: return 18
        case .rd: return 19
        default: return nil
        }
    }

    mutating func set(_ key: KnownKey, _ value: JSONRaw) {
        if key == .e {
            switch value {
            case .null: extras = .absent
            default: extras = .wrongType(value.typeName)
            }
            return
        }
        if let i = CardFields.slot(key) { raw[i] = value }
    }

    /// From a parsed member: an extras object is converted here (values to strings, others to
    /// their JSON text), as the stream reader does.
    mutating func set(_ name: String, _ value: JSONValue) {
        guard let key = KnownKey(rawValue: name) else { return }
        if key == .e, case .object(let members) = value {
            var map: [String: String] = [:]
            for m in members {
                if case .string(let s) = m.value { map[m.key] = s } else { map[m.key] = m.value.jsonText }
            }
            extras = .object(map)
            return
        }
        set(key, JSONRaw(value))
    }

    // MARK: Checking

    private var id: String? {
        switch raw[0] {
        case .string(let s)? where !s.isEmpty: return s
        case .span(let span)? where !span.isEmpty: return string(.span(span))
        default: return nil
        }
    }

    private func problem(_ reason: String) -> CardProblem { CardProblem(id: id, reason: reason) }

    private func value(_ key: KnownKey) -> JSONRaw? {
        guard let i = CardFields.slot(key), let v = raw[i] else { return nil }
        if case .null = v { return nil }   // null counts as absent
        return v
    }

    private func string(_ key: KnownKey) throws(CardProblem) -> String? {
        guard let v = value(key) else { return nil }
        switch v {
        case .string(let s): return s
        case .span(let span): return string(.span(span))
        default: throw problem("field \"\(key.rawValue)\" is \(v.typeName), expected a string")
        }
    }

    /// A text field for the body, without making a `String` of a token without escapes;
    /// nil when absent or null.
    private func text(_ key: KnownKey) throws(CardProblem) -> CardBody.Text? {
        guard let v = value(key) else { return nil }
        switch v {
        case .string(let s): return .string(s)
        case .span(let span): return .utf8(bytes(span))
        default: throw problem("field \"\(key.rawValue)\" is \(v.typeName), expected a string")
        }
    }

    private static func isEmpty(_ t: CardBody.Text) -> Bool {
        switch t {
        case .null: return true
        case .string(let s): return s.isEmpty
        case .utf8(let b): return b.count == 0
        }
    }

    /// A text that may be absent.
    private func optionalText(_ key: KnownKey) throws(CardProblem) -> CardBody.Text { try text(key) ?? .null }

    /// Required text: present, a string, and not empty.
    private func requiredText(_ key: KnownKey, _ name: String, for type: String) throws(CardProblem) -> CardBody.Text {
        guard let t = try text(key), !CardFields.isEmpty(t) else {
            throw problem("missing required field \"\(key.rawValue)\" (\(name)) for a \(type) card")
        }
        return t
    }

    /// A text where empty means absent.
    private func nonEmptyText(_ key: KnownKey) throws(CardProblem) -> CardBody.Text {
        guard let t = try text(key), !CardFields.isEmpty(t) else { return .null }
        return t
    }

    private func bool(_ key: KnownKey) throws(CardProblem) -> Bool? {
        guard let v = value(key) else { return nil }
        guard case .bool(let b) = v else { throw problem("field \"\(key.rawValue)\" is \(v.typeName), expected a boolean") }
        return b
    }

    private func int(_ key: KnownKey) throws(CardProblem) -> Int64? {
        guard let v = value(key) else { return nil }
        guard case .number(let text) = v else { throw problem("field \"\(key.rawValue)\" is \(v.typeName), expected a number") }
        guard let n = JSONValue.number(text).int64Value else { throw problem("field \"\(key.rawValue)\" is not a whole number of seconds") }
        return n
    }

    private func double(_ key: KnownKey) throws(CardProblem) -> Double? {
        guard let v = value(key) else { return nil }
        guard case .number(let text) = v, let d = Double(text), d.isFinite else {
            throw problem("field \"\(key.rawValue)\" is \(v.typeName), expected a finite number")
        }
        return d
    }

    /// Checks the fields and builds the card, writing its body with `writer`.
    mutating func build(knownClassTypes: Set<String>?, writer w: inout JSONWriter) throws(CardProblem) -> Payload.ServerCard {
        guard let id = try string(.id), !id.isEmpty else {
            throw CardProblem(id: nil, reason: "missing required field \"id\" (a non-empty string)")
        }
        // A NUL cannot pass through a C string: such a card could never be addressed by id.
        if CardFields.holdsNUL(id) { throw CardProblem(id: nil, reason: "the id holds a NUL character") }
        guard let created = try int(.ca) else { throw problem("missing required field \"ca\" (created, unix seconds)") }
        let removed = try bool(.r) ?? false
        if case .wrongType(let type) = extras { throw problem("field \"e\" (extras) is \(type), expected an object") }
        let wireType = try string(.tp)
        var type = CardType.control
        var content = CardBody.ContentTexts()
        if !removed {
            // A tombstone needs only its id and creation time: its content is never shown.
            guard let wireType else { throw problem("missing required field \"tp\" (type)") }
            (type, content) = try self.content(wireType)
        }
        let expiresAt = try int(.ea) ?? Card.neverExpires
        let viewed = try bool(.v) ?? false
        let clicked = try bool(.cl) ?? false
        let dismissed = try bool(.d) ?? false
        let read = try bool(.rd)
        let dismissible = try bool(.db) ?? false
        let pinned = try bool(.p) ?? false
        let isTest = try bool(.t) ?? false
        let url = try nonEmptyText(.u)
        let openURLInWebView = try bool(.uw) ?? false
        let classType = ClassType.normalize(classTypeValue() ?? "", known: knownClassTypes)
        let sorted = sortEntries()
        w.removeAll()
        CardBody.write(to: &w, url: url, openURLInWebView: openURLInWebView,
                       extras: { writeExtras(sorted: sorted, to: &$0) }, classType: classType, content: content)
        let card = Card(id: id, created: created, expiresAt: expiresAt, viewed: viewed, clicked: clicked,
                        dismissed: dismissed, read: read ?? false, dismissible: dismissible, pinned: pinned,
                        isTest: isTest, type: type, classType: classType, body: CardBody(json: w.bytes))
        return Payload.ServerCard(card: card, removed: removed, read: read)
    }

    /// memchr over the id's bytes (the generic `contains` on a UTF-8 view was 1% of a sync).
    static func holdsNUL(_ s: String) -> Bool {
        var copy = s
        return copy.withUTF8 { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return false }
            return memchr(base, 0, bytes.count) != nil
        }
    }

    private func content(_ wireType: String) throws(CardProblem) -> (CardType, CardBody.ContentTexts) {
        var c = CardBody.ContentTexts()
        switch wireType {
        case "banner_image":
            c.image = try requiredText(.i, "image", for: wireType); c.imageAltText = try optionalText(.image_alt)
            c.imageAspectRatio = try double(.ar); c.domain = try optionalText(.dm)
            return (.banner, c)
        case "captioned_image":
            c.image = try requiredText(.i, "image", for: wireType); c.imageAltText = try optionalText(.image_alt)
            c.imageAspectRatio = try double(.ar); c.title = try requiredText(.tt, "title", for: wireType)
            c.cardDescription = try requiredText(.ds, "description", for: wireType); c.domain = try optionalText(.dm)
            return (.captionedImage, c)
        case "short_news", "text_announcement":
            // Both are classic cards; short_news may carry an image, and is valid without one.
            c.title = try optionalText(.tt); c.cardDescription = try requiredText(.ds, "description", for: wireType)
            c.image = try nonEmptyText(.i); c.imageAltText = try optionalText(.image_alt); c.domain = try optionalText(.dm)
            return (.classic, c)
        case "control":
            return (.control, c)
        default:
            throw problem("unknown type \"\(wireType)\"")
        }
    }

    // MARK: Extras

    /// The raw `class_type` extra (the last one, as in a dictionary).
    private func classTypeValue() -> String? {
        switch extras {
        case .absent, .wrongType: return nil
        case .object(let map): return map[ClassType.extrasKey]
        case .entries:
            for entry in entries.reversed() where isClassTypeKey(entry.key) { return string(entry.value) }
            return nil
        }
    }

    private static let classTypeKey = Array(ClassType.extrasKey.utf8)

    private func isClassTypeKey(_ key: Text) -> Bool {
        switch key {
        case .string(let s): return s == ClassType.extrasKey
        case .span(let span):
            let b = bytes(span)
            guard b.count == CardFields.classTypeKey.count, let p = b.baseAddress else { return false }
            return CardFields.classTypeKey.withUnsafeBufferPointer { k in
                k.baseAddress.map { memcmp($0, p, b.count) == 0 } ?? false
            }
        }
    }

    /// Puts `entries` in key order in `order`, keeping the last of equal keys, when every key
    /// is ASCII without escapes (then byte order is the order of Swift's `<` on the keys);
    /// false otherwise, and the extras go through a dictionary as any others.
    private mutating func sortEntries() -> Bool {
        guard case .entries = extras else { return false }
        order.removeAll(keepingCapacity: true)
        for (i, entry) in entries.enumerated() {
            guard case .span(let key) = entry.key, key.ascii else { return false }
            order.append(i)
        }
        // Insertion sort: a card has a handful of extras. Equal keys stay in input order.
        var i = 1
        while i < order.count {
            let x = order[i]
            var j = i - 1
            while j >= 0 && compareKeys(order[j], x) > 0 {
                order[j + 1] = order[j]
                j -= 1
            }
            order[j + 1] = x
            i += 1
        }
        // Of equal keys, the last one read wins.
        var kept = 0
        for k in 0..<order.count {
            if k + 1 < order.count && compareKeys(order[k], order[k + 1]) == 0 { continue }
            order[kept] = order[k]
            kept += 1
        }
        order.removeLast(order.count - kept)
        return true
    }

    private func compareKeys(_ a: Int, _ b: Int) -> Int {
        guard case .span(let x) = entries[a].key, case .span(let y) = entries[b].key else { return 0 }
        let p = bytes(x), q = bytes(y)
        let n = min(p.count, q.count)
        if n > 0, let pb = p.baseAddress, let qb = q.baseAddress {
            let c = memcmp(pb, qb, n)
            if c != 0 { return Int(c) }
        }
        return p.count - q.count
    }

    private func writeExtras(sorted: Bool, to w: inout JSONWriter) {
        switch extras {
        case .absent, .wrongType:
            w.beginObject(); w.endObject()
        case .object(let map):
            CardBody.write(extras: map, to: &w)
        case .entries where sorted:
            w.beginObject()
            for i in order {
                let entry = entries[i]
                if case .span(let key) = entry.key { w.key(utf8: bytes(key)) }
                switch entry.value {
                case .span(let span): w.string(utf8: bytes(span))
                case .string(let s): w.string(s)
                }
            }
            w.endObject()
        case .entries:
            var map = [String: String](minimumCapacity: entries.count)
            for entry in entries { map[string(entry.key)] = string(entry.value) }
            CardBody.write(extras: map, to: &w)
        }
    }
}
