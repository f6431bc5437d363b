import CSQLite

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

    /// A sync of the user is stored: its cursors or its time (a sync's merge records its time,
    /// even one that leaves no card). Only a forget (`CardStore.erase`) takes it away again:
    /// cards handed in keep both, and a full sync that empties the feed records its time.
    var hasSyncState: Bool { cursors != SyncCursors() || sync != SyncState() }
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
    /// Whether this open ran `PRAGMA quick_check` (not for a new store, nor a stamped one);
    /// set by the schema's first reads (CardStore+Schema.swift).
    var ranQuickCheck = false

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
        // Not waited for: a close that finds another connection writing, or reading an older
        // snapshot, keeps no copy (the next open reads the store) rather than wait. The
        // checkpoint and the write lock each waited the 5 s busy timeout, the controller's
        // lock held all along. The connection closes next: nothing else runs on it.
        sqlite3_busy_timeout(db.handle, 0)
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
}
