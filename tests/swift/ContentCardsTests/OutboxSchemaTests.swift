import Foundation
import Testing
@testable import ContentCards

/// Schema 4: the outbox without the unique index on ids and without AUTOINCREMENT (fewer pages
/// written by each logged event, docs/PERFORMANCE.md, "Durable logging").
@Suite struct OutboxSchemaTests {
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
}
