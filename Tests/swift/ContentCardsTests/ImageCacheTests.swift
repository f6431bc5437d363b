import Foundation
import Testing
@testable import ContentCards

/// The image cache (docs/BEHAVIOUR.md, "Images") through the host transport: the scenario of
/// Tests/c/test_images.c and bindings/python/tests/test_images.py (which use the reference
/// server), with the same results.
@Suite struct ImageCacheTests {
    /// A server in a closure: the cards of the sync, and images named NAME?size=N / ?status=S
    /// (no body) / ?status=S&size=N.
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
                // status=S (an empty body), or status=S&size=N
                let fields = Dictionary(query.split(separator: "&").map { f -> (String, Int) in
                    let kv = f.split(separator: "=", maxSplits: 1)
                    return (String(kv[0]), kv.count > 1 ? Int(kv[1]) ?? 0 : 0)
                }, uniquingKeysWith: { a, _ in a })
                if let status = fields["status"], fields["size"] == nil { return .success(TransportResponse(status: status, body: [])) }
                let size = fields["size"] ?? 1000
                // The transport enforces the response bound, as libcurl does.
                if size > r.maxResponseBytes { return .failure(ContentCardsError(.parse, "image response is too large")) }
                return .success(TransportResponse(status: fields["status"] ?? 200, body: [UInt8](repeating: 0x42, count: size)))
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

    /// A feed whose images exceed the byte bound: the images that do not fit beside the feed's
    /// earlier ones are fetched once, then no more while the feed stays the same.
    @Test func anUnchangedFeedDownloadsNothing() throws {
        let dir = Fixtures.temporaryDirectory("images-fit")
        defer { Fixtures.removeTree(dir) }
        let server = FakeServer()
        server.banner("a", 13, "size=3000")
        server.banner("b", 12, "size=3000")
        server.banner("c", 11, "size=3000")      // the third does not fit in 8000 bytes
        server.banner("d", 10, "size=1000")      // but the fourth does
        let c = try ContentCardsController(
            json: #"{"userId":"fit","storagePath":"\#(dir)/store","refreshTokens":0,"source":{"callback":true},"images":{"maxBytes":8000,"maxCount":10,"maxImageBytes":4000}}"#,
            transport: ClosureTransport { server.send($0) })
        defer { c.close() }
        try c.refresh(timeout: 5)
        let first = try c.waitForImages(timeout: 10)
        #expect(first.cached == 3 && first.bytes == 7000)
        #expect(try paths(c)["c"]! == nil && paths(c)["d"]! != nil)
        let before = server.served
        for _ in 0..<3 {
            try c.refresh(timeout: 5)
            _ = try c.waitForImages(timeout: 10)
        }
        #expect(server.served == before, "an unchanged feed fetched \(server.served - before) images again")
        // When an earlier image goes, the one that did not fit fits now, and is fetched.
        server.remove("a")
        try c.refresh(timeout: 5)
        _ = try c.waitForImages(timeout: 10)
        #expect(try paths(c)["c"]! != nil)
    }

    /// While the image server accepts and never answers, applies do not pile up prefetches:
    /// the latest feed waits, the running one stops after its current image.
    @Test func prefetchesCoalesceWhileTheImageServerHangs() throws {
        let dir = Fixtures.temporaryDirectory("images-hang")
        defer { Fixtures.removeTree(dir) }
        let gate = HangTests.Gate()
        let requests = HangTests.Counter()
        let c = try ContentCardsController(
            json: #"{"userId":"hang","storagePath":"\#(dir)/store","refreshTokens":0,"source":{"callback":true},"images":{}}"#,
            transport: ClosureTransport { request in
                guard request.kind == .image else { return .success(TransportResponse(status: 200, body: Array("[]".utf8))) }
                requests.add()
                gate.wait(max: 300)      // opened by the test (a slow run, under TSan, takes long)
                return .success(TransportResponse(status: 200, body: [1, 2, 3]))
            })
        defer { gate.open(); c.close() }
        let feed = (0..<50).map { #"{"id":"i\#($0)","tp":"banner_image","ca":\#(100 + $0),"i":"https://img.example/\#($0).png"}"# }
        for round in 0..<200 {
            try c.apply(Fixtures.payload(feed + [#"{"id":"r\#(round)","tp":"banner_image","ca":1,"i":"https://img.example/r\#(round).png"}"#]))
        }
        let stats = try c.waitForImages(timeout: 0.2)
        #expect(stats.pending <= 2, "\(stats.pending) prefetches waiting")
        #expect(requests.value <= 1, "\(requests.value) image requests while the first hangs")
        gate.open()
        let after = try c.waitForImages(timeout: 20)
        #expect(after.pending == 0)
        // The latest feed's images were fetched: its last card's image among them.
        #expect(try c.card(id: "r199").imagePath != nil)
    }

    /// Two controllers of one user share the store and its image cache: what one evicts or
    /// cleans, the other neither hands out nor keeps believing it has; and a removed card's
    /// image does not stay on disk because the other controller fetched it.
    @Test func twoControllersOnOneCacheAgreeWithTheDisk() throws {
        let dir = Fixtures.temporaryDirectory("images-shared")
        defer { Fixtures.removeTree(dir) }
        let server = FakeServer()
        server.banner("a", 12, "size=100")
        server.banner("b", 11, "size=100")
        let json = #"{"userId":"both","storagePath":"\#(dir)/store","refreshTokens":0,"source":{"callback":true},"images":{}}"#
        let one = try ContentCardsController(json: json, transport: ClosureTransport { server.send($0) })
        let two = try ContentCardsController(json: json, transport: ClosureTransport { server.send($0) })
        defer { one.close(); two.close() }
        // Two fetches the images; one (opened before) learns of the files at its next prefetch.
        try two.refresh(timeout: 5)
        #expect(try two.waitForImages(timeout: 10).cached == 2)
        let a = try #require(try two.card(id: "a").imagePath)
        // The server removes "a": one's refresh cleans its image, which two had fetched.
        server.remove("a")
        try one.refresh(timeout: 5)
        _ = try one.waitForImages(timeout: 10)
        #expect(!FileManager.default.fileExists(atPath: a), "a removed card's image stayed on disk")
        #expect(try two.cards().map(\.id) == ["b"])
        // An image two holds is removed behind its back (evicted by another controller):
        // no path to a missing file, and the next prefetch fetches it again.
        let b = try #require(try two.card(id: "b").imagePath)
        #expect(unlink(b) == 0)
        #expect(try two.card(id: "b").imagePath == nil)
        let served = server.served
        try two.refresh(timeout: 5)
        _ = try two.waitForImages(timeout: 10)
        #expect(server.served == served + 1)
        #expect(try two.card(id: "b").imagePath == b && FileManager.default.fileExists(atPath: b))
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

    /// Forgetting the user removes the images on the disk, not only those this controller
    /// knew of: here another controller of the user fetched them after this one last looked
    /// (its cache's list was empty, and the images stayed).
    @Test func forgettingTheUserRemovesImagesAnotherControllerFetched() throws {
        let dir = Fixtures.temporaryDirectory("images-forget")
        defer { Fixtures.removeTree(dir) }
        let server = FakeServer()
        server.banner("a", 10, "size=3000")
        server.banner("b", 11, "size=2000")
        let config = #"{"userId":"pics","storagePath":"\#(dir)/store","refreshTokens":0,"source":{"callback":true},"images":{}}"#
        let forgetting = try ContentCardsController(json: config, transport: ClosureTransport { server.send($0) })
        defer { forgetting.close() }
        let fetching = try ContentCardsController(json: config, transport: ClosureTransport { server.send($0) })
        try fetching.refresh(timeout: 5)
        #expect(try fetching.waitForImages(timeout: 10).cached == 2)
        fetching.close()
        let images = try FileManager.default.subpathsOfDirectory(atPath: dir + "/store/images")
            .filter { $0.split(separator: "/").count == 2 && !$0.hasSuffix(".tmp") }   // USER/IMAGE
        #expect(images.count == 2)
        let receipt = try forgetting.forgetUser(pending: .discard)
        #expect(receipt.images == 2)
        let left = try FileManager.default.subpathsOfDirectory(atPath: dir + "/store/images")
            .filter { $0.split(separator: "/").count == 2 }
        #expect(left.isEmpty, "\(left)")
    }

    @Test func configuration() {
        #expect(throws: ContentCardsError.self) { try ContentCardsController(json: #"{"images":{}}"#) }
        #expect(throws: ContentCardsError.self) { try ContentCardsController(json: "{}").waitForImages(timeout: 1) }
    }
}
