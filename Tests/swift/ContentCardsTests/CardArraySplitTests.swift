import Foundation
import Testing
@testable import ContentCards

/// A large cards array is read by two threads (CardArraySplit.swift). Every payload here is
/// decoded both ways, with the split and on one thread, and the two must agree in everything:
/// the cards, the left-out report with its indices, the envelope, the error and its wording.
/// The payloads are made to trip the split: a guessed boundary inside a string or inside a
/// card's own array, an id repeated across the halves, errors and bad UTF-8 on either side.
@Suite struct CardArraySplitTests {
    /// About 150 bytes a card: 3,000 cards are 450 KB, past `splitMinimumBytes`.
    static let count = 3_000

    static func card(_ i: Int, description: String? = nil, id: String? = nil, extra: String = "") -> String {
        let text = description ?? "Fresh roast espresso bundle number \(i)"
        return #"{"id":"\#(id ?? "c\(i)")","tp":"short_news","ca":\#(1_763_000_000 + i),"ds":"\#(text)","#
            + #""e":{"class_type":"home_tile","key":"value \#(i)"}\#(extra)}"#
    }

    static func feed(_ n: Int = count, envelope: String = #","full_sync":true,"last_full_sync_at":5"#,
                     card: (Int) -> String = { card($0) }) -> String {
        #"{"cards":["# + (0..<n).map(card).joined(separator: ",") + "]" + envelope + "}"
    }

    /// Printed short when an expectation fails: the payloads whole would be megabytes.
    struct Both: CustomTestStringConvertible {
        let split: Result<Payload, PayloadError>
        let one: Result<Payload, PayloadError>
        /// How the split went: nil when no second thread started, true when its half was
        /// joined, false when it was dropped and the first thread read on alone.
        let joined: Bool?
        var agree: Bool { split == one }
        var testDescription: String { "split: \(Self.describe(split)); one thread: \(Self.describe(one)); joined: \(String(describing: joined))" }
        static func describe(_ r: Result<Payload, PayloadError>) -> String {
            switch r {
            case .success(let p): return "\(p.cards.count) cards, \(p.leftOut.count) left out \(p.leftOut.prefix(3))"
            case .failure(let e): return e.message
            }
        }
        /// The tables the split reading's ids are in: 2 when the second thread's half was joined.
        var parts: Int { (try? split.get())?.listedIDs?.parts ?? 0 }
    }

    /// What `observeSplit` said, for one decode.
    final class Outcomes: @unchecked Sendable {
        private let lock = Lock()
        private var said: [Bool] = []
        func note(_ joined: Bool) { lock.withLock { said.append(joined) } }
        var all: [Bool] { lock.withLock { said } }
    }

    /// Decodes `bytes` with the split and without it (unchecked bytes, as from C: the reference
    /// checks their UTF-8 first and reads on one thread, as the decoder did before the split),
    /// and as a `String` when they are UTF-8 (checked, as from Swift and Python).
    static func both(_ bytes: [UInt8], decoder base: PayloadDecoder = PayloadDecoder()) -> Both {
        var one = base
        one.splitsLargeArrays = false
        var split = base
        let outcomes = Outcomes()
        split.observeSplit = { outcomes.note($0) }
        let result = Both(split: Result { () throws(PayloadError) in try split.decode(bytes) },
                          one: Result { () throws(PayloadError) in try one.decode(bytes) },
                          joined: outcomes.all.last)
        if let text = String(validating: bytes, as: UTF8.self) {
            let fromString = Result { () throws(PayloadError) in try base.decode(text) }
            let same = fromString == result.one
            #expect(same)
        }
        if case .success(let payload) = result.split {
            #expect(payload.listedIDs?.count == payload.cards.count)
            let listed = payload.cards.allSatisfy { payload.listedIDs?.contains($0.card.id) == true }
            #expect(listed)
            #expect((payload.listedIDs?.parts == 2) == (result.joined == true))
        }
        return result
    }

    static func both(_ text: String, decoder: PayloadDecoder = PayloadDecoder()) -> Both { both(Array(text.utf8), decoder: decoder) }

    @Test func aLargeFeedIsReadByTwoThreadsAsByOne() throws {
        let r = Self.both(Self.feed())
        #expect(r.agree)
        #expect(r.parts == 2)
        let payload = try r.split.get()
        #expect(payload.cards.count == Self.count)
        let ids = payload.cards.map(\.card.id) == (0..<Self.count).map { "c\($0)" }
        #expect(ids)
        #expect(payload.fullSync && payload.lastFullSyncAt == 5)
    }

    @Test func aBareArrayAndTheEnvelopeAfterItAreReadAsByOne() {
        let array = "[" + (0..<Self.count).map { Self.card($0) }.joined(separator: ",") + "]"
        let bare = Self.both(array)
        #expect(bare.agree && bare.parts == 2)
        let after = Self.both(Self.feed(envelope: #","user_id":"u-1","full_sync":true,"last_card_updated_at":9,"x":[{"a":1}]"#))
        #expect(after.agree && after.parts == 2)
        #expect((try? after.split.get())?.userID == "u-1")
        // The cards key twice: the second array is the one kept, read the same way.
        let twice = Self.both(#"{"cards":[{"id":"a","tp":"control","ca":1}],"# + String(Self.feed().dropFirst()))
        #expect(twice.agree && twice.parts == 2)
    }

    @Test func aGuessInsideAStringIsPassedOver() {
        // Every description ends with `},{`, then its closing quote: `},{"` is in every card
        // before the boundary after it.
        let r = Self.both(Self.feed { Self.card($0, description: "odd text },{") })
        #expect(r.agree)
        #expect(r.joined == false)
        #expect((try? r.split.get())?.cards.count == Self.count)
    }

    @Test func aGuessInsideACardsOwnArrayIsPassedOver() {
        let r = Self.both(Self.feed { Self.card($0, extra: #","zz":[{"a":1}, {"b":[{"c":2},{"d":3}]}]"#) })
        #expect(r.agree)
        #expect(r.joined == false)
    }

    @Test func anIDOfTheSecondHalfRepeatingOneOfTheFirstIsLeftOutAsByOneThread() throws {
        let r = Self.both(Self.feed { Self.card($0, id: $0 == 2_900 ? "c5" : nil) })
        #expect(r.agree)
        let payload = try r.split.get()
        #expect(payload.leftOut == [Payload.LeftOut(index: 2_900, id: "c5",
                                                    reason: "duplicate id: an earlier card in the payload has it")])
        #expect(payload.cards.count == Self.count - 1)
        #expect(r.joined == false)
        // And within the second half: its own first copy is kept, as one thread keeps it.
        let within = Self.both(Self.feed { Self.card($0, id: $0 == 2_900 ? "c2800" : nil) })
        #expect(within.agree && within.parts == 2)
    }

    @Test func cardsLeftOutInBothHalvesKeepTheirIndices() throws {
        let r = Self.both(Self.feed { i in
            if i % 250 == 3 { return "42" }
            if i % 100 == 7 { return #"{"id":"bad\#(i)","tp":"short_news","ds":"no creation time"}"# }
            return Self.card(i)
        })
        #expect(r.agree)
        #expect(r.parts == 2)
        let payload = try r.split.get()
        #expect(payload.leftOut.map(\.index) == (0..<Self.count).filter { $0 % 250 == 3 || $0 % 100 == 7 })
        #expect(payload.leftOut.contains { $0.index == 2_753 && $0.reason == "not an object but a number" })
    }

    @Test func errorsAreFoundAndWordedAsByOneThread() {
        let feed = Self.feed()
        let broken = [
            feed.replacingOccurrences(of: #"},{"id":"c2990""#, with: #"},,{"id":"c2990""#),   // late in the second half
            feed.replacingOccurrences(of: #"},{"id":"c5""#, with: #"}{"id":"c5""#),            // early in the first
            String(feed.dropLast(3)),                                                          // truncated
            feed.replacingOccurrences(of: #""c2999""#, with: #""c2999\q""#),                 // a bad escape
            feed.replacingOccurrences(of: #""key":"value 2950""#,
                                      with: #""key":"# + String(repeating: "[", count: 40) + "1" + String(repeating: "]", count: 40)),
        ]
        for text in broken {
            #expect(text != feed)
            let r = Self.both(text, decoder: PayloadDecoder(limits: .init(maxDepth: 32)))
            #expect(r.agree)
            if case .success = r.one { Issue.record("expected an error") }
        }
    }

    @Test func badUTF8InEitherHalfIsFoundAsByOneThread() {
        let feed = Array(Self.feed().utf8)
        for at in [300, feed.count / 2 - 5, feed.count / 2 + 5_000, feed.count - 300] {
            // Inside a string (a description's text) and, at the last place, wherever it lands.
            for bad: [UInt8] in [[0xFF], [0xC3], [0xED, 0xA0, 0x80]] {
                var bytes = feed
                bytes.replaceSubrange(at..<(at + bad.count), with: bad)
                let r = Self.both(bytes)
                #expect(r.agree)
                if case .success = r.one { Issue.record("expected an error at \(at)") }
            }
        }
    }

    @Test func knownClassTypesAndEscapesAreReadAsByOne() {
        let decoder = PayloadDecoder(knownClassTypes: ["home_tile"])
        let r = Self.both(Self.feed { Self.card($0, description: $0 % 3 == 0 ? #"caf\u00e9 \"cr\u00e8me\" \n"# : "café crème") },
                          decoder: decoder)
        #expect(r.agree && r.parts == 2)
    }

    /// Until the cards array the text is read as unchecked (its UTF-8 is checked by both
    /// threads there): text that fails is read again, checked, for the words one check of the
    /// whole gave. And a large payload without a cards array is read the same as before.
    @Test func whatComesBeforeTheCardsOrInsteadOfThemIsWordedAsBefore() {
        let cards = (0..<Self.count).map { Self.card($0) }.joined(separator: ",")
        let filler = String(repeating: "café crème ", count: 30_000)
        let texts = [
            #"{"user_id":"\é","cards":["# + cards + "]}",             // a bad escape before the cards
            #"{"user_id":"\#(filler)","full_sync":tru,"cards":["# + cards + "]}",
            #"{"cards":"\#(filler)"}"#,                                 // not an array
            #"{"other":["# + cards + "]}",                               // no cards key
            #"{"other":["# + cards + #"],"x":"\é"}"#,
            #""\#(filler)""#,                                            // a string for the root
            "[" + String(repeating: "12345,", count: 60_000) + "1]",      // an array of numbers
        ]
        for text in texts {
            #expect(text.utf8.count >= PayloadDecoder.splitMinimumBytes)
            let r = Self.both(text)
            #expect(r.agree)
        }
        // The same bad escape as bytes and as a string: one error, worded once.
        let bad = Self.both(texts[0])
        if case .failure(let error) = bad.split {
            #expect(error.message.contains("invalid escape"))
        } else {
            Issue.record("a bad escape was read")
        }
    }

    /// A full sync read by two threads lists its cards in two tables: the merge still deletes
    /// exactly the stored cards it does not list.
    @Test func aFullSyncWhoseIDsAreInTwoTablesDeletesWhatItDoesNotList() throws {
        let r = Self.both(Self.feed())
        #expect(r.joined == true)
        var payload = try r.split.get()
        let stored = [Self.storedCard("old-1"), Self.storedCard("c5"), Self.storedCard("c2999"), Self.storedCard("old-2")]
        let state = StoredUser(cards: Dictionary(uniqueKeysWithValues: stored.map { (CardKey($0.id), $0) }), dismissed: [])
        let merge = Merge.plan(&payload, from: state)
        #expect(Set(merge.changes.deletes) == ["old-1", "old-2"])
        #expect(merge.changes.upserts.count == Self.count)
    }

    static func storedCard(_ id: String) -> Card {
        Card(id: id, created: 1, content: .classic(.init(cardDescription: "stored")))
    }

    @Test func decodersOnSeveralThreadsAtOnceAgree() async {
        let feed = Array(Self.feed().utf8)
        var one = PayloadDecoder()
        one.splitsLargeArrays = false
        let expected = try? one.decode(feed)
        await withTaskGroup(of: Payload?.self) { group in
            for _ in 0..<6 { group.addTask { try? PayloadDecoder().decode(feed) } }
            for await payload in group {
                let same = payload != nil && payload == expected
                #expect(same)
            }
        }
    }
}
