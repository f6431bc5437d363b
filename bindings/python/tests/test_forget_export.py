"""Forgetting and exporting a user (logout, erasure and access requests): ``export_user`` gives
every part of what is stored for a user; ``forget_user`` removes it all, leaving none of its
bytes in any file under the storage path (the store, its -wal and -shm, the images), delivers
its pending events first or discards them, says what it removed, and leaves other users alone.

The forgotten user's card ids, titles and image names all hold the marker FORGET-ME, so one
scan of the raw bytes finds any of them; the kept user's hold KEEP-ME, which the same scan must
still find (so the scan is not vacuous)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

import contentcards as cc
from contentcards import _ffi
from conftest import REPO
from reference_server import ReferenceServer

pytestmark = pytest.mark.skipif(
    not (_ffi.has("cc_controller_forget_user") and _ffi.has("cc_controller_export_user")),
    reason="the library has no cc_controller_forget_user / cc_controller_export_user yet")

EXPORT_SCHEMA = os.path.join(REPO, "docs", "schema", "export.schema.json")
GONE = "forget-me"
KEPT = "keeper"
MARK = b"FORGET-ME"
KEEP_MARK = b"KEEP-ME"
GONE_IDS = ["FORGET-ME-ID-1", "FORGET-ME-ID-2", "FORGET-ME-ID-3"]
GONE_TITLES = ["FORGET-ME-TITLE-7f3a-1", "FORGET-ME-TITLE-7f3a-2", "FORGET-ME-TITLE-7f3a-3"]


@pytest.fixture(scope="module")
def _empty_feed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    feed = tmp_path_factory.mktemp("feed") / "empty.json"
    feed.write_text('{"cards": []}')
    with ReferenceServer(str(feed)) as server:
        yield server


@pytest.fixture
def server(_empty_feed_server: ReferenceServer) -> ReferenceServer:
    """A server with no cards but the two users' below; reset."""
    _empty_feed_server.reset()
    url = _empty_feed_server.url
    created = int(time.time()) - 100
    _empty_feed_server.set_cards(GONE, [
        {"id": card_id, "tp": "captioned_image", "ca": created + n, "tt": title,
         "ds": f"description of {title}", "u": f"https://example.com/{card_id}", "db": True,
         "i": f"{url}/images/{card_id}.png?size=700", "ar": 1.0}
        for n, (card_id, title) in enumerate(zip(GONE_IDS, GONE_TITLES))
    ] + [{"id": "FORGET-ME-SHARED-IMAGE", "tp": "banner_image", "ca": created + 9,
          "i": f"{url}/images/shared.png?size=600"}])
    _empty_feed_server.set_cards(KEPT, [
        {"id": "KEEP-ME-ID-1", "tp": "captioned_image", "ca": created, "tt": "KEEP-ME-TITLE-b2c9",
         "ds": "stays", "i": f"{url}/images/shared.png?size=600", "ar": 1.0}])
    return _empty_feed_server


def open_stored(server: ReferenceServer, path: str, user: str = GONE) -> cc.ContentCards:
    return cc.ContentCards(user_id=user, storage_path=path, refresh_tokens=0, timeout_seconds=5,
                           source={"url": server.url}, events={"url": server.url},
                           event_flush_interval_seconds=0, images={})


def files_holding(root: str, marker: bytes) -> list[str]:
    """The files under root whose bytes or name hold marker."""
    found = []
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                if marker in f.read() or marker.decode() in path:
                    found.append(os.path.relpath(path, root))
    return found


def stock(c: cc.ContentCards) -> dict[str, str]:
    """Both users' cards and images stored; the forgotten user's read state, dismissal and
    events (the current user at the end). The event ids by kind."""
    c.change_user(KEPT)
    c.refresh()
    c.wait_for_images(10)
    c.change_user(GONE)
    c.refresh()
    c.wait_for_images(10)
    events = {
        "impression": c.log_impression(GONE_IDS[0]).event_id,
        "click": c.log_click(GONE_IDS[0]).event_id,
        "read": c.mark_read(GONE_IDS[1]).event_id,
        "dismissal": c.log_dismissal(GONE_IDS[2]).event_id,
    }
    assert all(events.values()) and c.pending_events() == 4
    return {k: v for k, v in events.items() if v}


def test_export_user_gives_every_part(server: ReferenceServer, tmp_path: Any) -> None:
    with open_stored(server, str(tmp_path / "store")) as c:
        events = stock(c)
        export = c.export_user()
        assert export.format == 1 and export.user_id == GONE
        assert abs(export.exported_at - time.time()) < 60
        by_id = {card.id: card for card in export.cards}
        # Every stored card, visible or not (the dismissed one too), with its local state.
        assert set(by_id) == {*GONE_IDS, "FORGET-ME-SHARED-IMAGE"}
        assert by_id[GONE_IDS[0]].viewed and by_id[GONE_IDS[0]].clicked
        assert by_id[GONE_IDS[1]].read and by_id[GONE_IDS[2]].dismissed
        assert {card.title for card in export.cards if card.title} == set(GONE_TITLES)
        assert export.dismissed == (GONE_IDS[2],)
        assert export.sync["last_full_sync_at"] > 0 and export.sync["synced_at"] > 0
        assert "etag" in export.sync and "last_card_updated_at" in export.sync
        assert sorted(e["id"] for e in export.pending_events) == sorted(events.values())
        assert {e["user_id"] for e in export.pending_events} == {GONE}
        assert {e["card_id"] for e in export.pending_events} == set(GONE_IDS)
        urls = {image["url"] for image in export.images}
        assert urls == {f"{server.url}/images/{i}.png?size=700" for i in GONE_IDS} | {
            f"{server.url}/images/shared.png?size=600"}
        assert sum(image["bytes"] for image in export.images) == 3 * 700 + 600
        assert export.to_json() == export.raw   # (byte for byte: test_results_json.py)
        # Another user's export: only theirs; a user with nothing stored: empty lists.
        kept = c.export_user(KEPT)
        assert [card.id for card in kept.cards] == ["KEEP-ME-ID-1"]
        assert kept.dismissed == () and kept.pending_events == ()
        nobody = c.export_user("nobody")
        assert (nobody.cards, nobody.dismissed, nobody.pending_events, nobody.images) == \
            ((), (), (), ())
        assert nobody.user_id == "nobody"


def test_the_export_follows_its_schema(server: ReferenceServer, tmp_path: Any) -> None:
    """docs/schema/export.schema.json: the same document in every runtime."""
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is installed by `make python`")
    if not os.path.exists(EXPORT_SCHEMA):
        pytest.skip("docs/schema/export.schema.json is not written yet")
    import json
    with open(EXPORT_SCHEMA, encoding="utf-8") as f:
        validator = jsonschema.Draft202012Validator(json.load(f))
    with open_stored(server, str(tmp_path / "store")) as c:
        stock(c)
        for user in (None, KEPT, "nobody"):
            document = json.loads(_ffi.controller_export_user(
                c._handle, None if user is None else user.encode()))
            assert list(validator.iter_errors(document)) == [], user


def test_forget_user_discarding_leaves_no_byte_of_the_user(server: ReferenceServer,
                                                          tmp_path: Any) -> None:
    root = str(tmp_path / "store")
    with open_stored(server, root) as c:
        stock(c)
        assert files_holding(root, MARK), "the scan finds the user's bytes before"
        updates: list[cc.Update] = []
        c.subscribe(updates.append)
        receipt = c.forget_user(pending="discard")
        assert [u.reason for u in updates] == [cc.UpdateReason.USER_FORGOTTEN]
        assert updates[0].counts == cc.Counts(0, 0, 0)
        assert receipt == cc.ForgetReceipt(
            user_id=GONE, cards=4, dismissals=1, events_delivered=0, events_discarded=4,
            sync_state=True, images=4, wal_truncated=True)
        assert receipt.to_json() == {
            "user_id": GONE, "cards": 4, "dismissals": 1, "events_delivered": 0,
            "events_discarded": 4, "sync_state": True, "images": 4, "wal_truncated": True}
        assert files_holding(root, MARK) == []
        for value in [*GONE_IDS, *GONE_TITLES]:
            assert files_holding(root, value.encode()) == []
        # The controller stays open for the same user, with nothing stored.
        assert c.user_id == GONE and c.count() == 0 and c.pending_events() == 0
        empty = c.export_user()
        assert (empty.cards, empty.dismissed, empty.pending_events, empty.images) == \
            ((), (), (), ())
        # The other user's cards and its copy of the image they share stay.
        kept = c.export_user(KEPT)
        assert [card.id for card in kept.cards] == ["KEEP-ME-ID-1"]
        assert [image["url"] for image in kept.images] == [
            f"{server.url}/images/shared.png?size=600"]
        assert files_holding(root, KEEP_MARK)
    assert files_holding(root, MARK) == []   # and after close
    assert server.events() == []             # discarded: never sent


def test_forget_user_flushing_delivers_the_events_first(server: ReferenceServer,
                                                       tmp_path: Any) -> None:
    with open_stored(server, str(tmp_path / "store")) as c:
        events = stock(c)
        receipt = c.forget_user(GONE, pending="flush", timeout=10)
        assert (receipt.events_delivered, receipt.events_discarded, receipt.cards) == (4, 0, 4)
        delivered = server.events()
        assert sorted(e["id"] for e in delivered) == sorted(events.values())
        assert server.event_stats()["duplicates"] == 0
        assert c.pending_events() == 0 and c.export_user().cards == ()


def test_forget_user_flushing_removes_nothing_when_the_events_cannot_go(
        server: ReferenceServer, tmp_path: Any) -> None:
    root = str(tmp_path / "store")
    with open_stored(server, root) as c:
        stock(c)
        server.fault(path="/events", status=503, times=10)
        with pytest.raises(cc.ServerError):
            c.forget_user()                  # pending="flush" is the default
        assert c.pending_events() == 4 and len(c.export_user().cards) == 4
        assert files_holding(root, MARK)


def test_forgetting_another_user_keeps_the_current_one(server: ReferenceServer,
                                                      tmp_path: Any) -> None:
    root = str(tmp_path / "store")
    with open_stored(server, root) as c:
        stock(c)
        receipt = c.forget_user(KEPT, pending="discard")
        # Its copy of the shared image goes with it (each user's image cache is its own).
        assert receipt.user_id == KEPT and receipt.cards == 1 and receipt.images == 1
        assert files_holding(root, KEEP_MARK) == []
        assert files_holding(root, KEPT.encode()) == []   # not even its user id
        assert c.user_id == GONE and len(c.export_user().cards) == 4
        assert c.pending_events() == 4


def test_another_controllers_forget_reaches_this_one(server: ReferenceServer,
                                                     tmp_path: Any) -> None:
    """A second controller of the user on the same store, opened before the first forgot the
    user: its next refresh asks from the store's cursors (none now), so the server's full sync
    brings the user's cards back. It asked from the cursors it had loaded, and the server's
    delta (no card changed since) left it empty, as a success, until a full sync."""
    root = str(tmp_path / "store")
    with open_stored(server, root) as a:
        a.refresh()
        with open_stored(server, root) as b:
            assert b.counts().total == 4
            a.forget_user(pending="discard")
            summary = b.refresh()
            assert summary.full_sync
            assert b.counts().total == 4


def test_forget_user_arguments(server: ReferenceServer, tmp_path: Any) -> None:
    with open_stored(server, str(tmp_path / "store")) as c:
        with pytest.raises(ValueError, match='"flush" or "discard"'):
            c.forget_user(pending="later")
        with pytest.raises(TypeError):
            c.forget_user(timeout="soon")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            c.forget_user("nul\0inside")
        assert c.forget_user("nobody", pending="discard") == cc.ForgetReceipt(
            "nobody", 0, 0, 0, 0, False, 0, True)
    with pytest.raises(cc.ClosedError):
        c.forget_user()
    with pytest.raises(cc.ClosedError):
        c.export_user()


def test_flushing_without_an_event_sink_is_no_source(tmp_path: Any) -> None:
    with cc.ContentCards(user_id="u", storage_path=str(tmp_path / "store")) as c:
        c.apply([{"id": "a", "tp": "short_news", "ca": 1, "ds": "x"}])
        c.log_impression("a")
        with pytest.raises(cc.NoSourceError):
            c.forget_user()
        assert c.forget_user(pending="discard").events_discarded == 1
