import Foundation
import Testing
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

/// The kept feed (docs/BEHAVIOUR.md, "The kept feed"): a clean close leaves the visible feed
/// beside the store, and a later open serves the unfiltered feed and counts from it without
/// opening SQLite, byte for byte what the store gives, and only while the store file is the
/// one it was written for. Real stores in private temporary directories, real processes' time.
@Suite(.serialized) struct KeptFeedTests {
    let wire = (0..<120).map {
        Fixtures.wire(String(format: "card-%04d", $0), type: $0 % 3 == 0 ? "captioned_image" : "short_news",
                      created: 1_763_700_000 + Int64($0 % 7),
                      extra: #""e":{"class_type":"\#($0 % 2 == 0 ? "home_tile" : "coupon")","n":"\#($0)"}"#)
    }

    /// A store of the cards, closed cleanly; what its feed, indexed feed and counts were.
    func makeStore(_ dir: String, extra: [String] = [], clock: ManualClock = ManualClock()) throws
        -> (json: String, indexed: [UInt8], counts: FeedCounts) {
        let c = try makeController(clock: clock, storage: dir)
        try c.apply(Fixtures.payload(wire + extra, full: true))
        _ = try c.logImpression(cardID: "card-0003")
        let seen = (try c.cardsJSON(), indexed(c), try c.counts())
        c.close()
        return seen
    }

    /// The store file's times older than the kept feed requires (`KeptFeed.settled`).
    func settle() { usleep(useconds_t(KeptFeed.settled * 1.5 * 1e6)) }

    /// The indexed feed's text, NUL and offsets, as `cc_controller_feed_indexed` hands them.
    func indexed(_ c: ContentCardsController) -> [UInt8] {
        guard let got = try? c.cardsJSONMallocedIndexed() else { return [] }
        defer { free(got.text) }
        var out = Array(UnsafeRawBufferPointer(start: got.text, count: got.length))
        for i in 0...got.count { withUnsafeBytes(of: got.offsets[i]) { out += $0 } }
        return out
    }

    func isDeferred(_ c: ContentCardsController) -> Bool { c.lock.withLock { c.deferred != nil && c.store == nil } }

    @Test func aSettledReopenServesTheFeedByteForByteWithoutOpeningTheStore() throws {
        let dir = Fixtures.temporaryDirectory("kept")
        defer { Fixtures.removeTree(dir) }
        let before = try makeStore(dir)
        #expect(FileManager.default.fileExists(atPath: dir + "/contentcards.sqlite-feed"))
        settle()
        let c = try makeController(storage: dir)
        defer { c.close() }
        #expect(isDeferred(c))
        #expect(try c.cardsJSON() == before.json)
        #expect(indexed(c) == before.indexed)
        #expect(try c.counts() == before.counts)
        #expect(try c.unviewedCount() == before.counts.unviewed)
        #expect(isDeferred(c))            // served from the copy, nothing opened
        // A filtered read needs the cards: the store opens, and reads the same.
        #expect(try c.cards(ClassTypeFilter(["coupon"])).count == 60)
        #expect(!isDeferred(c))
        #expect(try c.cardsJSON() == before.json)
        #expect(indexed(c) == before.indexed)
        #expect(try c.counts() == before.counts)
    }

    @Test func aStoreWhoseTimesAreNotSettledIsOpened() throws {
        // A file written in the last clock ticks may be written again without its times
        // moving: the copy is not trusted then. The file's modification time is set into the
        // future (so it stays unsettled however slow the machine) and the copy's stamp made the
        // file's, so that the times are the only reason left.
        let dir = Fixtures.temporaryDirectory("kept-unsettled")
        defer { Fixtures.removeTree(dir) }
        let before = try makeStore(dir)
        let store = dir + "/contentcards.sqlite"
        func setModified(_ offset: Int) throws {
            var times = [timespec(tv_sec: time(nil) + offset, tv_nsec: 0), timespec(tv_sec: time(nil) + offset, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, store, &times, 0) == 0)
            let stamp = try #require(CheckStamp.current(of: store))
            try rewriteKept(dir) { bytes in
                let n = Int(bytes[96..<104].withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
                var length = UInt64(stamp.utf8.count).littleEndian
                bytes.replaceSubrange(104..<104 + n, with: Array(stamp.utf8))
                withUnsafeBytes(of: &length) { bytes.replaceSubrange(96..<104, with: $0) }
            }
            settle()
        }
        try setModified(10)
        let c = try makeController(storage: dir)
        #expect(!isDeferred(c))
        #expect(try c.cardsJSON() == before.json)
        c.close()       // its close found the times unsettled: no copy
        let left = FileManager.default.fileExists(atPath: dir + "/contentcards.sqlite-feed") ? try keptFlags(dir) : 0
        #expect(left == 0)
        // The control: the same with the time in the past is served.
        _ = try makeStore(dir)
        try setModified(-10)
        let served = try makeController(storage: dir)
        defer { served.close() }
        #expect(isDeferred(served))
        #expect(try served.cardsJSON() == before.json)
    }

    @Test func everyCallThatIsNotAnUnfilteredReadOpensTheStoreFirst() throws {
        let dir = Fixtures.temporaryDirectory("kept-calls")
        defer { Fixtures.removeTree(dir) }
        // changeUser last: the copy its close leaves is the other user's.
        let calls: [(String, (ContentCardsController) throws -> Void)] = [
            ("logImpression", { _ = try $0.logImpression(cardID: "card-0007") }),
            ("logClick", { _ = try $0.logClick(cardID: "card-0008") }),
            ("logDismissal", { _ = try $0.logDismissal(cardID: "card-0009") }),
            ("logFeedDisplayed", { _ = try $0.logFeedDisplayed() }),
            ("markRead", { _ = try $0.markRead(cardID: "card-0011") }),
            ("markAllRead", { _ = try $0.markAllRead() }),
            ("card", { _ = try $0.card(id: "card-0012") }),
            ("cards", { _ = try $0.cards() }),
            ("filtered counts", { _ = try $0.counts(ClassTypeFilter(["coupon"])) }),
            ("apply", { _ = try $0.apply(Fixtures.payload([Fixtures.wire("new-card")])) }),
            ("pendingEvents", { _ = try $0.pendingEvents() }),
            ("exportUser", { _ = try $0.exportUser() }),
            ("subscribe", { _ = try $0.subscribe({ _ in }) }),
            ("diagnostics", { _ = $0.diagnostics() }),
            ("changeUser", { try $0.changeUser("u-2") }),
        ]
        _ = try makeStore(dir)
        for (name, call) in calls {
            settle()
            // A reference: the same call on a controller that opened the store the usual way.
            let c = try makeController(storage: dir)
            #expect(isDeferred(c), "\(name): the open was not deferred")
            try call(c)
            #expect(!isDeferred(c), "\(name) did not open the store")
            let after = (try c.cardsJSON(), try c.counts())
            c.close()
            // What the call left is what the next open reads, from the store or the copy.
            settle()
            let reopened = try makeController(storage: dir, user: name == "changeUser" ? "u-2" : "u-1")
            #expect(isDeferred(reopened), "\(name): no copy after the close")
            #expect(try reopened.cardsJSON() == after.0, "\(name)")
            #expect(try reopened.counts() == after.1, "\(name)")
            reopened.close()
        }
    }

    @Test func aCloseWithNothingWrittenLeavesTheCopyAsItIs() throws {
        let dir = Fixtures.temporaryDirectory("kept-unchanged")
        defer { Fixtures.removeTree(dir) }
        let before = try makeStore(dir)
        settle()
        let c = try makeController(storage: dir)
        #expect(isDeferred(c))
        #expect(try c.cards().count == before.counts.total)     // opens the store, writes nothing
        #expect(!isDeferred(c))
        let kept = dir + "/contentcards.sqlite-feed"
        var first = stat(), after = stat()
        #expect(lstat(kept, &first) == 0)
        c.close()
        #expect(lstat(kept, &after) == 0)
        #expect(first.st_ino == after.st_ino && first.st_mtim.tv_nsec == after.st_mtim.tv_nsec)
        settle()
        let again = try makeController(storage: dir)
        defer { again.close() }
        #expect(isDeferred(again))
        #expect(try again.cardsJSON() == before.json)
    }

    @Test func aWriteByAnotherControllerIsSeenAtTheNextRead() throws {
        let dir = Fixtures.temporaryDirectory("kept-other")
        defer { Fixtures.removeTree(dir) }
        let before = try makeStore(dir)
        settle()
        let reader = try makeController(storage: dir)
        defer { reader.close() }
        #expect(try reader.counts() == before.counts)
        let writer = try makeController(storage: dir)
        _ = try writer.logImpression(cardID: "card-0010")
        let written = (try writer.cardsJSON(), try writer.counts())
        writer.close()
        #expect(written.1.unviewed == before.counts.unviewed - 1)
        // The store file changed under the copy: the reader opens the store and sees the write.
        #expect(try reader.counts() == written.1)
        #expect(try reader.cardsJSON() == written.0)
        #expect(!isDeferred(reader))
    }

    @Test func aCopyWithAnyByteChangedIsNotServed() throws {
        let dir = Fixtures.temporaryDirectory("kept-damaged")
        defer { Fixtures.removeTree(dir) }
        let before = try makeStore(dir)
        let kept = dir + "/contentcards.sqlite-feed"
        let size = try #require(try FileManager.default.attributesOfItem(atPath: kept)[.size] as? Int)
        for at in [3, 20, 200, size / 2, size - 3] {
            let fd = open(kept, O_RDWR)
            var byte: UInt8 = 0
            #expect(pread(fd, &byte, 1, off_t(at)) == 1)
            var flipped = byte ^ 0x20
            #expect(pwrite(fd, &flipped, 1, off_t(at)) == 1)
            settle()
            let c = try makeController(storage: dir)
            #expect(!isDeferred(c), "a byte at \(at) changed")
            #expect(try c.cardsJSON() == before.json)
            // Put back (that controller's close wrote a new copy: flip the same byte of it again
            // in the next round, from whatever it holds).
            c.close()
            close(fd)
        }
    }

    @Test func aCopyForOtherStoreBytesIsNotServed() throws {
        // A copy whose stamp is the store file's but whose sum is of other bytes (what a write
        // in the same clock tick as the copy's, on a coarse-clock file system, would leave):
        // the file's bytes are summed at the open, and the copy is not served.
        let dir = Fixtures.temporaryDirectory("kept-sum")
        defer { Fixtures.removeTree(dir) }
        let before = try makeStore(dir)
        try rewriteKept(dir) { bytes in bytes[16] ^= 1 }     // the store's sum, the first word
        settle()
        let c = try makeController(storage: dir)
        defer { c.close() }
        #expect(!isDeferred(c))
        #expect(try c.cardsJSON() == before.json)
    }

    /// Changes a kept feed's bytes and writes its check sum again, as a copy written with
    /// those values would hold it (KeptFeedFile.swift's layout).
    func rewriteKept(_ dir: String, _ change: (inout [UInt8]) -> Void) throws {
        let path = dir + "/contentcards.sqlite-feed"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        change(&bytes)
        func word(_ at: Int) -> Int { Int(bytes[at..<at + 8].withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }) }
        let identityAt = 96 + 8 + word(96)
        let bodyStart = identityAt + 8 + word(identityAt)
        let end = bytes.count - 8
        let textEnd = bodyStart + word(88)
        let sum = bytes.withUnsafeBufferPointer {
            let header = RecordSum.xxh64(UnsafeBufferPointer(rebasing: $0[16..<bodyStart]), seed: 0)
            let text = RecordSum.xxh64(UnsafeBufferPointer(rebasing: $0[bodyStart..<textEnd]), seed: header)
            return RecordSum.xxh64(UnsafeBufferPointer(rebasing: $0[textEnd..<end]), seed: text)
        }
        withUnsafeBytes(of: sum.littleEndian) { bytes.replaceSubrange(end..<bytes.count, with: $0) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }

    func keptFlags(_ dir: String) throws -> UInt8 {
        try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/contentcards.sqlite-feed")))[8]
    }

    @Test func theFirstOpenToSumTheStoreConfirmsTheCopy() throws {
        let dir = Fixtures.temporaryDirectory("kept-confirm")
        defer { Fixtures.removeTree(dir) }
        _ = try makeStore(dir)
        // Written right after the close's writes, the copy is not confirmed (set here as such
        // whatever the machine's speed made of it): the next open sums the file.
        try rewriteKept(dir) { bytes in bytes[8] = 0 }
        #expect(try keptFlags(dir) == 0)
        settle()
        let c = try makeController(storage: dir)
        #expect(isDeferred(c))
        #expect(try keptFlags(dir) == 1)
        c.close()
        // A controller that read the store and changed nothing writes a copy confirmed at once
        // (the file's times were settled when it was written).
        settle()
        let reader = try makeController(storage: dir)
        _ = try reader.cards()
        reader.close()
        #expect(try keptFlags(dir) == 1)
        settle()
        let again = try makeController(storage: dir)
        defer { again.close() }
        #expect(isDeferred(again))
    }

    @Test func theCopyAsWrittenIsServedAndTheRewriteHelperKeepsIt() throws {
        // The control for the test above: rewriting the copy with nothing changed keeps it served.
        let dir = Fixtures.temporaryDirectory("kept-control")
        defer { Fixtures.removeTree(dir) }
        _ = try makeStore(dir)
        try rewriteKept(dir) { _ in }
        settle()
        let c = try makeController(storage: dir)
        defer { c.close() }
        #expect(isDeferred(c))
    }

    @Test func anExpiryAfterTheCloseMeansTheStoreIsRead() throws {
        let dir = Fixtures.temporaryDirectory("kept-expiry")
        defer { Fixtures.removeTree(dir) }
        let clock = ManualClock()
        let expiring = Fixtures.wire("expiring", extra: #""ea":\#(Int64(clock.now()) + 60)"#)
        let before = try makeStore(dir, extra: [expiring], clock: clock)
        settle()
        // Served before the expiry; the read at the expiry opens the store and leaves the card out.
        let moving = ManualClock(clock.now() + 59)
        let early = try makeController(clock: moving, storage: dir)
        #expect(isDeferred(early))
        #expect(try early.counts() == before.counts)
        moving.advance(1)
        #expect(try early.counts().total == before.counts.total - 1)
        #expect(!isDeferred(early))
        early.close()
        settle()
        // The copy that close left (the card left out) serves later opens...
        let late = try makeController(clock: ManualClock(clock.now() + 61), storage: dir)
        #expect(isDeferred(late))
        #expect(try late.counts().total == before.counts.total - 1)
        late.close()
        settle()
        // ...but not one whose clock is before the copy was written (a clock set back): for it
        // the card has not expired yet.
        let back = try makeController(clock: ManualClock(clock.now() + 30), storage: dir)
        defer { back.close() }
        #expect(!isDeferred(back))
        #expect(try back.counts() == before.counts)
    }

    @Test func anotherUserOrOtherClassTypesAreNotServedTheCopy() throws {
        let dir = Fixtures.temporaryDirectory("kept-identity")
        defer { Fixtures.removeTree(dir) }
        _ = try makeStore(dir)
        settle()
        let other = try makeController(storage: dir, user: "u-2")
        #expect(!isDeferred(other))
        #expect(try other.cardsJSON() == "[]")
        other.close()
        settle()
        let typed = try makeController(#""knownClassTypes":["coupon"]"#, storage: dir)
        #expect(!isDeferred(typed))
        typed.close()
    }

    @Test func forgettingTheUserRemovesTheCopyAtOnce() throws {
        let dir = Fixtures.temporaryDirectory("kept-forget")
        defer { Fixtures.removeTree(dir) }
        _ = try makeStore(dir)
        settle()
        let c = try makeController(storage: dir)
        #expect(isDeferred(c))
        try c.forgetUser(pending: .discard)
        // Before any close: no byte of the user's cards left beside the store.
        #expect(!FileManager.default.fileExists(atPath: dir + "/contentcards.sqlite-feed"))
        #expect(try c.counts() == FeedCounts())
        c.close()
        settle()
        let again = try makeController(storage: dir)
        defer { again.close() }
        #expect(try again.cardsJSON() == "[]")
        #expect(try again.counts() == FeedCounts())
    }

    @Test func theIdentityNamesTheBuildTheUserAndTheClassTypes() throws {
        // The build's id is the linker's (every build of the library and the tests has one).
        let build = try #require(BuildIdentity.current)
        // As `readelf -n` shows a GNU build id: two lowercase hex digits a byte (gold's SHA-1
        // is 20 bytes, lld's default 8).
        #expect(build.utf8.count >= 16 && build.utf8.count % 2 == 0)
        #expect(build.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) })
        let all = KeptFeed.identity(user: "u", knownClassTypes: nil)
        #expect(all != nil)
        #expect(all != KeptFeed.identity(user: "u", knownClassTypes: ["any"]))
        #expect(all != KeptFeed.identity(user: "u", knownClassTypes: []))
        #expect(KeptFeed.identity(user: "u", knownClassTypes: ["a", "b"]) == KeptFeed.identity(user: "u", knownClassTypes: ["b", "a"]))
        #expect(KeptFeed.identity(user: "u1", knownClassTypes: nil) != KeptFeed.identity(user: "u", knownClassTypes: ["1"]))
    }

    @Test func readersOnManyThreadsMeetOneOpen() throws {
        let dir = Fixtures.temporaryDirectory("kept-threads")
        defer { Fixtures.removeTree(dir) }
        let before = try makeStore(dir)
        for round in 0..<5 {
            settle()
            let c = try makeController(storage: dir)
            let failures = Counter()
            let group = DispatchGroup()
            for t in 0..<6 {
                DispatchQueue.global().async(group: group) {
                    for i in 0..<40 {
                        do {
                            switch (t + i) % 4 {
                            case 0: if try c.cardsJSON() != before.json { failures.add() }
                            case 1: if try c.counts() != before.counts { failures.add() }
                            case 2: if try c.cards().count != before.counts.total { failures.add() }
                            default: if try c.counts(ClassTypeFilter(["home_tile"])).total != 60 { failures.add() }
                            }
                        } catch { failures.add() }
                    }
                }
            }
            group.wait()
            #expect(failures.value == 0, "round \(round)")
            c.close()
        }
    }
}
