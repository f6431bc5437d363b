import Foundation
import Testing
@testable import ContentCards

/// Events survive a kill of the process at any point, and two processes share a store safely.
@Suite(.serialized) struct DurabilityTests {
    func config(_ dir: String, user: String = "crash") -> String {
        #"{"userId":"\#(user)","storagePath":"\#(dir)","refreshTokens":0,"source":{"file":"\#(Fixtures.sampleFeedPath)"}}"#
    }

    /// Reads "logged <id>" lines until the process ends or `count` lines came.
    func readLogged(_ pipe: Pipe, until count: Int? = nil) -> [String] {
        var buffer = Data()
        var ids: [String] = []
        while count.map({ ids.count < $0 }) ?? true {
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            while let nl = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...nl)
                if line.hasPrefix("logged ") { ids.append(String(line.dropFirst(7))) }
            }
        }
        return ids
    }

    func storedEventIDs(_ dir: String) throws -> [String] {
        let store = try CardStore(directory: dir)
        defer { store.close() }
        return try store.pendingEvents(limit: 1_000_000, maxBytes: Int.max).map(\.event.id)
    }

    /// One logging thread, and 4 at once (their calls sharing transactions: group commit).
    @Test(arguments: [1, 4]) func killedAtRandomPointsLosesNoReturnedEvent(threads: Int) throws {
        let dir = Fixtures.temporaryDirectory("crash")
        defer { Fixtures.removeTree(dir) }
        var confirmed: [String] = []
        // 8 rounds in the test run; `make stress` sets CC_CRASH_ROUNDS to hundreds.
        let rounds = Int(ProcessInfo.processInfo.environment["CC_CRASH_ROUNDS"] ?? "") ?? 8
        for round in 0..<rounds {
            let (process, pipe) = try Tool.start(["log-loop", config(dir), "100000", "\(threads)"])
            // Let it log a random number of events, then kill it mid-flight.
            let target = Int.random(in: 1...60)
            confirmed += readLogged(pipe, until: target)
            usleep(UInt32.random(in: 0...3000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            // Whatever it printed after our read and before dying was also returned: keep it.
            confirmed += readLogged(pipe)
            #expect(process.terminationReason == .uncaughtSignal, "round \(round)")
        }
        let stored = try storedEventIDs(dir)
        let missing = Set(confirmed).subtracting(stored)
        #expect(missing.isEmpty, "\(missing.count) events whose logging call returned are missing")
        #expect(Set(stored).count == stored.count)
        #expect(confirmed.count > rounds)

        // Delivery then sends each exactly once.
        let server = try ReferenceServer()
        let c = try ContentCardsController(json: #"{"userId":"crash","storagePath":"\#(dir)","events":{"url":"\#(server.url)"},"eventFlushIntervalSeconds":0,"eventBatchSize":37}"#)
        try c.flushEvents(timeout: 30)
        let received = try server.events().compactMap { $0["id"]?.stringValue }
        #expect(received.count == stored.count)
        #expect(Set(received) == Set(stored))
        #expect(try c.pendingEvents() == 0)
        print("crash loop, \(threads) thread(s): \(rounds) kills, \(confirmed.count) events confirmed by their logging call, \(stored.count) in the store, \(missing.count) missing, \(received.count) delivered, \(received.count - Set(received).count) duplicates")
    }

    @Test func twoProcessesOnOneStore() throws {
        let dir = Fixtures.temporaryDirectory("shared")
        defer { Fixtures.removeTree(dir) }
        let a = try Tool.start(["log-loop", config(dir), "300"])
        let b = try Tool.start(["log-loop", config(dir), "300"])
        let idsA = readLogged(a.1)
        let idsB = readLogged(b.1)
        a.0.waitUntilExit()
        b.0.waitUntilExit()
        #expect(a.0.terminationStatus == 0 && b.0.terminationStatus == 0)
        #expect(idsA.count == 300 && idsB.count == 300)
        let stored = try storedEventIDs(dir)
        #expect(Set(stored) == Set(idsA + idsB))
        let db = try SQLiteDatabase(path: dir + "/contentcards.sqlite")
        let check = try db.prepare("PRAGMA integrity_check")
        #expect(try check.step() && check.text(0) == "ok")
        let c = try ContentCardsController(json: config(dir))
        #expect(try c.counts().unviewed == 0)   // both processes logged every card's impression
    }
}
