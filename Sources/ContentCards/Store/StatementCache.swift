/// Prepared statements kept by the address of their SQL's literal (every statement the store
/// runs is a literal of its code): a short list searched in order.
///
/// A store has some twenty statements, a log call uses three. Comparing addresses costs less
/// than hashing the SQL's text (a hundred bytes, SipHash, then a byte-for-byte compare: 2,200
/// instructions a logged impression). The list is plain memory, not a dictionary: a
/// dictionary keyed by an address or an integer was a generic type the runtime instantiated,
/// and a `Hashable` conformance it looked up, at the first open of every process (110,000
/// instructions of a cold start; docs/PERFORMANCE.md).
///
/// Not thread-safe: its owner's lock guards it (the controller's, for the store's statements).
final class StatementCache {
    private var keys: UnsafeMutablePointer<Int>
    private var statements: UnsafeMutablePointer<Unmanaged<SQLiteStatement>>
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int = 32) {
        self.capacity = max(capacity, 1)
        keys = .allocate(capacity: self.capacity)
        statements = .allocate(capacity: self.capacity)
    }

    deinit {
        removeAll()
        keys.deallocate()
        statements.deallocate()
    }

    /// The statement kept for `sql`, nil when there is none.
    @inline(__always)
    func find(_ sql: StaticString) -> SQLiteStatement? {
        let key = Self.key(sql)
        var i = 0
        while i < count {
            if keys[i] == key { return statements[i].takeUnretainedValue() }
            i += 1
        }
        return nil
    }

    /// Keeps `statement` for `sql` (not already kept: `find` said nil).
    func insert(_ statement: SQLiteStatement, for sql: StaticString) {
        if count == capacity { grow() }
        keys[count] = Self.key(sql)
        statements[count] = .passRetained(statement)
        count += 1
    }

    /// Calls `body` with each statement kept, in the order they were kept.
    func forEach(_ body: (SQLiteStatement) -> Void) {
        for i in 0..<count { body(statements[i].takeUnretainedValue()) }
    }

    /// Lets every statement go (each finalizes when its last reference goes).
    func removeAll() {
        for i in 0..<count { statements[i].release() }
        count = 0
    }

    /// A literal's address: two literals at one address are the same text (the linker merges
    /// equal literals, and a literal that is the tail of another starts at another address).
    /// A literal of one Unicode scalar is held as the scalar, not as a pointer (`utf8Start`
    /// would trap): no SQL is one, but its key is the scalar's value below zero, where no
    /// address is.
    @inline(__always)
    private static func key(_ sql: StaticString) -> Int {
        sql.hasPointerRepresentation ? Int(bitPattern: sql.utf8Start) : -1 - Int(sql.unicodeScalar.value)
    }

    private func grow() {
        let larger = capacity * 2
        let newKeys = UnsafeMutablePointer<Int>.allocate(capacity: larger)
        let newStatements = UnsafeMutablePointer<Unmanaged<SQLiteStatement>>.allocate(capacity: larger)
        newKeys.moveInitialize(from: keys, count: count)
        newStatements.moveInitialize(from: statements, count: count)
        keys.deallocate()
        statements.deallocate()
        keys = newKeys
        statements = newStatements
        capacity = larger
    }
}
