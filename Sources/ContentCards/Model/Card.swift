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
    /// The kind of card (the case of `content`), kept apart from the body: filters, counts and
    /// the encoder read it for every card. Declared beside the flags, whose bytes it shares a
    /// word with: after `imagePath` it took a word of its own (a `Card` of 88 bytes instead of
    /// 80, in every table and array of cards).
    public private(set) var type: CardType
    /// The local file of the card's image in the image cache (docs/BEHAVIOUR.md, "Images"),
    /// nil when the cache has none. Set on the cards the controller reads out; never stored
    /// and never sent.
    public var imagePath: String?
    /// `extras["class_type"]` normalized (trimmed, lower-cased, and mapped to `""` when the
    /// application declared its known class types and this is not one of them).
    public var classType: String {
        get { storedClassType }
        set { edit { $0.classType = newValue } }
    }
    /// The class type, also in the body: every filter reads it.
    private var storedClassType: String
    /// The fields below, as their boundary JSON values (`CardBody`): read on access, replaced whole
    /// when one of them is set.
    private(set) var body: CardBody

    /// Opened on click; `nil` when the card has none.
    public var url: String? {
        get { body.string(.url) }
        set { edit { $0.url = newValue } }
    }
    public var openURLInWebView: Bool {
        get { body.bool(.openURLInWebView) }
        set { edit { $0.openURLInWebView = newValue } }
    }
    /// The key-value pairs set with the campaign. Non-string values arrive as their JSON text.
    public var extras: [String: String] {
        get { body.extras }
        set { edit { $0.extras = newValue } }
    }
    /// The kind of card and the fields that only that kind has.
    public var content: Content {
        get { body.content(type: type) }
        set { edit { $0.content = newValue } }
    }

    /// Changes fields of the body: decodes it, changes the values, writes it again.
    private mutating func edit(_ change: (inout CardBody.Fields) -> Void) {
        var fields = body.fields(type: type)
        change(&fields)
        body = CardBody(fields)
        type = fields.content.type
        storedClassType = fields.classType
    }

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
        let classType = classType ?? ClassType.normalize(extras[ClassType.extrasKey] ?? "")
        self.storedClassType = classType
        self.type = content.type
        self.body = CardBody(CardBody.Fields(url: url, openURLInWebView: openURLInWebView, extras: extras,
                                             classType: classType, content: content))
        self.imagePath = nil
    }

    /// A card whose body the decoder wrote.
    init(id: String, created: Int64, expiresAt: Int64, viewed: Bool, clicked: Bool, dismissed: Bool, read: Bool,
         dismissible: Bool, pinned: Bool, isTest: Bool, type: CardType, classType: String, body: CardBody) {
        self.id = id; self.created = created; self.expiresAt = expiresAt
        self.viewed = viewed; self.clicked = clicked; self.dismissed = dismissed; self.read = read
        self.dismissible = dismissible; self.pinned = pinned; self.isTest = isTest
        self.type = type; self.storedClassType = classType; self.body = body
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
    public var isControl: Bool { type == .control }

    // The kind-specific fields one at a time, each read from the body alone (null in the
    // body where the kind has no such field).
    public var image: String? { body.string(.image) }
    public var imageAltText: String? { body.string(.imageAltText) }
    public var imageAspectRatio: Double? { body.double(.imageAspectRatio) }
    public var title: String? { body.string(.title) }
    public var cardDescription: String? { body.string(.cardDescription) }
    public var domain: String? { body.string(.domain) }

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
