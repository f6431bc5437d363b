#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The fields of a card that only the server sets, from `url` to `domain`, kept as the card's
/// boundary JSON of them: `{"url":…,"openURLInWebView":…,"extras":{…},"classType":…,"image":…,
/// "imageAltText":…,"imageAspectRatio":…,"title":…,"cardDescription":…,"domain":…}`, members in
/// the order of docs/BEHAVIOUR.md, "Cards", extras sorted by key.
///
/// Why bytes: a feed is boundary JSON, so encoding a card copies these bytes instead of writing
/// a dozen fields; the decoder writes them straight from the payload's tokens without making a
/// `String` of each text (making them was a third of a sync); and one array holds what a dozen
/// strings and a dictionary held. The fields are read back, when an application asks, by
/// walking these bytes (`Card.url`, `Card.content`, ...).
///
/// The bytes are canonical (one writer, one order, one escaping), so two bodies are equal
/// exactly when their fields are.
struct CardBody: Hashable, Sendable {
    let json: [UInt8]

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

    /// The members between the braces, as `JSONWriter.rawJSON` takes them.
    func withMembers<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        json.withUnsafeBufferPointer { all in
            guard all.count >= 2 else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
            return body(UnsafeBufferPointer(rebasing: all[1..<(all.count - 1)]))
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

    private enum K {
        static let url = JSONWriter.Key("url")
        static let openURLInWebView = JSONWriter.Key("openURLInWebView")
        static let extras = JSONWriter.Key("extras")
        static let classType = JSONWriter.Key("classType")
        static let image = JSONWriter.Key("image")
        static let imageAltText = JSONWriter.Key("imageAltText")
        static let imageAspectRatio = JSONWriter.Key("imageAspectRatio")
        static let title = JSONWriter.Key("title")
        static let cardDescription = JSONWriter.Key("cardDescription")
        static let domain = JSONWriter.Key("domain")
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

    /// The one place the body's layout is written: the decoder calls it with the payload's
    /// tokens, `init(_ fields:)` with a card's values. `extras` writes the extras object.
    static func write(to w: inout JSONWriter, url: Text, openURLInWebView: Bool, extras: (inout JSONWriter) -> Void,
                      classType: String, content c: ContentTexts) {
        func text(_ t: Text, _ w: inout JSONWriter) {
            switch t {
            case .null: w.null()
            case .string(let s): w.string(s)
            case .utf8(let bytes): w.string(utf8: bytes)
            case .plain(let bytes): w.string(plain: bytes)
            }
        }
        w.beginObject()
        w.key(K.url); text(url, &w)
        w.key(K.openURLInWebView); w.bool(openURLInWebView)
        w.key(K.extras); extras(&w)
        w.key(K.classType); w.string(classType)
        w.key(K.image); text(c.image, &w)
        w.key(K.imageAltText); text(c.imageAltText, &w)
        w.key(K.imageAspectRatio)
        if let ratio = c.imageAspectRatio { w.double(ratio) } else { w.null() }
        w.key(K.title); text(c.title, &w)
        w.key(K.cardDescription); text(c.cardDescription, &w)
        w.key(K.domain); text(c.domain, &w)
        w.endObject()
    }

    /// Writes an extras dictionary, sorted by key.
    static func write(extras: [String: String], to w: inout JSONWriter) {
        w.beginObject()
        for (key, value) in extras.sorted(by: { $0.key < $1.key }) {
            w.key(key); w.string(value)
        }
        w.endObject()
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
        CardBody.write(to: &w, url: t(f.url), openURLInWebView: f.openURLInWebView,
                       extras: { CardBody.write(extras: f.extras, to: &$0) }, classType: f.classType, content: c)
        self.init(json: w.bytes)
    }

    // MARK: Reading

    /// The byte range of each member's value, in `Member` order; nil if the bytes are not a
    /// body (they always are: only `write` makes them).
    func valueRanges() -> [Range<Int>]? {
        json.withUnsafeBufferPointer { bytes -> [Range<Int>]? in
            var parser = Parser(bytes: bytes, maxDepth: 4)
            parser.validUTF8 = true     // written by the library's own writer
            var ranges: [Range<Int>] = []
            ranges.reserveCapacity(Member.allCases.count)
            do throws(JSONError) {
                try parser.beginDocument()
                guard parser.peek() == 0x7B else { return nil }
                var cursor = try parser.beginObject()
                while try parser.toNextMember(&cursor) {
                    _ = try parser.scanString()
                    try parser.afterMemberName()
                    let start = parser.pos
                    try parser.skipValue()
                    ranges.append(start..<parser.pos)
                }
            } catch {
                return nil
            }
            return ranges.count == Member.allCases.count ? ranges : nil
        }
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

    /// Calls `body` with the bytes of each member's value that is not null (nor `false`, nor
    /// an empty extras object), in `Member` order: how the store writes a card's compact form.
    func forEachValue(_ body: (Member, UnsafeBufferPointer<UInt8>) -> Void) {
        guard let ranges = valueRanges() else { return }
        json.withUnsafeBufferPointer { bytes in
            for m in Member.allCases {
                let v = UnsafeBufferPointer(rebasing: bytes[ranges[m.rawValue]])
                if v.count == 4 && v[0] == 0x6E { continue }          // null
                if v.count == 5 && v[0] == 0x66 { continue }          // false
                if v.count == 2 && v[0] == 0x7B { continue }          // {}
                body(m, v)
            }
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
