/// The badge numbers of a feed.
public struct FeedCounts: Hashable, Sendable {
    public var total = 0
    /// Visible cards without an impression, control cards left out: the unviewed badge.
    public var unviewed = 0
    /// Visible cards not marked read, control cards left out: the unread badge.
    public var unread = 0
    public init(total: Int = 0, unviewed: Int = 0, unread: Int = 0) {
        self.total = total; self.unviewed = unviewed; self.unread = unread
    }
}
