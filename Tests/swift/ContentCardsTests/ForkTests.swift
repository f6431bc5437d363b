import Foundation
import Testing
@testable import ContentCards

/// fork() in a host whose threads use a controller (Controller+Fork.swift, ForkSafety.swift),
/// through the Swift API. The C API's side is `Tests/c/test_fork.c`.
@Suite(.serialized) struct ForkTests {
    /// `contentcards-tool fork-calls`: 4 threads log, refresh, apply, read and subscribe on a
    /// file store while another forks 40 times. The fork must return in the parent, and each
    /// child must find every entry point of the inherited controller refusing at once with
    /// the storage error that names fork(), within 10 s. Before: children hung in a log call
    /// (waiting for the parent's writer), in reads (the controller's lock held by a parent
    /// thread), in removing a subscriber (waiting for a parent's callback), and a `subscribe`
    /// succeeded; a fork made while a thread logged its first event hung the parent (the
    /// handler took the lock registry before the guard); and a child hung in the handler
    /// itself (iterating a Swift array: the runtime's first look-up, under a lock a parent
    /// thread held).
    @Test func aChildFindsTheInheritedControllerRefusingEveryCall() throws {
        let dir = Fixtures.temporaryDirectory("fork-calls")
        defer { Fixtures.removeTree(dir) }
        let config = #"{"userId":"fork","storagePath":"\#(dir)","refreshTokens":0,"source":{"file":"\#(Fixtures.sampleFeedPath)"}}"#
        let (process, pipe) = try Tool.start(["fork-calls", config, "40", "4"])
        // Each child is given 10 s by the tool; the whole run far less than this.
        let deadline = Date().addingTimeInterval(120)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            Issue.record("fork-calls did not end within 120 s: a fork hung in the parent")
            return
        }
        let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "\(out)")
        #expect(out.contains("forks 40: ok"), "\(out)")
    }
}
