import CContentCardsFast
import ContentCards

/// The live controllers and snapshots of the process.
enum Handles {
    static let controllers = HandleTable<ContentCardsController>(tag: UInt8(CCINT_CONTROLLER_TAG), kind: "controller", refuseInherited: true)
    static let snapshots = HandleTable<Snapshot>(tag: UInt8(CCINT_SNAPSHOT_TAG), kind: "snapshot")

    static func controller(_ handle: OpaquePointer?) throws(ContentCardsError) -> ContentCardsController {
        try controllers.get(handle)
    }

    /// The slot index and generation a handle value holds (see HandleTable), unchecked.
    static func slot(of handle: OpaquePointer?) -> (index: UInt32, generation: UInt32) {
        HandleTable<ContentCardsController>.fields(of: handle)
    }
}

/// Timeouts in: NaN is an error; <= 0 means the configured default.
func timeoutArgument(_ seconds: Double) throws(ContentCardsError) -> Double? {
    if seconds.isNaN { throw ContentCardsError(.invalidArgument, "timeout_seconds is NaN") }
    return seconds > 0 ? seconds : nil
}

func filterArgument(_ p: UnsafePointer<CChar>?) throws(ContentCardsError) -> ClassTypeFilter {
    let text = try CStrings.optional(p, "filter_json")
    do { return try ResultJSON.filter(text) } catch { throw ContentCardsError(.parse, error.message) }
}
