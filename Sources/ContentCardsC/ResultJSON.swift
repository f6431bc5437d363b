import ContentCards

/// The JSON of results at the boundary: sync summaries, subscriber updates, flush results,
/// errors and diagnostics. Keys in fixed order, as everywhere.
package enum ResultJSON {
    package static func error(_ e: ContentCardsError, to w: inout JSONWriter) {
        w.beginObject()
        w.key("code"); w.int(Int(e.code.rawValue))
        w.key("name"); w.string(e.code.statusName)
        w.key("message"); w.string(e.message)
        if let r = e.retryAfter { w.key("retryAfter"); w.double(r) }
        w.endObject()
    }

    package static func error(_ e: ContentCardsError) -> String {
        var w = JSONWriter()
        error(e, to: &w)
        return w.string
    }

    package static func counts(_ c: FeedCounts, to w: inout JSONWriter) {
        w.beginObject()
        w.key("total"); w.int(c.total)
        w.key("unviewed"); w.int(c.unviewed)
        w.key("unread"); w.int(c.unread)
        w.endObject()
    }

    /// `{"fetched":N,"failed":N,"cached":N,"bytes":N,"pending":N}`.
    package static func images(_ s: ImageStats) -> String {
        var w = JSONWriter(reservingCapacity: 96)
        w.beginObject()
        w.key("fetched"); w.int(s.fetched)
        w.key("failed"); w.int(s.failed)
        w.key("cached"); w.int(s.cached)
        w.key("bytes"); w.int(s.bytes)
        w.key("pending"); w.int(s.pending)
        w.endObject()
        return w.string
    }

    package static func leftOut(_ items: [Payload.LeftOut], to w: inout JSONWriter) {
        w.beginArray()
        for item in items {
            w.beginObject()
            w.key("index"); w.int(item.index)
            w.key("id"); w.string(item.id)
            w.key("reason"); w.string(item.reason)
            w.endObject()
        }
        w.endArray()
    }

    package static func summary(_ s: SyncSummary, to w: inout JSONWriter) {
        w.beginObject()
        w.key("added"); w.int(s.added)
        w.key("updated"); w.int(s.updated)
        w.key("removed"); w.int(s.removed)
        w.key("keptNewer"); w.int(s.keptNewer)
        w.key("fullSync"); w.bool(s.fullSync)
        w.key("notModified"); w.bool(s.notModified)
        w.key("leftOut"); leftOut(s.leftOut, to: &w)
        w.key("counts"); counts(s.counts, to: &w)
        w.endObject()
    }

    package static func summary(_ s: SyncSummary) -> String {
        var w = JSONWriter()
        summary(s, to: &w)
        return w.string
    }

    package static func update(_ u: FeedUpdate) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("reason"); w.string(u.reason.rawValue)
        w.key("ok"); w.bool(u.error == nil)
        w.key("error")
        if let e = u.error { error(e, to: &w) } else { w.null() }
        w.key("cardId"); w.string(u.cardID)
        w.key("counts"); counts(u.counts, to: &w)
        w.key("sync")
        if let s = u.sync { summary(s, to: &w) } else { w.null() }
        w.key("origin"); w.string(u.origin.rawValue)
        w.key("sequence"); w.int(Int64(bitPattern: u.sequence))
        w.endObject()
        return w.string
    }

    /// A logging call's outcome (cc_controller_log): the fields of `LogResult`, in this order.
    package static func log(_ r: LogResult) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("recorded"); w.bool(r.recorded)
        w.key("reason"); w.string(r.reason)
        w.key("eventId"); w.string(r.eventID)
        w.key("stateChanged"); w.bool(r.stateChanged)
        w.endObject()
        return w.string
    }

    package static func flush(_ f: FlushResult) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("delivered"); w.int(f.delivered)
        w.key("dropped"); w.int(f.dropped)
        w.key("pending"); w.int(f.pending)
        w.endObject()
        return w.string
    }

    /// What `cc_controller_forget_user` removed (snake_case, as the export document it goes with).
    package static func forgetReceipt(_ r: ForgetReceipt) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("user_id"); w.string(r.userID)
        w.key("cards"); w.int(r.cards)
        w.key("dismissals"); w.int(r.dismissals)
        w.key("events_delivered"); w.int(r.eventsDelivered)
        w.key("events_discarded"); w.int(r.eventsDiscarded)
        w.key("sync_state"); w.bool(r.syncState)
        w.key("images"); w.int(r.images)
        w.key("wal_truncated"); w.bool(r.walTruncated)
        w.endObject()
        return w.string
    }

    package static func diagnostics(_ d: Diagnostics) -> String {
        var w = JSONWriter(reservingCapacity: 1024)
        w.beginObject()
        w.key("userId"); w.string(d.userID)
        w.key("storagePath"); w.string(d.storagePath)
        w.key("closed"); w.bool(d.closed)
        w.key("refreshInFlight"); w.bool(d.refreshInFlight)
        w.key("lastRefresh")
        if let r = d.lastRefresh {
            w.beginObject()
            w.key("time"); w.double(r.time)
            w.key("ok"); w.bool(r.error == nil)
            w.key("error")
            if let e = r.error { error(e, to: &w) } else { w.null() }
            w.key("summary")
            if let s = r.summary { summary(s, to: &w) } else { w.null() }
            w.endObject()
        } else { w.null() }
        w.key("lastDelivery")
        if let l = d.lastDelivery {
            w.beginObject()
            w.key("time"); w.double(l.time)
            w.key("ok"); w.bool(l.error == nil)
            w.key("error")
            if let e = l.error { error(e, to: &w) } else { w.null() }
            w.key("delivered"); w.int(l.delivered)
            w.key("dropped"); w.int(l.dropped)
            w.endObject()
        } else { w.null() }
        w.key("lastError")
        if let e = d.lastError { error(e, to: &w) } else { w.null() }
        w.key("rateLimit")
        w.beginObject()
        w.key("enabled"); w.bool(d.rateLimit.enabled)
        w.key("capacity"); w.int(d.rateLimit.capacity)
        w.key("tokens"); w.int(d.rateLimit.tokens)
        w.key("intervalSeconds"); w.double(d.rateLimit.intervalSeconds)
        w.key("nextTokenInSeconds"); w.double(d.rateLimit.nextTokenInSeconds)
        w.endObject()
        w.key("leftOut"); leftOut(d.leftOut, to: &w)
        w.key("storedCards"); w.int(d.storedCards)
        w.key("unreadableStoredCards"); w.int(d.unreadableStoredCards)
        w.key("lastSuccessfulRefreshAt")
        if let t = d.lastSuccessfulRefreshAt { w.double(t) } else { w.null() }
        w.key("counts"); counts(d.counts, to: &w)
        w.key("pendingEvents"); w.int(d.pendingEvents)
        w.key("deliveredEvents"); w.int(d.deliveredEvents)
        w.key("droppedEvents"); w.int(d.droppedEvents)
        w.key("subscribers"); w.int(d.subscribers)
        w.key("threadStartsRefused"); w.int(d.threadStartsRefused)
        w.key("tokens")
        w.beginObject()
        w.key("provider"); w.bool(d.tokens.provider)
        w.key("asked"); w.int(d.tokens.asked)
        w.key("reused"); w.int(d.tokens.reused)
        w.key("failures"); w.int(d.tokens.failures)
        w.key("timeouts"); w.int(d.tokens.timeouts)
        w.key("abandoned"); w.int(d.tokens.abandoned)
        w.key("retriedAfter401"); w.int(d.tokens.retriedAfter401)
        w.endObject()
        w.key("hints")
        w.beginObject()
        w.key("received"); w.int(d.hints.received)
        w.key("ignored"); w.int(d.hints.ignored)
        w.key("coalesced"); w.int(d.hints.coalesced)
        w.key("refreshes"); w.int(d.hints.refreshes)
        w.key("failed"); w.int(d.hints.failed)
        w.key("periodicSkipped"); w.int(d.hints.periodicSkipped)
        w.key("stream"); w.bool(d.hints.stream)
        w.key("connected"); w.bool(d.hints.connected)
        w.key("connects"); w.int(d.hints.connects)
        w.key("streamHints"); w.int(d.hints.streamHints)
        w.key("lastEventId"); w.string(d.hints.lastEventID)
        w.key("lastError"); w.string(d.hints.lastError)
        w.endObject()
        w.endObject()
        return w.string
    }

    /// Reads a class-type filter: nil, "" or "[]" for every card, else a JSON array of strings.
    package static func filter(_ text: String?) throws(PayloadError) -> ClassTypeFilter {
        guard let text, text.utf8.contains(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) else { return .all }
        let value: JSONValue
        do { value = try JSONReader.parse(text, limits: .init(maxBytes: 1 << 20, maxDepth: 4)) } catch {
            throw PayloadError("the class-type filter is not valid JSON: \(error)")
        }
        guard case .array(let items) = value else {
            throw PayloadError("the class-type filter is \(value.typeName), expected an array of strings such as [\"home_tile\"]")
        }
        var types: [String] = []
        for item in items {
            guard let s = item.stringValue else { throw PayloadError("the class-type filter holds \(item.typeName), expected strings only") }
            types.append(s)
        }
        return ClassTypeFilter(types)
    }

    /// The event outbox (cc_controller_pending_events_json).
    package static func pendingEvents(_ p: PendingEvents) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("pending"); w.int(p.pending)
        w.key("failedAttempts"); w.int(p.failedAttempts)
        w.key("events")
        w.beginArray()
        for (i, e) in p.events.enumerated() {
            w.beginObject()
            w.key("id"); w.string(e.id)
            w.key("type"); w.string(e.kind.rawValue)
            w.key("cardId"); w.string(e.cardID)
            w.key("classType"); w.string(e.classType)
            w.key("userId"); w.string(e.userID)
            w.key("time"); w.double(e.time)
            w.key("attempts"); w.int(i < p.attempts.count ? p.attempts[i] : 0)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.string
    }
}
