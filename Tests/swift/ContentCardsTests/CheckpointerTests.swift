import Foundation
import Testing
@testable import ContentCards

/// Checkpoints of a file store run on the store's own thread (Store/Checkpointer.swift), never
/// inside a logging call, and copy the WAL (which a connection that has read nothing does
/// not: its checkpoint returns at once): the WAL stays bounded, starts over after a pause, and
/// nothing logged is lost.
@Suite struct CheckpointerTests {
    /// A frame of the WAL: a page of a file store (4 KiB) and its 24-byte header.
    static let frameBytes = 4096 + 24

    @Test func checkpointsRunOffTheWritersThreadAndTheWALStaysBounded() throws {
        let dir = Fixtures.temporaryDirectory("checkpoint")
        defer { Fixtures.removeTree(dir) }
        let c = try ContentCardsController(json: #"{"userId":"u","storagePath":"\#(dir)","refreshTokens":0}"#)
        _ = try c.apply(Fixtures.payload((0..<50).map { Fixtures.wire("c\($0)") }, full: true, user: "u"))
        for i in 0..<4000 { _ = try c.logImpression(cardID: "c\(i % 50)") }
        let deadline = Date().addingTimeInterval(10)
        while (c.lock.withLock { c.store?.checkpointer?.runs ?? 0 }) == 0 && Date() < deadline { usleep(10_000) }
        let (runs, copied) = c.lock.withLock { (c.store?.checkpointer?.runs ?? 0, c.store?.checkpointer?.framesCopied ?? 0) }
        #expect(runs > 0)
        // A run that copies nothing is no checkpoint: SQLite answers a checkpoint asked of a
        // connection that has not read the file yet as one of a database not in WAL mode.
        #expect(copied > 0, "background checkpoints copied no frame")
        // Asked for once per 1,000 more frames, not at every commit past the mark: 4,000
        // impressions write some 4,000 frames (a run queued at every commit was about 2,500).
        #expect(runs <= 30, "\(runs) checkpoint runs")
        var st = stat()
        #expect(stat(dir + "/contentcards.sqlite-wal", &st) == 0)
        #expect(st.st_size <= (Int(Checkpointer.highWater) + 1000) * Self.frameBytes)
        c.close()
        let again = try ContentCardsController(json: #"{"userId":"u","storagePath":"\#(dir)","refreshTokens":0}"#)
        #expect(try again.pendingEvents() == 4000)
        again.close()
    }

    /// Logging in bursts with pauses between: each burst's checkpoint is asked for at the mark,
    /// also after the WAL started over, runs in the background and copies the WAL, which then
    /// starts over; the writer never has to copy it itself.
    @Test func burstsWithPausesAreCheckpointedInTheBackgroundOnly() throws {
        let dir = Fixtures.temporaryDirectory("checkpoint-bursts")
        defer { Fixtures.removeTree(dir) }
        let c = try ContentCardsController(json: #"{"userId":"u","storagePath":"\#(dir)","refreshTokens":0}"#)
        defer { c.close() }
        _ = try c.apply(Fixtures.payload((0..<50).map { Fixtures.wire("c\($0)") }, full: true, user: "u"))
        func state() -> (runs: Int, copied: Int, writer: Int, caughtUp: Bool) {
            c.lock.withLock {
                let k = c.store?.checkpointer
                return (k?.runs ?? 0, k?.framesCopied ?? 0, k?.writerCheckpoints ?? 0, k?.caughtUp ?? false)
            }
        }
        var runs = state().runs
        for burst in 0..<4 {
            // A frame or so a call: past the 1,000-frame mark once.
            for i in 0..<(Int(Checkpointer.frames) + 100) { _ = try c.logImpression(cardID: "c\(i % 50)") }
            // The pause: the background copies the whole WAL, also what the burst wrote after
            // the run it asked for began.
            let deadline = Date().addingTimeInterval(10)
            while !state().caughtUp && Date() < deadline { usleep(5_000) }
            #expect(state().caughtUp, "burst \(burst): the WAL was not copied in the pause")
            #expect(state().runs > runs, "burst \(burst): no background checkpoint")
            runs = state().runs
        }
        #expect(state().copied > 0)
        #expect(state().writer == 0, "the writer checkpointed itself")
        // Each burst's WAL started over after its checkpoint: the file never held two bursts.
        var st = stat()
        #expect(stat(dir + "/contentcards.sqlite-wal", &st) == 0)
        #expect(st.st_size <= (Int(Checkpointer.frames) + 300) * Self.frameBytes, "WAL of \(st.st_size) bytes")
    }

    /// An in-memory store's pages are 1 KiB (a thousand controllers in 43 MB instead of 170):
    /// SQLite ignores the setting, silently, once a table exists, so only its effect shows it.
    @Test func anInMemoryStoreHasSmallPages() throws {
        let store = try CardStore(directory: nil)
        defer { store.close() }
        #expect(try store.pragmaInt("PRAGMA page_size") == 1024)
    }

    /// The WAL that the writer's own checkpoint (at `highWater`) lets start over is reused as it
    /// is: the size limit is above it, and no call pays for cutting the file back.
    @Test func theWALSizeLimitIsAboveItsSizeAtHighWater() throws {
        let dir = Fixtures.temporaryDirectory("checkpoint-limit")
        defer { Fixtures.removeTree(dir) }
        let store = try CardStore(directory: dir)
        defer { store.close() }
        let pageSize = Int(try store.pragmaInt("PRAGMA page_size"))
        #expect(pageSize + 24 == Self.frameBytes)
        #expect(Int(try store.pragmaInt("PRAGMA journal_size_limit")) == Checkpointer.walSizeLimit)
        #expect(Checkpointer.walSizeLimit > Int(Checkpointer.highWater) * (pageSize + 24))
    }
}
