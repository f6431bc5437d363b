/// Building the checked card: its kind and content, its base fields, and its body written in
/// the one layout `CardBody` reads (the extras between the head and the tail).
extension CardFields {
    /// Checks the fields and builds the card, writing its body with `writer`.
    mutating func build(knownClassTypes: Set<String>?, writer w: inout JSONWriter) throws(CardProblem) -> Payload.ServerCard {
        if let card = buildCommonCard(knownClassTypes: knownClassTypes, writer: &w) { return card }
        guard let id = try string(.id), !id.isEmpty else {
            throw CardProblem(id: nil, reason: "missing required field \"id\" (a non-empty string)")
        }
        // A NUL cannot pass through a C string: such a card could never be addressed by id.
        // Only an escape (`\u0000`) makes one: a string token without escapes holds no
        // control character, so its text is not searched.
        if value(.id)?.kind != .span && CardFields.holdsNUL(id) {
            throw CardProblem(id: nil, reason: "the id holds a NUL character")
        }
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
        let classType = normalizedClassType(known: knownClassTypes)
        let sorted = sortEntries()
        w.removeAll()
        let plain = PlainTexts(url: url, content: content).flatMap { texts in
            plainExtrasCount(sorted: sorted).map { (texts, $0) }
        }
        if !(plain.map { writePlainBody(to: &w, texts: $0.0, openURLInWebView: openURLInWebView, extrasCount: $0.1,
                                        classType: classType) } ?? false) {
            CardBody.writeHead(to: &w, url: url, openURLInWebView: openURLInWebView)
            writeExtras(sorted: sorted, to: &w)
            CardBody.writeTail(to: &w, classType: classType, content: content)
        }
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
    func text(_ f: Field, is literal: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        if f.kind == .string { return strings[f.start].utf8.elementsEqual(expected) }
        return bytes(f).bytesEqual(literal)
    }

    func content(_ wireType: Field) throws(CardProblem) -> (CardType, CardBody.ContentTexts) {
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
        throw problem("unknown type \(Redact.quoted(string(wireType)))")
    }
}
