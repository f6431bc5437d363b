import CContentCardsABI
import ContentCards

// Logging by card id, and the event outbox.

/// One logging call by its action name, as cc_controller_log and Python name them.
private func logAction(_ c: ContentCardsController, _ action: String, _ cardID: UnsafePointer<CChar>?) throws(ContentCardsError) -> LogResult {
    switch action {
    case "impression": return try c.logImpression(cardID: try CStrings.required(cardID, "card_id"))
    case "click": return try c.logClick(cardID: try CStrings.required(cardID, "card_id"))
    case "dismissal": return try c.logDismissal(cardID: try CStrings.required(cardID, "card_id"))
    case "feed_displayed":
        if cardID != nil { throw ContentCardsError(.invalidArgument, "card_id must be NULL for \"feed_displayed\"") }
        return try c.logFeedDisplayed()
    // Read state gives the same result as the other actions (its event id included), as
    // Swift's markRead and Python's mark_read do.
    case "read": return try c.markRead(cardID: try CStrings.required(cardID, "card_id"))
    case "unread": return try c.markUnread(cardID: try CStrings.required(cardID, "card_id"))
    default:
        throw ContentCardsError(.invalidArgument, "unknown logging action \(Redact.quoted(action, limit: 60)): expected \"impression\", \"click\", \"dismissal\", \"feed_displayed\", \"read\" or \"unread\"")
    }
}

/// The C status of a result: a refusal is CC_E_REFUSED with its reason as the message.
private func requireRecorded(_ result: LogResult) throws(ContentCardsError) {
    if !result.recorded { throw ContentCardsError(.refused, result.reason ?? "not recorded") }
}

@_cdecl("cc_controller_log")
public func cc_controller_log(_ outResult: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ controller: OpaquePointer?,
                              _ action: UnsafePointer<CChar>?, _ cardID: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        outResult?.pointee = nil
        let c = try Handles.controller(controller)
        let result = try logAction(c, try CStrings.required(action, "action"), cardID)
        // The result goes out also for a refusal: it says why, as Python's and Swift's do.
        try CStrings.output(outResult, ResultJSON.log(result))
        try requireRecorded(result)
    }
}

@_cdecl("cc_controller_log_impression")
public func cc_controller_log_impression(_ controller: OpaquePointer?, _ cardID: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        try requireRecorded(try logAction(try Handles.controller(controller), "impression", cardID))
    }
}

@_cdecl("cc_controller_log_click")
public func cc_controller_log_click(_ controller: OpaquePointer?, _ cardID: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        try requireRecorded(try logAction(try Handles.controller(controller), "click", cardID))
    }
}

@_cdecl("cc_controller_log_dismissal")
public func cc_controller_log_dismissal(_ controller: OpaquePointer?, _ cardID: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        try requireRecorded(try logAction(try Handles.controller(controller), "dismissal", cardID))
    }
}

@_cdecl("cc_controller_log_feed_displayed")
public func cc_controller_log_feed_displayed(_ controller: OpaquePointer?) -> Int32 {
    entry { () throws(ContentCardsError) in
        try requireRecorded(try Handles.controller(controller).logFeedDisplayed())
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

@_cdecl("cc_controller_pending_events_json")
public func cc_controller_pending_events_json(_ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                              _ controller: OpaquePointer?, _ limit: Int) -> Int32 {
    entry { () throws(ContentCardsError) in
        let out = try CStrings.requireOutput(outJSON, "out_json")
        let c = try Handles.controller(controller)
        // size_t in: a value past Int.max arrives negative, and means "all" as 0 does.
        let list = try c.listPendingEvents(limit: max(limit, 0))
        out.pointee = try CStrings.copy(ResultJSON.pendingEvents(list))
    }
}

// The process's log handler (docs/BEHAVIOUR.md, "Logging to the application").

@_cdecl("cc_set_log_handler")
public func cc_set_log_handler(_ fn: cc_log_fn?, _ minLevel: Int32, _ userdata: UnsafeMutableRawPointer?,
                               _ freeUserdata: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) -> Int32 {
    let data = UserData(userdata, free: freeUserdata)
    return entry { () throws(ContentCardsError) in
        guard let fn else {
            data.release()
            ContentCardsLog.setHandler(minLevel: minLevel, nil)
            return
        }
        // The closure holds `data`: free_userdata runs when the handler is replaced and the
        // last call of it has returned (UserData releases on deinit).
        ContentCardsLog.setHandler(minLevel: minLevel) { level, message in
            message.withCString { fn(data.pointer, level.rawValue, $0) }
        }
    }
}
