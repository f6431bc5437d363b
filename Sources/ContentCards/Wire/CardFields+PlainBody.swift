/// A card body written in a few copies when every text in it is plain (a span of the payload
/// that needs no escape): the common card. The general writers (`CardBody.writeHead`, the
/// extras, `CardBody.writeTail`) append a piece at a time, each with its own check for room
/// and its own call, some forty a card; here the room is asked for twice and the pieces are
/// copied. It writes exactly what the general writers write (`CardFieldsTests` compares cards
/// read from the stream, which come here, with the same cards read from a parsed tree, which
/// never do), and it writes nothing when any piece is not plain: the caller then writes the
/// body the general way.
extension CardFields {
    /// The body's texts when each is null (nil) or plain: spans of the input, so that nothing
    /// here is reference-counted or released.
    struct PlainTexts {
        var url: UnsafeBufferPointer<UInt8>?
        var image: UnsafeBufferPointer<UInt8>?
        var imageAltText: UnsafeBufferPointer<UInt8>?
        var imageAspectRatio: Double?
        var title: UnsafeBufferPointer<UInt8>?
        var cardDescription: UnsafeBufferPointer<UInt8>?
        var domain: UnsafeBufferPointer<UInt8>?

        init() {}

        /// The general builder's texts, when every one is null or plain; nil otherwise.
        init?(url: CardBody.Text, content c: CardBody.ContentTexts) {
            guard let u = Self.plain(url), let i = Self.plain(c.image), let a = Self.plain(c.imageAltText),
                  let t = Self.plain(c.title), let d = Self.plain(c.cardDescription), let m = Self.plain(c.domain) else {
                return nil
            }
            self.url = u; image = i; imageAltText = a; imageAspectRatio = c.imageAspectRatio
            title = t; cardDescription = d; domain = m
        }

        private static func plain(_ t: CardBody.Text) -> UnsafeBufferPointer<UInt8>?? {
            switch t {
            case .null: return .some(nil)
            case .plain(let b): return .some(b)
            case .string, .utf8: return nil
            }
        }
    }

    /// Writes the body into the emptied `w` from plain texts and extras `plainExtrasCount`
    /// measured (`extrasCount`); false, with nothing written, when the class type needs an
    /// escape.
    func writePlainBody(to w: inout JSONWriter, texts c: PlainTexts, openURLInWebView: Bool, extrasCount: Int,
                        classType: String) -> Bool {
        let urlCount = Self.plainCount(c.url), imageCount = Self.plainCount(c.image)
        let altCount = Self.plainCount(c.imageAltText), titleCount = Self.plainCount(c.title)
        let descriptionCount = Self.plainCount(c.cardDescription), domainCount = Self.plainCount(c.domain)
        var classType = classType
        return classType.withUTF8 { classBytes in
            guard RawPieces.needsNoEscape(classBytes) else { return false }
            let sep = CardBody.separator
            // url, flag, extras, class type, image, alt text: then the ratio, written by the
            // writer (its digits), then the rest.
            let head = urlCount + 1 + 5 + 1 + extrasCount + 1 + classBytes.count + 2 + 1 + imageCount + 1 + altCount + 1
            w.appendRaw(maxCount: head) { p in
                var at = 0
                Self.put(c.url, p, &at); p[at] = sep; at += 1
                RawPieces.put(openURLInWebView ? "true" : "false", p, &at); p[at] = sep; at += 1
                putExtras(p, &at); p[at] = sep; at += 1
                Self.putQuoted(classBytes, p, &at); p[at] = sep; at += 1
                Self.put(c.image, p, &at); p[at] = sep; at += 1
                Self.put(c.imageAltText, p, &at); p[at] = sep; at += 1
                return at
            }
            if let ratio = c.imageAspectRatio { w.rawDouble(ratio) } else { w.raw("null") }
            w.appendRaw(maxCount: 1 + titleCount + 1 + descriptionCount + 1 + domainCount + 1) { p in
                var at = 0
                p[at] = sep; at += 1
                Self.put(c.title, p, &at); p[at] = sep; at += 1
                Self.put(c.cardDescription, p, &at); p[at] = sep; at += 1
                Self.put(c.domain, p, &at); p[at] = sep; at += 1
                return at
            }
            return true
        }
    }

    /// The bytes a text takes in the body: `null`, or the span between quotes.
    @inline(__always)
    private static func plainCount(_ t: UnsafeBufferPointer<UInt8>?) -> Int { t.map { $0.count + 2 } ?? 4 }

    /// The bytes the extras object takes (`{}` when there is none); nil unless every key and
    /// value is a plain span in key order (`sortEntries` said so).
    func plainExtrasCount(sorted: Bool) -> Int? {
        switch extras {
        case .absent, .wrongType: return 2
        case .object: return nil
        case .entries:
            guard sorted else { return nil }
            if extrasSummary.valid && inKeyOrder { return extrasSummary.plain ? extrasSummary.plainBytes : nil }
            var total = 2
            for n in 0..<keyOrderCount {
                let entry = entries[keyOrderIndex(n)]
                guard entry.key.kind == .span, entry.key.plain, entry.value.kind == .span, entry.value.plain else { return nil }
                total += Self.plainEntryBytes(entry)
            }
            return total
        }
    }

    /// The room a plain entry asks for in the body's extras object: `"k":"v",` (the last
    /// entry's comma is room not written).
    @inline(__always)
    static func plainEntryBytes(_ entry: Entry) -> Int {
        (entry.key.end &- entry.key.start) &+ (entry.value.end &- entry.value.start) &+ 6
    }

    private func putExtras(_ p: UnsafeMutablePointer<UInt8>, _ at: inout Int) {
        p[at] = 0x7B; at += 1
        if case .entries = extras {
            for n in 0..<keyOrderCount {
                if n > 0 { p[at] = 0x2C; at += 1 }
                let entry = entries[keyOrderIndex(n)]
                Self.putQuoted(bytes(entry.key), p, &at)
                p[at] = 0x3A; at += 1
                Self.putQuoted(bytes(entry.value), p, &at)
            }
        }
        p[at] = 0x7D; at += 1
    }

    @inline(__always)
    private static func put(_ t: UnsafeBufferPointer<UInt8>?, _ p: UnsafeMutablePointer<UInt8>, _ at: inout Int) {
        if let b = t { putQuoted(b, p, &at) } else { RawPieces.put("null", p, &at) }
    }

    @inline(__always)
    private static func putQuoted(_ b: UnsafeBufferPointer<UInt8>, _ p: UnsafeMutablePointer<UInt8>, _ at: inout Int) {
        p[at] = 0x22
        if let source = b.baseAddress { RawPieces.copy(source, to: p + at + 1, count: b.count) }
        at += b.count + 2
        p[at - 1] = 0x22
    }
}
