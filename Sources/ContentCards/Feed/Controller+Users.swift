/// Users (docs/BEHAVIOUR.md, "Users, subscriptions, threads, processes"): all state is kept per user in the same store. Changing the user
/// swaps to that user's state at once and resets nothing of the other's; events logged before
/// keep the user they were logged for; a refresh running for the previous user is discarded.
extension ContentCardsController {
    public func changeUser(_ newUserID: String) throws(ContentCardsError) {
        try refuseIfInherited()
        // As the configuration's userId: ids go out through C strings, where a NUL cuts them.
        if newUserID.utf8.contains(0) {
            throw ContentCardsError(.invalidArgument, "the user id must not contain a NUL character")
        }
        let state: UpdateState? = try lock.withLock { () throws(ContentCardsError) -> UpdateState? in
            let store = try liveStore()
            if sameUser(newUserID, userID) { return nil }
            var nextImages: ImageCache?
            if let images {
                do throws(Files.Failure) { nextImages = try images.cache(for: newUserID) } catch {
                    throw ContentCardsError(.storage, "cannot open the image cache of user \"\(newUserID)\": \(error.message)")
                }
            }
            do throws(StoreError) {
                let loaded: StoredUser
                if store.isInMemory {
                    // The other users of an in-memory store are kept here (the store keeps
                    // only events, see CardStore.apply).
                    loaded = otherUsers.removeValue(forKey: UserKey(newUserID)) ?? StoredUser()
                    otherUsers[UserKey(userID)] = feed.stored
                } else {
                    (loaded, storeVersion) = try store.loadWithVersion(user: newUserID, decoder: decoder)
                }
                if let nextImages { images?.use(nextImages) }
                feed.publish(replacing: loaded)
                userID = newUserID
                userChanges &+= 1
                refresher.lastSyncedAt = loaded.sync.syncedAt
            } catch {
                throw ContentCardsError(.storage, "cannot load user \"\(newUserID)\": \(error.message)")
            }
            record.leftOut = []
            return updateState()
        }
        if let state {
            lock.withLock { refresher.hintStream }?.restart()
            subscribers.notify(FeedUpdate(reason: .userChanged, state: state))
            refresher.refreshOnOpenIfStale(for: self)
        }
    }
}
