/// The fields of a card that only the server sets, from `url` to `domain`, kept as the JSON
/// values the card's boundary JSON gives them, in the order of docs/BEHAVIOUR.md, "Cards"
/// (`Member`), each followed by the byte 0x01: `null␁false␁{"class_type":"x"}␁"x"␁…`. Extras
/// are sorted by key.
///
/// Why bytes: a feed is boundary JSON, so encoding a card copies these values under their keys
/// instead of writing a dozen fields; the decoder writes them straight from the payload's
/// tokens without making a `String` of each text (making them was a third of a sync); and one
/// array holds what a dozen strings and a dictionary held. The keys are left out (110 bytes a
/// card). 0x01 can separate the values because JSON text never holds a raw control character.
/// The fields are read back, when an application asks, from these bytes (`Card.url`,
/// `Card.content`, ...).
///
/// The bytes are canonical (one writer, one order, one escaping), so two bodies are equal
/// exactly when their fields are.
struct CardBody: Hashable, Sendable {
    let json: [UInt8]

    /// What ends each value.
    static let separator: UInt8 = 0x01

    /// The members, in their order in the bytes.
    enum Member: Int, CaseIterable {
        case url, openURLInWebView, extras, classType, image, imageAltText, imageAspectRatio, title, cardDescription, domain
    }

    init(json: [UInt8]) { self.json = json }

    static func == (a: CardBody, b: CardBody) -> Bool {
        a.json.count == b.json.count && a.json.withUnsafeBytes { x in
            b.json.withUnsafeBytes { y in
                guard let p = x.baseAddress, let q = y.baseAddress else { return true }
                return memcmp(p, q, x.count) == 0
            }
        }
    }

    func hash(into hasher: inout Hasher) { json.withUnsafeBytes { hasher.combine(bytes: $0) } }

    /// Calls `body` with each member and its value's JSON, in order.
    func forEach(_ body: (Member, UnsafeBufferPointer<UInt8>) -> Void) {
        json.withUnsafeBufferPointer { all in
            guard let base = all.baseAddress else { return }
            var start = 0
            for m in Member.allCases {
                guard start < all.count,
                      let end = memchr(base + start, Int32(CardBody.separator), all.count - start) else { return }
                let stop = UnsafePointer<UInt8>(end.assumingMemoryBound(to: UInt8.self)) - base
                body(m, UnsafeBufferPointer(rebasing: all[start..<stop]))
                start = stop + 1
            }
        }
    }

    // MARK: Writing

    /// A text field's value as the writer takes it.
    enum Text {
        case null
        case string(String)
        /// Valid UTF-8 that is the text as it is (a string token of the input without escapes).
        case utf8(UnsafeBufferPointer<UInt8>)
        /// `utf8` with no byte the writer escapes either: copied as it is.
        case plain(UnsafeBufferPointer<UInt8>)
    }

    /// The boundary key of each member with the comma before it (`,"url":`), one after the
    /// other, and where each starts (`Member` order; one more offset for the end). Constants,
    /// not computed arrays: a cold start would build them for its first feed.
    private static var keyText: StaticString {
        #","url":,"openURLInWebView":,"extras":,"classType":,"image":,"imageAltText":,"imageAspectRatio":,"title":,"cardDescription":,"domain":"#
    }
    private static func keyOffset(_ i: Int) -> Int {
        switch i {
        case 0: return 0
        case 1: return 7
        case 2: return 27
        case 3: return 37
        case 4: return 50
        case 5: return 59
        case 6: return 75
        case 7: return 95
        case 8: return 104
        case 9: return 123
        default: return 133
        }
    }

    /// Writes the members into the card's boundary JSON, after a member already written:
    /// each key and its value copied, with no scan of the value.
    /// The room is asked for once (every key and every value fit in the body's length and
    /// the keys' text), then the pieces are copied.
    func writeMembers(to w: inout JSONWriter) {
        let keys = CardBody.keyText.utf8Start
        let members = Member.allCases.count
        json.withUnsafeBufferPointer { all in
            guard let base = all.baseAddress else { return }
            w.appendRaw(maxCount: all.count + CardBody.keyOffset(members)) { out in
                var start = 0, written = 0
                for m in 0..<members {
                    guard start < all.count, let end = memchr(base + start, Int32(CardBody.separator), all.count - start) else { break }
                    let stop = UnsafePointer<UInt8>(end.assumingMemoryBound(to: UInt8.self)) - base
                    let key = CardBody.keyOffset(m), keyLength = CardBody.keyOffset(m + 1) - key
                    RawPieces.copy(keys + key, to: out + written, count: keyLength)
                    written += keyLength
                    RawPieces.copy(base + start, to: out + written, count: stop - start)
                    written += stop - start
                    start = stop + 1
                }
                return written
            }
        }
    }

    /// The kind-specific fields of a body, whichever way they were read.
    struct ContentTexts {
        var image: Text = .null
        var imageAltText: Text = .null
        var imageAspectRatio: Double? = nil
        var title: Text = .null
        var cardDescription: Text = .null
        var domain: Text = .null
    }

    /// The one place the body's layout is written, in two halves around the extras object
    /// (which the caller writes between them: the decoder from the payload's tokens,
    /// `init(_ fields:)` from a dictionary). Two calls rather than a closure for the extras:
    /// the decoder's closure copied its fields on every card.
    static func writeHead(to w: inout JSONWriter, url: Text, openURLInWebView: Bool) {
        text(url, &w); w.raw(separator)
        w.raw(openURLInWebView ? "true" : "false"); w.raw(separator)
    }

    static func writeTail(to w: inout JSONWriter, classType: String, content c: ContentTexts) {
        let end = separator
        w.raw(end)      // after the extras
        w.rawString(classType); w.raw(end)
        text(c.image, &w); w.raw(end)
        text(c.imageAltText, &w); w.raw(end)
        if let ratio = c.imageAspectRatio { w.rawDouble(ratio) } else { w.raw("null") }
        w.raw(end)
        text(c.title, &w); w.raw(end)
        text(c.cardDescription, &w); w.raw(end)
        text(c.domain, &w); w.raw(end)
    }

    private static func text(_ t: Text, _ w: inout JSONWriter) {
        switch t {
        case .null: w.raw("null")
        case .string(let s): w.rawString(s)
        case .utf8(let bytes): w.rawString(utf8: bytes)
        case .plain(let bytes): w.rawString(plain: bytes)
        }
    }

    /// Writes an extras dictionary, sorted by key.
    static func write(extras: [String: String], to w: inout JSONWriter) {
        w.raw(0x7B)
        for (i, (key, value)) in extras.sorted(by: { $0.key < $1.key }).enumerated() {
            if i > 0 { w.raw(0x2C) }
            w.rawString(key); w.raw(0x3A); w.rawString(value)
        }
        w.raw(0x7D)
    }

    /// The fields a card keeps in its body, as values.
    struct Fields {
        var url: String?
        var openURLInWebView: Bool
        var extras: [String: String]
        var classType: String
        var content: Card.Content
    }

    init(_ f: Fields) {
        var c = ContentTexts()
        func t(_ s: String?) -> Text { s.map(Text.string) ?? .null }
        switch f.content {
        case .classic(let x):
            c.title = t(x.title); c.cardDescription = .string(x.cardDescription); c.image = t(x.image)
            c.imageAltText = t(x.imageAltText); c.domain = t(x.domain)
        case .banner(let x):
            c.image = .string(x.image); c.imageAltText = t(x.imageAltText)
            c.imageAspectRatio = x.imageAspectRatio; c.domain = t(x.domain)
        case .captionedImage(let x):
            c.image = .string(x.image); c.imageAltText = t(x.imageAltText); c.imageAspectRatio = x.imageAspectRatio
            c.title = .string(x.title); c.cardDescription = .string(x.cardDescription); c.domain = t(x.domain)
        case .control:
            break
        }
        var w = JSONWriter(reservingCapacity: 512)
        CardBody.writeHead(to: &w, url: t(f.url), openURLInWebView: f.openURLInWebView)
        CardBody.write(extras: f.extras, to: &w)
        CardBody.writeTail(to: &w, classType: f.classType, content: c)
        self.init(json: w.bytes)
    }

    // MARK: Reading

    /// The byte range of each member's value, in `Member` order; nil if the bytes are not a
    /// body (they always are: only `write` makes them).
    func valueRanges() -> [Range<Int>]? {
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(Member.allCases.count)
        json.withUnsafeBufferPointer { all in
            guard let base = all.baseAddress else { return }
            forEach { _, value in
                let start = (value.baseAddress ?? base) - base
                ranges.append(start..<(start + value.count))
            }
        }
        return ranges.count == Member.allCases.count ? ranges : nil
    }

    /// The range of one member's value.
    private func range(_ m: Member) -> Range<Int>? {
        guard let ranges = valueRanges() else { return nil }
        return ranges[m.rawValue]
    }

    /// The JSON value at `range`, parsed.
    private func value(at range: Range<Int>) -> JSONValue? {
        json.withUnsafeBufferPointer { bytes in
            try? JSONReader.parse(UnsafeBufferPointer(rebasing: bytes[range]))
        }
    }

    func string(_ m: Member) -> String? { range(m).flatMap { string(at: $0) } }

    private func string(at range: Range<Int>) -> String? { value(at: range)?.stringValue }

    func bool(_ m: Member) -> Bool { range(m).flatMap { value(at: $0)?.boolValue } ?? false }

    func double(_ m: Member) -> Double? { range(m).flatMap { value(at: $0)?.doubleValue } }

    var extras: [String: String] {
        guard let r = range(.extras), case .object(let members)? = value(at: r) else { return [:] }
        var map = [String: String](minimumCapacity: members.count)
        for m in members { map[m.key] = m.value.stringValue ?? "" }
        return map
    }

    /// Every field, as values (what a change to one of them starts from).
    func fields(type: CardType) -> Fields {
        Fields(url: string(.url), openURLInWebView: bool(.openURLInWebView), extras: extras,
               classType: string(.classType) ?? "", content: content(type: type))
    }

    func content(type: CardType) -> Card.Content {
        guard let ranges = valueRanges() else { return .control }
        func s(_ m: Member) -> String? { string(at: ranges[m.rawValue]) }
        func ratio() -> Double? { value(at: ranges[Member.imageAspectRatio.rawValue])?.doubleValue }
        switch type {
        case .classic:
            return .classic(Card.Classic(title: s(.title), cardDescription: s(.cardDescription) ?? "", image: s(.image),
                                         imageAltText: s(.imageAltText), domain: s(.domain)))
        case .banner:
            return .banner(Card.Banner(image: s(.image) ?? "", imageAltText: s(.imageAltText),
                                       imageAspectRatio: ratio(), domain: s(.domain)))
        case .captionedImage:
            return .captionedImage(Card.CaptionedImage(
                image: s(.image) ?? "", imageAltText: s(.imageAltText), imageAspectRatio: ratio(),
                title: s(.title) ?? "", cardDescription: s(.cardDescription) ?? "", domain: s(.domain)))
        case .control:
            return .control
        }
    }
}

extension Card.Content {
    /// The kind, as named at the boundary.
    public var type: CardType {
        switch self {
        case .classic: return .classic
        case .banner: return .banner
        case .captionedImage: return .captionedImage
        case .control: return .control
        }
    }
}
