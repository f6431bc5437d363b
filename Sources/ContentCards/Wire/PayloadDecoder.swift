/// Decodes server payloads (short keys, WIRE.md §1–2) into cards.
///
/// One bad card never fails the payload: it is left out and reported with its index, its id
/// when it has one, and the reason. Only a payload that is not JSON, or not an array of cards or
/// an object with a `cards` array, is an error.
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
        let root: JSONValue
        do { root = try JSONReader.parse(bytes, limits: limits) } catch {
            throw PayloadError("payload is not valid JSON: \(error)")
        }
        return try decode(root)
    }

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
            payload.fullSync = try envelopeBool(root, "full_sync") ?? false
            payload.lastFullSyncAt = try envelopeInt(root, "last_full_sync_at") ?? -1
            payload.lastCardUpdatedAt = try envelopeInt(root, "last_card_updated_at") ?? -1
            if let user = root["user_id"], user != .null {
                guard let id = user.stringValue else {
                    throw PayloadError("payload \"user_id\" is \(user.typeName), expected a string")
                }
                payload.userID = id
            }
        default:
            throw PayloadError("payload is \(root.typeName), expected an array of cards or an object with \"cards\"")
        }

        var seen = Set<String>()
        payload.cards.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            do throws(CardProblem) {
                let card = try decodeCard(item)
                if !seen.insert(card.card.id).inserted {
                    throw CardProblem(id: card.card.id, reason: "duplicate id: an earlier card in the payload has it")
                }
                payload.cards.append(card)
            } catch {
                payload.leftOut.append(Payload.LeftOut(index: index, id: error.id, reason: error.reason))
            }
        }
        return payload
    }

    private func envelopeBool(_ root: JSONValue, _ key: String) throws(PayloadError) -> Bool? {
        guard let v = root[key], v != .null else { return nil }
        guard let b = v.boolValue else { throw PayloadError("payload \"\(key)\" is \(v.typeName), expected a boolean") }
        return b
    }

    private func envelopeInt(_ root: JSONValue, _ key: String) throws(PayloadError) -> Int64? {
        guard let v = root[key], v != .null else { return nil }
        guard let n = v.int64Value else { throw PayloadError("payload \"\(key)\" is \(v.typeName), expected an integer") }
        return n
    }

    /// Decodes one card, or says why it is left out.
    public func decodeCard(_ value: JSONValue) throws(CardProblem) -> Payload.ServerCard {
        guard case .object = value else { throw CardProblem(id: nil, reason: "not an object but \(value.typeName)") }
        var fields = Fields(value: value, id: nil)
        guard let id = try fields.string("id"), !id.isEmpty else {
            throw CardProblem(id: nil, reason: "missing required field \"id\" (a non-empty string)")
        }
        fields.id = id
        guard let created = try fields.int("ca") else { throw fields.problem("missing required field \"ca\" (created, unix seconds)") }
        let removed = try fields.bool("r") ?? false
        let extras = try fields.extras("e")
        let rawClass = extras[ClassType.extrasKey] ?? ""
        let wireType = try fields.string("tp")

        let content: Card.Content
        if removed {
            // A tombstone needs only its id and creation time: its content is never shown.
            content = .control
        } else {
            guard let wireType else { throw fields.problem("missing required field \"tp\" (type)") }
            content = try fields.content(wireType)
        }
        let card = Card(
            id: id, created: created,
            expiresAt: try fields.int("ea") ?? Card.neverExpires,
            viewed: try fields.bool("v") ?? false,
            clicked: try fields.bool("cl") ?? false,
            dismissed: try fields.bool("d") ?? false,
            dismissible: try fields.bool("db") ?? false,
            pinned: try fields.bool("p") ?? false,
            isTest: try fields.bool("t") ?? false,
            url: try fields.string("u").flatMap { $0.isEmpty ? nil : $0 },
            openURLInWebView: try fields.bool("uw") ?? false,
            extras: extras,
            classType: ClassType.normalize(rawClass, known: knownClassTypes),
            content: content)
        return Payload.ServerCard(card: card, removed: removed)
    }
}

/// Why one card was left out.
public struct CardProblem: Error, Sendable {
    public let id: String?
    public let reason: String
}

/// Typed access to a card object's fields; null counts as absent, a wrong type is a problem.
private struct Fields {
    let value: JSONValue
    var id: String?

    func problem(_ reason: String) -> CardProblem { CardProblem(id: id, reason: reason) }

    func string(_ key: String) throws(CardProblem) -> String? {
        guard let v = value[key], v != .null else { return nil }
        guard let s = v.stringValue else { throw problem("field \"\(key)\" is \(v.typeName), expected a string") }
        return s
    }

    func bool(_ key: String) throws(CardProblem) -> Bool? {
        guard let v = value[key], v != .null else { return nil }
        guard let b = v.boolValue else { throw problem("field \"\(key)\" is \(v.typeName), expected a boolean") }
        return b
    }

    func int(_ key: String) throws(CardProblem) -> Int64? {
        guard let v = value[key], v != .null else { return nil }
        guard case .number = v else { throw problem("field \"\(key)\" is \(v.typeName), expected a number") }
        guard let n = v.int64Value else { throw problem("field \"\(key)\" is not a whole number of seconds") }
        return n
    }

    func double(_ key: String) throws(CardProblem) -> Double? {
        guard let v = value[key], v != .null else { return nil }
        guard let d = v.doubleValue else { throw problem("field \"\(key)\" is \(v.typeName), expected a finite number") }
        return d
    }

    /// Required string: present, a string, and not empty.
    func required(_ key: String, _ name: String, for type: String) throws(CardProblem) -> String {
        guard let s = try string(key), !s.isEmpty else {
            throw problem("missing required field \"\(key)\" (\(name)) for a \(type) card")
        }
        return s
    }

    func extras(_ key: String) throws(CardProblem) -> [String: String] {
        guard let v = value[key], v != .null else { return [:] }
        guard case .object(let members) = v else { throw problem("field \"\(key)\" (extras) is \(v.typeName), expected an object") }
        var extras: [String: String] = [:]
        extras.reserveCapacity(members.count)
        for m in members {
            // Strings are kept as they are; any other value as its JSON text.
            if case .string(let s) = m.value { extras[m.key] = s } else { extras[m.key] = m.value.jsonText }
        }
        return extras
    }

    func content(_ wireType: String) throws(CardProblem) -> Card.Content {
        switch wireType {
        case "banner_image":
            return .banner(Card.Banner(
                image: try required("i", "image", for: wireType), imageAltText: try string("image_alt"),
                imageAspectRatio: try double("ar"), domain: try string("dm")))
        case "captioned_image":
            return .captionedImage(Card.CaptionedImage(
                image: try required("i", "image", for: wireType), imageAltText: try string("image_alt"),
                imageAspectRatio: try double("ar"), title: try required("tt", "title", for: wireType),
                cardDescription: try required("ds", "description", for: wireType), domain: try string("dm")))
        case "short_news", "text_announcement":
            // Both are classic cards; short_news may carry an image, and is valid without one.
            return .classic(Card.Classic(
                title: try string("tt"), cardDescription: try required("ds", "description", for: wireType),
                image: try string("i").flatMap { $0.isEmpty ? nil : $0 }, imageAltText: try string("image_alt"),
                domain: try string("dm")))
        case "control":
            return .control
        default:
            throw problem("unknown type \"\(wireType)\"")
        }
    }
}
