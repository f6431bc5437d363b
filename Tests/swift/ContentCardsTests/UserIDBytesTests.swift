import Foundation
import Testing
@testable import ContentCards

/// User ids are compared byte for byte (docs/BEHAVIOUR.md, "Users"), as SQLite, the server and C
/// callers compare them: "é" as one code point (U+00E9) and as "e" + U+0301 are two users,
/// which Swift's `==` on strings takes for one.
@Suite struct UserIDBytesTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    /// A change between the two is a change: it stayed on the first user (no update, the
    /// second user's syncs and events went to the first's account).
    @Test func aChangeBetweenCanonicallyEquivalentIdsIsAChange() throws {
        for storage in [nil, Fixtures.temporaryDirectory("user-bytes")] {
            defer { storage.map(Fixtures.removeTree) }
            let path = storage.map { #","storagePath":"\#($0)""# } ?? ""
            let c = try ContentCardsController(json: #"{"userId":"\#(Self.composed)","refreshTokens":0\#(path)}"#)
            defer { c.close() }
            // Equal to Swift, two ids to everyone else.
            #expect(Self.composed == Self.decomposed && !Self.composed.utf8.elementsEqual(Self.decomposed.utf8))
            _ = try c.apply(Fixtures.payload([Fixtures.wire("first")], full: true))
            try c.changeUser(Self.decomposed)
            #expect(c.userID.utf8.elementsEqual(Self.decomposed.utf8))
            #expect(try c.cards().isEmpty)
            _ = try c.apply(Fixtures.payload([Fixtures.wire("second")], full: true))
            try c.changeUser(Self.composed)
            #expect(try c.cards().map(\.id) == ["first"])
        }
    }

    /// Forgetting the other id leaves the current user's cards: it took the current user for
    /// the one forgotten and read the other's (empty) state into the feed.
    @Test func forgettingAnEquivalentIdLeavesTheCurrentUser() throws {
        let dir = Fixtures.temporaryDirectory("user-bytes-forget")
        defer { Fixtures.removeTree(dir) }
        let c = try ContentCardsController(json: #"{"userId":"\#(Self.composed)","refreshTokens":0,"storagePath":"\#(dir)"}"#)
        defer { c.close() }
        _ = try c.apply(Fixtures.payload([Fixtures.wire("mine")], full: true))
        let receipt = try c.forgetUser(Self.decomposed, pending: .discard)
        #expect(receipt.cards == 0)
        #expect(try c.cards().map(\.id) == ["mine"])
    }

    @Test func aUserIdWithANulIsRefused() throws {
        let c = try ContentCardsController(json: #"{"userId":"u","refreshTokens":0}"#)
        defer { c.close() }
        #expect(throws: ContentCardsError.self) { try c.changeUser("a\u{0}b") }
        #expect(c.userID == "u")
    }
}
