/// The image cache at the controller (docs/BEHAVIOUR.md, "Images"): prefetch after a refresh or
/// cards handed in, the cached file of each card read out, and a wait for the prefetches.
extension ContentCardsController {
    /// The cards with `imagePath` set where the cache holds their image (unchanged without one).
    func withImagePaths(_ cards: [Card]) -> [Card] {
        guard let cache = images?.current, !cards.isEmpty else { return cards }
        let paths = cache.paths(for: cards.map(\.image))
        var out = cards
        for i in out.indices { out[i].imagePath = paths[i] }
        return out
    }

    /// Queues a prefetch of the visible cards' images (control cards have none), and the removal
    /// of images no stored card has. Called after a successful merge, without a lock.
    ///
    /// The feed's images and the cache they go to are read together, under the lock a user
    /// change holds: read apart, a change between them sent one user's images into the other's
    /// cache (and removed that user's own).
    func prefetchImages() {
        guard let images else { return }
        let request: (visible: [String], stored: [String], cache: ImageCache)? = lock.withLock {
            guard isOpenLocked, (try? reloadIfChangedElsewhere()) != nil else { return nil }
            return feed.lock.withLock {
                let visible = feed.index.ids(.all, now: clock.now()).compactMap { feed.stored.cards[$0]?.image }
                return (visible, feed.stored.cards.values.compactMap(\.image), images.current)
            }
        }
        guard let request else { return }
        images.schedule(visible: request.visible, stored: request.stored, into: request.cache)
    }

    /// Waits at most `timeout` seconds for the queued prefetches to finish; what the cache did.
    /// `.noSource` when no image cache is configured; `.refused` when called from inside the
    /// prefetch (its transport call, or a log handler it called): it would wait for itself.
    public func waitForImages(timeout: Double? = nil) throws(ContentCardsError) -> ImageStats {
        try refuseIfInherited()
        try lock.withLock { () throws(ContentCardsError) in try checkOpen() }
        guard let images else {
            throw ContentCardsError(.noSource, "no image cache is configured (\"images\")")
        }
        if images.isWorkerThread {
            throw ContentCardsError(.refused, "waitForImages called from inside the image prefetch (its transport callback or a log handler it called): it would wait for itself; return first")
        }
        return images.wait(timeout: Self.clampTimeout(timeout ?? configuration.timeoutSeconds * 4))
    }
}
