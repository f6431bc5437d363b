import Foundation
import Testing
@testable import ContentCards

/// The library's log (ContentCardsLog): what a handler receives for a refresh, a refusal, a
/// delivery failure and its retry; silence by default; a handler that calls back into the
/// library. The handler is process-wide, so these tests run one at a time and look only at
/// messages about their own user or file.
@Suite(.serialized) struct LogHandlerTests {
    final class Collector: @unchecked Sendable {
        private let lock = Lock()
        private var items: [(LogLevel, String)] = []
        func add(_ level: LogLevel, _ message: String) { lock.withLock { items.append((level, message)) } }
        var messages: [(LogLevel, String)] { lock.withLock { items } }
        func texts(containing s: String) -> [String] { messages.map(\.1).filter { $0.contains(s) } }
    }

    func install(_ minLevel: LogLevel = .debug) -> Collector {
        let c = Collector()
        ContentCardsLog.setHandler(minLevel: minLevel) { level, message in c.add(level, message) }
        return c
    }

    func sampleController(user: String, tokens: Int = 0, events: Configuration.Endpoint? = nil,
                          transport: Transport? = nil) throws -> ContentCardsController {
        var config = Configuration()
        config.userID = user
        config.source = .file(path: Fixtures.sampleFeedPath)
        config.refreshTokens = tokens
        config.events = events
        config.eventFlushIntervalSeconds = 0   // delivered on flush only; a failure schedules a retry
        return try ContentCardsController(configuration: config, transport: transport)
    }

    /// A refused thread start is logged (from the timer thread, which holds no lock of any
    /// controller), and the work still runs once a thread can be had.
    /// A log handler runs as a callback (`CallbackContext`): an unsubscribe or a close it
    /// calls does not wait for subscribers on other threads (one of which may be waiting for
    /// the delivery that is logging). It ran as plain library code.
    @Test func aLogHandlerRunsAsACallback() {
        final class Seen: @unchecked Sendable { var inside: Bool?; let lock = NSLock() }
        let seen = Seen()
        ContentCardsLog.setHandler(minLevel: .debug) { _, _ in
            seen.lock.lock(); seen.inside = CallbackContext.isInsideCallback; seen.lock.unlock()
        }
        defer { ContentCardsLog.setHandler(nil) }
        ContentCardsLog.emit(.info, "a message")
        seen.lock.lock(); defer { seen.lock.unlock() }
        #expect(seen.inside == true)
    }

    @Test func aRefusedThreadStartIsLoggedAndTheWorkStillRuns() throws {
        let log = install(.warning)
        defer { ContentCardsLog.setHandler(nil) }
        let queue = WorkQueue()
        queue.refuseStartsForTesting = 1
        let ran = DispatchSemaphore(value: 0)
        queue.async { ran.signal() }
        #expect(ran.wait(timeout: .now() + 10) == .success, "the work never ran")
        #expect(!log.texts(containing: "could not be started").isEmpty, "\(log.messages)")
    }

    @Test func aRefreshFromAFileIsReported() throws {
        let log = install()
        defer { ContentCardsLog.setHandler(nil) }
        let user = "log-\(UUID().uuidString)"
        let c = try sampleController(user: user)
        defer { c.close() }
        try c.refresh()
        let started = log.texts(containing: "refresh started for user \"\(user)\"")
        #expect(started.count == 1 && started[0].contains("file \(Fixtures.sampleFeedPath)"))
        let outcome = log.texts(containing: "refresh for user \"\(user)\"")
        #expect(outcome.count == 1)
        #expect(outcome.first?.contains("added 11, updated 0, removed 0") == true)
        #expect(outcome.first?.contains("3 left out") == true)
        #expect(log.messages.contains { $0.0 == .warning && $0.1.contains("card left out of the payload (index 13, id \"bad-type\"): unknown type") })
        #expect(log.messages.contains { $0.0 == .debug && $0.1.contains("bytes from the source") })
    }

    @Test func aRateLimitRefusalIsAWarningWithItsReason() throws {
        let log = install(.warning)
        defer { ContentCardsLog.setHandler(nil) }
        let c = try sampleController(user: "log-rate-\(UUID().uuidString)", tokens: 1)
        defer { c.close() }
        try c.refresh()
        #expect(throws: ContentCardsError.self) { try c.refresh() }
        let refused = log.messages.filter { $0.1.contains("refresh refused (CC_E_RATE_LIMITED)") }
        #expect(refused.count == 1 && refused.first?.0 == .warning)
        #expect(refused.first?.1.contains("next token in") == true)
        // minLevel .warning: the info outcome of the first refresh was not delivered.
        #expect(log.messages.allSatisfy { $0.0 >= .warning })
    }

    @Test func aDeliveryFailureAndItsRetryAreReported() throws {
        let log = install(.info)
        defer { ContentCardsLog.setHandler(nil) }
        let failing = ClosureTransport { _ in .failure(ContentCardsError(.network, "connection refused (test)")) }
        let c = try sampleController(user: "log-events-\(UUID().uuidString)", events: .callback, transport: failing)
        defer { c.close() }
        try c.refresh()
        try c.logImpression(cardID: "tile-1")
        #expect(throws: ContentCardsError.self) { try c.flushEvents(timeout: 5) }
        #expect(log.messages.contains { $0.0 == .warning && $0.1.contains("event delivery failed (CC_E_NETWORK): connection refused (test); 1 events stay pending") })
        #expect(log.messages.contains { $0.0 == .info && $0.1.contains("event delivery retry in") && $0.1.contains("failed attempt 1") })
        let outbox = try c.listPendingEvents()
        #expect(outbox.pending == 1 && outbox.failedAttempts == 1 && outbox.events.first?.cardID == "tile-1")
        #expect(outbox.events.first?.kind == .impression)
    }

    @Test func silentByDefaultAndBelowTheThreshold() throws {
        ContentCardsLog.setHandler(nil)
        #expect(!ContentCardsLog.isEnabled(.error))
        let log = install(.error)
        defer { ContentCardsLog.setHandler(nil) }
        let user = "log-quiet-\(UUID().uuidString)"
        let c = try sampleController(user: user)
        defer { c.close() }
        try c.refresh()
        #expect(log.texts(containing: user).isEmpty)
        #expect(!ContentCardsLog.isEnabled(.warning) && ContentCardsLog.isEnabled(.error))
    }

    @Test func aHandlerThatCallsBackIntoTheLibraryNeitherDeadlocksNorRecurses() throws {
        let user = "log-reentrant-\(UUID().uuidString)"
        let c = try sampleController(user: user)
        defer { c.close() }
        let log = Collector()
        ContentCardsLog.setHandler(minLevel: .debug) { level, message in
            log.add(level, message)
            // Calls that would log (a refresh from inside the handler, a refused click) and
            // reads: none of it may deadlock, nor call this handler again on this thread.
            _ = try? c.counts()
            _ = try? c.logClick(cardID: "msg-2")
            _ = try? c.apply("[]")
        }
        defer { ContentCardsLog.setHandler(nil) }
        try c.refresh()
        #expect(log.texts(containing: "refresh for user \"\(user)\"").count == 1)
        #expect(log.texts(containing: "click refused").isEmpty)
        #expect(log.texts(containing: "cards applied").isEmpty)
    }
}
