import CSQLite

/// The process's open SQLite connections, so that a child of fork() closes the ones it
/// inherited before it opens any of its own.
///
/// SQLite keeps, per process, one record of each open file's locks, shared by every
/// connection to that file: a connection asks the kernel for a lock only when no other
/// connection of the process holds it already. A child inherits that record from its parent
/// (every WAL store's SHARED lock, a reader's lock in the WAL index when a statement was
/// between two steps), but not the kernel's locks it stands for: fcntl locks belong to the
/// process that took them. So a connection the child opened to a store its parent had open
/// found the locks "held" and took none: it read while the parent's checkpoints restarted the
/// WAL under it (tests/c/test_fork.c, one run in twenty: "disk I/O error", a store reported
/// damaged), and the parent could have emptied the WAL of a child still writing to it.
///
/// Closing the inherited connections in the child empties that record. Nothing reaches a
/// store: no checkpoint on close (so no WAL is written back, cut or removed), and the
/// statements are finalized first, which only drops the child's copy of their locks. The
/// `SQLiteDatabase` and `SQLiteStatement` objects of the parent's generation never touch
/// their handles again (`isInherited`), as before.
extension ForkSafety {
    /// The connections, in fixed storage read by index in the child handler (no Swift
    /// collection there: see `slots`). Grown under the registry lock.
    nonisolated(unsafe) private static var connections = UnsafeMutablePointer<OpaquePointer>.allocate(capacity: 16)
    nonisolated(unsafe) private static var connectionCapacity = 16
    nonisolated(unsafe) private static var connectionCount = 0

    /// Records a connection just opened (see the type's comment).
    package static func opened(_ db: OpaquePointer) {
        install()
        withRegistry {
            if connectionCount == connectionCapacity {
                let grown = UnsafeMutablePointer<OpaquePointer>.allocate(capacity: connectionCapacity * 2)
                grown.moveInitialize(from: connections, count: connectionCount)
                connections.deallocate()
                connections = grown
                connectionCapacity *= 2
            }
            (connections + connectionCount).initialize(to: db)
            connectionCount += 1
        }
    }

    /// Forgets a connection about to be closed (by its own process's generation).
    package static func closing(_ db: OpaquePointer) {
        withRegistry {
            var i = 0
            while i < connectionCount && connections[i] != db { i += 1 }
            guard i < connectionCount else { return }
            connectionCount -= 1
            connections[i] = connections[connectionCount]
        }
    }

    /// In the child handler, one thread, every SQLite call of the parent ended (the guard):
    /// closes the inherited connections without writing to their stores.
    static func closeInheritedConnections() {
        var i = 0
        while i < connectionCount {
            let db = connections[i]
            _ = cc_sqlite_no_checkpoint_on_close(db, 1)
            while let statement = sqlite3_next_stmt(db, nil) { sqlite3_finalize(statement) }
            _ = sqlite3_close_v2(db)
            i += 1
        }
        connectionCount = 0
    }
}
