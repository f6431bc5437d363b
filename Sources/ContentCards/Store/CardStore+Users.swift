import CSQLite
/// A user's whole footprint in the store: what `export_user` reads and `forget_user` erases
/// (docs/BEHAVIOUR.md, "Forgetting and exporting a user").
extension CardStore {
    /// What an erasure removed.
    struct Erasure {
        var cards = 0
        var dismissals = 0
        var events = 0
        var syncState = false
        /// The WAL was checkpointed and cut to nothing: no page of the user's left there.
        var walTruncated = false
        /// Why the store could not be rewritten after the rows were deleted (`VACUUM`: busy
        /// past the timeout, a full disk); nil when it was.
        var compactionFailure: String?
    }

    /// The user's events in the outbox, oldest first.
    func events(of user: String) throws(StoreError) -> [Event] {
        let s = try statement("SELECT id, type, card_id, class_type, user_id, time FROM events WHERE user_id = ? ORDER BY seq")
        defer { s.reset() }
        try s.bind(1, user)
        var events: [Event] = []
        while try s.step() {
            guard let id = s.text(0), let kind = s.text(1).flatMap(Event.Kind.init(rawValue:)) else { continue }
            events.append(Event(id: id, kind: kind, cardID: s.text(2), classType: s.text(3), userID: s.text(4) ?? "", time: s.double(5)))
        }
        return events
    }

    /// Removes every row of `user` so that no byte of it can be recovered from the store's
    /// files: the deletion runs with `secure_delete` (freed cells and pages are zeroed), the
    /// database is then rewritten whole (`VACUUM`: no free page, no slack of an earlier
    /// version of a page keeps old bytes), and the WAL, which holds the earlier images of the
    /// pages, is checkpointed and truncated. `walTruncated` is false when another connection
    /// (another process) reads an older snapshot and keeps the WAL from being reset.
    func erase(user: String) throws(StoreError) -> Erasure {
        var erased = Erasure()
        // The kept feed holds the current user's cards (KeptFeed.swift): gone first, whoever
        // is forgotten (the next clean close writes the feed that is left).
        if !isInMemory { KeptFeedFile.remove(store: location) }
        try db.execute("PRAGMA secure_delete=ON")
        defer { try? db.execute("PRAGMA secure_delete=OFF") }
        try db.transaction { () throws(StoreError) in
            // An in-memory store has the outbox alone (`createSchema4`); the controller
            // forgets the rest, which it holds.
            if !isInMemory {
                erased.cards = try deleteRows("DELETE FROM cards WHERE user_id = ?", user)
                erased.dismissals = try deleteRows("DELETE FROM dismissals WHERE user_id = ?", user)
                erased.syncState = try deleteRows("DELETE FROM cursors WHERE user_id = ?", user) > 0
                erased.syncState = try deleteRows("DELETE FROM sync_state WHERE user_id = ?", user) > 0 || erased.syncState
            }
            erased.events = try deleteRows("DELETE FROM events WHERE user_id = ?", user)
        }
        // The cached statements hold no transaction, but VACUUM needs none to be running.
        statements.forEach { _ = $0.reset() }
        if !isInMemory {
            // The rows are gone (committed), their bytes zeroed (`secure_delete`); rewriting
            // the file takes its free pages away too. A failure here is the receipt's to say,
            // not thrown: thrown, the controller took the erase for one that had not happened
            // (a refresh in flight merged the user's cards back, the token and images stayed).
            do throws(StoreError) { try db.execute("VACUUM") } catch { erased.compactionFailure = error.message }
            erased.walTruncated = checkpointer.map { $0.exclusive { checkpointTruncating() } } ?? checkpointTruncating()
            // And again: another process's close may have kept a feed before the erase began.
            KeptFeedFile.remove(store: location)
        }
        return erased
    }

    private func deleteRows(_ sql: String, _ user: String) throws(StoreError) -> Int {
        let s = try db.prepare(sql)
        try s.bind(1, user)
        _ = try s.step()
        return Int(sqlite3_changes(db.handle))
    }

    /// `PRAGMA wal_checkpoint(TRUNCATE)`: true when every frame went into the database and the
    /// WAL file was cut to zero bytes.
    private func checkpointTruncating() -> Bool {
        guard let s = try? db.prepare("PRAGMA wal_checkpoint(TRUNCATE)"), (try? s.step()) == true else { return false }
        // (busy, frames in the WAL, frames checkpointed): busy 0 and the WAL emptied.
        return s.int(0) == 0 && s.int(1) <= 0
    }
}
