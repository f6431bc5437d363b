/// The fields of one server card as read, then checked and built into a card. The one place
/// the card rules of docs/WIRE.md, "Cards on the wire", live, whichever way the JSON was read:
/// from the token stream (`read`, what payloads and the store use) or from a parsed value
/// (`set(_:_:)`). The general builder (`build`, CardFields+Build.swift) holds every rule; the
/// one-pass builder (CardFields+CommonCard.swift) restates those a common card meets, only to
/// take such a card faster, and gives every other card to it (`CommonCardTests` holds the
/// two equal: a rule changed in one and not the other fails it).
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
        var key = Field()
        var value = Field()
    }

    /// The input the fields point into (empty for fields set from a parsed value).
    var source = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    let slots = Slots()
    /// The names of the card read before, place by place (`readCommonShape`).
    let names = NameTemplates()
    /// Texts that are not a place in the input.
    var strings: [String] = []
    var extras: Extras = .absent
    /// The extras members in input order, when read from the token stream.
    let entries = EntryList()
    /// Scratch: `entries` in key order, when they were not in it already (`inKeyOrder`).
    var order: [Int] = []
    /// `entries` are in key order as read, no key repeated: `order` is not filled (making
    /// it for each card cost more than comparing the keys).
    var inKeyOrder = false
    /// What the one-pass reader learned of `entries` as it read them.
    var extrasSummary = ExtrasSummary()

    /// Of the extras entries, what the body's writers would otherwise find in passes of their
    /// own over them (`sortEntries`, `plainExtrasCount`, `classTypeEntryValue`), kept by the
    /// one-pass reader as it appends each (`note`); only it sets `valid`, and every other way
    /// of setting the extras leaves it unset, so the passes run as before.
    struct ExtrasSummary {
        var valid = false
        /// Every key is ASCII (byte order is then the keys' order).
        var asciiKeys = true
        /// Every key is ASCII and each is above the one before: `entries` are in key order.
        var inKeyOrder = true
        /// Every key and value needs no escape.
        var plain = true
        /// The bytes the extras object takes in the body when `plain` and `inKeyOrder`.
        var plainBytes = 2
        /// The index of the last `class_type` key, or -1.
        var classType = -1
    }
    /// The class types met so far, by their raw bytes (`normalizedClassType`): kept from card
    /// to card, as the fields' memory is.
    var classTypes = ClassTypeMemo()

    /// Empties the fields for the next card, keeping their memory.
    mutating func reset(source: UnsafeBufferPointer<UInt8>?) {
        empty()
        self.source = source ?? UnsafeBufferPointer(start: nil, count: 0)
    }

    mutating func empty() {
        slots.clear()
        // Only when there are some: emptying an array goes through its generic range
        // replacement even when there is nothing to remove (100 instructions a card).
        if !strings.isEmpty { strings.removeAll(keepingCapacity: true) }
        extras = .absent
        entries.removeAll()
        inKeyOrder = false
        extrasSummary.valid = false
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
    mutating func setEntries() {
        entries.removeAll()
        extras = .entries
        extrasSummary = ExtrasSummary(valid: true)
    }
    mutating func appendEntry(_ entry: Entry) {
        note(entry)
        entries.append(entry)
    }

    /// Adds an entry about to be appended to `extrasSummary` (its key and value are spans).
    @inline(__always)
    private mutating func note(_ entry: Entry) {
        let key = entry.key, value = entry.value
        if !key.ascii {
            extrasSummary.asciiKeys = false
            extrasSummary.inKeyOrder = false
        } else if extrasSummary.inKeyOrder, let last = entries.lastKey, Self.compareKeys(last, key, in: source) >= 0 {
            extrasSummary.inKeyOrder = false
        }
        extrasSummary.plain = extrasSummary.plain && key.plain && value.plain
        extrasSummary.plainBytes &+= Self.plainEntryBytes(entry)
        if key.end &- key.start == 10 && isClassTypeKey(key) { extrasSummary.classType = entries.count }
    }
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
    mutating func readExtras(_ parser: inout Parser) throws(JSONError) {
        entries.removeAll()
        extras = .entries
        extrasSummary.valid = false
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

    mutating func text(_ parser: inout Parser) throws(JSONError) -> Field {
        let span = try parser.scanString()
        if span.escaped {
            strings.append(try parser.string(span))
            return Field(kind: .string, start: strings.count - 1)
        }
        return Field(kind: .span, start: span.start, end: span.end, ascii: span.ascii, plain: span.plain)
    }

    /// A scalar in place; an object or array is stepped over and kept only by its kind.
    mutating func read(value parser: inout Parser) throws(JSONError) -> Field {
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
    @inline(__always)
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
    final class Slots {
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
            @inline(__always) get { i >= 0 && i < Slots.count && written & (1 << UInt32(i)) != 0 ? fields[i] : Field() }
            set {
                guard i >= 0 && i < Slots.count else { return }
                fields[i] = newValue
                written |= 1 << UInt32(i)
            }
        }
    }
}
