/// Cards the application hands in (docs/BEHAVIOUR.md, "Refresh"): the merge of a refresh, from
/// bytes the application got its own way, with no source, no rate limit and no network.
extension ContentCardsController {
    /// Hands in cards the application got itself (a push message, its own networking): the same
    /// merge as a refresh, with no rate limit. A bare array is a non-full sync.
    @discardableResult
    public func apply(_ payload: String) throws(ContentCardsError) -> SyncSummary {
        try refuseIfInherited()
        var copy = payload
        // A String's bytes are valid UTF-8: not checked again.
        return try copy.withUTF8 { bytes in Result { () throws(ContentCardsError) in try apply(bytes: bytes, checkedUTF8: true) } }.get()
    }

    @discardableResult
    public func apply(bytes: UnsafeBufferPointer<UInt8>) throws(ContentCardsError) -> SyncSummary {
        try refuseIfInherited()
        return try apply(bytes: bytes, checkedUTF8: false)
    }

    /// `apply(bytes:)` for bytes the caller has already checked are valid UTF-8 (the C
    /// boundary checks every string argument): the decoder does not check them again. A
    /// caller that claims it wrongly gets cards whose text holds the bad bytes (never unsafe
    /// memory; the store then refuses such a card on reading); only the library's own
    /// boundary uses it, after its check.
    @discardableResult
    package func apply(bytes: UnsafeBufferPointer<UInt8>, checkedUTF8: Bool) throws(ContentCardsError) -> SyncSummary {
        // The payload is this frame's only reference to the decoded cards, held in a `var` so
        // that the merge can let them go (see `mergeLocked`).
        var payload = Payload()
        var decodeError: ContentCardsError?
        do { payload = try decoder.decode(bytes, checkedUTF8: checkedUTF8) } catch {
            decodeError = ContentCardsError(.parse, error.message)
        }
        let result: Result<SyncSummary, ContentCardsError> = lock.withLock {
            do throws(ContentCardsError) { _ = try liveStore() } catch { return .failure(error) }
            let result: Result<SyncSummary, ContentCardsError>
            if let e = decodeError {
                result = .failure(e)
            } else if let other = payload.userID, !sameUser(other, userID) {
                result = .failure(ContentCardsError(.wrongUser, "the payload is for user \(Self.quoted(other)), not the current user \(Self.quoted(userID)): discarded"))
            } else {
                result = mergeLocked(&payload)
            }
            if case .failure(let e) = result { record.lastError = e }
            return result
        }
        if case .failure(let e) = result, e.code == .closed { throw e }
        // Nil when a close came in between: no update then (its counts were none, and a badge
        // that keeps the largest number would end on them).
        let state = lock.withLock { store == nil ? nil : updateState() }
        switch result {
        case .success(let summary):
            Self.logMerge("cards applied", summary)
            prefetchImages()
            if let state { subscribers.notify(FeedUpdate(reason: .cardsApplied, state: state, sync: summary)) }
            return summary
        case .failure(let e):
            ContentCardsLog.emit(.warning, "cards refused (\(e.code.statusName)): \(e.message)")
            if let state { subscribers.notify(FeedUpdate(reason: .cardsApplied, error: e, state: state)) }
            throw e
        }
    }
}
