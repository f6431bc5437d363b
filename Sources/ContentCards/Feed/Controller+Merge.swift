/// The merge of a payload into the current user's state (docs/BEHAVIOUR.md, "Merge"), for a
/// refresh's answer (Controller+Refresh.swift) and for cards the application hands in
/// (Controller+Apply.swift).
extension ContentCardsController {
    /// Merges a decoded payload into the current user's state and persists it, with `sync`
    /// (the validator and time of a refresh; for cards the application applies, the validator
    /// is dropped: the cards held are then no longer exactly the server's). Called with the
    /// lock held; on failure nothing changes.
    ///
    /// The payload's cards are let go once the merge has planned its changes (which hold what
    /// they keep of them): when the caller held the only reference, a large apply does not keep
    /// the decoded cards alive beside the stored ones while it publishes.
    /// `readCrossing`: cards whose read state changed locally while the sync was out (see
    /// `RefreshTicket.readCrossing`); their local read state stays, like that of cards with a
    /// read event still in the outbox.
    ///
    /// The reload, the plan and the writes are one write transaction of the store: no other
    /// connection's commit (another process's forget, or its sync) can fall between the state
    /// planned against and the write. `basedOnState`: the refresh's request was asked from a
    /// stored sync of the user (`RefreshStart.heldState`); finding none now, the answer is
    /// discarded (another controller or process forgot the user).
    func mergeLocked(_ payload: inout Payload, sync: SyncState? = nil,
                     readCrossing: Set<CardKey> = [], basedOnState: Bool = false) -> Result<SyncSummary, ContentCardsError> {
        var planned: Merge?
        do throws(ContentCardsError) {
            try inWriteTransaction { () throws(ContentCardsError) in
                try reloadIfChangedElsewhere()
                if basedOnState && !feed.stored.hasSyncState { throw Self.forgottenElsewhereDuringRefresh(userID) }
                // Only a payload that carries read state needs the outbox's pending read changes.
                var pendingRead = Set<CardKey>()
                if payload.cards.contains(where: { $0.read != nil }) {
                    do throws(StoreError) { pendingRead = try store?.pendingReadStateCards(user: userID) ?? [] } catch {
                        throw ContentCardsError(.storage, error.message)
                    }
                    pendingRead.formUnion(readCrossing)
                }
                var merge = Merge.plan(&payload, from: feed.stored, pendingRead: pendingRead)
                payload.cards = []
                let nextSync = sync ?? SyncState(validator: nil, syncedAt: feed.stored.sync.syncedAt)
                if nextSync != feed.stored.sync { merge.changes.sync = nextSync }
                try persist(merge.changes, for: userID)
                planned = merge     // the arrays are shared, not copied; `merge` ends here
            }
        } catch {
            return .failure(error)
        }
        guard var merge = planned.take() else { return .failure(ContentCardsError(.internal, "a merge without a plan")) }
        feed.publish(&merge.changes)
        record.leftOut = payload.leftOut
        var summary = SyncSummary()
        summary.added = merge.stats.added
        summary.updated = merge.stats.updated
        summary.removed = merge.stats.removed
        summary.keptNewer = merge.stats.keptNewer
        summary.fullSync = payload.fullSync
        summary.leftOut = payload.leftOut
        summary.counts = currentCounts()
        return .success(summary)
    }
}
