"""Updates made on several threads are numbered in the order of their states (``sequence``),
the scenario of the C test ``test_updates_are_numbered_in_the_order_of_their_states`` and of
Swift's ``SubscriptionTests.updatesAreNumberedInTheOrderOfTheirStates``."""
from __future__ import annotations

import threading

import contentcards as cc

THREADS, CARDS = 4, 8


def test_updates_are_numbered_in_the_order_of_their_states() -> None:
    with cc.ContentCards(user_id="u", refresh_tokens=0) as c:
        c.apply({"full_sync": True,
                 "cards": [{"id": f"c{i}", "tp": "short_news", "ca": 1763700000, "ds": "D"}
                           for i in range(THREADS * CARDS)]})
        updates: list[cc.Update] = []
        lock = threading.Lock()

        def record(update: cc.Update) -> None:
            with lock:
                updates.append(update)

        sub = c.subscribe(record)

        def mark(first: int) -> None:
            for i in range(first, first + CARDS):
                c.mark_read(f"c{i}")

        threads = [threading.Thread(target=mark, args=(t * CARDS,)) for t in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        sub.cancel()

        assert len(updates) == THREADS * CARDS
        numbers = [u.sequence for u in updates]
        assert len(set(numbers)) == len(numbers) and min(numbers) >= 1
        # By number, the unread count falls one card at a time, whatever the order of arrival.
        by_number = sorted(updates, key=lambda u: u.sequence)
        assert [u.counts.unread for u in by_number] == list(range(THREADS * CARDS - 1, -1, -1))
        current = c.current_update()
        assert current.reason is cc.UpdateReason.CURRENT and current.counts == cc.Counts(32, 32, 0)
        assert current.sequence > max(numbers)
        assert current.raw["sequence"] == current.sequence and current.to_json() == current.raw
