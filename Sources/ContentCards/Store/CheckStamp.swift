/// The stamp a clean close leaves beside a store it knows to be whole, so that the next open
/// can skip `PRAGMA quick_check` when nothing has touched the file since (docs/BEHAVIOUR.md,
/// "The store").
///
/// Why: the check reads and verifies every page of the file at every open (0.6 ms of a 5 ms
/// cold start with 1,000 cards, some 60 ms with 100,000), while what it guards against (a
/// page damaged by a crash on bad hardware, a copy without its WAL, a restore, an edit by
/// another program) always changes the file as the file system sees it. The stamp is
/// `contentcards.sqlite-checked`: the file's device, inode, size, and modification and change
/// times (to the nanosecond), written after the last connection of this controller closed.
/// The change time cannot be set back by a program, so any write to the file through the
/// file system since the stamp (a hand edit, `cp` over it, a restore, a checkpoint of another
/// process) makes it differ, and the store is checked in full again. The way git's index
/// trusts a file's stat data, with the same limit: damage that bypasses the file system (a
/// failing disk flipping bits under the file) is not seen until SQLite reads that page (the
/// cards' own check sums, `RecordSum`, still catch it in a card's record).
///
/// It is not trusted when the WAL holds frames (a crash, or another process still writing),
/// on a file system with whole-second times, when it is not a private regular file of this
/// user, or while a damage mark stands (`DamageMark`); and it is written only when this
/// connection found the store whole at open and SQLite never reported it corrupt since.
enum CheckStamp {
    static func path(of store: String) -> String { store + "-checked" }

    /// The stamp the file would have now; nil when it cannot be trusted (see the type's comment).
    static func current(of store: String) -> String? {
        // A damage report of any connection, in any process (`DamageMark`): no stamp.
        guard !DamageMark.stands(store), let before = stamp(ofFile: store) else { return nil }
        var wal = stat()
        if lstat(store + "-wal", &wal) == 0 {
            guard wal.st_mode & S_IFMT == S_IFREG, wal.st_size == 0 else { return nil }
        } else if errno != ENOENT {
            return nil
        }
        // The file again: a checkpoint of another process between the two reads (the file
        // changed, then the WAL emptied) would have paired the file before it with the empty
        // WAL after it, a state that never was: a commit in the WAL, unseen. The same stamp on
        // both sides means the file did not change while the WAL was read empty.
        guard stamp(ofFile: store) == before else { return nil }
        return before
    }

    /// The stamp text of the store file alone; nil when it is not a regular file or its times
    /// are whole seconds (an edit in the same second as the stamp would not show).
    private static func stamp(ofFile store: String) -> String? {
        var st = stat()
        guard lstat(store, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        let (m, c) = (Platform.modificationTime(st), Platform.changeTime(st))
        guard m.nanoseconds != 0 || c.nanoseconds != 0 else { return nil }
        return "contentcards-checked 1 \(st.st_dev) \(st.st_ino) \(st.st_size) "
            + "\(m.seconds).\(m.nanoseconds) \(c.seconds).\(c.nanoseconds)\n"
    }

    /// Whether the stamp beside `store` says the file is as a clean close left it after
    /// finding it whole.
    static func matches(_ store: String) -> Bool {
        guard let now = current(of: store), let stamp = saved(path(of: store)) else { return false }
        return stamp == now
    }

    /// Writes the stamp of the file as it is now; removes a stale one when the file cannot be
    /// stamped (a WAL with frames). Failures are ignored: without a stamp the next open checks
    /// the file in full, as it did before stamps.
    static func save(_ store: String) {
        let target = path(of: store)
        guard let now = current(of: store) else {
            unlink(target)
            return
        }
        if saved(target) == now { return }     // closed without a write: the same stamp
        // O_NONBLOCK: a FIFO put at the stamp's path must not block the close (nothing the
        // library does waits on a file it does not own); fstat then refuses it.
        let fd = open(target, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_uid == geteuid() else { return }
        ftruncate(fd, 0)
        fchmod(fd, 0o600)
        let bytes = Array(now.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        // A stamp cut short never matches: the next open checks in full.
        if written != bytes.count { ftruncate(fd, 0) }
    }

    /// The stamp's text, when it is a small private regular file of this user (never through
    /// a symbolic link).
    private static func saved(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)   // a FIFO never blocks
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, Files.isPrivateRegularFile(st), st.st_size > 0, st.st_size < 256 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n], as: UTF8.self)
    }
}
