import Foundation
import Testing
@testable import ContentCards
import CSQLite

/// The SQLite layer's statements: a text bound byte for byte, and a prepared statement kept for
/// its SQL.
@Suite struct StatementTests {
    /// A text is bound with its length: handed over as a C string, it was cut at its first NUL
    /// (and copied into an array of its own first, which is why it changed).
    @Test func aTextIsBoundWholeWithItsLength() throws {
        let dir = Fixtures.temporaryDirectory("bind")
        defer { Fixtures.removeTree(dir) }
        let db = try SQLiteDatabase(path: dir + "/bind.sqlite")
        defer { db.close() }
        let s = try db.prepare("SELECT ?1, typeof(?1), length(CAST(?1 AS BLOB))")
        let values = ["a\u{0}b", "", "é\u{0}", "plain", "short", String(repeating: "x", count: 100) + "\u{0}y", "\u{1F600}"]
        for value in values {
            try s.bind(1, value)
            #expect(try s.step())
            #expect(s.text(0) == value)
            #expect(s.text(1) == "text")          // "" is an empty text, not NULL
            #expect(s.int(2) == Int64(value.utf8.count))
            s.reset()
        }
        try s.bind(1, nil as String?)
        #expect(try s.step())
        #expect(s.isNull(0))
        #expect(s.text(1) == "null")
        s.reset()
    }

    /// Statements are kept by their SQL's literal: the same SQL is prepared once and reused,
    /// other SQL has a statement of its own.
    @Test func aStatementIsPreparedOnceForItsSQL() throws {
        let dir = Fixtures.temporaryDirectory("statements")
        defer { Fixtures.removeTree(dir) }
        let store = try CardStore(directory: dir)
        defer { store.close() }
        func cards() throws -> SQLiteStatement { try store.statement("SELECT COUNT(*) FROM cards") }
        let first = try cards()
        let again = try cards()
        #expect(first === again)
        let other = try store.statement("SELECT COUNT(*) FROM dismissals")
        #expect(other !== first)
        #expect(try other.step())
        #expect(other.int(0) == 0)
        other.reset()
        // A statement handed out again is reset: it runs from its start.
        #expect(try first.step())
        #expect(try cards().step())
        #expect(first.int(0) == 0)
    }

    /// A store dropped without `close` (what an open that fails after the store was made
    /// does) finalizes its statements before its connection closes. Its connection was
    /// released first, and SQLite keeps a connection closed with a statement prepared open,
    /// its file locks held, until the statement goes: in that moment the registry that a
    /// child of fork() closes had already let it go (ForkSafety+Connections.swift).
    @Test func aStoreDroppedWithoutCloseFinalizesItsStatementsFirst() throws {
        let dir = Fixtures.temporaryDirectory("dropped")
        defer { Fixtures.removeTree(dir) }
        let before = SQLiteDatabase.closesWithStatementsLeft
        do {
            let store = try CardStore(directory: dir)
            let s = try store.statement("SELECT COUNT(*) FROM cards")
            #expect(try s.step())
        }
        #expect(SQLiteDatabase.closesWithStatementsLeft == before)
        // The same with `close`, which always finalized them first.
        let store = try CardStore(directory: dir)
        _ = try store.statement("SELECT COUNT(*) FROM cards").step()
        store.close()
        #expect(SQLiteDatabase.closesWithStatementsLeft == before)
    }

    /// The cache of statements grows past its first room, finds each by its literal, keeps
    /// them in order, and lets them go (each finalized: the connection then closes with none).
    @Test func theCacheGrowsFindsEachStatementAndLetsThemGo() throws {
        let dir = Fixtures.temporaryDirectory("cache")
        defer { Fixtures.removeTree(dir) }
        let db = try SQLiteDatabase(path: dir + "/cache.sqlite")
        defer { db.close() }
        let cache = StatementCache(capacity: 2)
        func literal(_ i: Int) -> StaticString {
            switch i {
            case 0: return "SELECT 0"
            case 1: return "SELECT 1"
            case 2: return "SELECT 2"
            case 3: return "SELECT 3"
            default: return "SELECT 4"
            }
        }
        var kept: [SQLiteStatement] = []
        for i in 0..<5 {
            #expect(cache.find(literal(i)) == nil)
            let s = try db.prepare(literal(i).description)
            cache.insert(s, for: literal(i))
            kept.append(s)
        }
        #expect(cache.count == 5)
        for i in 0..<5 {
            let s = try #require(cache.find(literal(i)))
            #expect(s === kept[i])
            #expect(try s.step())
            #expect(s.int(0) == Int64(i))
            s.reset()
        }
        var order: [ObjectIdentifier] = []
        cache.forEach { order.append(ObjectIdentifier($0)) }
        #expect(order == kept.map(ObjectIdentifier.init))
        // Finalized when let go: SQLite then has no statement of this connection left.
        let handle = try #require(db.handle)
        kept.removeAll()
        #expect(sqlite3_next_stmt(handle, nil) != nil)     // the cache still holds them
        cache.removeAll()
        #expect(sqlite3_next_stmt(handle, nil) == nil)
        #expect(cache.count == 0)
        #expect(cache.find(literal(0)) == nil)
    }
}
