import Foundation
import Testing
@testable import ContentCards

/// The image cache (docs/BEHAVIOUR.md, "Images") through the host transport: the scenario of
/// tests/c/test_images.c and bindings/python/tests/test_images.py (which use the reference
/// server), with the same results.
@Suite struct ImageCacheTests {
    /// A server in a closure: the cards of the sync, and images named NAME?size=N / ?status=S.
    final class FakeServer: @unchecked Sendable {
        private let lock = NSLock()
        private var cards: [String: String] = [:]
        private(set) var imageRequests: [String] = []

        func set(_ id: String, _ json: String) { lock.lock(); cards[id] = json; lock.unlock() }
        func remove(_ id: String) { lock.lock(); cards[id] = nil; lock.unlock() }
        var served: Int { lock.lock(); defer { lock.unlock() }; return imageRequests.count }

        func banner(_ id: String, _ created: Int, _ query: String) {
            set(id, #"{"id":"\#(id)","tp":"banner_image","ca":\#(created),"i":"https://img.example/\#(id).png?\#(query)"}"#)
        }

        func send(_ r: TransportRequest) -> Result<TransportResponse, ContentCardsError> {
            lock.lock(); defer { lock.unlock() }
            switch r.kind {
            case .sync:
                let body = #"{"cards":[\#(cards.values.joined(separator: ","))],"full_sync":true}"#
                return .success(TransportResponse(status: 200, body: Array(body.utf8)))
            case .image:
                imageRequests.append(r.url)
                let query = r.url.split(separator: "?").last.map(String.init) ?? ""
                if query.hasPrefix("status=") { return .success(TransportResponse(status: Int(query.dropFirst(7))!, body: [])) }
                let size = Int(query.dropFirst(5)) ?? 1000
                // The transport enforces the response bound, as libcurl does.
                if size > r.maxResponseBytes { return .failure(ContentCardsError(.parse, "image response is too large")) }
                return .success(TransportResponse(status: 200, body: [UInt8](repeating: 0x42, count: size)))
            case .events:
                return .success(TransportResponse(status: 200, body: []))
            }
        }
    }

    func paths(_ c: ContentCardsController) throws -> [String: String?] {
        Dictionary(uniqueKeysWithValues: try c.cards().map { ($0.id, $0.imagePath) })
    }

    @Test func prefetchPathsLimitsCleaningAndLRU() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let server = FakeServer()
        server.banner("a", 10, "size=3000")
        server.banner("b", 11, "size=3000")
        server.banner("missing", 12, "status=404")
        server.banner("huge", 13, "size=5000")
        server.set("text", #"{"id":"text","tp":"short_news","ca":14,"ds":"no image"}"#)
        let c = try ContentCardsController(
            json: #"{"userId":"pics","storagePath":"\#(dir)/store","refreshTokens":0,"source":{"callback":true},"images":{"maxBytes":8000,"maxCount":10,"maxImageBytes":4000}}"#,
            transport: ClosureTransport { server.send($0) })
        try c.refresh(timeout: 5)                         // failures never fail it
        var stats = try c.waitForImages(timeout: 10)
        let counted: [Int] = [stats.fetched, stats.failed, stats.cached, stats.bytes, stats.pending]
        #expect(counted == [2, 2, 2, 6000, 0])
        var p = try paths(c)
        #expect(p["missing"]! == nil && p["huge"]! == nil && p["text"]! == nil)
        let a = try #require(p["a"]!), b = try #require(p["b"]!)
        #expect(a.hasPrefix("\(dir)/store/images/"))
        let attributes = try FileManager.default.attributesOfItem(atPath: a)
        #expect((attributes[.size] as? Int) == 3000)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let parent = (a as NSString).deletingLastPathComponent
        #expect((try FileManager.default.attributesOfItem(atPath: parent)[.posixPermissions] as? Int) == 0o700)
        #expect(try c.card(id: "a").imagePath == a)
        #expect(CardJSON.encode(try c.card(id: "a")).contains(#""imagePath":"\#(a)""#))

        let before = server.served
        try c.refresh(timeout: 5)
        _ = try c.waitForImages(timeout: 10)
        #expect(server.served == before + 2)            // only the two failures again

        server.remove("a")
        try c.refresh(timeout: 5)
        _ = try c.waitForImages(timeout: 10)
        #expect(!FileManager.default.fileExists(atPath: a))

        server.banner("g", 20, "size=3000")
        server.banner("h", 21, "size=3000")
        try c.refresh(timeout: 5)
        stats = try c.waitForImages(timeout: 10)
        #expect(stats.cached == 2 && stats.bytes == 6000)
        p = try paths(c)
        #expect(p["h"]! != nil && p["g"]! != nil && p["b"]! == nil)
        #expect(!FileManager.default.fileExists(atPath: b))

        // A new controller on the same store finds the cache as it was.
        c.close()
        let again = try ContentCardsController(
            json: #"{"userId":"pics","storagePath":"\#(dir)/store","images":{}}"#)
        #expect(try again.card(id: "h").imagePath == p["h"]!)
        #expect(try again.waitForImages(timeout: 1).cached == 2)
    }

    @Test func eachUserHasItsOwnCache() throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let server = FakeServer()
        server.banner("a", 10, "size=100")
        let c = try ContentCardsController(
            json: #"{"userId":"one","storagePath":"\#(dir)/store","refreshTokens":0,"source":{"callback":true},"images":{}}"#,
            transport: ClosureTransport { server.send($0) })
        try c.refresh(timeout: 5)
        let first = try #require(try c.waitForImages(timeout: 10).cached == 1 ? c.card(id: "a").imagePath : nil)
        try c.changeUser("two")
        try c.refresh(timeout: 5)
        _ = try c.waitForImages(timeout: 10)
        let second = try #require(try c.card(id: "a").imagePath)
        #expect((first as NSString).deletingLastPathComponent != (second as NSString).deletingLastPathComponent)
    }

    @Test func configuration() {
        #expect(throws: ContentCardsError.self) { try ContentCardsController(json: #"{"images":{}}"#) }
        #expect(throws: ContentCardsError.self) { try ContentCardsController(json: "{}").waitForImages(timeout: 1) }
    }
}
