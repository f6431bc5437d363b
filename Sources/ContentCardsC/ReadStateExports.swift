import CContentCardsABI
import ContentCards

// Read state (docs/BEHAVIOUR.md, "Read state"). cc_controller_unread_count is in C
// (Sources/CContentCardsFast/fast.c), beside the other badge counts.

@_cdecl("cc_controller_mark_read")
public func cc_controller_mark_read(_ outChanged: UnsafeMutablePointer<Int32>?, _ controller: OpaquePointer?,
                                    _ cardID: UnsafePointer<CChar>?, _ read: Int32) -> Int32 {
    entry { () throws(ContentCardsError) in
        let c = try Handles.controller(controller)
        let id = try CStrings.required(cardID, "card_id")
        let result = read != 0 ? try c.markRead(cardID: id) : try c.markUnread(cardID: id)
        outChanged?.pointee = result.stateChanged ? 1 : 0
    }
}

@_cdecl("cc_controller_mark_all_read")
public func cc_controller_mark_all_read(_ outChanged: UnsafeMutablePointer<Int64>?, _ controller: OpaquePointer?,
                                        _ filterJSON: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let c = try Handles.controller(controller)
        let changed = try c.markAllRead(try filterArgument(filterJSON))
        outChanged?.pointee = Int64(changed)
    }
}
