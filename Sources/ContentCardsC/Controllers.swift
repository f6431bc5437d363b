import ContentCards

/// The live controllers and snapshots of the process.
enum Handles {
    static let controllers = HandleTable<ContentCardsController>(tag: 0xC1, kind: "controller", refuseInherited: true)
    static let snapshots = HandleTable<Snapshot>(tag: 0xC2, kind: "snapshot")

    static func controller(_ handle: OpaquePointer?) throws(ContentCardsError) -> ContentCardsController {
        try controllers.get(handle)
    }

    /// The slot index and generation a handle value holds (see HandleTable), unchecked.
    static func slot(of handle: OpaquePointer?) -> (index: UInt32, generation: UInt32) {
        let value = UInt64(UInt(bitPattern: handle))
        return (UInt32(truncatingIfNeeded: (value & 0xFF_FFFF) &- 1), UInt32(truncatingIfNeeded: value >> 24))
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
