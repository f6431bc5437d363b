/// Logging by card id (docs/BEHAVIOUR.md, "Logging"): the state change and its event are written in one
/// transaction before the call returns, so counts reflect it at once and the event survives a
/// crash. A refused call records nothing and returns a `LogResult` that says why (it does not
/// throw: the same result as Python's and as `cc_controller_log`'s JSON); an unknown card throws
/// `.notFound`. A card that is stored but no longer visible (expired, or dismissed) is logged
/// like any other: the application may be showing a feed drawn a moment before it expired, and
/// what the user saw or tapped is recorded (docs/BEHAVIOUR.md, "Logging").
extension ContentCardsController {
    /// Marks the card viewed and records an impression (a control impression for a control
    /// card). Logging again records another event; the card counts as viewed once.
    @discardableResult
    public func logImpression(cardID: String) throws(ContentCardsError) -> LogResult {
        try log(cardID: cardID, reason: .impression) { card throws(ContentCardsError) in
            let kind: Event.Kind = card.isControl ? .controlImpression : .impression
            if card.viewed { return (kind, nil) }
            var next = card
            next.viewed = true
            return (kind, next)
        }
    }

    /// Records a click and marks the card clicked, only when the card has a valid URL.
    @discardableResult
    public func logClick(cardID: String) throws(ContentCardsError) -> LogResult {
        try log(cardID: cardID, reason: .click) { card throws(ContentCardsError) in
            guard card.validURL != nil else {
                let why = card.url == nil ? "has no url" : "has no valid url (\"\(card.url ?? "")\")"
                throw ContentCardsError(.refused, "click not logged: card \(Self.quoted(card.id)) \(why)")
            }
            if card.clicked { return (.click, nil) }
            var next = card
            next.clicked = true
            return (.click, next)
        }
    }

    /// Dismisses a dismissible card that is not dismissed yet: it leaves the feed at once and
    /// stays out after later refreshes until the server removes it.
    @discardableResult
    public func logDismissal(cardID: String) throws(ContentCardsError) -> LogResult {
        try log(cardID: cardID, reason: .dismissal) { card throws(ContentCardsError) in
            guard card.dismissible else {
                throw ContentCardsError(.refused, "dismissal not logged: card \(Self.quoted(card.id)) is not dismissible")
            }
            guard !card.dismissed else {
                throw ContentCardsError(.refused, "dismissal not logged: card \(Self.quoted(card.id)) is already dismissed")
            }
            var next = card
            next.dismissed = true
            return (.dismissal, next)
        }
    }

    /// Records that the application showed a feed.
    @discardableResult
    public func logFeedDisplayed() throws(ContentCardsError) -> LogResult {
        let eventID: String = try lock.withLock { () throws(ContentCardsError) in
            try checkOpen()
            let event = Event(id: eventIDs.next(), kind: .feedDisplayed, cardID: nil, classType: nil,
                              userID: userID, time: clock.now())
            try persist(StoreChanges(events: [event]), for: userID)
            return event.id
        }
        delivery.scheduleDelivery(for: self)
        return .recorded(eventID: eventID, stateChanged: false)
    }

    /// The shared path: look the card up, let `decide` refuse or give the event kind and the
    /// changed card, persist both at once, then notify outside the lock.
    private func log(cardID: String, reason: FeedUpdate.Reason,
                     _ decide: (Card) throws(ContentCardsError) -> (Event.Kind, Card?)) throws(ContentCardsError) -> LogResult {
        let outcome: Result<(LogResult, FeedCounts), ContentCardsError> = lock.withLock {
            do throws(ContentCardsError) { return .success(try logLocked(cardID: cardID, decide)) } catch { return .failure(error) }
        }
        let result: LogResult, counts: FeedCounts
        switch outcome {
        case .success(let value): (result, counts) = value
        case .failure(let e):
            // Outside the lock: the log handler may call back into the library.
            if e.code == .refused || e.code == .notFound {
                ContentCardsLog.emit(.info, "\(reason.rawValue) refused (\(e.code.statusName)): \(e.message)")
            }
            if e.code == .refused { return .refused(e.message) }
            throw e
        }
        subscribers.notify(FeedUpdate(reason: reason, error: nil, cardID: cardID, counts: counts, sync: nil))
        delivery.scheduleDelivery(for: self)
        return result
    }

    /// The body of `log`, with the lock held.
    private func logLocked(cardID: String,
                          _ decide: (Card) throws(ContentCardsError) -> (Event.Kind, Card?)) throws(ContentCardsError) -> (LogResult, FeedCounts) {
        try reloadIfChangedElsewhere()
        guard let card = feed.stored.cards[cardID] else {
            let e = Self.unknownCard(cardID)
            record.lastError = e
            throw e
        }
        let kind: Event.Kind
        let next: Card?
        do throws(ContentCardsError) { (kind, next) = try decide(card) } catch {
            record.lastError = error
            throw error
        }
        let event = Event(id: eventIDs.next(), kind: kind, cardID: card.id, classType: card.classType,
                          userID: userID, time: clock.now())
        var changes = StoreChanges(events: [event])
        if let next { changes.upserts = [next] }
        if kind == .dismissal { changes.dismissalsAdded = [card.id] }
        try persist(changes, for: userID)
        feed.publish(&changes)
        return (.recorded(eventID: event.id, stateChanged: next != nil), currentCounts())
    }
}
