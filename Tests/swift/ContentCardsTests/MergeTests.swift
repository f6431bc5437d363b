import Testing
@testable import ContentCards

/// docs/BEHAVIOUR.md, "Merge", rule by rule, on the pure merge.
@Suite struct MergeTests {
    func card(_ id: String, created: Int64 = 100, viewed: Bool = false, clicked: Bool = false,
              dismissed: Bool = false, isTest: Bool = false, title: String = "t") -> Card {
        Card(id: id, created: created, viewed: viewed, clicked: clicked, dismissed: dismissed, dismissible: true,
             isTest: isTest, content: .classic(.init(title: title, cardDescription: "d")))
    }

    func state(_ cards: [Card], dismissed: Set<CardKey> = []) -> StoredUser {
        StoredUser(cards: Dictionary(uniqueKeysWithValues: cards.map { (CardKey($0.id), $0) }), dismissed: dismissed)
    }

    @Test func rule2_aNewerStoredCopyIsKept() {
        var s = state([card("a", created: 200, title: "local")])
        let m = Merge.apply(Payload(cards: [.init(card: card("a", created: 100, title: "server"))]), to: &s)
        #expect(s.cards["a"]?.title == "local")
        #expect(m.stats.keptNewer == 1 && m.changes.upserts.isEmpty)
    }

    @Test func rule2_anEqualOrNewerServerCopyReplaces() {
        var s = state([card("a", created: 100, title: "local")])
        let m = Merge.apply(Payload(cards: [.init(card: card("a", created: 100, title: "server"))]), to: &s)
        #expect(s.cards["a"]?.title == "server")
        #expect(m.stats.updated == 1)
    }

    @Test func rule3_serverRemovalDeletesAndForgetsTheDismissal() {
        var s = state([card("a", dismissed: true)], dismissed: ["a"])
        let m = Merge.apply(Payload(cards: [.init(card: card("a"), removed: true)]), to: &s)
        #expect(s.cards["a"] == nil && !s.dismissed.contains("a"))
        #expect(m.changes.deletes == ["a"] && m.changes.dismissalsRemoved == ["a"])
        #expect(m.stats.removed == 1)
    }

    @Test func rule3_removalOfANewerStoredCopyIsIgnored() {
        var s = state([card("a", created: 300)])
        _ = Merge.apply(Payload(cards: [.init(card: card("a", created: 100), removed: true)]), to: &s)
        #expect(s.cards["a"] != nil)
    }

    @Test func rule4_aLocalDismissalIsNotResurrected() {
        var s = state([card("a", dismissed: true)], dismissed: ["a"])
        _ = Merge.apply(Payload(cards: [.init(card: card("a", created: 150, dismissed: false, title: "new"))]), to: &s)
        #expect(s.cards["a"]?.dismissed == true)
        #expect(s.cards["a"]?.title == "new")
    }

    @Test func rule5_aServerDismissalDismissesLocally() {
        var s = state([card("a")])
        let m = Merge.apply(Payload(cards: [.init(card: card("a", dismissed: true))]), to: &s)
        #expect(s.cards["a"]?.dismissed == true && s.dismissed.contains("a"))
        #expect(m.changes.dismissalsAdded == ["a"])
    }

    @Test func rule6_stickyFlagsAreTheOrOfLocalAndServer() {
        var s = state([card("a", viewed: true), card("b", clicked: true), card("c")])
        _ = Merge.apply(Payload(cards: [.init(card: card("a")), .init(card: card("b", viewed: true)),
                                        .init(card: card("c", clicked: true))]), to: &s)
        #expect(s.cards["a"]?.viewed == true && s.cards["a"]?.clicked == false)
        #expect(s.cards["b"]?.viewed == true && s.cards["b"]?.clicked == true)
        #expect(s.cards["c"]?.clicked == true && s.cards["c"]?.viewed == false)
    }

    @Test func rule7_fullSyncPurgesUnlistedCardsButTestCardsSurvive() {
        var s = state([card("keep"), card("gone"), card("test", isTest: true)], dismissed: ["gone", "keep"])
        let m = Merge.apply(Payload(cards: [.init(card: card("keep"))], fullSync: true), to: &s)
        #expect(Set(s.cards.keys) == ["keep", "test"])
        #expect(s.dismissed == ["keep"])
        #expect(Set(m.changes.deletes) == ["gone"])
        #expect(m.changes.dismissalsRemoved == ["gone"])
    }

    @Test func rule7_anIncrementalSyncPurgesNothing() {
        var s = state([card("a"), card("b")])
        _ = Merge.apply(Payload(cards: [.init(card: card("a"))], fullSync: false), to: &s)
        #expect(Set(s.cards.keys) == ["a", "b"])
    }

    @Test func rule8_cursorsAreSavedWhenGiven() {
        var s = state([])
        let m = Merge.apply(Payload(lastFullSyncAt: 10, lastCardUpdatedAt: 20), to: &s)
        #expect(s.cursors == SyncCursors(lastFullSyncAt: 10, lastCardUpdatedAt: 20))
        #expect(m.changes.cursors == s.cursors)
        let unchanged = Merge.apply(Payload(lastFullSyncAt: -1, lastCardUpdatedAt: 30), to: &s)
        #expect(s.cursors == SyncCursors(lastFullSyncAt: 10, lastCardUpdatedAt: 30))
        #expect(unchanged.changes.cursors != nil)
    }

    @Test func anUnchangedCardWritesNothing() {
        var s = state([card("a")])
        let m = Merge.apply(Payload(cards: [.init(card: card("a"))]), to: &s)
        #expect(m.changes.isEmpty)
    }

    /// A hand-made payload may list an id twice: the later copy sees what the earlier one
    /// changed, also on a first sync (where the merge skips looking up the empty stored state).
    @Test func aRepeatedIdSeesTheEarlierCopysChangesOnAFirstSync() {
        var s = StoredUser()
        let m = Merge.apply(Payload(cards: [.init(card: card("a", dismissed: true)),
                                            .init(card: card("a", created: 150, viewed: true)),
                                            .init(card: card("b")), .init(card: card("b", created: 90))]), to: &s)
        #expect(s.cards["a"]?.dismissed == true)      // rule 4 over the earlier copy's rule 5
        #expect(s.cards["a"]?.viewed == true && s.cards["a"]?.created == 150)
        #expect(s.cards["b"]?.created == 100)         // rule 2 against the earlier copy
        #expect(m.stats.added == 2 && m.stats.updated == 1 && m.stats.keptNewer == 1)
        #expect(m.changes.dismissalsAdded == ["a"])
    }

    /// The payload's cards are moved into the changes, in the payload's order: the merge
    /// leaves none of them behind, not even an empty card in the place of each.
    @Test func planningTakesThePayloadsCards() {
        var payload = Payload(cards: [.init(card: card("a")), .init(card: card("b")), .init(card: card("c"))])
        let m = Merge.plan(&payload, from: StoredUser())
        #expect(m.changes.upserts.map(\.id) == ["a", "b", "c"])
        #expect(payload.cards.isEmpty)
    }

    /// Applying takes the changes' cards in their order, and leaves the list empty.
    @Test func applyingTakesTheChangesCardsInOrder() {
        var payload = Payload(cards: [.init(card: card("c")), .init(card: card("a")), .init(card: card("b"))])
        var m = Merge.plan(&payload, from: StoredUser())
        var s = StoredUser()
        let transitions = s.apply(moving: &m.changes)
        #expect(transitions.map { $0.new?.id } == ["c", "a", "b"])
        #expect(m.changes.upserts.isEmpty)
        #expect(Set(s.cards.keys.map(\.id)) == ["a", "b", "c"])
    }

    /// A decoded payload carries its cards' ids for the merge (rule 7 without hashing every id
    /// again); changing its cards drops them, so a full sync still keeps exactly its cards.
    @Test func aDecodedPayloadWhoseCardsChangedMergesOnItsCards() throws {
        let text = #"{"full_sync":true,"cards":[{"id":"a","tp":"short_news","ca":1,"ds":"x"},"#
            + #"{"id":"b","tp":"short_news","ca":1,"ds":"x"}]}"#
        var payload = try PayloadDecoder().decode(text)
        #expect(payload.listedIDs?.ids == ["a", "b"])
        payload.cards[1].card.id = "c"
        #expect(payload.listedIDs == nil)
        var s = state([card("b"), card("d")])
        let m = Merge.apply(payload, to: &s)
        #expect(Set(s.cards.keys.map(\.id)) == ["a", "c"])
        #expect(m.stats.added == 2 && m.stats.removed == 2)
    }
}

