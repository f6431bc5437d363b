/// Turning cards into the application's own objects by class type: the "ContentCardable"
/// pattern of the Content Card implementation guide, in idiomatic Swift.
///
/// The application registers a factory per class type; `convert` builds its objects in feed
/// order, skipping cards whose class type has no factory and cards a factory declines. Each
/// object keeps the card id (in `ContentCardData`) so it can log its impression, click and
/// dismissal later without holding on to the card.

/// Stable names of a card's metadata: exactly the boundary field names of docs/BEHAVIOUR.md, "Cards".
public enum ContentCardKey: String, CaseIterable, Sendable {
    case id, type, created, expiresAt, viewed, clicked, dismissed, read, dismissible, pinned, isTest
    case isControl, url, openURLInWebView, extras, classType, image, imageAltText, imageAspectRatio
    case title, cardDescription, domain, imagePath
}

/// One metadata value.
public enum ContentCardValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case extras([String: String])

    public var string: String? { if case .string(let s) = self { return s }; return nil }
    public var bool: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var int: Int64? { if case .int(let i) = self { return i }; return nil }
    public var double: Double? {
        switch self {
        case .double(let d): return d
        case .int(let i): return Double(i)
        default: return nil
        }
    }
}

/// A card's metadata keyed by `ContentCardKey`, with its extras, as handed to a factory; and
/// the controller it came through (`ContentCardsController.convert`), so the object made from
/// it can log itself.
public struct ContentCardMetadata: Sendable {
    public let card: Card
    public let controller: ContentCardsController?

    public init(_ card: Card, controller: ContentCardsController? = nil) { self.card = card; self.controller = controller }

    public subscript(key: ContentCardKey) -> ContentCardValue {
        let c = card
        func opt(_ s: String?) -> ContentCardValue { s.map(ContentCardValue.string) ?? .null }
        switch key {
        case .id: return .string(c.id)
        case .type: return .string(c.type.rawValue)
        case .created: return .int(c.created)
        case .expiresAt: return .int(c.expiresAt)
        case .viewed: return .bool(c.viewed)
        case .clicked: return .bool(c.clicked)
        case .dismissed: return .bool(c.dismissed)
        case .read: return .bool(c.read)
        case .dismissible: return .bool(c.dismissible)
        case .pinned: return .bool(c.pinned)
        case .isTest: return .bool(c.isTest)
        case .isControl: return .bool(c.isControl)
        case .url: return opt(c.url)
        case .openURLInWebView: return .bool(c.openURLInWebView)
        case .extras: return .extras(c.extras)
        case .classType: return .string(c.classType)
        case .image: return opt(c.image)
        case .imageAltText: return opt(c.imageAltText)
        case .imageAspectRatio: return c.imageAspectRatio.map(ContentCardValue.double) ?? .null
        case .title: return opt(c.title)
        case .cardDescription: return opt(c.cardDescription)
        case .domain: return opt(c.domain)
        case .imagePath: return opt(c.imagePath)
        }
    }

    /// An extras value by key.
    public subscript(extra key: String) -> String? { card.extras[key] }

    /// Every key with its value.
    public var dictionary: [ContentCardKey: ContentCardValue] {
        Dictionary(uniqueKeysWithValues: ContentCardKey.allCases.map { ($0, self[$0]) })
    }
}

/// What an application object keeps of the card it came from (the implementation guide's
/// `ContentCardData`): its id, class type, creation and expiry time, whether it is pinned,
/// dismissible or a control card, and the controller it was converted through (to log by id).
/// Two are equal when their card ids are: the same card seen twice is the same content card.
public struct ContentCardData: Hashable, Sendable {
    public let contentCardID: String
    public let classType: String
    public let createdAt: Int64
    /// Unix seconds; -1 when the card never expires.
    public let expiresAt: Int64
    public let isPinned: Bool
    public let isDismissible: Bool
    public let isControl: Bool
    /// The controller the card came through, when converted with `controller.convert(...)`.
    public let controller: ContentCardsController?

    public init(_ card: Card, controller: ContentCardsController? = nil) {
        contentCardID = card.id; classType = card.classType; createdAt = card.created
        expiresAt = card.expiresAt; isPinned = card.pinned
        isDismissible = card.dismissible; isControl = card.isControl
        self.controller = controller
    }

    /// From a factory's metadata, keeping its controller.
    public init(_ metadata: ContentCardMetadata) { self.init(metadata.card, controller: metadata.controller) }

    public static func == (a: ContentCardData, b: ContentCardData) -> Bool { a.contentCardID == b.contentCardID }
    public func hash(into hasher: inout Hasher) { hasher.combine(contentCardID) }
}

/// An application type that can be built from a card.
public protocol ContentCardable {
    /// The card this object came from; nil for the application's own objects.
    var contentCardData: ContentCardData? { get }
    /// Builds the object from a card's metadata, or declines with nil.
    init?(metadata: ContentCardMetadata, classType: String)
}

/// The pattern's logging: an object made from a card logs its own impression, click and
/// dismissal through the controller it was converted through; the same `LogResult` as the
/// controller's calls. An object that is not a content card, or was converted without a
/// controller, gets `.invalidArgument` saying so.
extension ContentCardable {
    /// Whether this object came from a card.
    public var isContentCard: Bool { contentCardData != nil }

    @discardableResult
    public func logContentCardImpression() throws(ContentCardsError) -> LogResult {
        let (c, id) = try contentCardTarget()
        return try c.logImpression(cardID: id)
    }

    @discardableResult
    public func logContentCardClicked() throws(ContentCardsError) -> LogResult {
        let (c, id) = try contentCardTarget()
        return try c.logClick(cardID: id)
    }

    @discardableResult
    public func logContentCardDismissed() throws(ContentCardsError) -> LogResult {
        let (c, id) = try contentCardTarget()
        return try c.logDismissal(cardID: id)
    }

    private func contentCardTarget() throws(ContentCardsError) -> (ContentCardsController, String) {
        guard let data = contentCardData else {
            throw ContentCardsError(.invalidArgument, "\(Self.self) is not a content card (contentCardData is nil)")
        }
        guard let controller = data.controller else {
            throw ContentCardsError(.invalidArgument, "\(Self.self) for card \(ContentCardsController.quoted(data.contentCardID)) was not converted through a controller: use controller.convert(registry), or log with controller.logImpression(cardID:)")
        }
        return (controller, data.contentCardID)
    }
}

/// Factories per class type, and the conversion of cards into the application's objects.
public struct ContentCardRegistry: Sendable {
    public typealias Factory = @Sendable (ContentCardMetadata) -> (any ContentCardable)?
    private var factories: [String: Factory] = [:]

    public init() {}

    /// Registers `type` for one or more class types (normalized); a later registration for the
    /// same class type replaces the earlier one.
    public mutating func register<T: ContentCardable>(_ type: T.Type, for classTypes: String...) {
        for raw in classTypes {
            let classType = ClassType.normalize(raw)
            factories[classType] = { metadata in T(metadata: metadata, classType: classType) }
        }
    }

    /// Registers a factory closure for a class type.
    public mutating func register(classType raw: String, factory: @escaping Factory) {
        factories[ClassType.normalize(raw)] = factory
    }

    public var registeredClassTypes: Set<String> { Set(factories.keys) }

    /// The application's objects for `cards` whose class type passes `filter`, in the cards'
    /// order. Cards with no factory for their class type, and cards a factory declines, are
    /// skipped.
    public func convert(_ cards: [Card], for filter: ClassTypeFilter = .all,
                        controller: ContentCardsController? = nil) -> [any ContentCardable] {
        cards.compactMap { card in
            guard filter.matches(card), let factory = factories[card.classType] else { return nil }
            return factory(ContentCardMetadata(card, controller: controller))
        }
    }

    /// Like `convert`, for one application type: cards whose object is not a `T` are skipped.
    public func convert<T: ContentCardable>(_ cards: [Card], to type: T.Type, for filter: ClassTypeFilter = .all,
                                            controller: ContentCardsController? = nil) -> [T] {
        convert(cards, for: filter, controller: controller).compactMap { $0 as? T }
    }
}

extension ContentCardsController {
    /// The visible cards as the application's objects (`registry.convert`), in feed order,
    /// able to log themselves through this controller (`logContentCardImpression()`...).
    public func convert(_ registry: ContentCardRegistry, for filter: ClassTypeFilter = .all) throws(ContentCardsError) -> [any ContentCardable] {
        registry.convert(try cards(filter), for: filter, controller: self)
    }

    public func convert<T: ContentCardable>(_ registry: ContentCardRegistry, to type: T.Type,
                                            for filter: ClassTypeFilter = .all) throws(ContentCardsError) -> [T] {
        registry.convert(try cards(filter), to: type, for: filter, controller: self)
    }
}
