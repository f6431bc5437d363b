import CSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

private let SQLITE_BUSY_CODE = SQLITE_BUSY
private let SQLITE_LOCKED_CODE = SQLITE_LOCKED

enum Sleep {
    static func milliseconds(_ ms: Int) { usleep(useconds_t(max(ms, 0)) * 1000) }
}

/// What the store holds for one user.
struct StoredUser {
    var cards: [CardKey: Card] = [:]
    /// Ids the user dismissed locally: kept dismissed across refreshes (docs/BEHAVIOUR.md, "Merge", rule 4).
    var dismissed: Set<CardKey> = []
    var cursors = SyncCursors()
}

/// One write to a user's cards, applied in a single transaction.
struct StoreChanges {
    var upserts: [Card] = []
    /// For some upserts (same index), the bytes to store instead of encoding the card: the
    /// server's own JSON of a card the merge left as it came. Shorter than `upserts` is fine.
    var upsertBodies: [[UInt8]?] = []
    var deletes: [String] = []
    var dismissalsAdded: [String] = []
    var dismissalsRemoved: [String] = []
    var cursors: SyncCursors? = nil
    var events: [Event] = []

    var isEmpty: Bool {
        upserts.isEmpty && deletes.isEmpty && dismissalsAdded.isEmpty && dismissalsRemoved.isEmpty
            && cursors == nil && events.isEmpty
    }
}

/// An event waiting in the outbox, with its position.
struct PendingEvent {
    var sequence: Int64
    var event: Event
}

/// SQLite persistence of cards, state, cursors and the event outbox, per user.
///
/// One file, `contentcards.sqlite`, in the storage directory (created 0700, the file 0600), in
/// WAL mode so that readers never wait for a writer and two processes can share it. Every
/// mutation is one transaction. With no directory the store lives in memory.
final class CardStore {
    static let schemaVersion: Int64 = 1
    static let fileName = "contentcards.sqlite"

    let db: SQLiteDatabase
    let location: String
    /// An in-memory store has no other connection to hear from.
    let isInMemory: Bool

    private var statements: [String: SQLiteStatement] = [:]

    init(directory: String?) throws(StoreError) {
        if let directory {
            do { try Files.makeDirectory(directory) } catch { throw StoreError(error.message) }
            location = directory.hasSuffix("/") ? directory + CardStore.fileName : directory + "/" + CardStore.fileName
            // Create the file 0600 first: SQLite gives its WAL and shared-memory files the
            // database file's permissions.
            Files.createPrivateFile(location)
        } else {
            location = ":memory:"
        }
        isInMemory = directory == nil
        db = try SQLiteDatabase(path: location)
        try prepareSchema()
    }

    func close() {
        statements.removeAll()
        db.close()
    }

    /// Opens the schema, retrying while another process holds the lock: switching a new file to
    /// WAL takes an exclusive lock, and SQLite may answer BUSY there without waiting, so two
    /// processes opening a new store at the same moment would otherwise collide.
    private func prepareSchema() throws(StoreError) {
        var attempt = 0
        while true {
            do {
                try prepareSchemaOnce()
                return
            } catch {
                let busy = error.code & 0xFF == SQLITE_BUSY_CODE || error.code & 0xFF == SQLITE_LOCKED_CODE
                attempt += 1
                guard busy, attempt < 100 else {
                    throw StoreError("the store at \(location) cannot be used (\(error.message)); it was left as it is", code: error.code)
                }
                Sleep.milliseconds(min(10 * attempt, 100))
            }
        }
    }

    private func prepareSchemaOnce() throws(StoreError) {
        let version: Int64
        do {
            let s = try db.prepare("PRAGMA user_version")
            version = try s.step() ? s.int(0) : 0
            s.reset()
        } catch {
            if error.code & 0xFF == SQLITE_BUSY_CODE || error.code & 0xFF == SQLITE_LOCKED_CODE { throw error }
            throw StoreError("the store at \(location) is corrupt or not a contentcards store (\(error.message)); it was left as it is")
        }
        if version > CardStore.schemaVersion {
            throw StoreError("the store at \(location) has schema version \(version), newer than this library reads (\(CardStore.schemaVersion)): upgrade the library; the store was left as it is")
        }
        if !isInMemory {
            let mode = try db.prepare("PRAGMA journal_mode")
            let current = try mode.step() ? mode.text(0) ?? "" : ""
            mode.reset()   // an unfinished statement holds a read transaction open
            if current.lowercased() != "wal" { try db.execute("PRAGMA journal_mode=WAL") }
            // NORMAL in WAL mode: a committed transaction survives a crash or kill of the
            // process; only a power loss may roll back the last commits.
            try db.execute("PRAGMA synchronous=NORMAL")
        }
        if isInMemory {
            // An in-memory store lives in its page cache, which SQLite starts with a slab of
            // pages: 2 KiB pages instead of 4 KiB take 1,000 controllers from 170 MB to 104 MB
            // (an app may open one per user, a server one per request). 1 KiB would give 74 MB
            // but push a card row (~400 bytes) into overflow pages: 11% slower applies; 2 KiB
            // costs 2%. Only possible before the first table exists.
            try db.execute("PRAGMA page_size=2048")
        }
        try db.execute("PRAGMA foreign_keys=ON")
        if version < 1 { try migrateTo1() }
        try db.execute("PRAGMA quick_check(1)")
    }

    /// Schema 1. Migrations run in order inside one transaction each; a later schema adds
    /// `migrateTo2` and so on.
    private func migrateTo1() throws(StoreError) {
        try db.transaction { () throws(StoreError) in
            try db.execute("""
                CREATE TABLE IF NOT EXISTS cards (
                    user_id TEXT NOT NULL,
                    id TEXT NOT NULL,
                    created INTEGER NOT NULL,
                    is_test INTEGER NOT NULL DEFAULT 0,
                    body TEXT NOT NULL,
                    PRIMARY KEY (user_id, id)
                ) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS dismissals (
                    user_id TEXT NOT NULL,
                    card_id TEXT NOT NULL,
                    PRIMARY KEY (user_id, card_id)
                ) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS cursors (
                    user_id TEXT PRIMARY KEY,
                    last_full_sync_at INTEGER NOT NULL,
                    last_card_updated_at INTEGER NOT NULL
                );
                CREATE TABLE IF NOT EXISTS events (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    type TEXT NOT NULL,
                    card_id TEXT,
                    class_type TEXT,
                    user_id TEXT NOT NULL,
                    time REAL NOT NULL
                );
                PRAGMA user_version = 1;
                """)
        }
    }

    private func statement(_ sql: String) throws(StoreError) -> SQLiteStatement {
        if let s = statements[sql] { return s.reset() }
        let s = try db.prepare(sql)
        statements[sql] = s
        return s
    }

    // MARK: Reading

    /// The user's cards, dismissals and cursors. Cards are decoded with `decoder`, so class
    /// types are normalized under the current configuration.
    func load(user: String, decoder: PayloadDecoder) throws(StoreError) -> StoredUser {
        var stored = StoredUser()
        let cards = try statement("SELECT id, body FROM cards WHERE user_id = ?")
        try cards.bind(1, user)
        while try cards.step() {
            // A row that no longer decodes is skipped rather than failing the whole feed.
            if let card = cards.withBytes(1, { decoder.decodeStoredCard($0) }) { stored.cards[card.id] = card }
        }
        cards.reset()
        let dismissed = try statement("SELECT card_id FROM dismissals WHERE user_id = ?")
        try dismissed.bind(1, user)
        while try dismissed.step() { if let id = dismissed.text(0) { stored.dismissed.insert(id) } }
        dismissed.reset()
        let cursors = try statement("SELECT last_full_sync_at, last_card_updated_at FROM cursors WHERE user_id = ?")
        try cursors.bind(1, user)
        if try cursors.step() {
            stored.cursors = SyncCursors(lastFullSyncAt: cursors.int(0), lastCardUpdatedAt: cursors.int(1))
        }
        cursors.reset()
        return stored
    }

    /// Changes committed by any other connection since the last call (PRAGMA data_version).
    /// Asked on every read of a file store, so the statement is the cached one.
    func dataVersion() throws(StoreError) -> Int64 {
        let s = try statement("PRAGMA data_version")
        defer { s.reset() }
        return try s.step() ? s.int(0) : 0
    }


    // MARK: Writing

    func apply(_ changes: StoreChanges, user: String) throws(StoreError) {
        if changes.isEmpty { return }
        try db.transaction { () throws(StoreError) in
            if !changes.upserts.isEmpty {
                let s = try statement("INSERT OR REPLACE INTO cards (user_id, id, created, is_test, body) VALUES (?, ?, ?, ?, ?)")
                for (i, card) in changes.upserts.enumerated() {
                    let body = i < changes.upsertBodies.count ? changes.upsertBodies[i] : nil
                    try s.run([.text(user), .text(card.id), .int(card.created), .int(card.isTest ? 1 : 0),
                               .bytes(body ?? StoredCardJSON.encode(card))])
                }
            }
            if !changes.deletes.isEmpty {
                let s = try statement("DELETE FROM cards WHERE user_id = ? AND id = ?")
                for id in changes.deletes { try s.run([.text(user), .text(id)]) }
            }
            if !changes.dismissalsAdded.isEmpty {
                let s = try statement("INSERT OR IGNORE INTO dismissals (user_id, card_id) VALUES (?, ?)")
                for id in changes.dismissalsAdded { try s.run([.text(user), .text(id)]) }
            }
            if !changes.dismissalsRemoved.isEmpty {
                let s = try statement("DELETE FROM dismissals WHERE user_id = ? AND card_id = ?")
                for id in changes.dismissalsRemoved { try s.run([.text(user), .text(id)]) }
            }
            if let c = changes.cursors {
                try statement("INSERT OR REPLACE INTO cursors (user_id, last_full_sync_at, last_card_updated_at) VALUES (?, ?, ?)")
                    .run([.text(user), .int(c.lastFullSyncAt), .int(c.lastCardUpdatedAt)])
            }
            if !changes.events.isEmpty {
                let s = try statement("INSERT INTO events (id, type, card_id, class_type, user_id, time) VALUES (?, ?, ?, ?, ?, ?)")
                for e in changes.events {
                    try s.run([.text(e.id), .text(e.kind.rawValue), .text(e.cardID), .text(e.classType), .text(e.userID), .real(e.time)])
                }
            }
        }
    }

    // MARK: The event outbox

    func pendingEventCount() throws(StoreError) -> Int {
        let s = try statement("SELECT COUNT(*) FROM events")
        defer { s.reset() }
        return try s.step() ? Int(s.int(0)) : 0
    }

    /// The oldest events, at most `limit` of them and about `maxBytes` of JSON (always at
    /// least one, so an event larger than the bound still goes out alone).
    func pendingEvents(limit: Int, maxBytes: Int) throws(StoreError) -> [PendingEvent] {
        let s = try statement("SELECT seq, id, type, card_id, class_type, user_id, time FROM events ORDER BY seq LIMIT ?")
        defer { s.reset() }
        try s.bind(1, Int64(limit))
        var batch: [PendingEvent] = []
        var bytes = 16
        while try s.step() {
            guard let id = s.text(1), let kind = s.text(2).flatMap(Event.Kind.init(rawValue:)) else { continue }
            let event = Event(id: id, kind: kind, cardID: s.text(3), classType: s.text(4),
                              userID: s.text(5) ?? "", time: s.double(6))
            let size = EventJSON.encodedSize(event)
            if !batch.isEmpty && bytes + size > maxBytes { break }
            bytes += size
            batch.append(PendingEvent(sequence: s.int(0), event: event))
        }
        return batch
    }

    func deleteEvents(_ sequences: [Int64]) throws(StoreError) {
        guard !sequences.isEmpty else { return }
        try db.transaction { () throws(StoreError) in
            let s = try statement("DELETE FROM events WHERE seq = ?")
            for seq in sequences { try s.run([.int(seq)]) }
        }
    }
}
