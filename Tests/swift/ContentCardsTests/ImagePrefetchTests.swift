import Foundation
import Testing
@testable import ContentCards

/// The image prefetch against the controller's life (docs/BEHAVIOUR.md, "Images"): a fetch that
/// comes back after a close keeps nothing, a user change stops the previous user's prefetch,
/// and a wait for the images from inside the prefetch is refused instead of waiting for
/// itself. A host transport whose image answers wait at a gate.
@Suite struct ImagePrefetchTests {
    final class Server: @unchecked Sendable {
        private let lock = NSLock()
        private var images: [String] = []
        let started = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        /// Called inside each image request, before it answers.
        var during: (@Sendable () -> Void)?

        var imageRequests: [String] { lock.lock(); defer { lock.unlock() }; return images }

        func send(_ r: TransportRequest) -> Result<TransportResponse, ContentCardsError> {
            switch r.kind {
            case .sync:
                let cards = (1...3).map { #"{"id":"c\#($0)","tp":"banner_image","ca":\#($0),"i":"https://img.example/\#($0).png"}"# }
                let body = #"{"cards":[\#(cards.joined(separator: ","))],"full_sync":true}"#
                return .success(TransportResponse(status: 200, body: Array(body.utf8)))
            case .image:
                lock.lock(); images.append(r.url); let first = images.count == 1; lock.unlock()
                if first {
                    started.signal()
                    _ = gate.wait(timeout: .now() + 20)
                }
                during?()
                return .success(TransportResponse(status: 200, body: [UInt8](repeating: 0x42, count: 100)))
            case .events:
                return .success(TransportResponse(status: 200, body: []))
            }
        }
    }

    static func controller(_ dir: String, _ server: Server) throws -> ContentCardsController {
        try ContentCardsController(
            json: #"{"userId":"a","storagePath":"\#(dir)/store","refreshTokens":0,"source":{"callback":true},"images":{}}"#,
            transport: ClosureTransport { server.send($0) })
    }

    /// The image files under the storage path (USER/IMAGE), temporary ones too.
    static func imageFiles(_ dir: String) -> [String] {
        ((try? FileManager.default.subpathsOfDirectory(atPath: dir + "/store/images")) ?? [])
            .filter { $0.split(separator: "/").count == 2 }
    }

    /// A controller whose first image fetch is waiting at the server's gate.
    static func withFetchAtTheGate(_ name: String, _ body: (ContentCardsController, Server, String) throws -> Void) throws {
        let dir = Fixtures.temporaryDirectory(name)
        defer { Fixtures.removeTree(dir) }
        let server = Server()
        let c = try controller(dir, server)
        defer { c.close() }
        try c.refresh(timeout: 5)
        #expect(server.started.wait(timeout: .now() + 10) == .success)
        try body(c, server, dir)
    }

    static func waitIdle(_ c: ContentCardsController) -> Bool {
        BackgroundWorkTests.waitUntil { c.images?.isIdle ?? true }
    }

    /// A fetch still out when the controller closes: its image is not written. It was, with
    /// the cache's eviction after it, into a directory the host may be removing once the
    /// close returned.
    @Test func aFetchThatComesBackAfterCloseKeepsNothing() throws {
        let dir = Fixtures.temporaryDirectory("images-close")
        defer { Fixtures.removeTree(dir) }
        let server = Server()
        let c = try Self.controller(dir, server)
        try c.refresh(timeout: 5)
        #expect(server.started.wait(timeout: .now() + 10) == .success)
        c.close()
        server.gate.signal()
        #expect(Self.waitIdle(c))
        #expect(Self.imageFiles(dir).isEmpty, "\(Self.imageFiles(dir))")
        #expect(server.imageRequests.count == 1)
    }

    /// A forget while an image fetch hangs returns within its own timeout (it waited up to
    /// twice `timeoutSeconds` whatever the timeout given), and the image that comes back after
    /// it is not written into the forgotten user's cache.
    @Test func aForgetWaitsForTheImagesWithinItsTimeoutAndKeepsNothingAfter() throws {
        try Self.withFetchAtTheGate("images-forget") { c, server, dir in
            let started = monotonicSeconds()
            _ = try c.forgetUser(pending: .discard, timeout: 1)
            #expect(monotonicSeconds() - started < 5)
            server.gate.signal()
            #expect(Self.waitIdle(c))
            #expect(Self.imageFiles(dir).isEmpty, "\(Self.imageFiles(dir))")
        }
    }

    /// A user forgotten after a change to another user, while a prefetch of that user's feed
    /// still waited in the queue: when it ran, it must not make the forgotten user's directory
    /// again (each prefetch makes the current user's directory again when it is gone).
    @Test func aQueuedPrefetchOfAForgottenUserLeavesNoDirectory() throws {
        try Self.withFetchAtTheGate("images-queued") { c, server, dir in
            try c.refresh(timeout: 5)                   // the next prefetch of a's feed, queued
            try c.changeUser("b")
            _ = try c.forgetUser("a", pending: .discard, timeout: 1)
            server.gate.signal()
            #expect(Self.waitIdle(c))
            let gone = dir + "/store/images/" + ImageCache.hash("a")
            #expect(!FileManager.default.fileExists(atPath: gone), "\(Self.imageFiles(dir))")
        }
    }

    /// A user change while the previous user's prefetch runs: it stops after its current
    /// image. It went on fetching the previous user's images into that user's cache (which a
    /// forget of that user may be emptying).
    @Test func aUserChangeStopsThePreviousUsersPrefetch() throws {
        try Self.withFetchAtTheGate("images-change") { c, server, _ in
            try c.changeUser("b")
            server.gate.signal()
            #expect(Self.waitIdle(c))
            #expect(server.imageRequests.count == 1, "\(server.imageRequests)")
        }
    }

    /// `waitForImages` from inside the prefetch's own transport call is refused at once. It
    /// waited its whole timeout for the prefetch that was calling it.
    @Test func aWaitFromInsideThePrefetchIsRefused() throws {
        let dir = Fixtures.temporaryDirectory("images-self")
        defer { Fixtures.removeTree(dir) }
        final class Box: @unchecked Sendable {
            weak var controller: ContentCardsController?
            var outcome: Result<ImageStats, ContentCardsError>?
        }
        let box = Box()
        let server = Server()
        server.gate.signal()
        server.during = {
            if box.outcome == nil, let c = box.controller {
                box.outcome = Result { () throws(ContentCardsError) in try c.waitForImages(timeout: 3) }
            }
        }
        let c = try Self.controller(dir, server)
        defer { c.close() }
        box.controller = c
        try c.refresh(timeout: 5)
        _ = try c.waitForImages(timeout: 20)
        guard case .failure(let e)? = box.outcome else {
            Issue.record("the wait from the prefetch was not refused: \(String(describing: box.outcome))")
            return
        }
        #expect(e.code == .refused)
    }

    /// Two cards whose image URLs are canonically equivalent but not the same bytes (two files
    /// on the server): both images fetched and kept. Sets of URL `String`s took them for one:
    /// the second was never fetched, and its card had no image.
    @Test func equivalentImageURLsAreTwoImages() throws {
        let dir = Fixtures.temporaryDirectory("images-bytes")
        defer { Fixtures.removeTree(dir) }
        let urls = ["https://img.example/caf\u{E9}.png", "https://img.example/cafe\u{301}.png"]
        let c = try ContentCardsController(
            json: #"{"userId":"u","storagePath":"\#(dir)/store","refreshTokens":0,"source":{"callback":true},"images":{}}"#,
            transport: ClosureTransport { r in
                if r.kind == .image { return .success(TransportResponse(status: 200, body: Array(r.url.utf8))) }
                let cards = urls.enumerated().map { #"{"id":"c\#($0.offset)","tp":"banner_image","ca":1,"i":"\#($0.element)"}"# }
                return .success(TransportResponse(status: 200, body: Array(#"{"cards":[\#(cards.joined(separator: ","))],"full_sync":true}"#.utf8)))
            })
        defer { c.close() }
        try c.refresh(timeout: 5)
        let stats = try c.waitForImages(timeout: 10)
        #expect(stats.fetched == 2 && stats.cached == 2)
        let paths = try c.cards().compactMap(\.imagePath)
        #expect(Set(paths).count == 2)
        try c.refresh(timeout: 5)
        #expect(try c.waitForImages(timeout: 10).cached == 2)   // neither removed by the next prefetch
    }

    /// An image URL with a NUL was cut at it on its way to the transport (a C string): another
    /// image was fetched and cached under the whole URL. Such URLs, and ones with spaces or
    /// control characters, are not fetched.
    @Test func anImageURLWithANULOrAControlCharacterIsNotFetched() throws {
        let dir = Fixtures.temporaryDirectory("images-nul")
        defer { Fixtures.removeTree(dir) }
        let fetched = LockedBox<[String]>([])
        let urls = [#"https://img.example/a.png\u0000x"#, #"https://img.example/b.png\nx"#, "https://img.example/c d.png",
                    "https://img.example/ok.png"]
        let c = try ContentCardsController(
            json: #"{"userId":"u","storagePath":"\#(dir)/store","refreshTokens":0,"source":{"callback":true},"images":{}}"#,
            transport: ClosureTransport { r in
                if r.kind == .image {
                    fetched.mutate { $0.append(r.url) }
                    return .success(TransportResponse(status: 200, body: Array(r.url.utf8)))
                }
                let cards = urls.enumerated().map { #"{"id":"c\#($0.offset)","tp":"banner_image","ca":1,"i":"\#($0.element)"}"# }
                return .success(TransportResponse(status: 200, body: Array(#"{"cards":[\#(cards.joined(separator: ","))],"full_sync":true}"#.utf8)))
            })
        defer { c.close() }
        try c.refresh(timeout: 5)
        let stats = try c.waitForImages(timeout: 10)
        #expect(fetched.value == ["https://img.example/ok.png"])
        #expect(stats.cached == 1)
        #expect(try c.cards().compactMap(\.imagePath).count == 1)
    }
}
