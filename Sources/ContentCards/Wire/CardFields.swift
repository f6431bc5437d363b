/// The fields of one server card as read, then checked and built into a card. The one place
/// the card rules of docs/WIRE.md, "Cards on the wire", live, whichever way the JSON was read:
/// from the token stream (`read`, what payloads and the store use) or from a parsed value
/// (`set(_:_:)`).
///
/// Read from the stream, a field is only its kind and the place of its text in the input
/// (`Field`, plain data): nothing is allocated or reference-counted per field, and a text
/// becomes a `String` only where a `String` is kept (the id, the class type). One `CardFields`
/// is reused from card to card.
struct CardFields {
    /// One field's value as read, before its type is checked against what the field needs.
    struct Field {
        enum Kind: UInt8 {
            case absent, null, yes, no
            /// A number; its text is `start..<end` of the input.
            case number
            /// A number whose text is `strings[start]` (read from a parsed value).
            case numberText
            /// A string token without escapes: its text is `start..<end` of the input.
            case span
            /// A string whose text is `strings[start]` (it had escapes, or came from a parsed value).
            case string
            case object, array
        }
        var kind: Kind = .absent
        var start = 0
        var end = 0
        /// For `span`: every byte is ASCII.
        var ascii = false
        /// For `span`: the text needs no escaping in the output either (no DEL).
        var plain = false

        var typeName: String {
            switch kind {
            case .absent, .null: return "null"
            case .yes, .no: return "a boolean"
            case .number, .numberText: return "a number"
            case .span, .string: return "a string"
            case .object: return "an object"
            case .array: return "an array"
            }
        }
    }

    enum Extras {
        case absent
        /// From a parsed value.
        case object([String: String])
        /// Read from the token stream: the members are in `entries`.
        case entries
        case wrongType(String)
    }

    struct Entry {
        var key: Field
        var value: Field
    }

    /// The input the fields point into (empty for fields set from a parsed value).
    private var source = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    private let slots = Slots()
    /// Texts that are not a place in the input.
    private var strings: [String] = []
    var extras: Extras = .absent
    /// The extras members in input order, when read from the token stream.
    private var entries: [Entry] = []
    /// Scratch: `entries` in key order.
    private var order: [Int] = []

    /// Empties the fields for the next card, keeping their memory.
    mutating func reset(source: UnsafeBufferPointer<UInt8>?) {
        empty()
        self.source = source ?? UnsafeBufferPointer(start: nil, count: 0)
    }

    private mutating func empty() {
        slots.clear()
        if !strings.isEmpty { strings.removeAll(keepingCapacity: true) }
        extras = .absent
        entries.removeAll(keepingCapacity: true)
    }

    // MARK: Reading

    /// Reads a card object from the token stream (the parser at its `{`), keeping the fields
    /// the card rules know and stepping over the others. A card of the common shape is read
    /// in one pass (`readCommonShape`); any other, from its start again, token by token.
    mutating func read(_ parser: inout Parser) throws(JSONError) {
        let start = parser.pos, depth = parser.depth
        if readCommonShape(&parser) { return }
        empty()
        parser.pos = start
        parser.depth = depth
        var cursor = try parser.beginObject()
        while true {
            let known: KnownKey
            switch try parser.nextMemberKey(&cursor) {
            case .end: return
            case .other: try parser.skipValue(); continue
            case .known(let k): known = k
            }
            if known == .e {
                if parser.peek() == 0x7B {
                    try readExtras(&parser)
                } else {
                    let value = try read(value: &parser)
                    extras = value.kind == .null ? .absent : .wrongType(value.typeName)
                }
            } else if let i = CardFields.slot(known) {
                slots[i] = try read(value: &parser)
            } else {
                try parser.skipValue()
            }
        }
    }

    // What the one-pass reader (CardFields+Fast.swift) keeps, as the general reader keeps it.
    func setSlot(_ i: Int, _ field: Field) { slots[i] = field }
    mutating func setEntries() { entries.removeAll(keepingCapacity: true); extras = .entries }
    mutating func appendEntry(_ entry: Entry) { entries.append(entry) }
    mutating func keep(_ text: String) -> Field {
        strings.append(text)
        return Field(kind: .string, start: strings.count - 1)
    }

    /// Everything a read leaves, as text: the tests compare the one-pass reader's with the
    /// general reader's (`CardFieldsTests`).
    var readState: String {
        func text(_ f: Field) -> String { "\(f.kind) \(f.start)-\(f.end) \(f.ascii) \(f.plain)" }
        let fields = (0..<Slots.count).map { text(slots[$0]) }
        let kept = entries.map { "\(text($0.key)) = \(text($0.value))" }
        return "slots \(fields) strings \(strings) extras \(extras) entries \(kept)"
    }

    /// Extras: strings as they are, any other value as its JSON text.
    private mutating func readExtras(_ parser: inout Parser) throws(JSONError) {
        entries.removeAll(keepingCapacity: true)
        extras = .entries
        var inner = try parser.beginObject()
        while try parser.toNextMember(&inner) {
            let key = try text(&parser)
            try parser.afterMemberName()
            let value: Field
            if parser.peek() == 0x22 {
                value = try text(&parser)
            } else {
                strings.append(try parser.parseValue().jsonText)
                value = Field(kind: .string, start: strings.count - 1)
            }
            entries.append(Entry(key: key, value: value))
        }
    }

    private mutating func text(_ parser: inout Parser) throws(JSONError) -> Field {
        let span = try parser.scanString()
        if span.escaped {
            strings.append(try parser.string(span))
            return Field(kind: .string, start: strings.count - 1)
        }
        return Field(kind: .span, start: span.start, end: span.end, ascii: span.ascii, plain: span.plain)
    }

    /// A scalar in place; an object or array is stepped over and kept only by its kind.
    private mutating func read(value parser: inout Parser) throws(JSONError) -> Field {
        guard let first = parser.peek() else {
            _ = try parser.parseValue()     // throws: the input ends here
            return Field(kind: .null)
        }
        switch first {
        case 0x22: return try text(&parser)
        case 0x74: try parser.literal("true"); return Field(kind: .yes)
        case 0x66: try parser.literal("false"); return Field(kind: .no)
        case 0x6E: try parser.literal("null"); return Field(kind: .null)
        case 0x2D, 0x30...0x39:
            let range = try parser.scanNumber()
            return Field(kind: .number, start: range.lowerBound, end: range.upperBound)
        case 0x7B: try parser.skipValue(); return Field(kind: .object)
        case 0x5B: try parser.skipValue(); return Field(kind: .array)
        default:
            _ = try parser.parseValue()     // throws the parser's own error for what is there
            return Field(kind: .null)
        }
    }

    /// From a parsed member: an extras object is converted here (values to strings, others to
    /// their JSON text), as the stream reader does.
    mutating func set(_ name: String, _ value: JSONValue) {
        guard let key = Parser.knownKey(named: name) else { return }
        if key == .e {
            switch value {
            case .object(let members):
                var map: [String: String] = [:]
                for m in members {
                    if case .string(let s) = m.value { map[m.key] = s } else { map[m.key] = m.value.jsonText }
                }
                extras = .object(map)
            case .null: extras = .absent
            default: extras = .wrongType(value.typeName)
            }
            return
        }
        guard let i = CardFields.slot(key) else { return }
        switch value {
        case .null: slots[i] = Field(kind: .null)
        case .bool(let b): slots[i] = Field(kind: b ? .yes : .no)
        case .number(let text): strings.append(text); slots[i] = Field(kind: .numberText, start: strings.count - 1)
        case .string(let text): strings.append(text); slots[i] = Field(kind: .string, start: strings.count - 1)
        case .array: slots[i] = Field(kind: .array)
        case .object: slots[i] = Field(kind: .object)
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

    /// The fields, one per slot, as plain data in one block of memory of their own, allocated
    /// once for all the cards a `CardFields` reads (an array cost an allocation and a
    /// uniqueness check per write for every card; a tuple in the struct was copied whole,
    /// 480 bytes, on every read). A slot holds a field only while its bit in `written` is
    /// set, so emptying them for the next card is one store (writing 800 bytes of empty
    /// fields for every card was 3% of a sync's time).
    private final class Slots {
        static let count = 20
        private let fields: UnsafeMutablePointer<Field>
        private var written: UInt32 = 0

        init() {
            fields = UnsafeMutablePointer<Field>.allocate(capacity: Slots.count)
            fields.initialize(repeating: Field(), count: Slots.count)
        }

        deinit { fields.deallocate() }

        func clear() { written = 0 }

        subscript(i: Int) -> Field {
            get { i >= 0 && i < Slots.count && written & (1 << UInt32(i)) != 0 ? fields[i] : Field() }
            set {
                guard i >= 0 && i < Slots.count else { return }
                fields[i] = newValue
                written |= 1 << UInt32(i)
            }
        }
    }

    // MARK: Checking

    private func bytes(_ f: Field) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: source[f.start..<f.end])
    }

    /// The text of a `span` or `string` field.
    private func string(_ f: Field) -> String {
        f.kind == .span ? String(decoding: bytes(f), as: UTF8.self) : strings[f.start]
    }

    private func isEmptyText(_ f: Field) -> Bool {
        f.kind == .span ? f.start == f.end : strings[f.start].isEmpty
    }

    private var id: String? {
        let f = slots[0]
        guard f.kind == .span || f.kind == .string, !isEmptyText(f) else { return nil }
        return string(f)
    }

    private func problem(_ reason: String) -> CardProblem { CardProblem(id: id, reason: reason) }

    /// The field of `key`; nil when absent or null (null counts as absent).
    private func value(_ key: KnownKey) -> Field? {
        guard let i = CardFields.slot(key) else { return nil }
        let f = slots[i]
        return f.kind == .absent || f.kind == .null ? nil : f
    }

    private func expectedString(_ key: KnownKey, _ f: Field) throws(CardProblem) {
        guard f.kind == .span || f.kind == .string else {
            throw problem("field \"\(key.rawValue)\" is \(f.typeName), expected a string")
        }
    }

    private func string(_ key: KnownKey) throws(CardProblem) -> String? {
        guard let f = value(key) else { return nil }
        try expectedString(key, f)
        return string(f)
    }

    /// A text field for the body, without making a `String` of a token without escapes;
    /// nil when absent or null.
    private func text(_ key: KnownKey) throws(CardProblem) -> CardBody.Text? {
        guard let f = value(key) else { return nil }
        try expectedString(key, f)
        if f.kind == .string { return .string(strings[f.start]) }
        return f.plain ? .plain(bytes(f)) : .utf8(bytes(f))
    }

    private static func isEmpty(_ t: CardBody.Text) -> Bool {
        switch t {
        case .null: return true
        case .string(let s): return s.isEmpty
        case .utf8(let b), .plain(let b): return b.count == 0
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
        guard let f = value(key) else { return nil }
        guard f.kind == .yes || f.kind == .no else { throw problem("field \"\(key.rawValue)\" is \(f.typeName), expected a boolean") }
        return f.kind == .yes
    }

    /// The text of a number field.
    private func numberText(_ f: Field) -> String {
        f.kind == .numberText ? strings[f.start] : String(decoding: bytes(f), as: UTF8.self)
    }

    private func int(_ key: KnownKey) throws(CardProblem) -> Int64? {
        guard let f = value(key) else { return nil }
        guard f.kind == .number || f.kind == .numberText else {
            throw problem("field \"\(key.rawValue)\" is \(f.typeName), expected a number")
        }
        if f.kind == .number, let n = CardFields.plainInteger(bytes(f)) { return n }
        guard let n = JSONValue.number(numberText(f)).int64Value else {
            throw problem("field \"\(key.rawValue)\" is not a whole number of seconds")
        }
        return n
    }

    /// An integer of at most 18 digits (no fraction or exponent) read from its digits; nil
    /// for any other number, which `JSONValue.int64Value` then reads.
    static func plainInteger(_ b: UnsafeBufferPointer<UInt8>) -> Int64? {
        var i = 0
        let negative = b.count > 0 && b[0] == 0x2D
        if negative { i = 1 }
        guard b.count - i > 0 && b.count - i <= 18 else { return nil }
        var v: Int64 = 0
        while i < b.count {
            let d = b[i] &- 0x30
            guard d < 10 else { return nil }
            v = v * 10 + Int64(d)
            i += 1
        }
        return negative ? -v : v
    }

    private func double(_ key: KnownKey) throws(CardProblem) -> Double? {
        guard let f = value(key) else { return nil }
        if f.kind == .number, let d = CardFields.shortDecimal(bytes(f)) { return d }
        guard f.kind == .number || f.kind == .numberText, let d = Double(numberText(f)), d.isFinite else {
            throw problem("field \"\(key.rawValue)\" is \(f.typeName), expected a finite number")
        }
        return d
    }

    /// A decimal of at most 15 digits without an exponent (`1.777`, `-2`, `0.5`), read
    /// exactly: its digits as an integer are exact in a Double (below 2^53), so is the power
    /// of ten (at most 10^15), and IEEE division rounds the quotient correctly, so this is
    /// the Double nearest the decimal, as `Double(String)` gives (Clinger's fast path). Nil
    /// for any other number, which `Double(String)` then reads.
    static func shortDecimal(_ b: UnsafeBufferPointer<UInt8>) -> Double? {
        var i = 0
        let negative = b.count > 0 && b[0] == 0x2D
        if negative { i = 1 }
        var mantissa: Int64 = 0
        var digits = 0
        var fraction = 0
        var sawPoint = false
        while i < b.count {
            let c = b[i]
            if c == 0x2E {
                if sawPoint { return nil }
                sawPoint = true
            } else {
                let d = c &- 0x30
                guard d < 10 else { return nil }     // an exponent, or anything else
                mantissa = mantissa * 10 + Int64(d)
                digits += 1
                if sawPoint { fraction += 1 }
                if digits > 15 { return nil }
            }
            i += 1
        }
        guard digits > 0 else { return nil }
        var scale = 1.0
        for _ in 0..<fraction { scale *= 10 }
        let value = Double(mantissa) / scale
        return negative ? -value : value
    }

    // MARK: Building

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
        let wireType = value(.tp)
        if let wireType { try expectedString(.tp, wireType) }
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
        CardBody.writeHead(to: &w, url: url, openURLInWebView: openURLInWebView)
        writeExtras(sorted: sorted, to: &w)
        CardBody.writeTail(to: &w, classType: classType, content: content)
        if w.failed { throw problem("out of memory writing the card") }
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

    /// Whether a text field is `literal` (compared as bytes: no `String` made).
    private func text(_ f: Field, is literal: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        if f.kind == .string { return strings[f.start].utf8.elementsEqual(expected) }
        return bytes(f).bytesEqual(literal)
    }

    private func content(_ wireType: Field) throws(CardProblem) -> (CardType, CardBody.ContentTexts) {
        var c = CardBody.ContentTexts()
        if text(wireType, is: "banner_image") {
            let name = "banner_image"
            c.image = try requiredText(.i, "image", for: name); c.imageAltText = try optionalText(.image_alt)
            c.imageAspectRatio = try double(.ar); c.domain = try optionalText(.dm)
            return (.banner, c)
        }
        if text(wireType, is: "captioned_image") {
            let name = "captioned_image"
            c.image = try requiredText(.i, "image", for: name); c.imageAltText = try optionalText(.image_alt)
            c.imageAspectRatio = try double(.ar); c.title = try requiredText(.tt, "title", for: name)
            c.cardDescription = try requiredText(.ds, "description", for: name); c.domain = try optionalText(.dm)
            return (.captionedImage, c)
        }
        let shortNews = text(wireType, is: "short_news")
        if shortNews || text(wireType, is: "text_announcement") {
            // Both are classic cards; short_news may carry an image, and is valid without one.
            let name = shortNews ? "short_news" : "text_announcement"
            c.title = try optionalText(.tt); c.cardDescription = try requiredText(.ds, "description", for: name)
            c.image = try nonEmptyText(.i); c.imageAltText = try optionalText(.image_alt); c.domain = try optionalText(.dm)
            return (.classic, c)
        }
        if text(wireType, is: "control") { return (.control, c) }
        throw problem("unknown type \"\(string(wireType))\"")
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

    private func isClassTypeKey(_ key: Field) -> Bool {
        guard key.kind == .span else { return string(key) == ClassType.extrasKey }
        return bytes(key).bytesEqual("class_type")    // ClassType.extrasKey
    }

    /// Puts `entries` in key order in `order`, keeping the last of equal keys, when every key
    /// is ASCII without escapes (then byte order is the order of Swift's `<` on the keys);
    /// false otherwise, and the extras go through a dictionary as any others.
    private mutating func sortEntries() -> Bool {
        guard case .entries = extras else { return false }
        order.removeAll(keepingCapacity: true)
        for (i, entry) in entries.enumerated() {
            guard entry.key.kind == .span, entry.key.ascii else { return false }
            order.append(i)
        }
        // Already strictly ascending (servers often send them so): nothing to sort or drop.
        var k = 1
        while k < order.count && compareKeys(order[k - 1], order[k]) < 0 { k += 1 }
        if k >= order.count { return true }
        if order.count <= 16 {
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
        } else {
            // A payload may hold a card with a million extras: O(n log n), equal keys in input
            // order (the index breaks the tie).
            var sorted = order
            sorted.sort { a, b in
                let c = compareKeys(a, b)
                return c != 0 ? c < 0 : a < b
            }
            order = sorted
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
        // `bytesCompare`, written out: this runs in the sort of every card's extras, and the
        // CMake build does not inline a helper from another file (0.9 M instructions a
        // 10,000-card sync).
        let p = bytes(entries[a].key), q = bytes(entries[b].key)
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
            w.raw("{}")
        case .object(let map):
            CardBody.write(extras: map, to: &w)
        case .entries where sorted:
            w.raw(0x7B)
            for (n, i) in order.enumerated() {
                if n > 0 { w.raw(0x2C) }
                let entry = entries[i]
                if entry.key.plain { w.rawString(plain: bytes(entry.key)) } else { w.rawString(utf8: bytes(entry.key)) }
                w.raw(0x3A)
                let v = entry.value
                if v.kind == .string {
                    w.rawString(strings[v.start])
                } else if v.plain {
                    w.rawString(plain: bytes(v))
                } else {
                    w.rawString(utf8: bytes(v))
                }
            }
            w.raw(0x7D)
        case .entries:
            var map = [String: String](minimumCapacity: entries.count)
            for entry in entries { map[string(entry.key)] = string(entry.value) }
            CardBody.write(extras: map, to: &w)
        }
    }
}
