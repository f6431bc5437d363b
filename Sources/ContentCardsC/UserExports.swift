import CContentCardsABI
import ContentCards
// Forgetting and exporting a user, and hints (include/contentcards.h, "Hints" and
// "Forgetting and exporting a user").

@_cdecl("cc_controller_forget_user")
public func cc_controller_forget_user(_ outReceipt: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                      _ controller: OpaquePointer?, _ userID: UnsafePointer<CChar>?,
                                      _ pending: Int32, _ timeoutSeconds: Double) -> Int32 {
    entry { () throws(ContentCardsError) in
        outReceipt?.pointee = nil
        let c = try Handles.controller(controller)
        let user = try CStrings.optional(userID, "user_id")
        let choice: PendingEventsChoice
        switch pending {
        case CC_PENDING_FLUSH: choice = .flush
        case CC_PENDING_DISCARD: choice = .discard
        default: throw ContentCardsError(.invalidArgument, "pending is \(pending): CC_PENDING_FLUSH (0) or CC_PENDING_DISCARD (1)")
        }
        let receipt = try c.forgetUser(user, pending: choice, timeout: try timeoutArgument(timeoutSeconds))
        try CStrings.output(outReceipt, ResultJSON.forgetReceipt(receipt))
    }
}

@_cdecl("cc_controller_export_user")
public func cc_controller_export_user(_ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                      _ controller: OpaquePointer?, _ userID: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        guard let outJSON else { throw ContentCardsError(.invalidArgument, "out_json is NULL") }
        outJSON.pointee = nil
        let c = try Handles.controller(controller)
        let user = try CStrings.optional(userID, "user_id")
        let json = try c.exportUser(user)
        try CStrings.output(outJSON, json)
    }
}

@_cdecl("cc_controller_hint")
public func cc_controller_hint(_ controller: OpaquePointer?, _ userID: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let c = try Handles.controller(controller)
        try c.hint(user: try CStrings.optional(userID, "user_id"))
    }
}
