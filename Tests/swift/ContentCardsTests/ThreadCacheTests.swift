import Foundation
import Testing
@testable import ContentCards

/// The library's thread cache (Sources/ContentCards/Support/Threads.swift): work reuses idle
/// threads, never waits behind work that hangs, runs exactly once, and idle threads end.
/// Each test has a cache of its own, so tests running beside it do not change its counts.
@Suite struct ThreadCacheTests {
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func add() { lock.lock(); value += 1; lock.unlock() }
        var count: Int { lock.lock(); defer { lock.unlock() }; return value }
    }

    static func waitUntil(seconds: Double = 10, _ done: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !done() {
            if Date() >= deadline { return false }
            usleep(1_000)
        }
        return true
    }

    @Test func workOneAfterAnotherReusesOneThread() {
        let cache = ThreadCache(maxIdle: 2, idleSeconds: 10)
        let ran = Counter()
        for i in 1...200 {
            #expect(cache.run { ran.add() } == 0)
            #expect(Self.waitUntil { ran.count == i })
            // The thread that ran it is idle again before the next one comes.
            #expect(Self.waitUntil { cache.idleCount == 1 })
        }
        #expect(cache.threadsStarted == 1)
    }

    @Test func workThatHangsDelaysNothing() {
        let cache = ThreadCache(maxIdle: 1, idleSeconds: 10)
        let release = DispatchSemaphore(value: 0)
        let ran = Counter()
        #expect(cache.run { release.wait() } == 0)
        for _ in 0..<5 { #expect(cache.run { ran.add() } == 0) }
        #expect(Self.waitUntil(seconds: 5) { ran.count == 5 })
        release.signal()
    }

    @Test func idleThreadsEndAfterTheirTime() {
        let cache = ThreadCache(maxIdle: 4, idleSeconds: 0.05)
        let ran = Counter()
        for _ in 0..<3 { #expect(cache.run { ran.add() } == 0) }
        #expect(Self.waitUntil { ran.count == 3 })
        #expect(Self.waitUntil(seconds: 5) { cache.idleCount == 0 })
        // And work after that starts a thread again.
        #expect(cache.run { ran.add() } == 0)
        #expect(Self.waitUntil { ran.count == 4 })
    }

    @Test func atMostMaxIdleThreadsWait() {
        let cache = ThreadCache(maxIdle: 2, idleSeconds: 10)
        let gate = DispatchSemaphore(value: 0)
        let ran = Counter()
        for _ in 0..<8 { #expect(cache.run { gate.wait(); ran.add() } == 0) }
        for _ in 0..<8 { gate.signal() }
        #expect(Self.waitUntil { ran.count == 8 })
        #expect(Self.waitUntil { cache.idleCount == 2 })
        usleep(50_000)
        #expect(cache.idleCount == 2)
        #expect(cache.threadsStarted == 8)
    }

    @Test func everyBodyRunsExactlyOnceUnderConcurrentHandOffs() {
        let cache = ThreadCache(maxIdle: 3, idleSeconds: 0.001)
        let ran = Counter()
        TestThreads.run(4) { _ in
            for _ in 0..<500 { #expect(cache.run { ran.add() } == 0) }
        }
        #expect(Self.waitUntil { ran.count == 2000 })
        usleep(20_000)
        #expect(ran.count == 2000)
    }
}

/// Event ids from the pool of random bytes: version 4 UUIDs, all different.
@Suite struct EventIDTests {
    @Test func idsAreVersion4UUIDsAndUnique() {
        let ids = (0..<20_000).map { _ in RandomEventIDs().next() }
        #expect(Set(ids).count == ids.count)
        // xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx, lower-case hex.
        let hex = Set("0123456789abcdef")
        #expect(ids.allSatisfy { id in
            let c = Array(id)
            return c.count == 36 && [8, 13, 18, 23].allSatisfy { c[$0] == "-" } && c[14] == "4"
                && "89ab".contains(c[19])
                && c.enumerated().allSatisfy { [8, 13, 18, 23].contains($0.offset) || hex.contains($0.element) }
        })
    }
}
