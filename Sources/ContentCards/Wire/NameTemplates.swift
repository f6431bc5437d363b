/// What lies between two values of the card read last, place by place: the comma, the next
/// member's name, its colon and the white space between (`, "tp": `), up to sixteen bytes. The
/// one-pass card reader (`CardFields.readCommonShape`) checks them at each place of the next
/// card with one or two loads and compares, where reading them steps over white space a byte
/// at a time, checks the comma, scans the name, packs it, finds which key it is and checks the
/// colon. A server writes every card of a payload with its members in the same order and the
/// same spacing, so after the first card nearly every place matches. A place that does not
/// match is read the full way and becomes its place's template. A template decides nothing a
/// full read would decide otherwise: bytes equal to the template's are the same comma, the
/// same name and the same colon; white space past them is stepped over as a full read steps
/// over it (`NameTemplateTests` reads cards of changing layouts both ways).
///
/// Extras keys have no templates: the extras of a payload's cards differ from card to card
/// (which keys, how many), and templates for them, tried, cost more in misses than they saved.
///
/// Plain data in one block allocated once for every card a `CardFields` reads, as `Slots` is.
final class NameTemplates {
    struct Template {
        /// The bytes, little-endian (the first byte lowest), zero past `length`: the first
        /// eight in `low`, the next eight in `high`.
        var low: UInt64 = 0
        var high: UInt64 = 0
        /// `length` bytes of ones over the two words: `lowMask` zero for a place with no
        /// template, `highMask` zero for one of eight bytes or fewer.
        var lowMask: UInt64 = 0
        var highMask: UInt64 = 0
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

    /// A place that matched: how many bytes to step over, and what its value is for.
    struct Hit {
        let length: Int
        let use: Use
    }

    /// Places kept: a card of the common shape has about twenty members.
    static let count = 32
    /// The longest template.
    static let maxLength = 16
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
    /// there is none, the bytes differ, or its words cannot be loaded (too near the end).
    @inline(__always)
    func match(_ place: Int, _ base: UnsafePointer<UInt8>, _ n: Int, _ p: Int) -> Hit? {
        guard place < NameTemplates.count, p &+ 8 <= n else { return nil }
        let t = templates + place
        let raw = UnsafeRawPointer(base + p)
        let low = t.pointee.lowMask
        guard low != 0, UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)) & low == t.pointee.low else { return nil }
        let high = t.pointee.highMask
        if high != 0 {
            guard p &+ 16 <= n,
                  UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) & high == t.pointee.high
            else { return nil }
        }
        return Hit(length: t.pointee.length, use: t.pointee.use)
    }

    /// Makes the `length` bytes at `start` (read in full: the comma, the name, its colon and
    /// the white space around them) the template of member `place`; a longer run clears the
    /// place.
    func learn(_ place: Int, _ start: UnsafePointer<UInt8>, _ length: Int, use: Use) {
        guard place < NameTemplates.count else { return }
        guard length > 0 && length <= NameTemplates.maxLength else {
            templates[place] = Template()
            return
        }
        // Byte by byte: the 16 bytes from `start` may run past the input's end.
        var t = Template(length: length, use: use)
        for i in 0..<length {
            let shift = UInt64((i & 7) &* 8)
            if i < 8 {
                t.low |= UInt64(start[i]) << shift
                t.lowMask |= 0xFF << shift
            } else {
                t.high |= UInt64(start[i]) << shift
                t.highMask |= 0xFF << shift
            }
        }
        templates[place] = t
    }
}
