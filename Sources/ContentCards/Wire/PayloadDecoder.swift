/// Decodes server payloads (short keys, docs/WIRE.md) into cards.
///
/// One bad card never fails the payload: it is left out and reported with its index, its id
/// when it has one, and the reason. Only a payload that is not JSON, or not an array of cards or
/// an object with a `cards` array, is an error.
///
/// Cards are read straight from the token stream into their fields (`CardFields`): building a
/// generic JSON tree of the whole payload first cost more than everything else put together.
package struct PayloadDecoder: Sendable {
    package var limits: JSONReader.Limits
    /// Normalized class types the application knows; nil accepts every class type.
    package var knownClassTypes: Set<String>?
    /// A large cards array is read by two threads (CardArraySplit.swift); false reads every
    /// payload on the caller's thread alone, its UTF-8 checked before (the tests compare the two).
    var splitsLargeArrays = true
    /// Told of each split once it is settled: true when the second thread's half was joined,
    /// false when it was dropped (the tests' window on which way a payload went).
    var observeSplit: (@Sendable (_ joined: Bool) -> Void)?

    package init(limits: JSONReader.Limits = JSONReader.Limits(), knownClassTypes: Set<String>? = nil) {
        self.limits = limits
        self.knownClassTypes = knownClassTypes.map { Set($0.map { ClassType.normalize($0) }) }
    }

    package func decode(_ text: String) throws(PayloadError) -> Payload {
        var copy = text
        let result = copy.withUTF8 { bytes in Result { () throws(PayloadError) in try decode(bytes, checkedUTF8: true) } }
        return try result.get()
    }

    package func decode(_ bytes: [UInt8]) throws(PayloadError) -> Payload {
        let result = bytes.withUnsafeBufferPointer { buffer in Result { () throws(PayloadError) in try decode(buffer) } }
        return try result.get()
    }

    package func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws(PayloadError) -> Payload {
        try decode(bytes, checkedUTF8: false)
    }

    /// `checkedUTF8`: the caller knows the bytes are valid UTF-8 (a `String`'s, or checked at
    /// the C boundary); else they are checked here, once, before parsing.
    func decode(_ bytes: UnsafeBufferPointer<UInt8>, checkedUTF8: Bool) throws(PayloadError) -> Payload {
        if bytes.count > limits.maxBytes {
            throw PayloadError("payload is too large: \(bytes.count) bytes, over the limit of \(limits.maxBytes) (maxPayloadBytes)")
        }
        var parser = Parser(bytes: bytes, maxDepth: limits.maxDepth)
        // A payload large enough to be read by two threads is checked by both, each its part,
        // when the cards array is reached (`readCards`); until then it is read as unchecked.
        // Reading unchecked text finds the same values, but words a few errors otherwise (a
        // `\` before a multi-byte character is a bad escape in checked text, bad UTF-8 in
        // unchecked): valid text that fails is read again checked, below, for the same words.
        let deferUTF8 = splitsLargeArrays && !checkedUTF8 && bytes.count >= Self.splitMinimumBytes
        parser.validUTF8 = checkedUTF8 || (!deferUTF8 && UTF8Validation.isValid(bytes))
        var payload = Payload()
        // A wrong shape is reported after the whole document parsed, so that a syntax error
        // anywhere wins (it says more about what went wrong).
        var shapeError: String?
        var envelope: [(String, JSONValue)] = []
        do throws(JSONError) {
            try parser.beginDocument()
            switch parser.peek() {
            case 0x5B:
                try readCards(&parser, uncheckedUTF8: deferUTF8, into: &payload)
            case 0x7B:
                var cursor = try parser.beginObject()
                var sawCards = false
                while let key = try parser.nextKey(&cursor) {
                    if key.known == .cards {
                        if parser.peek() == 0x5B {
                            payload.cards = []
                            payload.leftOut = []
                            try readCards(&parser, uncheckedUTF8: deferUTF8, into: &payload)
                            sawCards = true
                            shapeError = nil
                        } else {
                            let value = try parser.parseValue()
                            shapeError = "payload \"cards\" is \(value.typeName), expected an array"
                            sawCards = true
                        }
                    } else if key.known == .full_sync || key.known == .user_id
                                || key.name == "last_full_sync_at" || key.name == "last_card_updated_at" {
                        envelope.append((key.name, try parser.parseValue()))
                    } else {
                        _ = try parser.parseValue()
                    }
                }
                if !sawCards { shapeError = "payload is an object without a \"cards\" array" }
            default:
                let value = try parser.parseValue()
                shapeError = "payload is \(value.typeName), expected an array of cards or an object with \"cards\""
            }
            try parser.endDocument()
        } catch {
            if deferUTF8 && UTF8Validation.isValid(bytes) {
                var one = self          // read once more, on this thread alone: it fails anyway
                one.splitsLargeArrays = false
                return try one.decode(bytes, checkedUTF8: true)
            }
            throw PayloadError("payload is not valid JSON: \(error)")
        }
        if let shapeError { throw PayloadError(shapeError) }
        try readEnvelope(JSONValue.object(envelope.map { (key: $0.0, value: $0.1) }), into: &payload)
        return payload
    }

    /// Decodes a payload already parsed (a sync response object or a bare array).
    package func decode(_ root: JSONValue) throws(PayloadError) -> Payload {
        var payload = Payload()
        let items: [JSONValue]
        switch root {
        case .array(let array):
            items = array
        case .object:
            guard let cards = root["cards"] else {
                throw PayloadError("payload is an object without a \"cards\" array")
            }
            guard case .array(let array) = cards else {
                throw PayloadError("payload \"cards\" is \(cards.typeName), expected an array")
            }
            items = array
            try readEnvelope(root, into: &payload)
        default:
            throw PayloadError("payload is \(root.typeName), expected an array of cards or an object with \"cards\"")
        }
        var seen = CardIDSet(minimumCapacity: items.count)
        var fields = CardFields()
        var writer = JSONWriter(reservingCapacity: 1024)
        for (index, item) in items.enumerated() {
            guard case .object(let members) = item else {
                payload.leftOut.append(Payload.LeftOut(index: index, id: nil, reason: "not an object but \(item.typeName)"))
                continue
            }
            fields.reset(source: nil)
            for member in members { fields.set(member.key, member.value) }
            add(&fields, index: index, seen: &seen, writer: &writer, to: &payload)
        }
        payload.listedIDs = seen
        return payload
    }

    /// Reads a card in the stored form of schema 1 and 2 (short-key JSON: see `StoredCard`); nil if it does not decode.
    func decodeStoredCard(_ bytes: UnsafeBufferPointer<UInt8>) -> Card? {
        var writer = JSONWriter(reservingCapacity: 1024)
        var fields = CardFields()
        return decodeStoredCard(bytes, fields: &fields, writer: &writer)
    }

    /// `decodeStoredCard`, with the scratch space of the previous card (a store's load reads
    /// thousands in a row).
    func decodeStoredCard(_ bytes: UnsafeBufferPointer<UInt8>, fields: inout CardFields, writer: inout JSONWriter) -> Card? {
        var parser = Parser(bytes: bytes, maxDepth: limits.maxDepth)
        parser.validUTF8 = UTF8Validation.isValid(bytes)
        fields.reset(source: bytes)
        do throws(JSONError) {
            try parser.beginDocument()
            guard parser.peek() == 0x7B else { return nil }
            try readCard(&parser, into: &fields)
            try parser.endDocument()
        } catch {
            return nil
        }
        return try? fields.build(knownClassTypes: knownClassTypes, writer: &writer).card
    }

    // MARK: Reading from the token stream

    /// `uncheckedUTF8`: the payload's UTF-8 is checked here (as `decode` says), unless an
    /// earlier cards array was.
    private func readCards(_ parser: inout Parser, uncheckedUTF8: Bool, into payload: inout Payload) throws(JSONError) {
        var cursor = try parser.beginArray()
        // Sized for the cards the payload can hold (a card is some hundreds of bytes): growing
        // the set rehashes every id again.
        let expected = min(parser.bytes.count / 256, 1 << 20)
        var seen = CardIDSet(minimumCapacity: expected)
        // The cards' array too: grown by doubling, a 10,000-card payload's went through four
        // buffers (3 MB of fresh pages for 1.6 MB of cards). Reserved memory that is never
        // written is never touched (and never resident), but it is address space, which a
        // host with strict overcommit counts: one card's worth (160 bytes) for every 384 bytes
        // of payload, under half the payload's own size, however few cards it holds.
        // (Capped at 65,536 cards, a 1,000,000-card apply grew the array five times, and its
        // peak rose by 15 MB.)
        payload.cards.reserveCapacity(min(parser.bytes.count / 384, 1 << 22))
        HugePages.adviseCapacity(of: payload.cards)
        // The part that cards of up to 1 KB each (most cards) fill, faulted in at once; the
        // rest of the reserve as it is written, if it is.
        HugePages.prepareFilling(capacityOf: payload.cards, first: parser.bytes.count / 1024)
        var index = 0
        var reading = CardReading()
        // A large array's second half is read by another thread meanwhile (CardArraySplit.swift).
        let checkUTF8 = !parser.validUTF8 && uncheckedUTF8
        var second = splitsLargeArrays ? startSecondHalf(parser, checkUTF8: checkUTF8) : nil
        defer {                         // never return or throw while it reads the caller's bytes
            if let half = second {
                half.cancel()
                observeSplit?(false)
            }
        }
        if checkUTF8 {
            // The same answer one check of the whole gives: the second thread checks the rest.
            let end = second?.comma ?? parser.bytes.count
            parser.validUTF8 = UTF8Validation.isValid(UnsafeBufferPointer(rebasing: parser.bytes[..<end]))
                && (second?.validUTF8() ?? true)
        }
        while true {
            if let half = second {
                parser.skipSpace()
                if parser.pos >= half.comma {
                    second = nil
                    if parser.pos == half.comma, let read = half.wait(),
                       join(read, count: index, seen: &seen, into: &payload) {
                        parser.pos = read.pos
                        parser.depth = read.depth
                        observeSplit?(true)
                        break
                    }
                    half.cancel()       // the guess was passed over, or not joined: read on alone
                    observeSplit?(false)
                }
            }
            guard try parser.nextElement(&cursor) else { break }
            try readElement(&parser, index: index, seen: &seen, reading: &reading, into: &payload)
            index += 1
        }
        payload.listedIDs = seen
    }

    /// Reads the array's element at the parser's place: a card, or something else left out.
    func readElement<Sink: CardSink>(_ parser: inout Parser, index: Int, seen: inout CardIDSet, reading: inout CardReading,
                                     into sink: inout Sink) throws(JSONError) {
        // One element's escaped lone surrogate leaves that element out, not the payload.
        parser.toleratesLoneSurrogates = true
        parser.sawLoneSurrogate = false
        defer { parser.toleratesLoneSurrogates = false }
        if parser.peek() == 0x7B {
            reading.fields.reset(source: parser.bytes)
            try readCard(&parser, into: &reading.fields)
            if parser.sawLoneSurrogate {
                sink.leaveOut(Payload.LeftOut(index: index, id: reading.fields.id,
                                              reason: "a string holds an escaped lone surrogate (\\ud800 to \\udfff without its pair), which UTF-8 cannot hold"))
                return
            }
            if let id = reading.fields.idSpan { seen.prefetch(id) }
            add(&reading.fields, index: index, seen: &seen, writer: &reading.writer, to: &sink)
        } else {
            let value = try parser.parseValue()
            sink.leaveOut(Payload.LeftOut(index: index, id: nil, reason: "not an object but \(value.typeName)"))
        }
    }

    private func readCard(_ parser: inout Parser, into fields: inout CardFields) throws(JSONError) {
        try fields.read(&parser)
    }

    private func add<Sink: CardSink>(_ fields: inout CardFields, index: Int, seen: inout CardIDSet, writer: inout JSONWriter,
                                     to sink: inout Sink) {
        do throws(CardProblem) {
            let card = try fields.build(knownClassTypes: knownClassTypes, writer: &writer)
            if !seen.insert(card.card.id) {
                throw CardProblem(id: card.card.id, reason: "duplicate id: an earlier card in the payload has it")
            }
            sink.keep(card)
        } catch {
            sink.leaveOut(Payload.LeftOut(index: index, id: error.id, reason: error.reason))
        }
    }

    private func readEnvelope(_ root: JSONValue, into payload: inout Payload) throws(PayloadError) {
        func bool(_ key: String) throws(PayloadError) -> Bool? {
            guard let v = root[key], v != .null else { return nil }
            guard let b = v.boolValue else { throw PayloadError("payload \"\(key)\" is \(v.typeName), expected a boolean") }
            return b
        }
        func int(_ key: String) throws(PayloadError) -> Int64? {
            guard let v = root[key], v != .null else { return nil }
            guard let n = v.int64Value else { throw PayloadError("payload \"\(key)\" is \(v.typeName), expected an integer") }
            return n
        }
        payload.fullSync = try bool("full_sync") ?? false
        payload.lastFullSyncAt = try int("last_full_sync_at") ?? -1
        payload.lastCardUpdatedAt = try int("last_card_updated_at") ?? -1
        if let user = root["user_id"], user != .null {
            guard let id = user.stringValue else {
                throw PayloadError("payload \"user_id\" is \(user.typeName), expected a string")
            }
            payload.userID = id
        }
    }
}

/// Why one card was left out.
package struct CardProblem: Error, Sendable {
    package let id: String?
    package let reason: String
}
