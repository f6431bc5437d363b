import CContentCardsABI
import CContentCardsFast
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
}
