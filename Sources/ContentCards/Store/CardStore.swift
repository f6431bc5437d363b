import CSQLite
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
    var sync = SyncState()
}

/// What the user's last sync left besides the cursors (docs/BEHAVIOUR.md, "Conditional
/// refresh"): the server's validator for the cards held (its ETag, sent back as If-None-Match),
/// and when the last merge of a sync happened (unix seconds; 0: never), which
/// `refreshOnOpenAfterSeconds` compares against.
struct SyncState: Equatable {
    var validator: String? = nil
    var syncedAt: Double = 0
}

/// One write to a user's cards, applied in a single transaction.
struct StoreChanges {
    var upserts: [Card] = []
    var deletes: [String] = []
    var dismissalsAdded: [String] = []
    var dismissalsRemoved: [String] = []
    var cursors: SyncCursors? = nil
    var sync: SyncState? = nil
    var events: [Event] = []

    var isEmpty: Bool {
        upserts.isEmpty && deletes.isEmpty && dismissalsAdded.isEmpty && dismissalsRemoved.isEmpty
            && cursors == nil && sync == nil && events.isEmpty
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
    static let schemaVersion: Int64 = 4
    static let fileName = "contentcards.sqlite"

    let db: SQLiteDatabase
    let location: String
    /// An in-memory store has no other connection to hear from.
    let isInMemory: Bool
    /// A file store's checkpoints, off the writer's thread (Checkpointer.swift).
    private(set) var checkpointer: Checkpointer?
    /// How the last load read the records of schema 3: by their sums (`decodeSummed`, what a
    /// store the library wrote takes) or value by value (tests: the fast path is taken).
    private(set) var lastLoad = (summed: 0, fullyChecked: 0)

    /// The prepared statements, by their SQL's literal (StatementCache.swift).
    let statements = StatementCache()
    /// Found whole at open (checked, or stamped as checked): what lets close stamp it.
    private var isVerified = false
    /// Whether this open ran `PRAGMA quick_check` (not for a new store, nor a stamped one).
    private(set) var ranQuickCheck = false

    /// The `PRAGMA application_id` of a contentcards store ("CCrd"): set when the store is
    /// created, so that another application's SQLite database is never taken for ours.
    static let applicationID: Int32 = 0x4343_7264
    /// The tables a store of ours holds (`sqlite_sequence` comes with AUTOINCREMENT). A store
    /// of the first version has application_id 0: it is adopted when its tables are these.
    static let ownTables: Set<String> = ["cards", "dismissals", "cursors", "events", "sqlite_sequence", "sync_state"]

    init(directory: String?) throws(StoreError) {
        if let directory {
            // The trust boundary (BEHAVIOUR.md, "The store"): a private directory of this user,
            // the store file and its -wal/-shm/-journal regular files of this user, never a
            // symbolic link, never writable by group or others. New ones are 0700 and 0600
            // (SQLite gives the -wal and -shm files the database file's permissions).
            do { try Files.prepareStorageDirectory(directory) } catch { throw StoreError(error.message, complete: true) }
            location = CardStore.location(in: directory)
            do { try Files.prepareStoreFile(location) } catch { throw StoreError(error.message, complete: true) }
        } else {
            location = ":memory:"
        }
        isInMemory = directory == nil
        do { db = try SQLiteDatabase(path: location) } catch { throw CardStore.describe(error, location: location) }
        // Until the file is known to be ours and whole, closing must not write into it: no
        // checkpoint of another application's WAL into its database file.
        cc_sqlite_no_checkpoint_on_close(db.handle, 1)
        if !isInMemory && sqlite3_db_readonly(db.handle, "main") == 1 {
            db.close()
            throw StoreError("the store at \(location) is read-only (permission denied); the store needs to write it: chmod 600 \(location)", complete: true)
        }
        // Reading a WAL-mode file makes SQLite create its -wal and -shm files; a refused file
        // gets its directory back as it was (an empty WAL and the index we created go). Only a
        // file refused for what it holds (not ours, damaged): an open that failed for a reason
        // of the moment (busy past its retries, a full disk, an I/O error) may have failed
        // beside another process that made and mapped the same -shm meanwhile, and a third
        // opener would then build a second index of the one WAL.
        let candidates: [String] = isInMemory ? [] : [location + "-wal", location + "-shm"]
        let companions = candidates.filter { (path: String) in access(path, F_OK) != 0 }
        do { try prepareSchema() } catch {
            db.close()
            let refusedFile = [0, SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_FORMAT].contains(error.code & 0xFF)
            for file in companions where refusedFile {
                var st = stat()
                if lstat(file, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, file.hasSuffix("-shm") || st.st_size == 0 { unlink(file) }
            }
            throw error
        }
        cc_sqlite_no_checkpoint_on_close(db.handle, 0)
        isVerified = true
        if !isInMemory {
            // The -wal and -shm files stay when the last connection closes (the WAL emptied
            // into the file and cut to nothing, as before): creating both again at every open
            // and unlinking them at every close was a tenth of a millisecond of each cold start.
            // The limit is what a WAL is cut back to after a checkpoint (and to 0 at close);
            // without one a persistent WAL would keep the size of the largest sync ever written.
            var persist: Int32 = 1
            _ = sqlite3_file_control(db.handle, "main", SQLITE_FCNTL_PERSIST_WAL, &persist)
            try? db.execute("PRAGMA journal_size_limit=\(Checkpointer.walSizeLimit)")
            let checkpointer = Checkpointer(path: location)
            checkpointer.install(on: db)
            self.checkpointer = checkpointer
        }
    }

    /// The store file's path in a storage directory.
    static func location(in directory: String) -> String {
        directory.hasSuffix("/") ? directory + fileName : directory + "/" + fileName
    }

    /// A store dropped without `close` (an open that failed after the store was made): its
    /// statements go first. The connection goes with `db`, which Swift releases after this
    /// body; with a statement still prepared, `sqlite3_close_v2` would leave it open until
    /// the last one is finalized, its file locks held, while the registry of connections
    /// that a child of fork() closes (ForkSafety+Connections.swift) had already let it go.
    deinit {
        statements.removeAll()
        checkpointer?.close()
    }

    /// Closes the store. With `keep`, first hands it the file's stamp and sum for a kept feed
    /// (`KeptFeed`) when the file holds exactly what the caller loaded (`version`, the
    /// `data_version` of its last load) and every commit, unless the file's stamp is
    /// `standing` (the copy beside it was written for this very file, and stands); `keep`
    /// says whether it wrote one. Otherwise removes a kept feed.
    func close(keeping keep: ((_ stamp: String, _ sum: UInt64, _ pendingEvents: Int) -> Bool)? = nil,
               standing: String? = nil, version: Int64 = 0) {
        if let checkpointer {
            checkpointer.close()
            checkpointer.uninstall(from: db)
        }
        if !isInMemory && !db.isInherited {
            var kept = false
            if let keep, isVerified, !db.sawCorruption { kept = keepFeed(keep, standing: standing, version: version) }
            if !kept { KeptFeedFile.remove(store: location) }
        }
        statements.removeAll()
        let inherited = db.isInherited
        db.close()
        // After SQLite's last checkpoint, so the stamp has the file as it stays. Not for a
        // connection inherited across fork() (never closed there), nor after SQLite reported
        // the file corrupt.
        if isVerified && !isInMemory && !inherited && !db.sawCorruption { CheckStamp.save(location) }
    }

    /// The WAL emptied into the file, then, with SQLite's write lock held (no commit can land)
    /// and the file holding every commit, its stamp and sum handed to `keep`. False when any
    /// step fails: another process reading or writing, a commit the caller has not loaded.
    private func keepFeed(_ keep: (String, UInt64, Int) -> Bool, standing: String?, version: Int64) -> Bool {
        do throws(StoreError) {
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return try db.transaction { () throws(StoreError) -> Bool in
                guard try dataVersion() == version, let stamp = CheckStamp.current(of: location) else { return false }
                if stamp == standing { return true }    // nothing written since the copy was
                guard let sum = StoreFileSum.of(location) else { return false }
                return keep(stamp, sum, try pendingEventCount())
            }
        } catch {
            return false
        }
    }

    /// The error of a failed open, saying what is wrong: damaged, read-only, or another
    /// application's file. Said once, with the path; the file was left as it is.
    private static func describe(_ error: StoreError, location: String) -> StoreError {
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
    private func prepareSchema() throws(StoreError) {
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
            let check = try db.prepare("PRAGMA quick_check(5)")
            var problems: [String] = []
            while try check.step() { problems.append(check.text(0) ?? "") }
            check.reset()
            if problems != ["ok"] {
                let first = problems.prefix(3).map { Redact.escape($0, limit: 200) }.joined(separator: "; ")
                throw StoreError("the store at \(location) is damaged (corrupt: PRAGMA quick_check found: \(first)); it was left as it is: move it away to start with an empty store, or restore a backup", code: SQLITE_CORRUPT, complete: true)
            }
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

    /// Schema 1. Migrations run in order inside one transaction each; a later schema adds
    /// `migrateTo2` and so on.
    private func migrateTo1() throws(StoreError) {
        try db.transaction { () throws(StoreError) in
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
        try db.transaction { () throws(StoreError) in
            try db.execute(Self.syncStateTable + "PRAGMA user_version = 2;")
        }
    }

    /// Schema 3: cards are written in the form of `StoredCard` (a row's first byte tells the
    /// forms apart, so rows of schema 2 stay as they are and are read as before). The version
    /// goes up so that a library from before refuses the store instead of skipping every card
    /// written since as unreadable.
    private func migrateTo3() throws(StoreError) {
        try db.transaction { () throws(StoreError) in
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
        try db.transaction { () throws(StoreError) in
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

    func statement(_ sql: StaticString) throws(StoreError) -> SQLiteStatement {
        if db.isInherited { throw SQLiteDatabase.inheritedError }
        if let s = statements.find(sql) { return s.reset() }
        let s = try db.prepare(sql.description)
        statements.insert(s, for: sql)
        return s
    }

    // MARK: Reading

    /// The user's state as `load` reads it, and the store's `data_version` of that same
    /// snapshot (one read transaction): a commit of another process between the two would
    /// otherwise be counted as seen without having been loaded.
    func loadWithVersion(user: String, decoder: PayloadDecoder) throws(StoreError) -> (StoredUser, Int64) {
        try db.readTransaction { () throws(StoreError) -> (StoredUser, Int64) in
            (try load(user: user, decoder: decoder), try dataVersion())
        }
    }

    /// The user's cards, dismissals and cursors, read in one transaction (one snapshot). Cards
    /// are decoded with `decoder`, so class types are normalized under the current configuration.
    func load(user: String, decoder: PayloadDecoder) throws(StoreError) -> StoredUser {
        // An in-memory store holds no cards, dismissals or cursors (see `apply`): nothing to
        // read, and no statements to prepare and keep (a controller's memory: they were a
        // tenth of an in-memory controller's 50 KB).
        if isInMemory { return StoredUser() }
        // A scan needs a handful of pages at a time: with SQLite's cache at its usual size
        // each of the file's pages would take a fresh buffer (a page fault, 2 µs here, for
        // every 4 KB read: a sixth of loading 1,000 cards). Read through a small cache whose
        // buffers are reused, then given back its size for the writes that follow.
        let cacheSize = try pragmaInt("PRAGMA cache_size")
        try db.execute("PRAGMA cache_size=16")
        defer { try? db.execute("PRAGMA cache_size=\(cacheSize)") }
        return try db.readTransaction { () throws(StoreError) -> StoredUser in try loadInTransaction(user: user, decoder: decoder) }
    }

    private func loadInTransaction(user: String, decoder: PayloadDecoder) throws(StoreError) -> StoredUser {
        var stored = StoredUser()
        // The cards are gathered in an array first and the table is then sized once: grown by
        // doubling, 1,000 cards were hashed again some 1,000 more times (an eighth of opening a
        // store of 1,000 cards). A `COUNT(*)` sized it before, but counting is a scan of every
        // page of the table too, and through the small cache each page was read twice.
        var loaded: [Card] = []
        let cards = try statement("SELECT id, body, checksum FROM cards WHERE user_id = ?")
        try cards.bind(1, user)
        // One card's scratch space, reused for the next.
        var fields = CardFields()
        var writer = JSONWriter(reservingCapacity: 1024)
        var summed = 0, checked = 0
        defer { lastLoad = (summed, checked) }
        while try cards.step() {
            // A row that no longer decodes is skipped rather than failing the whole feed (and
            // counted: `unreadableStoredCards`).
            let card = cards.withBytes(1) { bytes -> Card? in
                guard StoredCard.isRecord(bytes) else {
                    return decoder.decodeStoredCard(bytes, fields: &fields, writer: &writer)    // schema 1 and 2 rows
                }
                // The record does not repeat the id: the row's must be one a payload could give.
                guard let id = cards.withBytes(0, { StoredCard.checkedID($0) }) else { return nil }
                // A record with its sum is read as written; any other is checked value by value.
                if !cards.isNull(2), cards.int(2) == RecordSum.of(bytes),
                   let card = StoredCard.decodeSummed(bytes, id: id, knownClassTypes: decoder.knownClassTypes) {
                    summed += 1
                    return card
                }
                checked += 1
                return StoredCard.decode(bytes, id: id, knownClassTypes: decoder.knownClassTypes, scratch: &writer)
            }
            if let card { loaded.append(consume card) }
        }
        cards.reset()
        stored.cards.reserveCapacity(loaded.count)
        // Moved into the table, not copied: a copy retained and later released each of a card's
        // strings and its body (two copies a card, 6% of opening a store of 1,000 cards). In the
        // rows' order, as the copies went in (reversed in place, then taken from the end): two
        // rows of schema 1 or 2 whose bodies give one id leave the later one, as before.
        loaded.withUnsafeMutableBufferPointer { $0.reverse() }     // moves, no copies
        while let card = loaded.popLast() {
            let id = card.id
            stored.cards[id] = consume card
        }
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
        let sync = try statement("SELECT validator, synced_at FROM sync_state WHERE user_id = ?")
        try sync.bind(1, user)
        if try sync.step() { stored.sync = SyncState(validator: sync.text(0), syncedAt: sync.double(1)) }
        sync.reset()
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
            // An in-memory store writes only events: its cards, dismissals and cursors would
            // be a second copy of what the controller holds (nothing else can open an
            // in-memory database), costing a third of a 10,000-card sync and 5 MB.
            if !isInMemory {
                if !changes.upserts.isEmpty {
                    let s = try statement("INSERT OR REPLACE INTO cards (user_id, id, created, is_test, body, checksum) VALUES (?, ?, ?, ?, ?, ?)")
                    for card in changes.upserts {
                        // The card's own bytes (`StoredCard`): read back by checking them, with
                        // nothing to decode.
                        guard let record = StoredCard.encode(card) else {
                            throw StoreError("out of memory writing card \(card.id.prefix(120)) to the store; nothing was written")
                        }
                        try s.run([.text(user), .text(card.id), .int(card.created), .int(card.isTest ? 1 : 0),
                                   .bytes(record[...]), .int(RecordSum.of(record))])
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
                if let sync = changes.sync {
                    try statement("INSERT OR REPLACE INTO sync_state (user_id, validator, synced_at) VALUES (?, ?, ?)")
                        .run([.text(user), sync.validator.map { .text($0) } ?? .null, .real(sync.syncedAt)])
                }
            }
            if !changes.events.isEmpty {
                let s = try statement("INSERT INTO events (id, type, card_id, class_type, user_id, time) VALUES (?, ?, ?, ?, ?, ?)")
                // Bound one by one, not through `run`'s array of values: a logged impression
                // writes one event, and the array was an allocation of its own.
                for e in changes.events {
                    _ = s.reset()
                    try s.bind(1, e.id); try s.bind(2, e.kind.rawValue); try s.bind(3, e.cardID)
                    try s.bind(4, e.classType); try s.bind(5, e.userID); try s.bind(6, e.time)
                    while try s.step() {}
                }
                _ = s.reset()
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

    /// Cards of `user` with a read or unread event still in the outbox: their local read state
    /// wins over the server's in a merge until the event is delivered (docs/BEHAVIOUR.md,
    /// "Merge", rule 9).
    func pendingReadStateCards(user: String) throws(StoreError) -> Set<CardKey> {
        let s = try statement("SELECT DISTINCT card_id FROM events WHERE user_id = ? AND type IN ('read', 'unread') AND card_id IS NOT NULL")
        defer { s.reset() }
        try s.bind(1, user)
        var ids = Set<CardKey>()
        while try s.step() { if let id = s.text(0) { ids.insert(CardKey(id)) } }
        return ids
    }

    /// The user's rows in the cards table, decodable or not (diagnostics compares it with the
    /// cards loaded, so a row that no longer decodes is reported rather than dropped silently).
    func cardRowCount(user: String) throws(StoreError) -> Int {
        if isInMemory { return 0 }     // no cards table: it writes none (`createSchema4`)
        let s = try statement("SELECT COUNT(*) FROM cards WHERE user_id = ?")
        defer { s.reset() }
        try s.bind(1, user)
        return try s.step() ? Int(s.int(0)) : 0
    }

    /// Deletes delivered events, each by its number and its id: a number can be given again
    /// once the newest events are gone (schema 4 has no AUTOINCREMENT), and another process
    /// delivering the same outbox may have deleted these and logged new ones meanwhile.
    func deleteEvents(_ events: [PendingEvent]) throws(StoreError) {
        guard !events.isEmpty else { return }
        try db.transaction { () throws(StoreError) in
            let s = try statement("DELETE FROM events WHERE seq = ? AND id = ?")
            for e in events { try s.run([.int(e.sequence), .text(e.event.id)]) }
        }
    }
}
