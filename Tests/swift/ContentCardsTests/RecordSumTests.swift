import Foundation
import Testing
@testable import ContentCards

/// The check sum beside each stored card, and the reading it allows (`RecordSum`,
/// `StoredCard.decodeSummed`): the same cards as the full check, and the full check whenever
/// the sum does not vouch for the record.
@Suite struct RecordSumTests {
    /// XXH64 with seed 0, as the reference implementation gives it (python-xxhash 3.x), on
    /// lengths that take each of its paths: empty, a byte, under 8, over 32 with a tail, long.
    @Test func theSumIsXXH64() {
        let long = Array((0..<3).flatMap { _ in (0...255).map { UInt8($0) } }) + Array("xyz".utf8)
        let cases: [([UInt8], UInt64)] = [
            ([], 17_241_709_254_077_376_921),
            (Array("a".utf8), 15_154_266_338_359_012_955),
            (Array("abc".utf8), 4_952_883_123_889_572_249),
            (Array("0123456789abcdef0123456789abcdef!".utf8), 10_015_993_316_326_139_774),
            (long, 16_798_885_881_075_694_072),
        ]
        for (bytes, expected) in cases {
            #expect(bytes.withUnsafeBufferPointer { RecordSum.xxh64($0, seed: 0) } == expected, "\(bytes.count) bytes")
            #expect(RecordSum.of(bytes) == Int64(bitPattern: expected))
        }
    }

    /// Cards of every kind, with escapes, non-ASCII and odd extras, with and without a class
    /// type, read back under several configurations: exactly the card the full check gives.
    /// The one record it leaves to the full check is a class type of "" whose extras have a
    /// `class_type` (a value the configuration of its day did not know).
    @Test func aSummedRecordReadsAsTheFullCheckReadsIt() throws {
        var cards: [Card] = []
        for (i, written) in [nil, Set(["coupon"]), Set<String>()].enumerated() {
            let decoder = PayloadDecoder(knownClassTypes: written)
            for server in try decoder.decode(CardBodyTests.payload()).cards where !server.removed {
                var card = server.card
                card.viewed = i == 1; card.read = i != 1; card.pinned = i == 2; card.dismissed = i == 0
                cards.append(card)
            }
        }
        let generated = (0..<40).map { n in
            Fixtures.wire("g\(n)", type: ["short_news", "banner_image", "captioned_image", "control"][n % 4],
                          created: Int64(n) - 20,
                          extra: n % 3 == 0 ? "" : #""e":{"class_type":"\#(["Home_Tile", " offer ", "x"][n % 3])","k\#(n)":"v"}"#)
        }
        for server in try PayloadDecoder().decode(Fixtures.payload(generated, full: true)).cards { cards.append(server.card) }
        var summed = 0
        for card in cards {
            let record = try #require(StoredCard.encode(card))
            for today in [nil, Set(["coupon"]), Set(["offer", "home_tile"]), Set<String>()] {
                let full = record.withUnsafeBufferPointer { StoredCard.decode($0, id: card.id, knownClassTypes: today) }
                let fast = record.withUnsafeBufferPointer { StoredCard.decodeSummed($0, id: card.id, knownClassTypes: today) }
                let leftToTheFullCheck = card.classType.isEmpty && card.extras[ClassType.extrasKey] != nil
                if leftToTheFullCheck {
                    #expect(fast == nil, "\(card.id)")
                } else {
                    #expect(fast != nil && fast == full, "\(card.id) under \(String(describing: today))")
                    if let fast { #expect(CardJSON.encode(fast) == full.map(CardJSON.encode)) }
                    summed += 1
                }
            }
        }
        #expect(summed > 150)
    }

    /// A `class_type` only looks like a key after `{` or `,`: inside a string every quote is
    /// escaped, so texts that spell the key are not taken for it.
    @Test func aClassTypeKeyIsFoundOnlyWhereItIsAKey() throws {
        let spelled = [#""e":{"a":"\"class_type\":\"x\""}"#, #""e":{"a\"class_type":"x"}"#, #""e":{"a":",\"class_type\":"}"#]
        for extra in spelled {
            let card = try #require(try PayloadDecoder(knownClassTypes: ["x"]).decode(
                Fixtures.payload([Fixtures.wire("s", extra: extra)])).cards.first?.card)
            #expect(card.classType == "")
            let record = try #require(StoredCard.encode(card))
            // No key: "" under any configuration, read without the full check.
            let fast = record.withUnsafeBufferPointer { StoredCard.decodeSummed($0, id: "s", knownClassTypes: nil) }
            #expect(fast != nil && fast == card, "\(extra)")
        }
    }

    // MARK: In a store

    private func storeRows(_ dir: String, _ sql: String) throws {
        let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        try db.execute(sql)
        db.close()
    }

    private func column(_ dir: String, _ sql: String) throws -> [Int64?] {
        let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        defer { db.close() }
        let s = try db.prepare(sql)
        var out: [Int64?] = []
        while try s.step() { out.append(s.isNull(0) ? nil : s.int(0)) }
        s.reset()
        return out
    }

    /// Every row written carries the sum of its record.
    @Test func everyWrittenRowCarriesItsRecordsSum() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(storage: dir)
        try c.apply(Fixtures.payload(["a", "b", "c"].map { Fixtures.wire($0) }, full: true))
        _ = try c.logImpression(cardID: "b")
        c.close()
        let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        defer { db.close() }
        let s = try db.prepare("SELECT body, checksum FROM cards ORDER BY id")
        var rows = 0
        while try s.step() {
            let sum = s.int(1)
            #expect(!s.isNull(1) && s.withBytes(0) { RecordSum.of($0) } == sum)
            rows += 1
        }
        s.reset()
        #expect(rows == 3)
    }

    /// A store the library wrote is read by the records' sums, every one of them, and a
    /// record whose sum no longer matches is the one read in full (the two readings give the
    /// same cards, so only counting them shows which was taken).
    @Test func aReopenedStoreIsReadByItsSums() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let ids = (0..<30).map { "s\($0)" }
        do {
            let c = try makeController(storage: dir)
            try c.apply(Fixtures.payload(ids.map { Fixtures.wire($0, extra: #""e":{"class_type":"home_tile","k":"v"}"#) }, full: true))
            _ = try c.logImpression(cardID: "s3")
            c.close()
        }
        func load() throws -> (summed: Int, fullyChecked: Int) {
            let store = try CardStore(directory: dir)
            defer { store.close() }
            #expect(try store.load(user: "u-1", decoder: PayloadDecoder()).cards.count == ids.count)
            return store.lastLoad
        }
        #expect(try load() == (summed: ids.count, fullyChecked: 0))
        try storeRows(dir, "UPDATE cards SET checksum = checksum + 1 WHERE id = 's7'")
        #expect(try load() == (summed: ids.count - 1, fullyChecked: 1))
    }

    /// A record edited after it was written no longer matches its sum and is checked in full:
    /// an edit that leaves it valid is read, one that does not is skipped and counted.
    @Test func anEditedRecordIsCheckedInFull() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        do {
            let c = try makeController(storage: dir)
            try c.apply(Fixtures.payload(["a", "b", "c"].map { Fixtures.wire($0) }, full: true))
            c.close()
        }
        // Same length, same layout: "D a" becomes "D A" (valid), "D b" becomes "D\u{1}b" (a
        // separator inside a string) and "D c" loses its closing quote.
        try storeRows(dir, """
            UPDATE cards SET body = CAST(replace(CAST(body AS TEXT), '"D a"', '"D A"') AS TEXT) WHERE id = 'a';
            UPDATE cards SET body = CAST(replace(CAST(body AS TEXT), '"D b"', '"D' || char(1) || 'b"') AS TEXT) WHERE id = 'b';
            UPDATE cards SET body = CAST(replace(CAST(body AS TEXT), '"D c"', '"D c ') AS TEXT) WHERE id = 'c';
            """)
        let c = try makeController(storage: dir)
        defer { c.close() }
        #expect(try c.cards().map(\.id) == ["a"])
        #expect(try c.card(id: "a").cardDescription == "D A")
        #expect(c.diagnostics().unreadableStoredCards == 2)
    }

    /// A store written by a library from before the column (no column, then rows whose sum is
    /// null) reads the same cards; the column is added at open, and rows get their sum when
    /// they are next written.
    @Test func aStoreFromBeforeTheColumnReadsTheSame() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let ids = ["a", "b", "c", "d"]
        let expected: String
        do {
            let c = try makeController(storage: dir)
            try c.apply(Fixtures.payload(ids.map { Fixtures.wire($0, type: $0 == "b" ? "banner_image" : "short_news") }, full: true))
            _ = try c.logImpression(cardID: "c")
            expected = try c.cardsJSON()
            c.close()
        }
        try storeRows(dir, "ALTER TABLE cards DROP COLUMN checksum")
        #expect(throws: (any Error).self) { try column(dir, "SELECT checksum FROM cards") }
        do {
            let c = try makeController(storage: dir)
            #expect(try c.cardsJSON() == expected)
            c.close()
        }
        #expect(try column(dir, "SELECT checksum FROM cards") == [nil, nil, nil, nil])
        do {
            let c = try makeController(storage: dir)
            #expect(try c.cardsJSON() == expected)
            try c.apply(Fixtures.payload([Fixtures.wire("a", extra: #""dm":"new.example""#)]))
            #expect(try c.card(id: "a").domain == "new.example")
            c.close()
        }
        #expect(try column(dir, "SELECT checksum IS NOT NULL FROM cards ORDER BY id") == [1, 0, 0, 0])
    }

    /// Several connections opening a store from before the column at once all open it: the
    /// column is added by one of them, and the others find it under the write lock.
    @Test func storesOpenedTogetherAddTheColumnOnce() throws {
        for _ in 0..<5 {
            let dir = Fixtures.temporaryDirectory()
            defer { Fixtures.removeTree(dir) }
            do {
                let c = try makeController(storage: dir)
                try c.apply(Fixtures.payload(["a", "b"].map { Fixtures.wire($0) }, full: true))
                c.close()
            }
            try storeRows(dir, "ALTER TABLE cards DROP COLUMN checksum")
            let failures = Messages()
            TestThreads.run(6) { _ in
                do { _ = try CardStore(directory: dir) } catch { failures.add("\(error)") }
            }
            #expect(failures.all.isEmpty, "\(failures.all)")
            #expect(try column(dir, "SELECT count(*) FROM pragma_table_info('cards') WHERE name = 'checksum'") == [1])
        }
    }

    /// A card stored under a configuration that did not know its class type (stored as "")
    /// takes its own class type back under one that does, or under none.
    @Test func aClassTypeUnknownWhenStoredIsKnownLater() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let cards = [Fixtures.wire("a", extra: #""e":{"class_type":"Coupon"}"#),
                     Fixtures.wire("b", extra: #""e":{"class_type":"offer"}"#), Fixtures.wire("c")]
        do {
            let c = try makeController(#""knownClassTypes":["offer"]"#, storage: dir)
            try c.apply(Fixtures.payload(cards, full: true))
            #expect(try c.cards().map(\.classType).sorted() == ["", "", "offer"])
            c.close()
        }
        for (config, expected) in [("", ["", "coupon", "offer"]), (#""knownClassTypes":["coupon"]"#, ["", "", "coupon"]),
                                    (#""knownClassTypes":["offer"]"#, ["", "", "offer"])] {
            let c = try makeController(config, storage: dir)
            #expect(try c.cards().map(\.classType).sorted() == expected, "\(config)")
            #expect(try c.counts(ClassTypeFilter(["coupon"])).total == (expected.contains("coupon") ? 1 : 0))
            c.close()
        }
    }
}

/// Messages collected from several threads.
private final class Messages: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func add(_ s: String) { lock.lock(); items.append(s); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return items }
}
