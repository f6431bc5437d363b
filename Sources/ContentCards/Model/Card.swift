/// A Content Card: the base fields every card has, and its kind with the fields of its own.
///
/// Cards are values: two cards are equal when every field is equal. The field names are the
/// boundary names of docs/BEHAVIOUR.md, "Cards", which the JSON at the C and Python boundary uses too.
public struct Card: Hashable, Sendable {
    /// The card's id, set by the server; unique per user and never empty.
    public var id: String
    /// Creation time from the server, unix seconds.
    public var created: Int64
    /// Expiry in unix seconds, or `Card.neverExpires` (-1).
    public var expiresAt: Int64
    /// An impression has been logged (sticky).
    public var viewed: Bool
    /// A click has been logged (sticky).
    public var clicked: Bool
    /// Dismissed by the user (sticky until the server removes the card).
    public var dismissed: Bool
    /// Read by the user (an inbox's read state, apart from `viewed`): set and cleared by the
    /// application (`markRead`, `markUnread`, `markAllRead`), merged from the server's `rd`.
    public var read: Bool
    public var dismissible: Bool
    public var pinned: Bool
    public var isTest: Bool
    /// Opened on click; `nil` when the card has none.
    public var url: String?
    public var openURLInWebView: Bool
    /// The key-value pairs set with the campaign. Non-string values arrive as their JSON text.
    public var extras: [String: String]
    /// `extras["class_type"]` normalized (trimmed, lower-cased, and mapped to `""` when the
    /// application declared its known class types and this is not one of them).
    public var classType: String
    /// The kind of card and the fields that only that kind has.
    public var content: Content {
        get { box.content }
        set { box = ContentBox(newValue) }
    }
    /// `content` lives in one heap box: a card is half as large inline, so the copies a
    /// merge, the stored table and a feed make move and retain less. A struct holding a class
    /// reference rather than an `indirect` enum: an indirect enum keeps its case in the spare
    /// bits of the box pointer, which valgrind then does not recognize, reporting the boxes
    /// of cards still alive at exit as "definitely lost".
    private var box: ContentBox
    /// The local file of the card's image in the image cache (docs/BEHAVIOUR.md, "Images"),
    /// nil when the cache has none. Set on the cards the controller reads out; never stored
    /// and never sent.
    public var imagePath: String?

    public static let neverExpires: Int64 = -1

    public enum Content: Hashable, Sendable {
        case classic(Classic)
        case banner(Banner)
        case captionedImage(CaptionedImage)
        /// A control card of an A/B test: never shown, but its impression must be logged.
        case control
    }

    /// A text card with an optional image (wire types `short_news` and `text_announcement`).
    public struct Classic: Hashable, Sendable {
        public var title: String?
        public var cardDescription: String
        public var image: String?
        public var imageAltText: String?
        public var domain: String?
        public init(title: String? = nil, cardDescription: String, image: String? = nil,
                    imageAltText: String? = nil, domain: String? = nil) {
            self.title = title; self.cardDescription = cardDescription; self.image = image
            self.imageAltText = imageAltText; self.domain = domain
        }
    }

    /// An image-only card (wire type `banner_image`).
    public struct Banner: Hashable, Sendable {
        public var image: String
        public var imageAltText: String?
        public var imageAspectRatio: Double?
        public var domain: String?
        public init(image: String, imageAltText: String? = nil, imageAspectRatio: Double? = nil,
                    domain: String? = nil) {
            self.image = image; self.imageAltText = imageAltText
            self.imageAspectRatio = imageAspectRatio; self.domain = domain
        }
    }

    /// An image with a title and a description (wire type `captioned_image`).
    public struct CaptionedImage: Hashable, Sendable {
        public var image: String
        public var imageAltText: String?
        public var imageAspectRatio: Double?
        public var title: String
        public var cardDescription: String
        public var domain: String?
        public init(image: String, imageAltText: String? = nil, imageAspectRatio: Double? = nil,
                    title: String, cardDescription: String, domain: String? = nil) {
            self.image = image; self.imageAltText = imageAltText
            self.imageAspectRatio = imageAspectRatio; self.title = title
            self.cardDescription = cardDescription; self.domain = domain
        }
    }

    public init(id: String, created: Int64, expiresAt: Int64 = Card.neverExpires,
                viewed: Bool = false, clicked: Bool = false, dismissed: Bool = false, read: Bool = false,
                dismissible: Bool = false, pinned: Bool = false, isTest: Bool = false,
                url: String? = nil, openURLInWebView: Bool = false,
                extras: [String: String] = [:], classType: String? = nil, content: Content) {
        self.id = id; self.created = created; self.expiresAt = expiresAt
        self.viewed = viewed; self.clicked = clicked; self.dismissed = dismissed; self.read = read
        self.dismissible = dismissible; self.pinned = pinned; self.isTest = isTest
        self.url = url; self.openURLInWebView = openURLInWebView; self.extras = extras
        self.classType = classType ?? ClassType.normalize(extras[ClassType.extrasKey] ?? "")
        self.box = ContentBox(content)
        self.imagePath = nil
    }
}

/// The four kinds, as named at the boundary (`type` in the card JSON).
public enum CardType: String, CaseIterable, Sendable {
    case classic
    case banner
    case captionedImage = "captioned_image"
    case control
}

extension Card {
    public var type: CardType {
        switch content {
        case .classic: return .classic
        case .banner: return .banner
        case .captionedImage: return .captionedImage
        case .control: return .control
        }
    }

    public var isControl: Bool { type == .control }

    public var image: String? {
        switch content {
        case .classic(let c): return c.image
        case .banner(let b): return b.image
        case .captionedImage(let c): return c.image
        case .control: return nil
        }
    }

    public var imageAltText: String? {
        switch content {
        case .classic(let c): return c.imageAltText
        case .banner(let b): return b.imageAltText
        case .captionedImage(let c): return c.imageAltText
        case .control: return nil
        }
    }

    public var imageAspectRatio: Double? {
        switch content {
        case .banner(let b): return b.imageAspectRatio
        case .captionedImage(let c): return c.imageAspectRatio
        case .classic, .control: return nil
        }
    }

    public var title: String? {
        switch content {
        case .classic(let c): return c.title
        case .captionedImage(let c): return c.title
        case .banner, .control: return nil
        }
    }

    public var cardDescription: String? {
        switch content {
        case .classic(let c): return c.cardDescription
        case .captionedImage(let c): return c.cardDescription
        case .banner, .control: return nil
        }
    }

    public var domain: String? {
        switch content {
        case .classic(let c): return c.domain
        case .banner(let b): return b.domain
        case .captionedImage(let c): return c.domain
        case .control: return nil
        }
    }

    /// Expired at `now` (unix seconds): `expiresAt != -1 && expiresAt <= now`.
    public func isExpired(at now: Double) -> Bool { Card.isExpired(expiresAt: expiresAt, at: now) }

    /// The one expiry rule, for cards and for the feed index's entries.
    @inline(__always)
    public static func isExpired(expiresAt: Int64, at now: Double) -> Bool {
        expiresAt != neverExpires && Double(expiresAt) <= now
    }

    /// The click URL when it is one the library will log a click for: a scheme (letters, digits,
    /// `+`, `-`, `.`), a colon and more, with no white space or control characters. `javascript:`
    /// and `data:` are refused: opened in a web view they would run the card's text as code.
    public var validURL: String? {
        guard let url, URLCheck.isValid(url) else { return nil }
        return url
    }
}

enum URLCheck {
    static func isValid(_ url: String) -> Bool {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, colon + 1 < bytes.count
        else { return false }
        guard isLetter(bytes[0]) else { return false }
        for b in bytes[1..<colon] where !(isLetter(b) || isDigit(b) || b == 0x2B || b == 0x2D || b == 0x2E) {
            return false
        }
        for b in bytes where b <= 0x20 || b == 0x7F { return false }
        let scheme = String(decoding: bytes[0..<colon], as: UTF8.self).lowercased()
        return scheme != "javascript" && scheme != "data" && scheme != "vbscript"
    }
    private static func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
}

/// The box of `Card.content`: equal and hashed by the content it holds.
struct ContentBox: Hashable, Sendable {
    final class Storage: Sendable {
        let content: Card.Content
        init(_ content: Card.Content) { self.content = content }
    }

    let storage: Storage
    init(_ content: Card.Content) { storage = Storage(content) }
    var content: Card.Content { storage.content }

    static func == (a: ContentBox, b: ContentBox) -> Bool { a.storage === b.storage || a.content == b.content }
    func hash(into hasher: inout Hasher) { content.hash(into: &hasher) }
}
