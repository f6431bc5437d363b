import Foundation
import Testing
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

/// The image cache against what it finds and what it is sent (docs/BEHAVIOUR.md, "Images"):
/// files it did not write, a directory removed under it, answers that are not a whole image,
/// URLs it would not fetch, and an image that cannot fit beside the feed's earlier ones.
/// Found by a read-only review; each test failed before its fix.
@Suite struct ImageBoundsTests {
    typealias Server = ImageCacheTests.FakeServer

    static func open(_ store: String, _ server: Server, images: String = #"{"maxBytes":8000,"maxCount":10,"maxImageBytes":4000}"#) throws -> ContentCardsController {
        try ContentCardsController(
            json: #"{"userId":"pics","storagePath":"\#(store)","refreshTokens":0,"source":{"callback":true},"images":\#(images)}"#,
            transport: ClosureTransport { server.send($0) })
    }

    /// A controller on a fresh storage directory, its server holding the cards `setup` adds.
    static func withController(images: String = #"{"maxBytes":8000,"maxCount":10,"maxImageBytes":4000}"#,
                               _ setup: (Server) -> Void,
                               _ body: (ContentCardsController, Server, String) throws -> Void) throws {
        let dir = Fixtures.temporaryDirectory()
        defer { Fixtures.removeTree(dir) }
        let server = Server()
        setup(server)
        let c = try open(dir + "/store", server, images: images)
        defer { c.close() }
        try body(c, server, dir)
    }

    static func cycle(_ c: ContentCardsController) throws -> ImageStats {
        try c.refresh(timeout: 5)
        return try c.waitForImages(timeout: 10)
    }

    /// Files of exabytes (sparse: any file system that allows them, here tmpfs) in the cache's
    /// directory: the sums of sizes overflowed, a trap in the host's process. Files larger than
    /// `maxImageBytes` are not the library's: not counted, not served; empty ones are removed.
    @Test func filesTheLibraryNeverWritesAreNotCounted() throws {
        var template = Array("/dev/shm/cc-images-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { return }     // no tmpfs here: nothing to test
        let dir = String(cString: made)
        defer { Fixtures.removeTree(dir) }
        let server = Server()
        for id in ["a", "b", "c"] { server.banner(id, 10, "size=1000") }
        let c = try Self.open(dir + "/store", server)
        defer { c.close() }
        // Under the names of the cards' own images: an empty file for a, exabytes for b and c.
        let cacheDir = dir + "/store/images/" + ImageCache.hash("pics")
        for (id, size) in [("a", Int64(0)), ("b", Int64(1) << 62), ("c", Int64(1) << 62)] {
            let fd = Glibc.open(cacheDir + "/" + ImageCache.hash("https://img.example/\(id).png?size=1000"), O_WRONLY | O_CREAT, 0o600)
            #expect(fd >= 0 && ftruncate(fd, off_t(size)) == 0)
            close(fd)
        }
        let stats = try Self.cycle(c)
        #expect(stats.fetched == 3 && stats.cached == 3 && stats.bytes == 3000, "\(stats)")
    }

    /// A forget removes every image file, also one the index leaves out (over this
    /// configuration's `maxImageBytes`: fetched under a larger one); it stayed on the disk.
    @Test func aForgetRemovesTheFilesTheIndexLeavesOut() throws {
        try Self.withController({ $0.banner("a", 10, "size=1000") }) { c, _, dir in
            #expect(try Self.cycle(c).cached == 1)
            let big = dir + "/store/images/" + ImageCache.hash("pics") + "/" + String(repeating: "e", count: 32)
            #expect(FileManager.default.createFile(atPath: big, contents: Data(count: 5000)))
            _ = try Self.cycle(c)
            #expect(FileManager.default.fileExists(atPath: big))   // left out of the index, not served
            let receipt = try c.forgetUser(pending: .discard, timeout: 5)
            #expect(receipt.images == 2)
            #expect(!FileManager.default.fileExists(atPath: big))
        }
    }

    /// The user's directory removed after the open (another controller forgot the user, the
    /// host cleaned up): every later image failed to be written until the next open.
    @Test func aDirectoryRemovedUnderTheCacheIsMadeAgain() throws {
        try Self.withController({ $0.banner("a", 10, "size=1000") }) { c, server, dir in
            #expect(try Self.cycle(c).cached == 1)
            Fixtures.removeTree(dir + "/store/images/" + ImageCache.hash("pics"))
            server.banner("b", 11, "size=1000")
            let stats = try Self.cycle(c)
            #expect(stats.failed == 0 && stats.cached == 2, "\(stats)")
            #expect(try c.card(id: "b").imagePath != nil)
        }
    }

    /// Only a 200 (or 203) is an image: a 206 is part of one (the library asks for no range),
    /// and was cached as the whole image.
    @Test func aPartialAnswerIsNotAnImage() throws {
        try Self.withController({
            $0.banner("part", 10, "status=206&size=500")
            $0.banner("proxy", 11, "status=203&size=500")
        }) { c, _, _ in
            let stats = try Self.cycle(c)
            #expect(stats.fetched == 1 && stats.failed == 1, "\(stats)")
            #expect(try c.card(id: "part").imagePath == nil)
            #expect(try c.card(id: "proxy").imagePath != nil)
        }
    }

    /// A URL the library does not fetch (not http or https) takes none of the `maxCount`
    /// places: the feed's first card's `data:` image left its http one unfetched.
    @Test func aURLThatIsNotFetchedTakesNoPlace() throws {
        try Self.withController(images: #"{"maxCount":1}"#, {
            $0.set("inline", #"{"id":"inline","tp":"banner_image","ca":20,"i":"data:image/png;base64,AAAA"}"#)
            $0.banner("web", 10, "size=500")
        }) { c, _, _ in
            let stats = try Self.cycle(c)
            #expect(try c.cards().first?.id == "inline")       // first in the feed
            #expect(stats.cached == 1 && stats.failed == 0, "\(stats)")
            #expect(try c.card(id: "web").imagePath != nil)
        }
    }

    /// An image that cannot fit beside the feed's earlier images is known not to before it is
    /// written: stored, it pushed out the images of the feed's later cards first (fetched again
    /// at once, or lost while offline), then itself.
    @Test func anImageThatCannotFitPushesNoOtherOut() throws {
        try Self.withController(images: #"{"maxBytes":3000,"maxCount":10,"maxImageBytes":4000}"#, {
            $0.banner("first", 30, "size=1000")
            $0.banner("last", 10, "size=1000")
        }) { c, server, _ in
            #expect(try Self.cycle(c).cached == 2)
            server.banner("big", 20, "size=2500")               // between them in the feed
            let stats = try Self.cycle(c)
            #expect(stats.cached == 2 && stats.bytes == 2000, "\(stats)")
            #expect(server.imageRequests.filter { $0.contains("/last.png") }.count == 1, "\(server.imageRequests)")
            #expect(try c.card(id: "big").imagePath == nil)
        }
    }
}
