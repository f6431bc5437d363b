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
        for (index, item) in items.enumerated() {
            guard case .object(let members) = item else {
                payload.leftOut.append(Payload.LeftOut(index: index, id: nil, reason: "not an object but \(item.typeName)"))
                continue
            }
            var fields = CardFields()
            for member in members { fields.set(member.key, member.value) }
            add(fields, index: index, seen: &seen, to: &payload)
        }
        return payload
    }

    /// Decodes one card from its JSON object, or says why it is left out.
    public func decodeCard(_ value: JSONValue) throws(CardProblem) -> Payload.ServerCard {
        guard case .object(let members) = value else { throw CardProblem(id: nil, reason: "not an object but \(value.typeName)") }
        var fields = CardFields()
        for member in members { fields.set(member.key, member.value) }
        return try fields.build(knownClassTypes: knownClassTypes)
    }

    /// Reads a card in its stored form (`StoredCardJSON`); nil if it does not decode.
    func decodeStoredCard(_ bytes: UnsafeBufferPointer<UInt8>) -> Card? {
        var parser = Parser(bytes: bytes, maxDepth: limits.maxDepth)
        var fields = CardFields()
        do throws(JSONError) {
            try parser.beginDocument()
            guard parser.peek() == 0x7B else { return nil }
            try readCard(&parser, into: &fields)
            try parser.endDocument()
        } catch {
            return nil
        }
        return try? fields.build(knownClassTypes: knownClassTypes).card
    }

    // MARK: Reading from the token stream

    private func readCards(_ parser: inout Parser, into payload: inout Payload) throws(JSONError) {
        var cursor = try parser.beginArray()
        var seen = Set<CardKey>()
        var index = 0
        while try parser.nextElement(&cursor) {
            if parser.peek() == 0x7B {
                var fields = CardFields()
                try readCard(&parser, into: &fields)
                add(fields, index: index, seen: &seen, to: &payload)
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
                // Extras: strings as they are, any other value as its JSON text.
                var extras = [String: String](minimumCapacity: 6)
                var inner = try parser.beginObject()
                while let name = try parser.nextName(&inner) {
                    if parser.peek() == 0x22 {
                        extras[name] = try parser.parseString()
                    } else {
                        extras[name] = try parser.parseValue().jsonText
                    }
                }
                fields.extras = .object(extras)
            } else if let known = key.known, CardFields.slot(known) != nil || known == .e {
                fields.set(known, try parser.readRaw())
            } else {
                _ = try parser.parseValue()
            }
        }
    }

    private func add(_ fields: CardFields, index: Int, seen: inout Set<CardKey>, to payload: inout Payload) {
        do throws(CardProblem) {
            let card = try fields.build(knownClassTypes: knownClassTypes)
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
        case .string: return "a string"
        case .other(let name): return name
        }
    }
}

extension Parser {
    /// Reads a scalar value in place; an object or array is read whole and kept only by type.
    mutating func readRaw() throws(JSONError) -> JSONRaw {
        switch peek() {
        case 0x22: return .string(try parseString())
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
        case wrongType(String)
    }

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
        if case .string(let s)? = raw[0], !s.isEmpty { return s }
        return nil
    }

    private func problem(_ reason: String) -> CardProblem { CardProblem(id: id, reason: reason) }

    private func value(_ key: KnownKey) -> JSONRaw? {
        guard let i = CardFields.slot(key), let v = raw[i] else { return nil }
        if case .null = v { return nil }   // null counts as absent
        return v
    }

    private func string(_ key: KnownKey) throws(CardProblem) -> String? {
        guard let v = value(key) else { return nil }
        guard case .string(let s) = v else { throw problem("field \"\(key.rawValue)\" is \(v.typeName), expected a string") }
        return s
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

    /// Required string: present, a string, and not empty.
    private func required(_ key: KnownKey, _ name: String, for type: String) throws(CardProblem) -> String {
        guard let s = try string(key), !s.isEmpty else {
            throw problem("missing required field \"\(key.rawValue)\" (\(name)) for a \(type) card")
        }
        return s
    }

    private func nonEmpty(_ key: KnownKey) throws(CardProblem) -> String? {
        guard let s = try string(key), !s.isEmpty else { return nil }
        return s
    }

    func build(knownClassTypes: Set<String>?) throws(CardProblem) -> Payload.ServerCard {
        guard let id = try string(.id), !id.isEmpty else {
            throw CardProblem(id: nil, reason: "missing required field \"id\" (a non-empty string)")
        }
        // A NUL cannot pass through a C string: such a card could never be addressed by id.
        if CardFields.holdsNUL(id) { throw CardProblem(id: nil, reason: "the id holds a NUL character") }
        guard let created = try int(.ca) else { throw problem("missing required field \"ca\" (created, unix seconds)") }
        let removed = try bool(.r) ?? false
        let extras: [String: String]
        switch self.extras {
        case .absent: extras = [:]
        case .object(let map): extras = map
        case .wrongType(let type): throw problem("field \"e\" (extras) is \(type), expected an object")
        }
        let wireType = try string(.tp)
        let content: Card.Content
        if removed {
            // A tombstone needs only its id and creation time: its content is never shown.
            content = .control
        } else {
            guard let wireType else { throw problem("missing required field \"tp\" (type)") }
            content = try self.content(wireType)
        }
        let card = Card(
            id: id, created: created,
            expiresAt: try int(.ea) ?? Card.neverExpires,
            viewed: try bool(.v) ?? false,
            clicked: try bool(.cl) ?? false,
            dismissed: try bool(.d) ?? false,
            read: try bool(.rd) ?? false,
            dismissible: try bool(.db) ?? false,
            pinned: try bool(.p) ?? false,
            isTest: try bool(.t) ?? false,
            url: try nonEmpty(.u),
            openURLInWebView: try bool(.uw) ?? false,
            extras: extras,
            classType: ClassType.normalize(extras[ClassType.extrasKey] ?? "", known: knownClassTypes),
            content: content)
        return Payload.ServerCard(card: card, removed: removed, read: try bool(.rd))
    }

    /// memchr over the id's bytes (the generic `contains` on a UTF-8 view was 1% of a sync).
    static func holdsNUL(_ s: String) -> Bool {
        var copy = s
        return copy.withUTF8 { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return false }
            return memchr(base, 0, bytes.count) != nil
        }
    }

    private func content(_ wireType: String) throws(CardProblem) -> Card.Content {
        switch wireType {
        case "banner_image":
            return .banner(Card.Banner(
                image: try required(.i, "image", for: wireType), imageAltText: try string(.image_alt),
                imageAspectRatio: try double(.ar), domain: try string(.dm)))
        case "captioned_image":
            return .captionedImage(Card.CaptionedImage(
                image: try required(.i, "image", for: wireType), imageAltText: try string(.image_alt),
                imageAspectRatio: try double(.ar), title: try required(.tt, "title", for: wireType),
                cardDescription: try required(.ds, "description", for: wireType), domain: try string(.dm)))
        case "short_news", "text_announcement":
            // Both are classic cards; short_news may carry an image, and is valid without one.
            return .classic(Card.Classic(
                title: try string(.tt), cardDescription: try required(.ds, "description", for: wireType),
                image: try nonEmpty(.i), imageAltText: try string(.image_alt), domain: try string(.dm)))
        case "control":
            return .control
        default:
            throw problem("unknown type \"\(wireType)\"")
        }
    }
}
