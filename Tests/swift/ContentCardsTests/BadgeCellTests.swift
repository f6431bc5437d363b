import CContentCardsABI
import CContentCardsFast
import ContentCards
@testable import ContentCardsC
import Foundation
import Testing

/// The badge counts of an in-memory controller are served from its cell (fast.c): no lock, no
/// call into Swift. Both paths give the same numbers, so only the thread's count of answers
/// served from a cell (`ccint_cell_hits_on_this_thread`, kept in debug builds) shows that the
/// fast one is taken; a filter, a file store and a closed handle take the other.
@Suite struct BadgeCellTests {
    @Test func unfilteredCountsOfAnInMemoryControllerComeFromTheCell() throws {
        var handle: OpaquePointer?
        #expect(cc_controller_open(&handle, #"{"userId":"u","refreshTokens":0}"#) == 0)
        defer { _ = cc_controller_close(handle) }
        let payload = Fixtures.payload(["a", "b", "c"].map { Fixtures.wire($0) }, full: true, user: "u")
        #expect(cc_controller_apply(nil, handle, payload) == 0)
        let before = ccint_cell_hits_on_this_thread()
        #expect(cc_controller_total_count(handle, nil) == 3)
        #expect(cc_controller_unviewed_count(handle, nil) == 3)
        var total: Int64 = 0, unviewed: Int64 = 0, unread: Int64 = 0
        #expect(cc_controller_all_counts(&total, &unviewed, &unread, handle, nil) == 0)
        #expect([total, unviewed, unread] == [3, 3, 3])
        #expect(ccint_cell_hits_on_this_thread() - before == 3)
        // A filter takes the full path.
        #expect(cc_controller_total_count(handle, #"["nothing"]"#) == 0)
        #expect(ccint_cell_hits_on_this_thread() - before == 3)
        // A logged impression is in the cell when the call returns.
        #expect(cc_controller_log_impression(handle, "a") == 0)
        #expect(cc_controller_unviewed_count(handle, nil) == 2)
        #expect(ccint_cell_hits_on_this_thread() - before == 4)
    }

    @Test func aFileStoreOrAClosedHandleTakesTheFullPath() throws {
        let dir = Fixtures.temporaryDirectory("badge-cell")
        defer { Fixtures.removeTree(dir) }
        var handle: OpaquePointer?
        #expect(cc_controller_open(&handle, #"{"userId":"u","refreshTokens":0,"storagePath":"\#(dir)"}"#) == 0)
        let payload = Fixtures.payload(["a", "b"].map { Fixtures.wire($0) }, full: true, user: "u")
        #expect(cc_controller_apply(nil, handle, payload) == 0)
        let before = ccint_cell_hits_on_this_thread()
        #expect(cc_controller_total_count(handle, nil) == 2)
        #expect(ccint_cell_hits_on_this_thread() == before)
        #expect(cc_controller_close(handle) == 0)
        #expect(cc_controller_total_count(handle, nil) == Int64(CC_E_INVALID_HANDLE))
        #expect(ccint_cell_hits_on_this_thread() == before)
    }

    /// A close detaches only its own handle's cell. The slot is free once the handle is removed,
    /// and a controller opened meanwhile in it may attach before the close detaches: that
    /// detach cleared the new controller's cell, whose counts then took the slow path for good.
    @Test func aCloseDetachesOnlyItsOwnHandlesCell() throws {
        var handle: OpaquePointer?
        #expect(cc_controller_open(&handle, #"{"userId":"u","refreshTokens":0}"#) == 0)
        defer { _ = cc_controller_close(handle) }
        let payload = Fixtures.payload(["a", "b"].map { Fixtures.wire($0) }, full: true, user: "u")
        #expect(cc_controller_apply(nil, handle, payload) == 0)
        let (index, generation) = Handles.slot(of: handle)
        // The late detach of the slot's previous handle (another generation): the cell stays.
        ccint_cell_detach(index, generation &- 1)
        let before = ccint_cell_hits_on_this_thread()
        #expect(cc_controller_total_count(handle, nil) == 2)
        #expect(ccint_cell_hits_on_this_thread() - before == 1)
        // Its own detach clears it.
        ccint_cell_detach(index, generation)
        #expect(cc_controller_total_count(handle, nil) == 2)
        #expect(ccint_cell_hits_on_this_thread() - before == 1)
    }

    /// After the wall clock is set back past the expiry of a card the counts leave out, that
    /// card is visible again: the cell serves them only from that expiry on. Here the cell's
    /// clock (the real one) is before it, and the controller's (a manual one, 1,000 s ahead)
    /// after it, as after a clock set back. Before, the cell said only until when its counts
    /// held, and served the old count.
    @Test func theCellServesNothingBeforeAnExpiryItsCountsLeaveOut() throws {
        let now = SystemClock().now()
        let clock = ManualClock(now + 1000)
        let handle = try openHandle(for: try ContentCardsController(json: #"{"userId":"u","refreshTokens":0}"#, clock: clock))
        defer { _ = cc_controller_close(handle) }
        let gone = Int64(now + 500)
        let payload = Fixtures.payload([Fixtures.wire("gone", extra: "\"ea\":\(gone)"), Fixtures.wire("kept")],
                                       full: true, user: "u")
        #expect(cc_controller_apply(nil, handle, payload) == 0)
        let before = ccint_cell_hits_on_this_thread()
        #expect(cc_controller_total_count(handle, nil) == 1)   // the controller's clock: "gone" expired
        #expect(ccint_cell_hits_on_this_thread() == before)
    }

    /// The window the badge is exact in, as a clock moves forward past one expiry and is set
    /// back past it.
    @Test func theBadgeWindowRunsFromTheLastExpiryLeftOutToTheNext() throws {
        let clock = ManualClock(1000)
        let c = try ContentCardsController(json: #"{"userId":"u","refreshTokens":0}"#, clock: clock)
        defer { c.close() }
        let heard = LockedBox<(FeedCounts, Double, Double)?>(nil)
        c.observeBadgeWindow { counts, from, before in heard.mutate { $0 = (counts, from, before) } }
        try c.apply(Fixtures.payload([Fixtures.wire("a", extra: #""ea":1010"#), Fixtures.wire("b", extra: #""ea":1020"#),
                                      Fixtures.wire("c")], full: true, user: "u"))
        func last() -> (Int, Double, Double)? { heard.value.map { ($0.0.total, $0.1, $0.2) } }
        #expect(try c.counts().total == 3)
        #expect(last().map { [Double($0.0), $0.1, $0.2] } == [3, -.infinity, 1010])
        clock.set(1015)
        #expect(try c.counts().total == 2)
        #expect(last().map { [Double($0.0), $0.1, $0.2] } == [2, 1010, 1020])
        clock.set(1005)                                        // set back: "a" is visible again
        #expect(try c.counts().total == 3)
        #expect(last().map { [Double($0.0), $0.1, $0.2] } == [3, -.infinity, 1010])
        // A card added already expired moves the start of the window to its expiry.
        clock.set(1015)
        #expect(try c.counts().total == 2)
        try c.apply(Fixtures.payload([Fixtures.wire("d", extra: #""ea":1012"#)], full: false, user: "u"))
        #expect(try c.counts().total == 2)
        #expect(last().map { [Double($0.0), $0.1, $0.2] } == [2, 1012, 1020])
    }
}
