import CSQLite
private let SQLITE_BUSY_CODE = SQLITE_BUSY
private let SQLITE_LOCKED_CODE = SQLITE_LOCKED

/// The store's schema at open: what the first reads find (the version, the application id, the
/// tables, `PRAGMA quick_check`), then WAL mode and the migrations, for a file known to be ours
/// and whole; anything else refused and left as it was (docs/BEHAVIOUR.md, "The store").
extension CardStore {
    /// The error of a failed open, saying what is wrong: damaged, read-only, or another
    /// application's file. Said once, with the path; the file was left as it is.
    static func describe(_ error: StoreError, location: String) -> StoreError {
        if error.isComplete { return error }
        let path = location == ":memory:" ? "in memory" : "at \(location)"
        switch error.code & 0xFF {
        case SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_FORMAT:
            return StoreError("the store \(path) is damaged (corrupt) or not a contentcards store (\(error.message)); it was left as it is: move it away to start with an empty store, or restore a backup", code: error.code, complete: true)
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_CANTOPEN, SQLITE_AUTH:
            return StoreError("the store \(path) cannot be written: read-only or permission denied (\(error.message)); it was left as it is: check that this user can write the file and its directory (chmod 600 the file, chmod 700 the directory)", code: error.code, complete: true)
        case SQLITE_FULL:
            return StoreError("the store \(path) cannot be used: the disk is full (\(error.message)); it was left as it is", code: error.code, complete: true)
        case SQLITE_IOERR:
            return StoreError("the store \(path) cannot be read or written: I/O error (\(error.message)); it was left as it is", code: error.code, complete: true)
        default:
            return StoreError("the store \(path) cannot be used (\(error.message)); it was left as it is", code: error.code, complete: true)
        }
    }

    /// Opens the schema, retrying while another process holds the lock: switching a new file to
    /// WAL takes an exclusive lock, and SQLite may answer BUSY there without waiting, so two
    /// processes opening a new store at the same moment would otherwise collide.
    func prepareSchema() throws(StoreError) {
        var attempt = 0
        while true {
            do {
                try prepareSchemaOnce()
                return
            } catch {
                let busy = !error.isComplete && (error.code & 0xFF == SQLITE_BUSY_CODE || error.code & 0xFF == SQLITE_LOCKED_CODE)
                attempt += 1
                guard busy, attempt < 100 else { throw CardStore.describe(error, location: location) }
                Sleep.milliseconds(min(10 * attempt, 100))
            }
        }
    }

    /// What the first reads of an open found (`inspect`).
    private struct Inspection {
        var version: Int64
        var appID: Int32
        var isEmpty: Bool
        var isWAL: Bool
        var hasChecksum: Bool
    }

    /// First reads, writing nothing, in one read transaction: the schema version, the
    /// application id, the tables, and `PRAGMA quick_check`. Only a store known to be ours and
    /// whole is then switched to WAL, migrated or adopted; anything else is refused and left
    /// byte for byte as it was. A store of today's schema in WAL mode is written nothing at all.
    private func prepareSchemaOnce() throws(StoreError) {
        // Asked before SQLite reads anything (its first read creates the -wal and -shm files).
        let stamped = !isInMemory && CheckStamp.matches(location)
        let found = try db.readTransaction { () throws(StoreError) -> Inspection in try inspect(stamped: stamped) }
        if !isInMemory {
            if !found.isWAL { try db.execute("PRAGMA journal_mode=WAL") }
            // NORMAL in WAL mode: a committed transaction survives a crash or kill of the
            // process; only a power loss may roll back the last commits.
            try db.execute("PRAGMA synchronous=NORMAL")
        }
        if isInMemory {
            // An in-memory store lives in its page cache, which SQLite starts with a slab of
            // pages; it holds only events (see `apply`), small rows: 1 KiB pages instead of
            // 4 KiB take 1,000 controllers from 170 MB to 43 MB (an app may open one per user,
            // a server one per request). Only possible before the first table exists.
            try db.execute("PRAGMA page_size=1024")
        }
        try db.execute("PRAGMA foreign_keys=ON")
        if found.version == 0 && found.isEmpty {
            try createSchema4()
        } else {
            if found.version < 1 { try migrateTo1() }
            if found.version < 2 { try migrateTo2() }
            if found.version < 3 { try migrateTo3() }
            if found.version < 4 { try migrateTo4() }
        }
        // An in-memory store writes no cards (see `apply`): no column for them.
        if !isInMemory && !found.hasChecksum { try addChecksumColumn() }
        if found.appID == 0 && !found.isEmpty {
            // A store of ours from before the application id: adopt it.
            try db.execute("PRAGMA application_id = \(CardStore.applicationID)")
        }
    }

    /// The reads of `prepareSchemaOnce`; throws when the store is not ours, newer, or damaged.
    private func inspect(stamped: Bool) throws(StoreError) -> Inspection {
        let version = try pragmaInt("PRAGMA user_version")
        let appID = Int32(truncatingIfNeeded: try pragmaInt("PRAGMA application_id"))
        var tables: [String] = []
        do {
            let s = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            while try s.step() { tables.append(s.text(0) ?? "") }
            s.reset()
        }
        if version > CardStore.schemaVersion {
            throw StoreError("the store at \(location) has schema version \(version), newer than this library reads (\(CardStore.schemaVersion)): upgrade the library; the store was left as it is", complete: true)
        }
        let isEmpty = version == 0 && tables.isEmpty
        if appID != CardStore.applicationID && !(appID == 0 && isEmpty) {
            let foreign = tables.filter { !CardStore.ownTables.contains($0) }
            if appID != 0 || !foreign.isEmpty || tables.isEmpty {
                let what = appID != 0
                    ? "its application_id is \(appID), not contentcards' \(CardStore.applicationID)"
                    : "it holds tables that are not contentcards' (\(foreign.prefix(5).joined(separator: ", ")))"
                throw StoreError("the file at \(location) is another application's SQLite database, not a contentcards store (\(what)); it was left as it is: use another storagePath", complete: true)
            }
        }
        if !isEmpty && !stamped {
            // The whole file is checked before anything is written: a damaged page otherwise
            // shows as a partial feed, "not found" answers, and new writes into a broken file.
            // Skipped when the stamp of a clean close says nothing touched the file since
            // (`CheckStamp`).
            ranQuickCheck = true
            let checkStart = DamageMark.checkStart()
            let check = try db.prepare("PRAGMA quick_check(5)")
            var problems: [String] = []
            while try check.step() { problems.append(check.text(0) ?? "") }
            check.reset()
            if problems != ["ok"] {
                let first = problems.prefix(3).map { Redact.escape($0, limit: 200) }.joined(separator: "; ")
                throw StoreError("the store at \(location) is damaged (corrupt: PRAGMA quick_check found: \(first)); it was left as it is: move it away to start with an empty store, or restore a backup", code: SQLITE_CORRUPT, complete: true)
            }
            // Whole: a damage report from before this check is answered.
            DamageMark.clear(location, checkedSince: checkStart)
        } else if isEmpty && !isInMemory {
            DamageMark.clear(location, checkedSince: DamageMark.checkStart())   // nothing to be damaged
        }
        var isWAL = false
        if !isInMemory {
            let mode = try db.prepare("PRAGMA journal_mode")
            isWAL = (try mode.step() ? mode.text(0) ?? "" : "").lowercased() == "wal"
            mode.reset()   // an unfinished statement holds a read transaction open
        }
        let hasChecksum = tables.contains("cards") ? try hasChecksumColumn() : false
        return Inspection(version: version, appID: appID, isEmpty: isEmpty, isWAL: isWAL, hasChecksum: hasChecksum)
    }

    func pragmaInt(_ sql: String) throws(StoreError) -> Int64 {
        let s = try db.prepare(sql)
        defer { s.reset() }
        return try s.step() ? s.int(0) : 0
    }

    /// The tables of cards, dismissals and cursors, as schema 1 made them and every schema since
    /// keeps them (a file store's `checksum` column is added apart: `addChecksumColumn`).
    private static let cardTables = """
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
        """

    /// The table of schema 2.
    private static let syncStateTable = """
        CREATE TABLE IF NOT EXISTS sync_state (
            user_id TEXT PRIMARY KEY,
            validator TEXT,
            synced_at REAL NOT NULL DEFAULT 0
        );
        """

    /// The outbox of schema 4, under `name`.
    private static func eventsTable(_ name: String) -> String {
        """
        CREATE TABLE \(name) (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL,
            type TEXT NOT NULL,
            card_id TEXT,
            class_type TEXT,
            user_id TEXT NOT NULL,
            time REAL NOT NULL
        );
        """
    }

    /// A new, empty store: schema 4 made at once, not schema 1 migrated three times. The
    /// migrations' statements were what made a fresh in-memory store's connection take 76 KB
    /// instead of 40 (SQLite's per-connection memory for the schema's rebuilds, and the
    /// dropped table's pages, which an in-memory database keeps): 1,000 controllers in 84 MB
    /// instead of 49 (docs/PERFORMANCE.md, "Memory"). The same tables as a migrated store, but
    /// for `sqlite_sequence`, which only AUTOINCREMENT made (OutboxSchemaTests compares them).
    ///
    /// An in-memory store gets the outbox alone: it writes no cards, dismissals or cursors
    /// (see `apply`; the controller holds them), and reads none (`load`). Parsing the other
    /// four tables' statements was three quarters of opening one (850,000 instructions).
    private func createSchema4() throws(StoreError) {
        try db.transaction { () throws(StoreError) in
            // Asked again under the write lock: another process opening the same new store at
            // the same moment may have made it since (making it twice is an error).
            guard try pragmaInt("PRAGMA user_version") == 0 else { return }
            let tables = isInMemory ? Self.eventsTable("events") : Self.cardTables + Self.eventsTable("events") + Self.syncStateTable
            try db.execute(tables + """
                PRAGMA user_version = 4;
                PRAGMA application_id = \(CardStore.applicationID);
                """)
        }
    }

    /// One migration step to schema `version`, in one write transaction, skipped when the
    /// store is at that version already: read again under the write lock, since another process
    /// may have migrated the store after the open read its version (going on would set the
    /// version back).
    private func migrationStep(to version: Int64, _ body: () throws(StoreError) -> Void) throws(StoreError) {
        try db.transaction { () throws(StoreError) in
            guard try pragmaInt("PRAGMA user_version") < version else { return }
            try body()
        }
    }

    /// Schema 1. Migrations run in order inside one transaction each; a later schema adds
    /// `migrateTo2` and so on.
    private func migrateTo1() throws(StoreError) {
        try migrationStep(to: 1) { () throws(StoreError) in
            try db.execute(Self.cardTables + """
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
                PRAGMA application_id = \(CardStore.applicationID);
                """)
        }
    }

    /// Schema 2: the validator of each user's last sync and its time (`SyncState`), in a table
    /// of their own so schema 1's tables stay as they were.
    private func migrateTo2() throws(StoreError) {
        try migrationStep(to: 2) { () throws(StoreError) in
            try db.execute(Self.syncStateTable + "PRAGMA user_version = 2;")
        }
    }

    /// Schema 3: cards are written in the form of `StoredCard` (a row's first byte tells the
    /// forms apart, so rows of schema 2 stay as they are and are read as before). The version
    /// goes up so that a library from before refuses the store instead of skipping every card
    /// written since as unreadable.
    private func migrateTo3() throws(StoreError) {
        try migrationStep(to: 3) { () throws(StoreError) in
            try db.execute("PRAGMA user_version = 3;")
        }
    }

    /// Schema 4: the outbox without the unique index on event ids and without AUTOINCREMENT.
    /// Each logged event is a commit of its own, and both cost pages written to the WAL at every
    /// commit (the index's page, `sqlite_sequence`'s): about 3.4 pages a logged impression
    /// became 2 (docs/PERFORMANCE.md, "Durable logging"). Ids are 128 random bits, never looked
    /// up; AUTOINCREMENT kept a delivered batch's sequence numbers from being given again to
    /// new events, which a delivery that deleted by number alone (another process may deliver
    /// the same outbox) could then have deleted unsent. Deliveries delete by number and id now
    /// (`deleteEvents`). The table is copied, in order; `sqlite_sequence` stays (SQLite never
    /// drops it), without a row for events.
    private func migrateTo4() throws(StoreError) {
        try migrationStep(to: 4) { () throws(StoreError) in
            try db.execute(Self.eventsTable("events_4") + """
                INSERT INTO events_4 (seq, id, type, card_id, class_type, user_id, time)
                    SELECT seq, id, type, card_id, class_type, user_id, time FROM events ORDER BY seq;
                DROP TABLE events;
                ALTER TABLE events_4 RENAME TO events;
                PRAGMA user_version = 4;
                """)
            // A store made at schema 4 and brought back by hand (tests do) has no sequence.
            if try db.compiles("SELECT name FROM sqlite_sequence LIMIT 0") {
                try db.execute("DELETE FROM sqlite_sequence WHERE name = 'events'")
            }
        }
    }

    /// The `checksum` column of `cards` (`RecordSum`), added to a store that has none. The
    /// schema version stays 3: a library that does not know the column reads the store as it
    /// is and writes rows that leave it null, and a null or wrong sum only means that the
    /// record is checked in full, as every record was before the column.
    private func addChecksumColumn() throws(StoreError) {
        try db.transaction { () throws(StoreError) in
            // Asked again under the write lock: another process opening the same store at the
            // same moment may have added it since (adding it twice is an error).
            if try hasChecksumColumn() { return }
            try db.execute("ALTER TABLE cards ADD COLUMN checksum INTEGER")
        }
    }

    /// Whether `cards` has the column: a statement naming it compiles only then. (Asking
    /// `pragma_table_info` builds a virtual table: 46 µs of a cold open, against 8.)
    private func hasChecksumColumn() throws(StoreError) -> Bool {
        try db.compiles("SELECT checksum FROM cards LIMIT 0")
    }
}
