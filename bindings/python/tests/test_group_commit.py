"""Group commit, as Tests/c/test_group_commit.c: 8 threads logging at once on one controller
with a file store (ctypes lets the GIL go during each call, so the calls overlap). Every call
that was recorded has its event stored exactly once, and each card's state is what its calls
say, also for a new controller reading the file afterwards."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import contentcards as cc

THREADS = 8
ROUNDS = 60
CARDS = 16


def test_many_threads_logging_at_once_lose_nothing(tmp_path: Path) -> None:
    shared = cc.ContentCards(user_id="u-1", storage_path=tmp_path, refresh_tokens=0)
    shared.apply(json.dumps([{"id": f"g{i}", "tp": "short_news", "ca": 1763700000, "ds": "d",
                              "db": True, "u": f"https://example.com/{i}"} for i in range(CARDS)]))
    recorded: list[str] = []
    unexpected: list[BaseException] = []
    lock = threading.Lock()

    def worker(w: int) -> None:
        for round_ in range(ROUNDS):
            card = f"g{(w * 5 + round_) % CARDS}"
            try:
                kind = round_ % 5
                if kind < 2:
                    r = shared.log_impression(card)
                elif kind == 2:
                    r = shared.log_click(card)
                elif kind == 3:
                    r = shared.log_dismissal(card)
                else:
                    r = shared.log_feed_displayed()
            except BaseException as e:  # noqa: BLE001 - every failure is reported below
                with lock:
                    unexpected.append(e)
                continue
            if r.recorded:
                assert r.event_id is not None
                with lock:
                    recorded.append(r.event_id)
            else:
                assert "already dismissed" in (r.reason or "")

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert unexpected == []
    assert len(set(recorded)) == len(recorded)
    assert shared.pending_events() == len(recorded)
    shared.close()

    again = cc.ContentCards(user_id="u-1", storage_path=tmp_path, refresh_tokens=0)
    try:
        outbox = again.list_pending_events()
        assert outbox.pending == len(recorded)
        assert sorted(e.id for e in outbox.events) == sorted(recorded)
        for i in range(CARDS):
            card = again.card(f"g{i}")
            assert card.viewed and card.clicked and card.dismissed
    finally:
        again.close()
