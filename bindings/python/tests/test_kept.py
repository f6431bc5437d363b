"""The kept feed, through the binding (docs/BEHAVIOUR.md, "The kept feed"): after a clean close
a later open serves the first feed and the counts as the store gives them, without opening it;
another controller's write is read at the next read; a damaged copy is never served. The same
scenarios as Tests/c/test_kept.c and ``KeptFeedTests`` in Swift."""

from __future__ import annotations

import os
import time
from typing import Any

import contentcards as cc

#: Longer than the time a store file's times must have settled for (KeptFeed.settled).
SETTLE = 0.08


def open_store(store: str, feed: str) -> cc.ContentCards:
    return cc.ContentCards(user_id="u-1", storage_path=store, source={"file": feed}, refresh_tokens=0)


def snapshot(c: cc.ContentCards) -> tuple[Any, ...]:
    cards = c.cards()
    return (c.counts(), [card.id for card in cards], [card.to_json() for card in cards], c.cards_json())


def test_a_reopen_serves_the_kept_feed_as_the_store_gives_it(tmp_path: Any, sample_feed: str) -> None:
    store = str(tmp_path / "store")
    with open_store(store, sample_feed) as c:
        c.refresh()
        c.log_impression(c.cards()[0].id)
        before = snapshot(c)
    kept = os.path.join(store, "contentcards.sqlite-feed")
    assert os.path.exists(kept)
    time.sleep(SETTLE)
    with open_store(store, sample_feed) as c:
        assert snapshot(c) == before
        assert snapshot(c) == before
        # Another controller's write is read at the next read.
        with open_store(store, sample_feed) as writer:
            writer.log_dismissal(before[1][0])
            written = snapshot(writer)
        assert snapshot(c) == written
        assert written != before
    # A copy with a byte changed anywhere is not served.
    size = os.path.getsize(kept)
    for at in (3, 20, 120, size // 2, size - 2):
        with open(kept, "r+b") as f:
            f.seek(at)
            byte = f.read(1)
            f.seek(at)
            f.write(bytes([byte[0] ^ 0x20]))
        time.sleep(SETTLE)
        with open_store(store, sample_feed) as c:
            assert snapshot(c) == written
