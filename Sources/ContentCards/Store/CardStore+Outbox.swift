import CSQLite
/// The event outbox: the events waiting to be sent, oldest first, counted, read in batches and
/// deleted once delivered (docs/BEHAVIOUR.md, "Events").
extension CardStore {
    /// Rows this build can send: an id and a kind it knows (`Event.Kind`; `OutboxSchemaTests`
    /// holds the list below to it). A row of another kind (written by a newer build, before a
    /// downgrade) is left in place for that build, and neither counted nor read: at the head of
    /// the outbox it made every batch empty, and nothing behind it was ever sent.
    static let sendableKinds = "'impression','control_impression','click','dismissal','feed_displayed','read','unread'"

    func pendingEventCount() throws(StoreError) -> Int {
        let s = try statement("SELECT COUNT(*) FROM events WHERE id IS NOT NULL AND type IN ('impression','control_impression','click','dismissal','feed_displayed','read','unread')")
        defer { s.reset() }
        return try s.step() ? Int(s.int(0)) : 0
    }

    /// The oldest events (of `user` only, when given), at most `limit` of them and about
    /// `maxBytes` of JSON (always at least one, so an event larger than the bound still goes
    /// out alone).
    func pendingEvents(limit: Int, maxBytes: Int, of user: String? = nil) throws(StoreError) -> [PendingEvent] {
        let s: SQLiteStatement
        if let user {
            s = try statement("SELECT seq, id, type, card_id, class_type, user_id, time FROM events WHERE user_id = ? AND id IS NOT NULL AND type IN ('impression','control_impression','click','dismissal','feed_displayed','read','unread') ORDER BY seq LIMIT ?")
            try s.bind(1, user)
            try s.bind(2, Int64(limit))
        } else {
            s = try statement("SELECT seq, id, type, card_id, class_type, user_id, time FROM events WHERE id IS NOT NULL AND type IN ('impression','control_impression','click','dismissal','feed_displayed','read','unread') ORDER BY seq LIMIT ?")
            try s.bind(1, Int64(limit))
        }
        defer { s.reset() }
        var batch: [PendingEvent] = []
        var bytes = 16
        while try s.step() {
            guard let id = s.text(1), let kind = s.text(2).flatMap(Event.Kind.init(rawValue:)) else { continue }
            let event = Event(id: id, kind: kind, cardID: s.text(3), classType: s.text(4),
                              userID: s.text(5) ?? "", time: s.double(6))
            let size = EventJSON.encodedSize(event)
            if !batch.isEmpty && bytes + size > maxBytes { break }
            bytes += size
            batch.append(PendingEvent(sequence: s.int(0), event: event))
        }
        return batch
    }

    /// Cards of `user` with a read or unread event still in the outbox: their local read state
    /// wins over the server's in a merge until the event is delivered (docs/BEHAVIOUR.md,
    /// "Merge", rule 9).
    func pendingReadStateCards(user: String) throws(StoreError) -> Set<CardKey> {
        let s = try statement("SELECT DISTINCT card_id FROM events WHERE user_id = ? AND type IN ('read', 'unread') AND card_id IS NOT NULL")
        defer { s.reset() }
        try s.bind(1, user)
        var ids = Set<CardKey>()
        while try s.step() { if let id = s.text(0) { ids.insert(CardKey(id)) } }
        return ids
    }

    /// The user's rows in the cards table, decodable or not (diagnostics compares it with the
    /// cards loaded, so a row that no longer decodes is reported rather than dropped silently).
    func cardRowCount(user: String) throws(StoreError) -> Int {
        if isInMemory { return 0 }     // no cards table: it writes none (`createSchema4`)
        let s = try statement("SELECT COUNT(*) FROM cards WHERE user_id = ?")
        defer { s.reset() }
        try s.bind(1, user)
        return try s.step() ? Int(s.int(0)) : 0
    }

    /// Deletes delivered events, each by its number and its id: a number can be given again
    /// once the newest events are gone (schema 4 has no AUTOINCREMENT), and another process
    /// delivering the same outbox may have deleted these and logged new ones meanwhile.
    func deleteEvents(_ events: [PendingEvent]) throws(StoreError) {
        guard !events.isEmpty else { return }
        try db.transaction { () throws(StoreError) in
            let s = try statement("DELETE FROM events WHERE seq = ? AND id = ?")
            for e in events { try s.run([.int(e.sequence), .text(e.event.id)]) }
        }
    }
}
