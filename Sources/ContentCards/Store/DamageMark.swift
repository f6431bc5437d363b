/// The store's damage mark, `contentcards.sqlite-damaged`: written when SQLite first tells a
/// connection that the file is corrupt, in any process. While it stands the store has no
/// stamp (`CheckStamp.current` is nil), so no connection stamps it at its close or keeps a
/// feed beside it, and the next open checks the whole file and says what is damaged,
/// whichever connection closes last.
///
/// Why a file: the report was a flag of the connection that saw it. Another connection on the
/// same store (another controller, another process) that never read the damaged page then
/// closed cleanly, stamped the damaged file as whole and kept a feed from it: the next opens
/// were served from the copy and skipped the check.
///
/// It is removed by an open whose full check (`PRAGMA quick_check`) found the store whole and
/// started after the mark was written (a little after: the file system's clock is the coarse
/// one), so a mark written during that check stays.
enum DamageMark {
    static func path(of store: String) -> String { store + "-damaged" }

    /// Writes the mark (again: its time is the report's). Failures are ignored: the stamp is
    /// removed too (`SQLiteDatabase.note`), as before the mark.
    static func set(_ store: String) {
        // O_NONBLOCK: a FIFO put at the path must not block (fstat then refuses it).
        let fd = open(path(of: store), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return }
        let text = Array("contentcards: SQLite reported this store damaged; the next open checks it\n".utf8)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        _ = futimens(fd, nil)    // now, also when the text was there already
    }

    /// Whether a mark stands beside `store` (anything at its path counts: a mark the library
    /// cannot read is still a mark).
    static func stands(_ store: String) -> Bool {
        var st = stat()
        return lstat(path(of: store), &st) == 0 || errno != ENOENT
    }

    /// The wall-clock time an open's full check starts at, for `clear`.
    static func checkStart() -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now
    }

    /// Removes a mark written well before `checkStart` (the check that began then found the
    /// store whole); a newer one stays.
    static func clear(_ store: String, checkedSince checkStart: timespec) {
        var st = stat()
        guard lstat(path(of: store), &st) == 0 else { return }
        let written = Platform.modificationTime(st)
        let margin: Int64 = 50_000_000    // ns: the file system's coarse clock, and its ticks
        let writtenNs = Int64(written.seconds) &* 1_000_000_000 &+ Int64(written.nanoseconds)
        let startNs = Int64(checkStart.tv_sec) &* 1_000_000_000 &+ Int64(checkStart.tv_nsec)
        if writtenNs < startNs &- margin { unlink(path(of: store)) }
    }
}
