import Foundation
import Testing
@testable import ContentCards

/// Schema 4: the outbox without the unique index on ids and without AUTOINCREMENT (fewer pages
/// written by each logged event, docs/PERFORMANCE.md, "Durable logging").
@Suite struct OutboxSchemaTests {
    /// A new store is made at schema 4 at once (the migrations' statements were 36 KB of every
    /// in-memory controller), with the tables, columns and indexes of a store that schema 1
    /// made and the migrations brought to 4; only `sqlite_sequence`, which AUTOINCREMENT made,
    /// is not there.
    @Test func aNewStoreHasTheSchemaOfAMigratedOne() throws {
        func shape(_ dir: String) throws -> [String] {
            let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
            defer { db.close() }
            var out: [String] = []
            let version = try db.prepare("PRAGMA user_version")
            out.append("version \(try version.step() ? version.int(0) : -1)")
            version.reset()
            let tables = try db.prepare("""
                SELECT m.name, p.name, p.type, p."notnull", p.pk, coalesce(p.dflt_value, '')
                FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' ORDER BY m.name, p.cid
                """)
            while try tables.step() { out.append((0..<6).map { tables.text($0) ?? "" }.joined(separator: " ")) }
            tables.reset()
            let indexes = try db.prepare("""
                SELECT m.name, i.name, i."unique" FROM sqlite_master m, pragma_index_list(m.name) i
                WHERE m.type = 'table' ORDER BY m.name, i.name
                """)
            while try indexes.step() { out.append("index " + (0..<3).map { indexes.text($0) ?? "" }.joined(separator: " ")) }
            indexes.reset()
            return out
        }
        let fresh = Fixtures.temporaryDirectory("schema-fresh")
        let migrated = Fixtures.temporaryDirectory("schema-migrated")
        defer { Fixtures.removeTree(fresh); Fixtures.removeTree(migrated) }
        try makeController(storage: fresh).close()
        do {   // a store as schema 1 made it
            let db = try SQLiteDatabase(path: migrated + "/contentcards.sqlite")
            try db.execute("""
                CREATE TABLE cards (user_id TEXT NOT NULL, id TEXT NOT NULL, created INTEGER NOT NULL,
                    is_test INTEGER NOT NULL DEFAULT 0, body TEXT NOT NULL, PRIMARY KEY (user_id, id)) WITHOUT ROWID;
                CREATE TABLE dismissals (user_id TEXT NOT NULL, card_id TEXT NOT NULL, PRIMARY KEY (user_id, card_id)) WITHOUT ROWID;
                CREATE TABLE cursors (user_id TEXT PRIMARY KEY, last_full_sync_at INTEGER NOT NULL, last_card_updated_at INTEGER NOT NULL);
                CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, type TEXT NOT NULL,
                    card_id TEXT, class_type TEXT, user_id TEXT NOT NULL, time REAL NOT NULL);
                PRAGMA user_version = 1;
                PRAGMA application_id = \(CardStore.applicationID);
                """)
            db.close()
        }
        try makeController(storage: migrated).close()
        let migratedShape = try shape(migrated).filter { !$0.hasPrefix("sqlite_sequence ") }
        #expect(try shape(fresh) == migratedShape)
        #expect(migratedShape.first == "version 4" && migratedShape.contains { $0.hasPrefix("sync_state ") })
        #expect(try !shape(fresh).contains { $0.hasPrefix("sqlite_sequence") })
    }

    /// An in-memory store is made with the outbox alone (it writes no cards, dismissals or
    /// cursors, and reads none): every call that touches the store still works on it, and
    /// forgetting a user counts what the controller held.
    @Test func anInMemoryStoreHasTheOutboxAlone() throws {
        let c = try makeController()
        defer { c.close() }
        let db = try #require(c.store?.db)
        let s = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        var tables: [String] = []
        while try s.step() { tables.append(s.text(0) ?? "") }
        s.reset()
        #expect(tables == ["events"])
        try c.refresh()
        let cards = try c.counts().total
        #expect(cards > 0)
        try c.logImpression(cardID: "tile-1")
        _ = try c.logDismissal(cardID: "tile-2")
        let pending = try c.pendingEvents()
        #expect(pending == 2, "\(pending)")
        #expect(c.diagnostics().unreadableStoredCards == 0)
        _ = try c.exportUser()
        let receipt = try c.forgetUser(pending: .discard)
        // Every stored card (the feed's and the expired one), the dismissal, both events.
        #expect(receipt.cards > cards && receipt.dismissals == 1 && receipt.eventsDiscarded == 2, "\(receipt) \(cards)")
        #expect(try c.pendingEvents() == 0 && c.counts().total == 0)
    }

    /// A store of schema 3 (AUTOINCREMENT, a unique index on ids) goes to 4 at open with its
    /// events as they were, in order, and delivers them all.
    @Test func aStoreOfSchema3KeepsItsEventsInOrder() throws {
        let dir = Fixtures.temporaryDirectory("outbox-3")
        defer { Fixtures.removeTree(dir) }
        do {
            let c = try makeController(storage: dir)
            try c.refresh()
            for id in ["tile-1", "tile-2", "msg-1", "tile-1", "coupon-1"] { try c.logImpression(cardID: id) }
            c.close()
        }
        let before: [Event]
        do {   // the outbox as schema 3 had it, the events copied with their numbers
            let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
            try db.execute("""
                CREATE TABLE events_3 (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
                    type TEXT NOT NULL, card_id TEXT, class_type TEXT, user_id TEXT NOT NULL, time REAL NOT NULL);
                INSERT INTO events_3 SELECT seq, id, type, card_id, class_type, user_id, time FROM events;
                DROP TABLE events;
                ALTER TABLE events_3 RENAME TO events;
                PRAGMA user_version = 3;
                """)
            db.close()
            let c = try makeController(storage: dir)
            before = try c.listPendingEvents().events
            c.close()
        }
        #expect(before.map(\.cardID) == ["tile-1", "tile-2", "msg-1", "tile-1", "coupon-1"])
        let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        let schema = try db.prepare("SELECT group_concat(sql, ';') FROM sqlite_master WHERE tbl_name = 'events'")
        let sql = try schema.step() ? schema.text(0) ?? "" : ""
        schema.reset()
        let version = try db.prepare("PRAGMA user_version")
        #expect(try version.step() && version.int(0) == 4)
        version.reset(); db.close()
        #expect(!sql.contains("AUTOINCREMENT") && !sql.contains("UNIQUE") && sql.contains("seq INTEGER PRIMARY KEY"), "\(sql)")

        let sink = dir + "/events.jsonl"
        let c = try makeController(#""events":{"file":"\#(sink)"}"#, storage: dir)
        #expect(try c.listPendingEvents().events == before)
        #expect(try c.flushEvents(timeout: 5).delivered == 5)
        #expect(try c.pendingEvents() == 0)
        let lines = try String(contentsOfFile: sink, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 5 && before.enumerated().allSatisfy { lines[$0.offset].contains($0.element.id) })
        c.close()
    }

    /// Without AUTOINCREMENT a number is given again once the newest events are gone. A
    /// delivery that comes late (another process delivered the same events, and new ones were
    /// logged since) deletes by number and id, so the new event that got the old number stays.
    @Test func aLateDeliveryDeletesOnlyTheEventsItSent() throws {
        let dir = Fixtures.temporaryDirectory("outbox-reuse")
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(storage: dir)
        try c.refresh()
        try c.logImpression(cardID: "tile-1")
        let store = try #require(c.store)
        let sent = try store.pendingEvents(limit: 10, maxBytes: 1 << 20)
        #expect(sent.count == 1)
        try store.deleteEvents(sent)                 // delivered (by another process)
        try c.logImpression(cardID: "tile-2")        // a new event
        let now = try store.pendingEvents(limit: 10, maxBytes: 1 << 20)
        #expect(now.map(\.sequence) == sent.map(\.sequence), "the number is given again")
        try store.deleteEvents(sent)                 // the late delivery of the first event
        #expect(try c.listPendingEvents().events.map(\.cardID) == ["tile-2"])
        c.close()
    }

    /// Batches are cut by their encoded bytes, escapes counted: events of cards whose ids are
    /// full of control characters (six bytes each once escaped) stay within `eventBatchBytes`.
    /// Counted raw, such a batch was several times the bound.
    @Test func aBatchStaysWithinItsBytesWithEscapes() throws {
        let c = try ContentCardsController(json: #"{"userId":"u","refreshTokens":0}"#)
        defer { c.close() }
        let ids = (0..<20).map { "card-\($0)-" + String(repeating: "\u{1}", count: 100) }
        // In the payload's JSON each control character is written \u0001.
        _ = try c.apply(Fixtures.payload((0..<20).map { Fixtures.wire("card-\($0)-" + String(repeating: "\\u0001", count: 100)) }))
        #expect(try c.cards().count == ids.count)
        for id in ids { _ = try c.logImpression(cardID: id) }
        let store = try #require(c.store)
        let maxBytes = 4096
        let batch = try store.pendingEvents(limit: 100, maxBytes: maxBytes)
        #expect(!batch.isEmpty && batch.count < ids.count)
        #expect(EventJSON.batch(batch.map(\.event)).count <= maxBytes)
    }

    /// A row of a kind this build does not know (a newer build's, before a downgrade) at the
    /// head of the outbox: the events behind it are still delivered, and it stays for the build
    /// that wrote it. It made every batch empty (the row was read, skipped, and filled the
    /// batch's limit), so nothing was ever sent.
    @Test func anUnknownKindAtTheHeadDoesNotStallTheOutbox() throws {
        let dir = Fixtures.temporaryDirectory("outbox-unknown")
        defer { Fixtures.removeTree(dir) }
        let sink = dir + "/events.jsonl"
        do {
            let c = try makeController(storage: dir)
            try c.refresh()
            c.close()
        }
        let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        try db.execute("INSERT INTO events (id, type, card_id, class_type, user_id, time) VALUES ('future-1', 'hologram_viewed', 'tile-1', NULL, 'u-1', 1)")
        db.close()
        let c = try makeController(#""events":{"file":"\#(sink)"},"eventBatchSize":1"#, storage: dir)
        defer { c.close() }
        try c.logImpression(cardID: "tile-1")
        #expect(try c.pendingEvents() == 1)
        #expect(try c.flushEvents(timeout: 5).delivered == 1)
        #expect(try c.pendingEvents() == 0)
        let rows = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        defer { rows.close() }
        let s = try rows.prepare("SELECT COUNT(*) FROM events WHERE type = 'hologram_viewed'")
        defer { s.reset() }
        #expect(try s.step() && s.int(0) == 1)
        #expect(CardStore.sendableKinds == Event.Kind.allCases.map { "'\($0.rawValue)'" }.joined(separator: ","))
    }
}
