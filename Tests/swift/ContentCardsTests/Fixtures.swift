import Foundation
import Testing
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

/// Paths and helpers shared by the tests.
enum Fixtures {
    /// The repository root, found from this file's path.
    static let root: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(4)   // Tests/swift/ContentCardsTests/Fixtures.swift
        return parts.joined(separator: "/")
    }()

    static let sampleFeedPath = root + "/examples/data/sample_feed.json"

    static func sampleFeed() throws -> String {
        String(decoding: try Files.read(sampleFeedPath, limit: 1 << 20), as: UTF8.self)
    }

    /// A fresh private directory (0700), removed by the caller with `removeTree`. Made with its
    /// mode, which no umask widens: made by `FileManager` while a test had set the process's
    /// umask to 0, one was 0777, which the store refuses (a test that failed now and then).
    static func temporaryDirectory(_ name: String = "cc") -> String {
        let path = NSTemporaryDirectory() + "\(name)-\(UUID().uuidString)"
        mkdir(path, 0o700)      // the umask can only take bits away
        return path
    }

    static func removeTree(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// A short-key card as the server sends it.
    static func wire(_ id: String, type: String = "short_news", created: Int64 = 1_763_700_000,
                     extra: String = "") -> String {
        var fields = "\"id\":\"\(id)\",\"tp\":\"\(type)\",\"ca\":\(created)"
        switch type {
        case "banner_image": fields += ",\"i\":\"https://cdn.example.com/\(id).png\""
        case "captioned_image": fields += ",\"i\":\"https://cdn.example.com/\(id).png\",\"tt\":\"T \(id)\",\"ds\":\"D \(id)\""
        case "short_news", "text_announcement": fields += ",\"ds\":\"D \(id)\""
        default: break
        }
        if !extra.isEmpty { fields += "," + extra }
        return "{\(fields)}"
    }

    static func payload(_ cards: [String], full: Bool = false, user: String? = nil,
                        lastFull: Int64 = -1, lastUpdated: Int64 = -1) -> String {
        var s = "{\"cards\":[\(cards.joined(separator: ","))],\"full_sync\":\(full)"
        s += ",\"last_full_sync_at\":\(lastFull),\"last_card_updated_at\":\(lastUpdated)"
        if let user { s += ",\"user_id\":\"\(user)\"" }
        return s + "}"
    }
}

/// A controller on the sample feed with a manual clock at the sample's time.
func makeController(_ extra: String = "", clock: ManualClock = ManualClock(1_763_800_000),
                    storage: String? = nil, user: String = "u-1") throws(ContentCardsError) -> ContentCardsController {
    var json = #"{"userId":"\#(user)","source":{"file":"\#(Fixtures.sampleFeedPath)"},"refreshTokens":0"#
    if let storage { json += #","storagePath":"\#(storage)""# }
    if !extra.isEmpty { json += "," + extra }
    json += "}"
    return try ContentCardsController(json: json, clock: clock, eventIDs: SequentialEventIDs())
}

/// The controller's store, opened now if its open was deferred (a kept feed: Controller+Kept.swift),
/// for a test that looks at the store itself.
@discardableResult
func openStore(_ c: ContentCardsController) throws(ContentCardsError) -> CardStore {
    try c.lock.withLock { () throws(ContentCardsError) in try c.liveStore() }
}

/// Collects subscriber updates from any thread.
final class UpdateLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [FeedUpdate] = []
    /// Returns how many updates there are with this one: each caller its own number.
    @discardableResult
    func add(_ u: FeedUpdate) -> Int { lock.lock(); defer { lock.unlock() }; items.append(u); return items.count }
    var all: [FeedUpdate] { lock.lock(); defer { lock.unlock() }; return items }
    var reasons: [FeedUpdate.Reason] { all.map(\.reason) }
}

extension FeedUpdate {
    init(reason: Reason, counts: FeedCounts) {
        self.init(reason: reason, error: nil, cardID: nil, counts: counts, sync: nil)
    }
}

/// A small seeded generator: the same inputs every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
