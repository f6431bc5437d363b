"""Read state (docs/BEHAVIOUR.md, "Read state"): the same scenarios as Tests/c/test_read_state.c
and Tests/swift/ContentCardsTests/ReadStateTests.swift, with the same results; then two devices of one
user through the reference server over HTTP on 127.0.0.1 (its per-user state, docs/WIRE.md)."""
from __future__ import annotations

import json

import pytest

import contentcards

from contentcards import CardNotFoundError, ClosedError, ContentCards

from conftest import open_remote

CARDS = {"cards": [
    {"id": "m-1", "tp": "short_news", "ca": 10, "ds": "one", "e": {"class_type": "message"}},
    {"id": "m-2", "tp": "short_news", "ca": 20, "ds": "two", "e": {"class_type": "message"}},
    {"id": "t-1", "tp": "short_news", "ca": 30, "ds": "tile", "rd": True, "e": {"class_type": "tile"}},
    {"id": "ctl", "tp": "control", "ca": 40}]}


def test_mark_read_unread_and_all() -> None:
    with ContentCards(user_id="u") as cc:
        cc.apply(CARDS)
        assert cc.unread_count() == 2
        assert cc.unread_count(["message"]) == 2
        assert cc.unread_count(["tile"]) == 0
        assert cc.unviewed_count() == 3
        assert cc.counts() == (4, 3, 2)

        marked = cc.mark_read("m-1")
        assert marked.recorded and marked.state_changed and marked.event_id   # as Swift's result
        assert cc.unread_count() == 1
        assert cc.unviewed_count() == 3            # impressions keep their meaning
        again = cc.mark_read("m-1")
        assert not again.recorded and again.reason == "already read" and again.event_id is None
        assert cc.mark_unread("t-1").recorded
        assert cc.unread_count(["tile"]) == 1
        assert [(c.id, c.read) for c in cc.cards(["message"])] == [("m-2", False), ("m-1", True)]

        assert cc.mark_all_read(["message"]) == 1
        assert cc.unread_count() == 1
        assert cc.mark_all_read() == 2             # t-1 and the control card
        assert cc.unread_count() == 0
        assert cc.mark_all_read() == 0

        pending = cc.list_pending_events()
        assert pending.pending == 5
        assert [(e.type, e.card_id) for e in pending.events][:2] == [("read", "m-1"), ("unread", "t-1")]

        with pytest.raises(CardNotFoundError):
            cc.mark_read("nope")
    with pytest.raises(ClosedError):
        cc.unread_count()
    with pytest.raises(ClosedError):
        cc.mark_read("m-1")


def test_subscribers_hear_read_changes() -> None:
    with ContentCards(user_id="u") as cc:
        cc.apply(CARDS)
        updates: list[contentcards.Update] = []
        cc.subscribe(updates.append)
        cc.mark_read("m-1")
        cc.mark_read("m-1")                        # no change: no update
        cc.mark_unread("m-1")
        cc.mark_all_read()
        assert [(u.reason, u.card_id, u.counts.unread) for u in updates] == [
            ("read", "m-1", 1), ("unread", "m-1", 2), ("read", None, 0)]


def test_read_state_is_durable(tmp_path) -> None:
    store = str(tmp_path / "store")
    with ContentCards(user_id="u", storage_path=store) as cc:
        cc.apply(CARDS)
        cc.mark_read("m-2")
    with ContentCards(user_id="u", storage_path=store) as cc:
        assert cc.unread_count() == 1
        assert cc.card("m-2").read
        assert json.loads(json.dumps(cc.card("m-2").to_json()))["read"] is True


def _device(server, tmp_path, name: str) -> ContentCards:
    return open_remote(server, "dana", device_id=name, storage_path=str(tmp_path / name))


def test_two_devices_of_one_user(server, tmp_path) -> None:
    phone, tablet = _device(server, tmp_path, "phone"), _device(server, tmp_path, "tablet")
    with phone, tablet:
        phone.refresh(5)
        tablet.refresh(5)
        unread, unviewed = tablet.unread_count(), tablet.unviewed_count()

        phone.log_impression("msg-1")
        phone.log_click("msg-1")
        phone.log_dismissal("tile-2")
        phone.mark_read("msg-3")
        phone.flush_events(5)

        assert not tablet.refresh(5).full_sync
        assert tablet.card("msg-1").viewed and tablet.card("msg-1").clicked
        assert tablet.card("tile-2").dismissed
        assert tablet.card("msg-3").read
        assert tablet.unread_count() == unread - 2
        assert tablet.unviewed_count() == unviewed - 2

        tablet.mark_unread("msg-3")
        tablet.flush_events(5)
        phone.refresh(5)
        assert not phone.card("msg-3").read

        # Merge rule 9: a read change not yet delivered is not undone by a sync.
        tablet.mark_read("msg-1")
        tablet.mark_unread("msg-1")
        tablet.flush_events(5)
        phone.mark_read("msg-1")
        phone.refresh(5)
        assert phone.card("msg-1").read
        phone.flush_events(5)
        tablet.refresh(5)
        assert tablet.card("msg-1").read

        server_card = next(c["card"] for c in server.cards("dana")["cards"] if c["card"].get("id") == "msg-1")
        assert server_card["v"] is True and server_card["cl"] is True and server_card["rd"] is True
