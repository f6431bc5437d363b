import ContentCards

// Logging by card id, and the event outbox.

@_cdecl("cc_controller_log_impression")
public func cc_controller_log_impression(_ controller: OpaquePointer?, _ cardID: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let c = try Handles.controller(controller)
        try c.logImpression(cardID: try CStrings.required(cardID, "card_id"))
    }
}

@_cdecl("cc_controller_log_click")
public func cc_controller_log_click(_ controller: OpaquePointer?, _ cardID: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let c = try Handles.controller(controller)
        try c.logClick(cardID: try CStrings.required(cardID, "card_id"))
    }
}

@_cdecl("cc_controller_log_dismissal")
public func cc_controller_log_dismissal(_ controller: OpaquePointer?, _ cardID: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let c = try Handles.controller(controller)
        try c.logDismissal(cardID: try CStrings.required(cardID, "card_id"))
    }
}

@_cdecl("cc_controller_log_feed_displayed")
public func cc_controller_log_feed_displayed(_ controller: OpaquePointer?) -> Int32 {
    entry { () throws(ContentCardsError) in
        try Handles.controller(controller).logFeedDisplayed()
    }
}

@_cdecl("cc_controller_flush_events")
public func cc_controller_flush_events(_ outResult: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                       _ controller: OpaquePointer?, _ timeoutSeconds: Double) -> Int32 {
    entry { () throws(ContentCardsError) in
        outResult?.pointee = nil
        let c = try Handles.controller(controller)
        let result = try c.flushEvents(timeout: try timeoutArgument(timeoutSeconds))
        try CStrings.output(outResult, ResultJSON.flush(result))
    }
}

@_cdecl("cc_controller_pending_events")
public func cc_controller_pending_events(_ outCount: UnsafeMutablePointer<Int64>?, _ controller: OpaquePointer?) -> Int32 {
    entry { () throws(ContentCardsError) in
        guard let outCount else { throw ContentCardsError(.invalidArgument, "out_count is NULL") }
        let c = try Handles.controller(controller)
        outCount.pointee = Int64(try c.pendingEvents())
    }
}
