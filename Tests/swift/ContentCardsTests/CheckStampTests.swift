import Foundation
import Testing
@testable import ContentCards
import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// Cold start: a clean close stamps the store (`CheckStamp`) and the next open skips
/// `PRAGMA quick_check` only while nothing has touched the file since; the WAL and -shm files
/// stay between opens. Real stores in private temporary directories.
@Suite(.serialized) struct CheckStampTests {
    let wire = (0..<200).map { Fixtures.wire(String(format: "card-%04d", $0), extra: "\"e\":{\"pad\":\"\(String(repeating: "y", count: 120))\"}") }

    func makeStore(_ dir: String) throws {
        let c = try makeController(storage: dir)
        try c.apply(Fixtures.payload(wire, full: true))
        c.close()
    }

    /// Opens the store, returns whether that open ran the full check and how many cards it had.
    func reopen(_ dir: String) throws -> (checked: Bool, cards: Int) {
        let c = try makeController(storage: dir)
        defer { c.close() }
        return (try openStore(c).ranQuickCheck, try c.cards().count)
    }

    func stampPath(_ dir: String) -> String { dir + "/contentcards.sqlite-checked" }

    @Test func aCleanCloseStampsTheStoreAndTheNextOpenSkipsTheCheck() throws {
        let dir = Fixtures.temporaryDirectory("stamp")
        defer { Fixtures.removeTree(dir) }
        try makeStore(dir)
        #expect(FileManager.default.fileExists(atPath: stampPath(dir)))
        var st = stat()
        #expect(lstat(stampPath(dir), &st) == 0 && st.st_mode & 0o777 == 0o600)
        let (checked, cards) = try reopen(dir)
        #expect(!checked)
        #expect(cards == 200)
        // And again: a close that wrote nothing leaves the same stamp.
        #expect(try reopen(dir) == (false, 200))
    }

    @Test func anyWriteToTheFileBringsTheCheckBack() throws {
        let dir = Fixtures.temporaryDirectory("stamp-touch")
        defer { Fixtures.removeTree(dir) }
        try makeStore(dir)
        let path = dir + "/contentcards.sqlite"
        // The same bytes written again: the content is as it was, the change time is not.
        let fd = open(path, O_RDWR)
        var page = [UInt8](repeating: 0, count: 4096)
        #expect(pread(fd, &page, 4096, 4096) == 4096)
        #expect(pwrite(fd, page, 4096, 4096) == 4096)
        close(fd)
        #expect(try reopen(dir) == (true, 200))
        // That open checked the file whole and stamped it again at its close.
        #expect(try reopen(dir) == (false, 200))
        // Only the times moved (touch): checked in full.
        #expect(utimes(path, nil) == 0)
        #expect(try reopen(dir) == (true, 200))
        // A store put back from a copy (a restore: another inode, the stamp's file beside it).
        let copy = dir + "/copy"
        #expect(rename(path, copy) == 0)
        #expect((try? FileManager.default.copyItem(atPath: copy, toPath: path)) != nil)
        unlink(copy)
        #expect(try reopen(dir) == (true, 200))
    }

    @Test func aWALWithFramesIsNeverTrusted() throws {
        let dir = Fixtures.temporaryDirectory("stamp-wal")
        defer { Fixtures.removeTree(dir) }
        try makeStore(dir)
        let writer = try makeController(storage: dir)
        defer { writer.close() }
        try writer.logImpression(cardID: "card-0001")
        var st = stat()
        #expect(lstat(dir + "/contentcards.sqlite-wal", &st) == 0 && st.st_size > 0)
        #expect(try reopen(dir) == (true, 200))
    }

    @Test func aStampThatIsNotAPrivateFileOfThisUserIsIgnored() throws {
        let dir = Fixtures.temporaryDirectory("stamp-odd")
        defer { Fixtures.removeTree(dir) }
        try makeStore(dir)
        let stamp = stampPath(dir)
        // Writable by others: not trusted (it is rewritten, private, at the next close).
        #expect(chmod(stamp, 0o666) == 0)
        #expect(try reopen(dir) == (true, 200))
        var st = stat()
        #expect(lstat(stamp, &st) == 0 && st.st_mode & 0o777 == 0o600)
        // A symbolic link to a stamp that would match: never followed, not even to write it.
        let real = dir + "/elsewhere"
        #expect(rename(stamp, real) == 0)
        #expect(symlink(real, stamp) == 0)
        #expect(try reopen(dir) == (true, 200))
        #expect(lstat(stamp, &st) == 0 && st.st_mode & S_IFMT == S_IFLNK)
        // A FIFO (or a directory): not read, not written, and neither blocks an open or a close.
        unlink(stamp)
        #expect(mkfifo(stamp, 0o600) == 0)
        #expect(try reopen(dir) == (true, 200))
        #expect(lstat(stamp, &st) == 0 && st.st_mode & S_IFMT == S_IFIFO)
        unlink(stamp)
        #expect(mkdir(stamp, 0o700) == 0)
        #expect(try reopen(dir) == (true, 200))
        rmdir(stamp)
        // Garbage, and a stamp cut short: not a match.
        unlink(stamp)
        #expect(FileManager.default.createFile(atPath: stamp, contents: Data("contentcards-checked 1 1".utf8),
                                               attributes: [.posixPermissions: 0o600]))
        #expect(try reopen(dir) == (true, 200))
    }

    @Test func corruptionReportedLaterRemovesTheStampAndTheNextOpenSaysDamaged() throws {
        let dir = Fixtures.temporaryDirectory("stamp-corrupt")
        defer { Fixtures.removeTree(dir) }
        try makeStore(dir)
        let c = try makeController(storage: dir)
        #expect(try openStore(c).ranQuickCheck == false)
        // The cards table's root page zeroed behind the open controller's back.
        let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        let s = try db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'cards'")
        let root = try s.step() ? Int(s.int(0)) : 0
        s.reset()
        let fd = open(dir + "/contentcards.sqlite", O_WRONLY)
        let zeros = [UInt8](repeating: 0, count: 4096)
        #expect(pwrite(fd, zeros, 4096, off_t((root - 1) * 4096)) == 4096)
        close(fd)
        // SQLite keeps the pages it read (in WAL mode the file changes only through its own
        // checkpoints): its cache is emptied so that the next write reads the page again.
        if let handle = c.store?.db.handle { sqlite3_db_release_memory(handle) }
        // The controller's next write reads that page: SQLite says corrupt.
        #expect(throws: ContentCardsError.self) { try c.logImpression(cardID: "card-0100") }
        #expect(!FileManager.default.fileExists(atPath: stampPath(dir)))
        c.close()
        db.close()
        #expect(!FileManager.default.fileExists(atPath: stampPath(dir)))
        do {
            _ = try makeController(storage: dir)
            Issue.record("a damaged store opened")
        } catch {
            #expect(error.message.contains("damaged"), "\(error.message)")
        }
    }

    /// A damage report on one connection holds for every connection: another controller on
    /// the same store that never read the damaged page, closing last and cleanly, stamped the
    /// file as whole and kept a feed from it (the next open skipped the check and was served
    /// from the copy). A later open whose check finds the store whole answers the report.
    @Test func aDamageReportOnOneConnectionHoldsForTheOthers() throws {
        let dir = Fixtures.temporaryDirectory("stamp-mark")
        defer { Fixtures.removeTree(dir) }
        try makeStore(dir)
        let x = try makeController(storage: dir), y = try makeController(storage: dir)
        _ = try openStore(x)
        let store = try openStore(y)
        store.db.note(SQLITE_CORRUPT)       // as when y's read met a damaged page
        #expect(FileManager.default.fileExists(atPath: DamageMark.path(of: dir + "/contentcards.sqlite")))
        y.close()
        x.close()
        #expect(!FileManager.default.fileExists(atPath: stampPath(dir)))
        #expect(!FileManager.default.fileExists(atPath: dir + "/contentcards.sqlite-feed"))
        usleep(100_000)     // the mark well before the next check (the file system's coarse clock)
        #expect(try reopen(dir) == (checked: true, cards: 200))     // whole after all: the mark goes
        #expect(!FileManager.default.fileExists(atPath: DamageMark.path(of: dir + "/contentcards.sqlite")))
        #expect(try reopen(dir) == (checked: false, cards: 200))    // and the next close stamped it
    }

    @Test func theWALAndSharedMemoryFilesStayBetweenOpensAndTheWALIsEmptied() throws {
        let dir = Fixtures.temporaryDirectory("stamp-persist")
        defer { Fixtures.removeTree(dir) }
        try makeStore(dir)
        var st = stat()
        #expect(lstat(dir + "/contentcards.sqlite-wal", &st) == 0 && st.st_size == 0)
        #expect(lstat(dir + "/contentcards.sqlite-shm", &st) == 0 && st.st_mode & 0o777 == 0o600)
        // A second process's view: a plain SQLite connection reads every card from the file.
        let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        defer { db.close() }
        let s = try db.prepare("SELECT COUNT(*) FROM cards")
        #expect(try s.step() && s.int(0) == 200)
        s.reset()
    }

    /// A close that finds another connection in a write transaction keeps no copy and does
    /// not wait for it: the checkpoint and the write lock the copy needs each waited the 5 s
    /// busy timeout, the controller's lock held (a close took 10 s).
    @Test func aCloseBesideAWriterKeepsNoCopyAndDoesNotWait() throws {
        let dir = Fixtures.temporaryDirectory("kept-busy")
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(storage: dir)
        try c.apply(Fixtures.payload([Fixtures.wire("a"), Fixtures.wire("b")], full: true))
        let writer = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        defer { writer.close() }
        try writer.execute("BEGIN IMMEDIATE")
        let start = monotonicSeconds()
        c.close()
        let took = monotonicSeconds() - start
        try writer.execute("ROLLBACK")
        #expect(took < 2.5, "the close took \(took) s")
        #expect(access(KeptFeed.path(of: dir + "/contentcards.sqlite"), F_OK) != 0)
    }

    /// The kept feed beside the stamp is 0600 whatever the umask: under 0477 it was made 0200,
    /// which its own reader could not open (it was never served). In a child process: a
    /// process's umask is its every thread's.
    @Test func theKeptFeedIsPrivateAndReadableUnderAnyUmask() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let config = #"{"userId":"u-1","refreshTokens":0,"storagePath":"\#(dir)","source":{"file":"\#(Fixtures.sampleFeedPath)"}}"#
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", #"umask 0477 && exec "$0" feed "$1" > /dev/null"#, Tool.path, config]
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        var st = stat()
        #expect(lstat(dir + "/contentcards.sqlite-feed", &st) == 0 && st.st_mode & 0o7777 == 0o600)
    }
}
