import ContentCards
/// A feed frozen at one moment, with every string made into a C string once, owned by the
/// snapshot until it is closed: what a C program without a JSON parser reads cards from.
final class Snapshot: @unchecked Sendable {
    static let stringFields = ["id", "type", "url", "classType", "image", "imageAltText", "title", "cardDescription", "domain", "imagePath"]
    static let intFields = ["created", "expiresAt"]
    static let boolFields = ["viewed", "clicked", "dismissed", "read", "dismissible", "pinned", "isTest", "isControl", "openURLInWebView"]
    static let doubleFields = ["imageAspectRatio"]
    private static let stringIndex = Dictionary(uniqueKeysWithValues: stringFields.enumerated().map { ($1, $0) })

    struct Entry {
        let card: Card
        var strings: [UnsafeMutablePointer<CChar>?]
        var extras: [(key: UnsafeMutablePointer<CChar>?, value: UnsafeMutablePointer<CChar>?)]
        var extraIndex: [String: Int]
    }

    let entries: [Entry]

    /// A text that holds a NUL character: a C string cannot carry it, and `strdup` would cut
    /// it there, so the getter refuses it (`heldNUL`) rather than hand out part of it.
    static let heldNUL = UnsafeMutablePointer<CChar>(bitPattern: 1)!

    /// Copies every text; `.noMemory` when a copy fails (a NULL would read as no value).
    init(cards: [Card]) throws(ContentCardsError) {
        var failed = false
        func copy(_ text: String) -> UnsafeMutablePointer<CChar>? {
            if text.utf8.contains(0) { return Self.heldNUL }
            guard let c = strdup(text) else { failed = true; return nil }
            return c
        }
        entries = cards.map { card in
            let values: [String?] = [card.id, card.type.rawValue, card.url, card.classType, card.image,
                                     card.imageAltText, card.title, card.cardDescription, card.domain, card.imagePath]
            // Read once: a card's extras are decoded from its body on each access.
            let extras = card.extras
            let keys = extras.keys.sorted()
            return Entry(card: card,
                         strings: values.map { $0.flatMap(copy) },
                         extras: keys.map { (copy($0), copy(extras[$0] ?? "")) },
                         extraIndex: Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) }))
        }
        if failed { throw ContentCardsError(.noMemory, "out of memory copying the snapshot's texts") }
    }

    /// `p` as handed to C: an error for a text that holds a NUL.
    static func handedOut(_ p: UnsafeMutablePointer<CChar>?, _ what: @autoclosure () -> String) throws(ContentCardsError) -> UnsafePointer<CChar>? {
        if p == heldNUL {
            throw ContentCardsError(.invalidArgument, "\(what()) holds a NUL character, which a C string cannot carry: read it from the feed's JSON (cc_controller_feed)")
        }
        return UnsafePointer(p)
    }

    private static func release(_ p: UnsafeMutablePointer<CChar>?) { if p != heldNUL { free(p) } }

    deinit {
        for e in entries {
            e.strings.forEach { Self.release($0) }
            e.extras.forEach { Self.release($0.key); Self.release($0.value) }
        }
    }

    func entry(_ index: Int) throws(ContentCardsError) -> Entry {
        guard index >= 0 && index < entries.count else {
            throw ContentCardsError(.invalidArgument, "index \(index) is out of range (the snapshot has \(entries.count) cards)")
        }
        return entries[index]
    }

    static func fieldError(_ field: String, expected: String) -> ContentCardsError {
        let kind = stringFields.contains(field) ? "a string" : intFields.contains(field) ? "an integer"
            : boolFields.contains(field) ? "a boolean" : doubleFields.contains(field) ? "a double" : nil
        if let kind { return ContentCardsError(.invalidArgument, "field \(Redact.quoted(field)) is \(kind), not \(expected)") }
        return ContentCardsError(.invalidArgument, "unknown card field \(Redact.quoted(field))")
    }

    func string(_ index: Int, _ field: String) throws(ContentCardsError) -> UnsafePointer<CChar>? {
        guard let i = Self.stringIndex[field] else { throw Self.fieldError(field, expected: "a string") }
        return try Self.handedOut(try entry(index).strings[i], "field \"\(field)\" of card \(index)")
    }

    func int(_ index: Int, _ field: String) throws(ContentCardsError) -> Int64 {
        let card = try entry(index).card
        switch field {
        case "created": return card.created
        case "expiresAt": return card.expiresAt
        default: throw Self.fieldError(field, expected: "an integer")
        }
    }

    func bool(_ index: Int, _ field: String) throws(ContentCardsError) -> Bool {
        let c = try entry(index).card
        switch field {
        case "viewed": return c.viewed
        case "clicked": return c.clicked
        case "dismissed": return c.dismissed
        case "read": return c.read
        case "dismissible": return c.dismissible
        case "pinned": return c.pinned
        case "isTest": return c.isTest
        case "isControl": return c.isControl
        case "openURLInWebView": return c.openURLInWebView
        default: throw Self.fieldError(field, expected: "a boolean")
        }
    }

    func double(_ index: Int, _ field: String) throws(ContentCardsError) -> Double? {
        guard field == "imageAspectRatio" else { throw Self.fieldError(field, expected: "a double") }
        return try entry(index).card.imageAspectRatio
    }
}

private func snapshot(_ handle: OpaquePointer?) throws(ContentCardsError) -> Snapshot {
    try Handles.snapshots.get(handle)
}

@_cdecl("cc_controller_snapshot")
public func cc_controller_snapshot(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ controller: OpaquePointer?,
                                   _ filterJSON: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let out = try CStrings.requireOutput(out, "out")
        let c = try Handles.controller(controller)
        let cards = try c.cards(try filterArgument(filterJSON))
        out.pointee = try Handles.snapshots.insert(try Snapshot(cards: cards))
    }
}

@_cdecl("cc_snapshot_count")
public func cc_snapshot_count(_ outCount: UnsafeMutablePointer<Int>?, _ handle: OpaquePointer?) -> Int32 {
    entry { () throws(ContentCardsError) in
        guard let outCount else { throw ContentCardsError(.invalidArgument, "out_count is NULL") }
        outCount.pointee = try snapshot(handle).entries.count
    }
}

@_cdecl("cc_snapshot_string")
public func cc_snapshot_string(_ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?, _ handle: OpaquePointer?,
                               _ index: Int, _ field: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let out = try CStrings.requireOutput(out, "out")
        out.pointee = try snapshot(handle).string(index, try CStrings.required(field, "field"))
    }
}

@_cdecl("cc_snapshot_int")
public func cc_snapshot_int(_ out: UnsafeMutablePointer<Int64>?, _ handle: OpaquePointer?,
                            _ index: Int, _ field: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        guard let out else { throw ContentCardsError(.invalidArgument, "out is NULL") }
        out.pointee = try snapshot(handle).int(index, try CStrings.required(field, "field"))
    }
}

@_cdecl("cc_snapshot_bool")
public func cc_snapshot_bool(_ out: UnsafeMutablePointer<Int32>?, _ handle: OpaquePointer?,
                             _ index: Int, _ field: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        guard let out else { throw ContentCardsError(.invalidArgument, "out is NULL") }
        out.pointee = try snapshot(handle).bool(index, try CStrings.required(field, "field")) ? 1 : 0
    }
}

@_cdecl("cc_snapshot_double")
public func cc_snapshot_double(_ out: UnsafeMutablePointer<Double>?, _ outPresent: UnsafeMutablePointer<Int32>?,
                               _ handle: OpaquePointer?, _ index: Int, _ field: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        guard let out else { throw ContentCardsError(.invalidArgument, "out is NULL") }
        let value = try snapshot(handle).double(index, try CStrings.required(field, "field"))
        out.pointee = value ?? 0
        outPresent?.pointee = value == nil ? 0 : 1
    }
}

@_cdecl("cc_snapshot_extra")
public func cc_snapshot_extra(_ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?, _ handle: OpaquePointer?,
                              _ index: Int, _ key: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let out = try CStrings.requireOutput(out, "out")
        let e = try snapshot(handle).entry(index)
        let name = try CStrings.required(key, "key")
        if let i = e.extraIndex[name] { out.pointee = try Snapshot.handedOut(e.extras[i].value, "extra \"\(name)\" of card \(index)") }
    }
}

@_cdecl("cc_snapshot_extras_count")
public func cc_snapshot_extras_count(_ outCount: UnsafeMutablePointer<Int>?, _ handle: OpaquePointer?, _ index: Int) -> Int32 {
    entry { () throws(ContentCardsError) in
        guard let outCount else { throw ContentCardsError(.invalidArgument, "out_count is NULL") }
        outCount.pointee = try snapshot(handle).entry(index).extras.count
    }
}

@_cdecl("cc_snapshot_extra_at")
public func cc_snapshot_extra_at(_ outKey: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                 _ outValue: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                 _ handle: OpaquePointer?, _ index: Int, _ extraIndex: Int) -> Int32 {
    entry { () throws(ContentCardsError) in
        // Both outputs, as the header says (one NULL was taken as "not wanted").
        guard let outKey else { throw ContentCardsError(.invalidArgument, "out_key is NULL") }
        guard let outValue else { throw ContentCardsError(.invalidArgument, "out_value is NULL") }
        let e = try snapshot(handle).entry(index)
        guard extraIndex >= 0 && extraIndex < e.extras.count else {
            throw ContentCardsError(.invalidArgument, "extra_index \(extraIndex) is out of range (the card has \(e.extras.count) extras)")
        }
        let key = try Snapshot.handedOut(e.extras[extraIndex].key, "the key of extra \(extraIndex) of card \(index)")
        let value = try Snapshot.handedOut(e.extras[extraIndex].value, "the value of extra \(extraIndex) of card \(index)")
        outKey.pointee = key
        outValue.pointee = value
    }
}

@_cdecl("cc_snapshot_close")
public func cc_snapshot_close(_ handle: OpaquePointer?) -> Int32 {
    entry { () throws(ContentCardsError) in
        _ = try Handles.snapshots.remove(handle)
    }
}
