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
    func prefetchImages() {
        guard let images else { return }
        let urls: (visible: [String], stored: Set<String>)? = try? read { () throws(ContentCardsError) in
            let visible = feed.index.ids(.all, now: clock.now()).compactMap { feed.stored.cards[$0]?.image }
            return (visible, Set(feed.stored.cards.values.compactMap(\.image)))
        }
        guard let urls else { return }
        images.schedule(visible: urls.visible, stored: urls.stored)
    }

    /// Waits at most `timeout` seconds for the queued prefetches to finish; what the cache did.
    /// `.noSource` when no image cache is configured.
    public func waitForImages(timeout: Double? = nil) throws(ContentCardsError) -> ImageStats {
        try refuseIfInherited()
        try lock.withLock { () throws(ContentCardsError) in try checkOpen() }
        guard let images else {
            throw ContentCardsError(.noSource, "no image cache is configured (\"images\")")
        }
        return images.wait(timeout: Self.clampTimeout(timeout ?? configuration.timeoutSeconds * 4))
    }
}
