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
        let (result, _) = try written(PendingLog(cardID: nil, decide: nil)).get()
        delivery.scheduleDelivery(for: self)
        return result
    }

    /// The shared path: have the call written (in one transaction with the calls of other
    /// threads made at the same time: `LogBatch`), then notify outside the lock.
    private func log(cardID: String, reason: FeedUpdate.Reason,
                     _ decide: @escaping PendingLog.Decide) throws(ContentCardsError) -> LogResult {
        let result: LogResult, state: UpdateState
        switch written(PendingLog(cardID: cardID, decide: decide)) {
        case .success(let value): (result, state) = value
        case .failure(let e):
            // Outside the lock: the log handler may call back into the library.
            if e.code == .refused || e.code == .notFound {
                ContentCardsLog.emit(.info, "\(reason.rawValue) refused (\(e.code.statusName)): \(e.message)")
            }
            if e.code == .refused { return .refused(e.message) }
            throw e
        }
        subscribers.notify(FeedUpdate(reason: reason, cardID: cardID, state: state))
        delivery.scheduleDelivery(for: self)
        return result
    }

    private func written(_ call: PendingLog) -> Result<(LogResult, UpdateState), ContentCardsError> {
        // Before the batch's lock, which a parent's thread may hold (Controller+Fork.swift).
        if isInherited { return .failure(Self.inheritedError) }
        return logBatch.submit(call) { calls in lock.withLock { writeLocked(calls) } }
    }

    /// Decides each call in order, each against the cards as the calls before it left them,
    /// then writes the events and changed cards of all of them in one transaction. A call
    /// refused (or naming an unknown card) fails alone; a transaction that fails fails every
    /// call in it, and nothing of any is recorded. With the lock held; the outcomes in order.
    ///
    /// The transaction is begun first and the check for other connections' commits
    /// (`reloadIfChangedElsewhere`) runs inside it: with the write lock held it sees every
    /// commit, and it needs no read transaction of its own, whose locks on the `-shm` file were
    /// two of a logged event's eight `fcntl` calls (docs/PERFORMANCE.md, "Durable logging").
    private func writeLocked(_ calls: [PendingLog]) -> [Result<(LogResult, UpdateState), ContentCardsError>] {
        // Until the calls are decided a failure (closed, BEGIN refused, the reload) is every
        // call's; after, only the recorded calls' (the refused ones keep their own outcome).
        // One value, changed in place: an optional was copied out (and its arrays retained) at
        // each use, 35 reference counts a call.
        var decided = DecidedLogs(count: 0)
        var isDecided = false
        do throws(ContentCardsError) {
            try inWriteTransaction { () throws(ContentCardsError) in
                try reloadIfChangedElsewhere()
                decided = decide(calls)
                isDecided = true
                if !decided.recorded.isEmpty { try persist(decided.changes, for: userID) }
            }
        } catch {
            if !isDecided { return calls.map { _ in .failure(error) } }
            for (i, _) in decided.recorded { decided.outcomes[i] = .failure(error) }
            for i in decided.dependent { decided.outcomes[i] = .failure(error) }
            return decided.outcomes
        }
        if !decided.recorded.isEmpty {
            feed.publish(&decided.changes)
            // One count for the batch, and a number for each call's update.
            var state = updateState(count: decided.recorded.count)
            for (i, result) in decided.recorded {
                decided.outcomes[i] = .success((result, state))
                state.sequence &+= 1
            }
        }
        return decided.outcomes
    }

    /// The outcome a call holds until it is decided (none keeps it: `decide` gives each call
    /// one).
    fileprivate static let notDecided = ContentCardsError(.internal, "a log call was not decided")

    /// Decides each call in order against the cards as the calls before it left them: the
    /// events and changed cards to write, the calls recorded, and the outcomes of those that
    /// were not (refused, unknown card).
    private func decide(_ calls: [PendingLog]) -> DecidedLogs {
        var decided = DecidedLogs(count: calls.count)
        // Cards changed by earlier calls of this batch, by id byte for byte (`CardKey`): a
        // `String` key took two canonically equivalent ids for one card.
        var changed: [CardKey: Card] = [:]
        var changedOrder: [CardKey] = []
        for (i, call) in calls.enumerated() {
            guard let cardID = call.cardID, let decide = call.decide else {
                let event = Event(id: eventIDs.next(), kind: .feedDisplayed, cardID: nil, classType: nil,
                                  userID: userID, time: clock.now())
                decided.changes.events.append(event)
                decided.recorded.append((i, .recorded(eventID: event.id, stateChanged: false)))
                continue
            }
            let key = CardKey(cardID)
            let earlier = changed[key]
            guard let card = earlier ?? feed.stored.cards[key] else {
                let e = Self.unknownCard(cardID)
                record.lastError = e
                decided.outcomes[i] = .failure(e)
                continue
            }
            let kind: Event.Kind, next: Card?
            do throws(ContentCardsError) { (kind, next) = try decide(card) } catch {
                record.lastError = error
                decided.outcomes[i] = .failure(error)
                // Refused for what an earlier call of the batch did ("already dismissed"):
                // true only if that call's write commits (`writeLocked`).
                if earlier != nil { decided.dependent.append(i) }
                continue
            }
            let event = Event(id: eventIDs.next(), kind: kind, cardID: card.id, classType: card.classType,
                              userID: userID, time: clock.now())
            decided.changes.events.append(event)
            if let next, changed.updateValue(next, forKey: key) == nil { changedOrder.append(key) }
            if kind == .dismissal { decided.changes.dismissalsAdded.append(card.id) }
            decided.recorded.append((i, .recorded(eventID: event.id, stateChanged: next != nil)))
        }
        decided.changes.upserts = changedOrder.compactMap { changed[$0] }
        return decided
    }
}

/// What `decide` made of a batch of log calls.
private struct DecidedLogs {
    var changes = StoreChanges()
    /// The calls to record (their index in the batch) with their result once written.
    var recorded: [(Int, LogResult)] = []
    /// Calls refused for the change of an earlier call of the batch: if the batch's write
    /// fails, their refusal was decided against a state that never was, and they fail with it.
    var dependent: [Int] = []
    /// Each call's outcome, in order: what is returned, so it is made once (an array of
    /// optionals mapped to this one, and a first `DecidedLogs` made only to be replaced, were
    /// three allocations a logged impression).
    var outcomes: [Result<(LogResult, UpdateState), ContentCardsError>]
    init(count: Int) { outcomes = Array(repeating: .failure(ContentCardsController.notDecided), count: count) }
}
