/// The card builder's one pass over the common card: a card of a known type, not removed,
/// whose every field the card rules read is absent, null, a literal, a plain integer or
/// decimal, or a plain text (a span of the payload that needs no escape), with extras of plain
/// texts. It reads each slot once and writes the body from spans, where the general builder
/// (`build`) goes through a checked accessor a field, makes each text a `CardBody.Text` (an
/// enum that may hold a `String`, copied and released), and then asks again whether each one
/// is plain: about half of a payload's decoding, for the cards every payload is made of.
///
/// It decides nothing of its own: it gives up (nil) at anything it does not take, with
/// nothing kept, and `build` then checks and builds the card the general way, so a card with
/// a problem is always reported by the general builder, in its words. A card it takes is the
/// card the general builder makes (`CommonCardTests` builds every shape both ways).
extension CardFields {
    /// The card, when it is a common one; nil to build it the general way.
    mutating func buildCommonCard(knownClassTypes: Set<String>?, writer w: inout JSONWriter) -> Payload.ServerCard? {
        guard source.baseAddress != nil else { return nil }
        let idField = slots[0]
        // A span holds no control character, so no NUL: the id is addressable from C.
        guard idField.kind == .span, idField.end > idField.start else { return nil }
        guard let created = integer(2, absent: nil) else { return nil }
        // A tombstone, and extras of another type, are the general builder's.
        guard let removed = flag(7), removed != true else { return nil }
        switch extras {
        case .absent, .entries: break
        case .object, .wrongType: return nil
        }
        guard let expiresAt = integer(3, absent: Card.neverExpires) else { return nil }
        guard let viewed = flag(4), let clicked = flag(5), let dismissed = flag(6), let read = flag(19),
              let dismissible = flag(9), let pinned = flag(8), let isTest = flag(10), let inWebView = flag(11)
        else { return nil }
        guard let url = text(12, .nonEmpty), let (type, texts) = commonContent() else { return nil }
        var all = texts
        all.url = url
        let classType = normalizedClassType(known: knownClassTypes)
        // Two statements: in one, `plainExtrasCount` would be called on the fields as they
        // were before `sortEntries` changed them (a method's base is read before its arguments).
        let sorted = sortEntries()
        guard let extrasCount = plainExtrasCount(sorted: sorted) else { return nil }
        w.removeAll()
        guard writePlainBody(to: &w, texts: all, openURLInWebView: inWebView ?? false, extrasCount: extrasCount,
                             classType: classType), !w.failed else { return nil }
        let card = Card(id: string(idField), created: created, expiresAt: expiresAt, viewed: viewed ?? false,
                        clicked: clicked ?? false, dismissed: dismissed ?? false, read: read ?? false,
                        dismissible: dismissible ?? false, pinned: pinned ?? false, isTest: isTest ?? false,
                        type: type, classType: classType, body: CardBody(json: w.bytes))
        return Payload.ServerCard(card: card, removed: false, read: read)
    }

    /// How the general builder reads a text: `optional` keeps an empty text, `nonEmpty` makes
    /// it null, `required` gives up on it (the general builder reports it).
    private enum TextRule { case optional, nonEmpty, required }

    /// The kind and texts of a common card's type (`content`); nil for any other.
    private func commonContent() -> (CardType, PlainTexts)? {
        let tp = slots[1]
        guard tp.kind == .span else { return nil }
        var c = PlainTexts()
        if text(tp, is: "captioned_image") {
            guard let i = text(13, .required), let alt = text(14, .optional), let ratio = ratio(),
                  let title = text(16, .required), let description = text(17, .required),
                  let domain = text(18, .optional) else { return nil }
            c.image = i; c.imageAltText = alt; c.imageAspectRatio = ratio; c.title = title
            c.cardDescription = description; c.domain = domain
            return (.captionedImage, c)
        }
        if text(tp, is: "short_news") || text(tp, is: "text_announcement") {
            guard let title = text(16, .optional), let description = text(17, .required),
                  let i = text(13, .nonEmpty), let alt = text(14, .optional), let domain = text(18, .optional) else {
                return nil
            }
            c.title = title; c.cardDescription = description; c.image = i; c.imageAltText = alt; c.domain = domain
            return (.classic, c)
        }
        if text(tp, is: "banner_image") {
            guard let i = text(13, .required), let alt = text(14, .optional), let ratio = ratio(),
                  let domain = text(18, .optional) else { return nil }
            c.image = i; c.imageAltText = alt; c.imageAspectRatio = ratio; c.domain = domain
            return (.banner, c)
        }
        if text(tp, is: "control") { return (.control, c) }
        return nil
    }

    /// A boolean slot: `.some(nil)` absent or null, the value, or nil for any other type.
    @inline(__always)
    private func flag(_ i: Int) -> Bool?? {
        switch slots[i].kind {
        case .absent, .null: return .some(nil)
        case .yes: return true
        case .no: return false
        default: return nil
        }
    }

    /// An integer slot of at most 18 digits; `absent` when absent or null (nil: required).
    @inline(__always)
    private func integer(_ i: Int, absent: Int64?) -> Int64? {
        let f = slots[i]
        if f.kind == .absent || f.kind == .null { return absent }
        guard f.kind == .number else { return nil }
        return CardFields.plainInteger(bytes(f))
    }

    /// The image's aspect ratio: `.some(nil)` when absent or null, a short decimal, or nil.
    @inline(__always)
    private func ratio() -> Double?? {
        let f = slots[15]
        if f.kind == .absent || f.kind == .null { return .some(nil) }
        guard f.kind == .number, let d = CardFields.shortDecimal(bytes(f)) else { return nil }
        return d
    }

    /// A text slot under `rule`: `.some(nil)` for null, its plain span, or nil to give up.
    @inline(__always)
    private func text(_ i: Int, _ rule: TextRule) -> UnsafeBufferPointer<UInt8>?? {
        let f = slots[i]
        if f.kind == .absent || f.kind == .null { return rule == .required ? nil : .some(nil) }
        guard f.kind == .span, f.plain else { return nil }
        if f.start == f.end {
            switch rule {
            case .optional: break
            case .nonEmpty: return .some(nil)
            case .required: return nil
            }
        }
        return bytes(f)
    }
}
