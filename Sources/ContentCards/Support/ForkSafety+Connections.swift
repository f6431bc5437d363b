import CSQLite

/// The process's open SQLite connections, so that a child of fork() closes the ones it
/// inherited before it uses SQLite itself.
///
/// SQLite keeps, per process, one record of each open file's locks, shared by every
/// connection to that file: a connection asks the kernel for a lock only when no other
/// connection of the process holds it already. A child inherits that record from its parent
/// (every WAL store's SHARED lock, a reader's lock in the WAL index when a statement was
/// between two steps), but not the kernel's locks it stands for: fcntl locks belong to the
/// process that took them. So a connection the child opened to a store its parent had open
/// found the locks "held" and took none: it read while the parent's checkpoints restarted the
/// WAL under it (Tests/c/test_fork.c, one run in twenty: "disk I/O error", a store reported
/// damaged), and the parent could have emptied the WAL of a child still writing to it.
///
/// Closing the inherited connections empties that record. It is done at the child's first
/// use of SQLite (`beforeUse`: a new connection, a store file's sum), not in the fork handler:
/// a child that only execs then runs no SQLite at all, and one whose host thread was inside a
/// shared SQLite at the fork hangs no sooner than its own SQLite use would. Nothing reaches a
/// store: no checkpoint on close (so no WAL is written back, cut or removed; a connection
/// that refuses the setting is left open), and the statements are finalized first, which only
/// drops the child's copy of their locks. The `SQLiteDatabase` and `SQLiteStatement` objects
/// of the parent's generation never touch their handles again (`isInherited`).
extension ForkSafety {
    /// The connections and the fork generation that opened each, in fixed storage read by
    /// index (no Swift collection: see `slots`). Grown and read under the registry lock.
    nonisolated(unsafe) private static var connections = UnsafeMutablePointer<(OpaquePointer, UInt64)>.allocate(capacity: 16)
    nonisolated(unsafe) private static var connectionCapacity = 16
    nonisolated(unsafe) private static var connectionCount = 0

    /// Called inside an SQLite section before this process uses SQLite (a new connection, a
    /// store file's sum): installs the fork handlers, and in a child of fork() closes the
    /// connections it inherited (see the type's comment).
    package static func beforeUse() {
        install()
        withRegistry {
            var i = 0
            while i < connectionCount {
                let (db, opened) = connections[i]
                guard opened != generation else { i += 1; continue }
                if cc_sqlite_no_checkpoint_on_close(db, 1) == SQLITE_OK {
                    while let statement = sqlite3_next_stmt(db, nil) { sqlite3_finalize(statement) }
                    _ = sqlite3_close_v2(db)
                }
                connectionCount -= 1
                connections[i] = connections[connectionCount]
            }
        }
    }

    /// Records a connection just opened, inside the SQLite section that opened it.
    package static func opened(_ db: OpaquePointer) {
        withRegistry {
            if connectionCount == connectionCapacity {
                let grown = UnsafeMutablePointer<(OpaquePointer, UInt64)>.allocate(capacity: connectionCapacity * 2)
                grown.moveInitialize(from: connections, count: connectionCount)
                connections.deallocate()
                connections = grown
                connectionCapacity *= 2
            }
            (connections + connectionCount).initialize(to: (db, generation))
            connectionCount += 1
        }
    }

    /// Forgets a connection of this generation, inside the SQLite section that closes it (so
    /// that no fork comes between: the child would inherit it unrecorded).
    package static func closing(_ db: OpaquePointer) {
        withRegistry {
            var i = 0
            while i < connectionCount && connections[i].0 != db { i += 1 }
            guard i < connectionCount else { return }
            connectionCount -= 1
            connections[i] = connections[connectionCount]
        }
    }
}
