import CSQLite
import Foundation
import Testing
@testable import ContentCards

/// Readers never wait for a writer: counts, feeds and card lookups answer from the last
/// published state while a merge is stuck in its store write, and see the merge once it lands.
@Suite struct ReadersTests {
    /// Another connection (as another process would) holds the store's write lock, so our
    /// apply blocks in its write (SQLite's busy wait) with the controller's writer lock held.
    @Test func readsAnswerWhileAWriteIsBlockedOnTheStore() throws {
        let dir = Fixtures.temporaryDirectory("readers")
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(storage: dir)
        try c.apply(Fixtures.payload([Fixtures.wire("a"), Fixtures.wire("b")]))
        #expect(try c.counts() == FeedCounts(total: 2, unviewed: 2, unread: 2))

        var other: OpaquePointer?
        #expect(sqlite3_open(dir + "/" + CardStore.fileName, &other) == SQLITE_OK)
        defer { sqlite3_close(other) }
        #expect(sqlite3_exec(other, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)

        let applied = Condition(), lock = Lock()
        nonisolated(unsafe) var done = false
        let writer = Thread {
            _ = try? c.apply(Fixtures.payload([Fixtures.wire("c"), Fixtures.wire("d")]))
            lock.withLock { done = true; applied.broadcast() }
        }
        writer.start()
        // Give the writer time to take its lock and block in the store; the reads below must
        // answer anyway, with the state from before the write.
        Thread.sleep(forTimeInterval: 0.3)
        for _ in 0..<100 {
            #expect(try c.counts() == FeedCounts(total: 2, unviewed: 2, unread: 2))
            #expect(try c.cards().map(\.id) == ["b", "a"])
            #expect(try c.card(id: "a").id == "a")
        }
        #expect(lock.withLock { !done }, "the write finished although the store was locked")

        #expect(sqlite3_exec(other, "ROLLBACK", nil, nil, nil) == SQLITE_OK)
        lock.withLock { while !done { applied.wait(lock, until: monotonicSeconds() + 10) } }
        #expect(try c.counts() == FeedCounts(total: 4, unviewed: 4, unread: 4))
    }

    /// Readers on three threads while a writer alternates big changes (built beside the
    /// published state and swapped in) with small ones (made in place): every read sees one
    /// whole state, never a mix (run under ThreadSanitizer by `make tsan`).
    @Test func readersDuringBigAndSmallChangesSeeWholeStates() throws {
        let c = try makeController()
        let a = Fixtures.payload((0..<2000).map { Fixtures.wire("a\($0)", created: Int64($0)) }, full: true)
        let b = Fixtures.payload((0..<1000).map { Fixtures.wire("b\($0)", created: Int64($0)) }, full: true)
        try c.apply(a)
        let stop = Lock()
        nonisolated(unsafe) var done = false
        nonisolated(unsafe) var bad = 0
        let readers = (0..<3).map { _ in
            Thread {
                while !stop.withLock({ done }) {
                    let counts = (try? c.counts()) ?? FeedCounts(total: -1)
                    let feed = (try? c.cards()) ?? []
                    if ![2000, 1000].contains(counts.total) || ![2000, 1000].contains(feed.count)
                        || Set(feed.map { $0.id.first! }).count != 1 {
                        stop.withLock { bad += 1 }
                    }
                }
            }
        }
        readers.forEach { $0.start() }
        for round in 0..<6 {
            try c.apply(round % 2 == 0 ? b : a)
            try c.logImpression(cardID: round % 2 == 0 ? "b1" : "a1")       // a small change
        }
        stop.withLock { done = true }
        Thread.sleep(forTimeInterval: 0.2)
        #expect(stop.withLock { bad } == 0)
    }

    /// A big change is built beside the published state and swapped in; small ones change it
    /// in place. Both give the same feed as a fresh controller reading the store.
    @Test func bigAndSmallChangesPublishTheSameFeedAsAReload() throws {
        let dir = Fixtures.temporaryDirectory("readers")
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(storage: dir)
        let many = (0..<3000).map { Fixtures.wire("card-\($0)", created: Int64(1_763_000_000 + $0 % 97)) }
        try c.apply(Fixtures.payload(many, full: true))
        try c.apply(Fixtures.payload([Fixtures.wire("card-5", created: 1_763_000_500), Fixtures.wire("new", created: 1)]))
        try c.logImpression(cardID: "card-7")
        _ = try? c.logDismissal(cardID: "card-9")   // refused: not dismissible
        try c.apply(Fixtures.payload(Array(many[0..<1500]) + [Fixtures.wire("other")], full: true))
        let reopened = try makeController(storage: dir)
        #expect(try c.cards().map(\.id) == reopened.cards().map(\.id))
        #expect(try c.counts() == reopened.counts())
        #expect(try c.counts(ClassTypeFilter([""])) == reopened.counts(ClassTypeFilter([""])))
        #expect(try c.counts().total == 1501)
    }
}

/// Cards of every shape (white space, unknown fields, non-string extras, escapes, local flags,
/// a long text) stored in the compact form read back as exactly the cards the controller had.
@Suite struct StoredBodyTests {
    @Test func theServersBytesReadBackAsTheSameCards() throws {
        let dir = Fixtures.temporaryDirectory("bodies")
        defer { Fixtures.removeTree(dir) }
        let c = try makeController(storage: dir)
        let payload = #"""
        {"cards":[
          { "id" : "spaced", "tp" : "short_news", "ca" : 100, "ds" : "white space\taround",
            "unknown_field": {"nested": [1, 2, {"x": null}]}, "e": {"class_type": " Home_Tile ", "n": 5, "b": true, "o": {"k": "v"}} },
          {"id":"esc\u00e9\"q","tp":"captioned_image","ca":101,"i":"https://x/i.png","tt":"T \ud83d\ude00","ds":"D\nline","ar":1.5,"v":true},
          {"id":"flags","tp":"banner_image","ca":102,"i":"https://x/b.png","d":true,"db":true,"p":true,"uw":true,"u":"https://x","ea":4102444800},
          {"id":"ctl","tp":"control","ca":103,"e":{"class_type":"coupon_code"}},
          {"id":"big","tp":"short_news","ca":104,"ds":"\#(String(repeating: "long ", count: 1200))"}
        ],"full_sync":true}
        """#
        try c.apply(payload)
        try c.logImpression(cardID: "spaced")          // re-encoded: a local flag differs
        let before = try ["spaced", "esc\u{e9}\"q", "flags", "ctl", "big"].map { try c.card(id: $0) }
        c.close()
        let reopened = try makeController(storage: dir)
        let after = try ["spaced", "esc\u{e9}\"q", "flags", "ctl", "big"].map { try reopened.card(id: $0) }
        #expect(before == after)
        #expect(after[0].viewed && after[0].classType == "home_tile" && after[0].extras["n"] == "5")
        #expect(after[0].extras["o"] == #"{"k":"v"}"#)
        #expect(after[1].title == "T 😀" && after[1].viewed)
        #expect(after[2].dismissed && after[2].pinned)
    }
}
