/// The sync request body (docs/WIRE.md, "Sync request").
enum SyncJSON {
    static func request(userID: String, deviceID: String, cursors: SyncCursors) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.key("user_id"); w.string(userID)
        w.key("device_id"); w.string(deviceID)
        w.key("last_full_sync_at"); w.int(cursors.lastFullSyncAt)
        w.key("last_card_updated_at"); w.int(cursors.lastCardUpdatedAt)
        w.endObject()
        return w.bytes
    }
}
