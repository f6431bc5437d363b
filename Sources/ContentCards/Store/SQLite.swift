import CSQLite
/// A minimal SQLite connection: prepared statements only, so no SQL is ever built from input.
/// Not thread-safe by itself: the controller calls it with its state lock held.
final class SQLiteDatabase {
    private(set) var handle: OpaquePointer?
    let path: String
    /// The fork generation that opened it: in a child of fork() the connection is inherited,
    /// closed at the child's first use of SQLite (ForkSafety+Connections.swift), and never
    /// touched again.
    let generation: UInt64
    var isInherited: Bool { generation != ForkSafety.generation }
    /// SQLite answered that the file is corrupt (or not a database) at least once: such a
    /// store is never stamped as checked (`CheckStamp`).
    private(set) var sawCorruption = false

    /// Notes a result code (see `sawCorruption`).
    /// The first report also marks the store damaged for every connection (`DamageMark`) and
    /// removes its stamp and kept feed, so that the next open checks the whole file and says
    /// what is damaged.
    func note(_ rc: Int32) {
        let primary = rc & 0xFF
        guard primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB, !sawCorruption else { return }
        sawCorruption = true
        guard path != ":memory:" else { return }
        DamageMark.set(path)
        unlink(CheckStamp.path(of: path))
        KeptFeedFile.remove(store: path)
    }
    /// Closes that found a statement still prepared on their connection, which SQLite then
    /// keeps open, its file locks held, until the statement is finalized: none are expected
    /// (a store finalizes its statements first), and the tests check it.
    static var closesWithStatementsLeft: Int { closeCounts.withLock { closeCountsValue } }
    private static let closeCounts = Lock()
    nonisolated(unsafe) private static var closeCountsValue = 0
    static let inheritedError = StoreError("the store was opened before fork() and is inherited by this child process: it cannot be used here (open a new controller in the child)")

    /// SQLITE_TRANSIENT: SQLite copies bound text before the call returns.
    private static let transient = unsafeBitCast(Int(-1), to: sqlite3_destructor_type.self)

    init(path: String) throws(StoreError) {
        self.path = path
        ForkSafety.install()
        generation = ForkSafety.generation
        var db: OpaquePointer?
        // NOFOLLOW: a symbolic link at the store's path is refused, never followed (the
        // CardStore checks it first, with a message that says how to fix it).
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
        let rc = ForkSafety.sqlite { () -> Int32 in
            ForkSafety.beforeUse()
            let rc = sqlite3_open_v2(path, &db, flags, nil)
            if rc == SQLITE_OK, let db { ForkSafety.opened(db) }
            return rc
        }
        guard rc == SQLITE_OK, let db else {
            let message = db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "error \(rc)"
            ForkSafety.sqlite { _ = sqlite3_close_v2(db) }
            throw StoreError("cannot open the store at \(path): \(message)", code: rc)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        // Another process or controller may hold the write lock for a moment.
        sqlite3_busy_timeout(db, 5000)
    }

    deinit { close() }

    func close() {
        control.removeAll()   // finalized while the connection is open (none in a fork child: see deinit)
        if let handle {
            self.handle = nil
            if isInherited { return }   // closed by the child of fork() (ForkSafety): never touched
            ForkSafety.sqlite {
                if sqlite3_next_stmt(handle, nil) != nil { Self.closeCounts.withLock { Self.closeCountsValue += 1 } }
                ForkSafety.closing(handle)
                _ = sqlite3_close_v2(handle)
            }
        }
    }

    var lastMessage: String {
        if isInherited { return Self.inheritedError.message }
        guard let handle, let m = sqlite3_errmsg(handle) else { return "the store is closed" }
        return String(cString: m)
    }

    /// An error with SQLite's message and its code: the open retries BUSY, calls CORRUPT
    /// damaged, and keeps the files of a failure of the moment by it (without the code, a
    /// prepare refused for a moment was taken for a store refused for what it holds).
    func fail(_ what: String, code: Int32 = 0) -> StoreError { StoreError("\(what): \(lastMessage)", code: code) }

    /// The connection, for a statement to run on: an error when the store is closed, or
    /// inherited through fork() (`isInherited`).
    private func usableHandle() throws(StoreError) -> OpaquePointer {
        guard let handle else { throw StoreError("the store is closed") }
        if isInherited { throw Self.inheritedError }
        return handle
    }

    /// Runs SQL that takes no parameters (schema, pragmas, transaction control).
    func execute(_ sql: String) throws(StoreError) {
        let handle = try usableHandle()
        var message: UnsafeMutablePointer<CChar>?
        let rc = ForkSafety.sqlite { sqlite3_exec(handle, sql, nil, nil, &message) }
        if rc != SQLITE_OK {
            note(rc)
            let text = message.map { String(cString: $0) } ?? "error \(rc)"
            sqlite3_free(message)
            throw StoreError(text, code: rc)
        }
    }

    func prepare(_ sql: String) throws(StoreError) -> SQLiteStatement {
        let handle = try usableHandle()
        var stmt: OpaquePointer?
        let rc = ForkSafety.sqlite { sqlite3_prepare_v2(handle, sql, -1, &stmt, nil) }
        guard rc == SQLITE_OK, let stmt else {
            note(rc)
            throw fail("cannot prepare a statement", code: rc)
        }
        return SQLiteStatement(stmt, db: self)
    }

    /// Whether `sql` compiles against the schema (a statement naming a column compiles only
    /// when the column exists); nothing is run.
    func compiles(_ sql: String) throws(StoreError) -> Bool {
        let handle = try usableHandle()
        var stmt: OpaquePointer?
        let rc = ForkSafety.sqlite { sqlite3_prepare_v2(handle, sql, -1, &stmt, nil) }
        ForkSafety.sqlite { _ = sqlite3_finalize(stmt) }
        if rc == SQLITE_OK { return true }
        note(rc)
        // A damaged schema is not a missing column: said as it is.
        if rc & 0xFF == SQLITE_CORRUPT || rc & 0xFF == SQLITE_NOTADB { throw fail("cannot read the schema", code: rc) }
        return false
    }

    /// Runs `body` in one read transaction (a deferred `BEGIN`: the first read takes the
    /// snapshot). The reads inside see one state of the file, and SQLite takes its read lock,
    /// and checks the file and the WAL for other connections' commits, once instead of once
    /// per statement (about 40 µs a statement on a cold open). Inside a transaction already,
    /// `body` simply runs in it.
    func readTransaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        if isInherited { throw Self.inheritedError }
        guard let handle, sqlite3_get_autocommit(handle) != 0 else { return try body() }
        return try inTransaction(beginning: "BEGIN", body)
    }

    /// Runs `body` in one IMMEDIATE transaction (the write lock is taken up front, so two
    /// processes never deadlock upgrading a read to a write), rolling back on error. Inside a
    /// write transaction already (a batch of log calls: `inWriteTransaction`), `body` simply
    /// runs in it, and its error rolls back the whole.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        if inWriteTransaction { return try body() }
        inWriteTransaction = true
        defer { inWriteTransaction = false }
        return try inTransaction(beginning: "BEGIN IMMEDIATE", body)
    }

    /// Inside `transaction`'s body. (Kept here rather than asked of SQLite: sqlite3_txn_state
    /// came with SQLite 3.34, newer than some systems the library supports.)
    private var inWriteTransaction = false

    /// BEGIN, BEGIN IMMEDIATE, COMMIT and ROLLBACK, each prepared once. Through `execute`
    /// (sqlite3_exec) each was parsed again at every transaction: with a logged event a commit
    /// of its own, the parser was a few percent of every log call.
    /// By their SQL's literal (StatementCache.swift): hashing the text cost 370 instructions a
    /// transaction.
    private let control = StatementCache(capacity: 4)

    /// Runs one of the transaction statements (`control`).
    private func runControl(_ sql: StaticString) throws(StoreError) {
        let statement: SQLiteStatement
        if let prepared = control.find(sql) {
            statement = prepared
        } else {
            statement = try prepare(sql.description)
            control.insert(statement, for: sql)
        }
        defer { statement.reset() }   // also after a failure: a statement left stepped is active
        while try statement.step() {}
    }

    /// `begin`, then `body`, then COMMIT; ROLLBACK when anything throws.
    private func inTransaction<T>(beginning begin: StaticString, _ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try ForkSafety.sqlite { () throws(StoreError) -> T in   // never open across a fork()
            try runControl(begin)
            do throws(StoreError) {
                let value = try body()
                try runControl("COMMIT")
                return value
            } catch {
                try? runControl("ROLLBACK")
                throw error
            }
        }
    }

}

/// A prepared statement. Finalized when released.
final class SQLiteStatement {
    private let stmt: OpaquePointer
    private unowned let db: SQLiteDatabase

    private let generation: UInt64

    fileprivate init(_ stmt: OpaquePointer, db: SQLiteDatabase) {
        self.stmt = stmt; self.db = db; generation = db.generation
    }

    deinit {
        // Leaked in a child of fork(): an inherited statement is never touched.
        if generation == ForkSafety.generation { ForkSafety.sqlite { _ = sqlite3_finalize(stmt) } }
    }

    private static let transient = unsafeBitCast(Int(-1), to: sqlite3_destructor_type.self)

    @discardableResult
    func reset() -> SQLiteStatement {
        if generation != ForkSafety.generation { return self }
        ForkSafety.sqlite {
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
        }
        return self
    }

    /// A statement of the parent's generation, in a child of fork(): its handle was closed
    /// there (ForkSafety+Connections.swift), so nothing may reach it.
    @inline(__always)
    private func checkUsable() throws(StoreError) {
        if generation != ForkSafety.generation { throw SQLiteDatabase.inheritedError }
    }

    func bind(_ index: Int32, _ value: String?) throws(StoreError) {
        try checkUsable()
        let rc: Int32
        if var value {
            // The string's own UTF-8, with its length: handing the String to the `char *`
            // parameter made a NUL-terminated copy of it in an array of its own, allocated and
            // freed for every value bound (five a logged impression, 2,300 instructions).
            rc = value.withUTF8 { bindUTF8(index, $0) }
        } else {
            rc = sqlite3_bind_null(stmt, index)
        }
        if rc != SQLITE_OK { throw db.fail("cannot bind a value") }
    }

    /// UTF-8 bytes as TEXT, without making a String of them first.
    func bindText(_ index: Int32, _ bytes: ArraySlice<UInt8>) throws(StoreError) {
        try checkUsable()
        let rc = bytes.withUnsafeBufferPointer { bindUTF8(index, $0) }
        if rc != SQLITE_OK { throw db.fail("cannot bind a value") }
    }

    /// Binds the bytes as TEXT with their length (SQLite copies them); its status.
    @inline(__always)
    private func bindUTF8(_ index: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Int32 {
        bytes.withMemoryRebound(to: CChar.self) { chars in
            // A NULL pointer would bind NULL, not an empty text.
            guard let base = chars.baseAddress else {
                return ForkSafety.sqlite { sqlite3_bind_text(stmt, index, "", 0, SQLiteStatement.transient) }
            }
            return ForkSafety.sqlite { sqlite3_bind_text(stmt, index, base, Int32(clamping: chars.count), SQLiteStatement.transient) }
        }
    }

    func bind(_ index: Int32, _ value: Int64) throws(StoreError) {
        try checkUsable()
        if sqlite3_bind_int64(stmt, index, value) != SQLITE_OK { throw db.fail("cannot bind a value") }
    }

    func bind(_ index: Int32, _ value: Double) throws(StoreError) {
        try checkUsable()
        if sqlite3_bind_double(stmt, index, value) != SQLITE_OK { throw db.fail("cannot bind a value") }
    }

    func bind(_ index: Int32, _ value: Bool) throws(StoreError) { try bind(index, Int64(value ? 1 : 0)) }

    /// Binds the values in order, starting at parameter 1.
    func bind(_ values: [SQLiteValue]) throws(StoreError) {
        for (i, v) in values.enumerated() {
            let index = Int32(i + 1)
            switch v {
            case .text(let s): try bind(index, s)
            case .bytes(let b): try bindText(index, b)
            case .int(let n): try bind(index, n)
            case .real(let d): try bind(index, d)
            case .null: try bind(index, nil as String?)
            }
        }
    }

    /// Steps once: true when a row is ready, false when done.
    func step() throws(StoreError) -> Bool {
        try checkUsable()
        let rc = ForkSafety.sqlite { sqlite3_step(stmt) }
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        db.note(rc)
        throw StoreError(db.lastMessage, code: rc)
    }

    /// Binds, runs to completion and resets.
    func run(_ values: [SQLiteValue] = []) throws(StoreError) {
        reset()
        try bind(values)
        while try step() {}
        reset()
    }

    func int(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(stmt, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }
    /// The column's bytes, valid only during `body`.
    func withBytes<R>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        let p = sqlite3_column_text(stmt, column)
        let n = Int(sqlite3_column_bytes(stmt, column))
        return body(UnsafeBufferPointer(start: p, count: p == nil ? 0 : n))
    }

    func text(_ column: Int32) -> String? {
        guard let p = sqlite3_column_text(stmt, column) else { return nil }
        let n = Int(sqlite3_column_bytes(stmt, column))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }
}

enum SQLiteValue {
    case text(String?)
    /// UTF-8 text as bytes (a slice: a card's bytes inside its payload are bound where they are).
    case bytes(ArraySlice<UInt8>)
    case int(Int64)
    case real(Double)
    case null
}

/// A store failure: a file that cannot be opened, is corrupt, is from a newer schema, or a
/// write that failed (disk full, read-only).
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public let code: Int32
    /// The message already says what is wrong with the store, with its path: not to be
    /// wrapped again.
    let isComplete: Bool
    public var description: String { message }
    init(_ message: String, code: Int32 = 0, complete: Bool = false) {
        self.message = message; self.code = code; self.isComplete = complete
    }
}
