/// The member names of the card read last, in their order, each kept as the bytes from its
/// opening quote to its value (`"id": `, up to eight bytes): the one-pass card reader
/// (`CardFields.readCommonShape`) checks the name at each place of the next card with one load
/// and one compare, where reading it scans it a byte at a time, packs it, finds which key it
/// is and steps over the colon. A server writes every card of a payload with its members in
/// the same order, so after the first card nearly every name matches. A name that does not
/// match is read the full way and becomes its place's template. A template decides nothing a
/// full read would decide otherwise: bytes equal to the template's are the same name, the
/// same colon and the same white space (`NameTemplateTests` reads cards of changing layouts
/// both ways).
///
/// Extras keys have no templates: the extras of a payload's cards differ from card to card
/// (which keys, how many), and templates for them, tried, cost more in misses than they saved.
///
/// Plain data in one block allocated once for every card a `CardFields` reads, as `Slots` is.
final class NameTemplates {
    struct Template {
        /// The bytes, little-endian (the first byte lowest), zero past `length`.
        var word: UInt64 = 0
        /// `length` bytes of ones: zero for a place with no template.
        var mask: UInt64 = 0
        var length = 0
        var use = Use.skip
    }

    /// What the reader does with a name's value, decided once for each template: the key's
    /// slot (`CardFields.slot`), the extras, or nothing (a name the card does not know).
    struct Use {
        /// The slot, or one of the two negative values below.
        let slot: Int
        static let skip = Use(slot: -1)
        static let extras = Use(slot: -2)
        private init(slot: Int) { self.slot = slot }

        init(_ key: KnownKey?) {
            if key == .e { self = .extras } else if let k = key, let i = CardFields.slot(k) { slot = i } else { self = .skip }
        }

        var isSlot: Bool { slot >= 0 }
        var isExtras: Bool { slot == -2 }
    }

    /// Places kept: a card of the common shape has about twenty members.
    static let count = 32
    private let templates: UnsafeMutablePointer<Template>

    init() {
        templates = UnsafeMutablePointer<Template>.allocate(capacity: NameTemplates.count)
        templates.initialize(repeating: Template(), count: NameTemplates.count)
    }

    deinit {
        templates.deinitialize(count: NameTemplates.count)
        templates.deallocate()
    }

    /// The template of member `place` when the input at `p` starts with its bytes; nil when
    /// there is none, the bytes differ, or fewer than 8 bytes are left to load.
    @inline(__always)
    func match(_ place: Int, _ base: UnsafePointer<UInt8>, _ n: Int, _ p: Int) -> Template? {
        guard place < NameTemplates.count, p &+ 8 <= n else { return nil }
        let t = templates[place]
        guard t.mask != 0 else { return nil }
        let word = UInt64(littleEndian: UnsafeRawPointer(base + p).loadUnaligned(as: UInt64.self))
        return word & t.mask == t.word ? t : nil
    }

    /// Makes the `length` bytes at `start` (a name read in full, its colon and the white space
    /// around it) the template of member `place`; a longer one clears the place.
    func learn(_ place: Int, _ start: UnsafePointer<UInt8>, _ length: Int, use: Use) {
        guard place < NameTemplates.count else { return }
        guard length > 0 && length <= 8 else {
            templates[place] = Template()
            return
        }
        // Byte by byte: the 8 bytes from `start` may run past the input's end.
        var word: UInt64 = 0
        for i in 0..<length { word |= UInt64(start[i]) << UInt64(i &* 8) }
        let mask = length == 8 ? UInt64.max : (1 << UInt64(length &* 8)) &- 1
        templates[place] = Template(word: word, mask: mask, length: length, use: use)
    }
}
