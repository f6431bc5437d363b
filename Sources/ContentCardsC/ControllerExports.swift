import CContentCardsABI
import CContentCardsFast
import ContentCards

// Opening, closing, refreshing and reading: thin wrappers that validate arguments, call the
// controller, and turn results into JSON. No business logic lives here.

@_cdecl("cc_controller_open")
public func cc_controller_open(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ configJSON: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let out = try CStrings.requireOutput(out, "out")
        let json = try CStrings.optional(configJSON, "config_json") ?? ""
        out.pointee = try openHandle(for: try ContentCardsController(json: json))
    }
}

/// A handle for a controller just opened, with the badge cell of its slot; the controller is
/// closed when no handle can be had. (Apart from the open for the tests: a controller of a
/// clock of their own behind a handle.)
func openHandle(for controller: ContentCardsController) throws(ContentCardsError) -> OpaquePointer? {
    let handle: OpaquePointer?
    do throws(ContentCardsError) {
        handle = try Handles.controllers.insert(controller)
    } catch {
        controller.close()
        throw error
    }
    // The badge cell of the handle's slot: cc_controller_counts answers from it without a
    // lock (an in-memory store's controller only; see observeBadgeWindow).
    let (index, generation) = Handles.slot(of: handle)
    ccint_cell_attach(index, generation)
    controller.observeBadgeWindow { counts, validFrom, validBefore in
        ccint_cell_publish(index, generation, Int64(counts.total), Int64(counts.unviewed), Int64(counts.unread),
                           validFrom, validBefore)
    }
    return handle
}

@_cdecl("cc_controller_close")
public func cc_controller_close(_ controller: OpaquePointer?) -> Int32 {
    entry { () throws(ContentCardsError) in
        // nil: inherited across fork(); the handle is gone, its store untouched (leaked).
        let c = try Handles.controllers.remove(controller)
        let (index, generation) = Handles.slot(of: controller)
        ccint_cell_detach(index, generation)
        c?.close()
    }
}

@_cdecl("cc_controller_refresh")
public func cc_controller_refresh(_ outSummary: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                  _ controller: OpaquePointer?, _ timeoutSeconds: Double) -> Int32 {
    entry { () throws(ContentCardsError) in
        outSummary?.pointee = nil
        let c = try Handles.controller(controller)
        let summary = try c.refresh(timeout: try timeoutArgument(timeoutSeconds))
        try CStrings.output(outSummary, ResultJSON.summary(summary))
    }
}

/// The former name of cc_controller_refresh_in_background(controller, 0, NULL, NULL, NULL),
/// kept for ABI 1 (docs/API.md: "async" names an awaitable call; this is fire and forget).
@_cdecl("cc_controller_refresh_async")
public func cc_controller_refresh_async(_ controller: OpaquePointer?) -> Int32 {
    entry { () throws(ContentCardsError) in
        try Handles.controller(controller).refreshInBackground()
    }
}

@_cdecl("cc_controller_refresh_in_background")
public func cc_controller_refresh_in_background(_ controller: OpaquePointer?, _ timeoutSeconds: Double,
                                               _ fn: cc_refresh_done_fn?, _ userdata: UnsafeMutableRawPointer?,
                                               _ freeUserdata: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) -> Int32 {
    let data = UserData(userdata, free: freeUserdata)
    return entry { () throws(ContentCardsError) in
        do throws(ContentCardsError) {
            let c = try Handles.controller(controller)
            let timeout = try timeoutArgument(timeoutSeconds)
            guard let fn else {
                data.release()
                try c.refreshInBackground(timeout: timeout)
                return
            }
            // The completion runs exactly once, then free_userdata (the closure holds `data`;
            // release() is idempotent, so the deinit of a never-run closure frees it too).
            try c.refreshInBackground(timeout: timeout) { result in
                let status: Int32, json: String
                switch result {
                case .success(let summary): (status, json) = (CC_OK, ResultJSON.summary(summary))
                case .failure(let e): (status, json) = (e.code.rawValue, ResultJSON.error(e))
                }
                json.withCString { fn(data.pointer, status, $0) }
                data.release()
            }
        } catch {
            data.release()
            throw error
        }
    }
}

@_cdecl("cc_controller_apply")
public func cc_controller_apply(_ outSummary: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                _ controller: OpaquePointer?, _ payloadJSON: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        outSummary?.pointee = nil
        let c = try Handles.controller(controller)
        let summary = try c.apply(bytes: try CStrings.requiredBytes(payloadJSON, "payload_json"), checkedUTF8: true)
        try CStrings.output(outSummary, ResultJSON.summary(summary))
    }
}

@_cdecl("cc_controller_feed")
public func cc_controller_feed(_ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                               _ controller: OpaquePointer?, _ filterJSON: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let out = try CStrings.requireOutput(outJSON, "out_json")
        let c = try Handles.controller(controller)
        guard let json = try c.cardsJSONMalloced(try filterArgument(filterJSON)) else {
            throw ContentCardsError(.noMemory, "out of memory writing the feed")
        }
        out.pointee = json
    }
}

@_cdecl("cc_controller_feed_indexed")
public func cc_controller_feed_indexed(_ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                       _ outLength: UnsafeMutablePointer<Int>?,
                                       _ outOffsets: UnsafeMutablePointer<UnsafePointer<Int>?>?,
                                       _ outCount: UnsafeMutablePointer<Int>?,
                                       _ controller: OpaquePointer?, _ filterJSON: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        // Every output is cleared first, so that a failure leaves none of them stale.
        outLength?.pointee = 0
        outCount?.pointee = 0
        outOffsets?.pointee = nil
        let out = try CStrings.requireOutput(outJSON, "out_json")
        guard let outLength else { throw ContentCardsError(.invalidArgument, "out_length is NULL") }
        let offsets = try CStrings.requireOutput(outOffsets, "out_offsets")
        guard let outCount else { throw ContentCardsError(.invalidArgument, "out_count is NULL") }
        let c = try Handles.controller(controller)
        guard let feed = try c.cardsJSONMallocedIndexed(try filterArgument(filterJSON)) else {
            throw ContentCardsError(.noMemory, "out of memory writing the feed")
        }
        out.pointee = feed.text
        outLength.pointee = feed.length
        offsets.pointee = feed.offsets
        outCount.pointee = feed.count
    }
}

@_cdecl("cc_controller_card")
public func cc_controller_card(_ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                               _ controller: OpaquePointer?, _ cardID: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let out = try CStrings.requireOutput(outJSON, "out_json")
        let c = try Handles.controller(controller)
        let card = try c.card(id: try CStrings.required(cardID, "card_id"))
        out.pointee = try CStrings.copy(CardJSON.encode(card))
    }
}

/// The whole of cc_controller_counts; the exported function (Sources/CContentCardsFast/fast.c)
/// first tries the badge cell, for an unfiltered count.
@_cdecl("ccint_controller_counts")
public func ccint_controller_counts(_ outTotal: UnsafeMutablePointer<Int64>?, _ outUnviewed: UnsafeMutablePointer<Int64>?,
                                 _ outUnread: UnsafeMutablePointer<Int64>?,
                                 _ controller: OpaquePointer?, _ filterJSON: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let c = try Handles.controller(controller)
        let counts = try c.counts(try filterArgument(filterJSON))
        outTotal?.pointee = Int64(counts.total)
        outUnviewed?.pointee = Int64(counts.unviewed)
        outUnread?.pointee = Int64(counts.unread)
    }
}

@_cdecl("cc_controller_change_user")
public func cc_controller_change_user(_ controller: OpaquePointer?, _ userID: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let c = try Handles.controller(controller)
        try c.changeUser(try CStrings.required(userID, "user_id"))
    }
}

@_cdecl("cc_controller_user")
public func cc_controller_user(_ outUserID: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                               _ controller: OpaquePointer?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let out = try CStrings.requireOutput(outUserID, "out_user_id")
        let c = try Handles.controller(controller)
        if c.isClosed { throw ContentCardsError(.closed, "the controller is closed") }
        out.pointee = try CStrings.copy(c.currentUserID)
    }
}

@_cdecl("cc_controller_diagnostics")
public func cc_controller_diagnostics(_ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                      _ controller: OpaquePointer?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let out = try CStrings.requireOutput(outJSON, "out_json")
        let c = try Handles.controller(controller)
        out.pointee = try CStrings.copy(ResultJSON.diagnostics(c.diagnostics()))
    }
}
