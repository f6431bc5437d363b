/// Read state (docs/BEHAVIOUR.md, "Read state"): an inbox's read / unread flag, apart from
/// impressions. Like logging, the change and its event are written in one transaction before
/// the call returns; unlike the sticky flags, a card can be marked unread again. A call that
/// changes nothing (already read, already unread) records no event.
extension ContentCardsController {
    /// Marks the card read; records a `read` event when it was unread.
    @discardableResult
    public func markRead(cardID: String) throws(ContentCardsError) -> LogResult {
        try refuseIfInherited()
        return try setRead(true, cardIDs: [cardID], reason: .read, single: cardID).first ?? .refused("already read")
    }

    /// Marks the card unread; records an `unread` event when it was read.
    @discardableResult
    public func markUnread(cardID: String) throws(ContentCardsError) -> LogResult {
        try refuseIfInherited()
        return try setRead(false, cardIDs: [cardID], reason: .unread, single: cardID).first ?? .refused("already unread")
    }

    /// Marks every visible card passing `filter` read (control cards too, which no badge counts),
    /// one `read` event per card that was unread, all in one transaction. Returns how many
    /// cards changed.
    @discardableResult
    public func markAllRead(_ filter: ClassTypeFilter = .all) throws(ContentCardsError) -> Int {
        try refuseIfInherited()
        return try setRead(true, cardIDs: nil, filter: filter, reason: .read, single: nil).count
    }

    /// The unread count of the visible feed passing `filter` (control cards left out).
    public func unreadCount(_ filter: ClassTypeFilter = .all) throws(ContentCardsError) -> Int { try counts(filter).unread }

    /// The shared path: `cardIDs` (nil: the visible cards passing `filter`) set to `read`;
    /// the results of the cards that changed (or, for one card, its result either way).
    private func setRead(_ read: Bool, cardIDs: [String]?, filter: ClassTypeFilter = .all,
                         reason: FeedUpdate.Reason, single: String?) throws(ContentCardsError) -> [LogResult] {
        let outcome: Result<([LogResult], UpdateState), ContentCardsError> = lock.withLock {
            do throws(ContentCardsError) {
                try reloadIfChangedElsewhere()
                // The writer's lock keeps the feed as it is; the readers' one guards the index.
                let ids = cardIDs ?? feed.lock.withLock { feed.index.ids(filter, now: clock.now()) }
                var changes = StoreChanges()
                var results: [LogResult] = []
                for id in ids {
                    guard let card = feed.stored.cards[CardKey(id)] else {
                        let e = Self.unknownCard(id)
                        record.lastError = e
                        throw e
                    }
                    if card.read == read {
                        if single != nil { results.append(.refused(read ? "already read" : "already unread")) }
                        continue
                    }
                    var next = card
                    next.read = read
                    let event = Event(id: eventIDs.next(), kind: read ? .read : .unread, cardID: card.id,
                                      classType: card.classType, userID: userID, time: clock.now())
                    changes.upserts.append(next)
                    changes.events.append(event)
                    results.append(.recorded(eventID: event.id, stateChanged: true))
                }
                if !changes.isEmpty {
                    try persist(changes, for: userID)
                    // A sync out now may answer with the old state after this change's event
                    // was delivered: its merge keeps these cards' local read state.
                    if let ticket = refresher.inFlight, sameUser(ticket.userID, userID), ticket.userChanges == userChanges {
                        for card in changes.upserts { ticket.readCrossing.insert(CardKey(card.id)) }
                    }
                    feed.publish(&changes)
                }
                return .success((results, updateState()))
            } catch { return .failure(error) }
        }
        let results: [LogResult], state: UpdateState
        switch outcome {
        case .success(let value): (results, state) = value
        case .failure(let e):
            if e.code == .notFound { ContentCardsLog.emit(.info, "\(reason.rawValue) refused (\(e.code.statusName)): \(e.message)") }
            throw e
        }
        if results.contains(where: \.stateChanged) {
            subscribers.notify(FeedUpdate(reason: reason, cardID: single, state: state))
            delivery.scheduleDelivery(for: self)
        }
        return results
    }
}
