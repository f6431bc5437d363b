"""The image cache (docs/BEHAVIOUR.md, "Images"): the scenario of Tests/c/test_images.c against
the reference server over HTTP on 127.0.0.1 (serving images, no cards of its own), with the same
results (maxCount with least-recently-used eviction, one cache per user included); then the same
cache through the host transport."""
from __future__ import annotations

import json
import os
import stat
from typing import Iterator

import pytest

from contentcards import (ConfigError, ContentCards, NoSourceError, TransportRequest,
                          TransportResponse)
from reference_server import ReferenceServer

LIMITS = {"maxBytes": 8000, "maxCount": 10, "maxImageBytes": 4000}


@pytest.fixture(scope="module")
def image_server(tmp_path_factory) -> Iterator[ReferenceServer]:
    feed = tmp_path_factory.mktemp("feed") / "empty.json"
    feed.write_text('{"cards": []}')
    with ReferenceServer(str(feed)) as server:
        yield server


def banner(server: ReferenceServer, card_id: str, created: int, query: str) -> dict:
    return {"id": card_id, "tp": "banner_image", "ca": created,
            "i": f"{server.url}/images/{card_id}.png?{query}"}


def test_prefetch_paths_limits_cleaning_and_lru(image_server, tmp_path) -> None:
    server = image_server
    server.set_cards("pics", [banner(server, "a", 10, "size=3000"), banner(server, "b", 11, "size=3000"),
                              banner(server, "missing", 12, "status=404"),
                              banner(server, "huge", 13, "size=5000"),
                              {"id": "text", "tp": "short_news", "ca": 14, "ds": "no image"}])
    with ContentCards(user_id="pics", storage_path=str(tmp_path / "store"), refresh_tokens=0,
                      source={"url": server.url}, images=LIMITS) as cc:
        cc.refresh(5)                                  # failures never fail it
        assert tuple(cc.wait_for_images(10)) == (2, 2, 2, 6000, 0)
        paths = {card.id: card.image_path for card in cc.cards()}
        assert paths["missing"] is None and paths["huge"] is None and paths["text"] is None
        a, b = paths["a"], paths["b"]
        assert a.startswith(str(tmp_path / "store" / "images") + "/")
        assert os.path.getsize(a) == 3000 and stat.S_IMODE(os.stat(a).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(a)).st_mode) == 0o700
        assert cc.card("a").image_path == a

        before = len(server.images_served())
        cc.refresh(5)
        cc.wait_for_images(10)
        assert len(server.images_served()) == before + 2   # only the two failures again

        server.remove("pics", ["a"])
        cc.refresh(5)
        cc.wait_for_images(10)
        assert not os.path.exists(a)

        server.set_cards("pics", [banner(server, "g", 20, "size=3000"), banner(server, "h", 21, "size=3000")])
        cc.refresh(5)
        stats = cc.wait_for_images(10)
        assert (stats.cached, stats.bytes) == (2, 6000)
        paths = {card.id: card.image_path for card in cc.cards()}
        assert paths["h"] and paths["g"] and paths["b"] is None
        assert not os.path.exists(b)


def files_in(directory: str) -> list[str]:
    return sorted(os.listdir(directory))


def test_max_count_evicts_the_least_recently_used(image_server, tmp_path) -> None:
    """maxCount 2 with four visible cards with images: at most two files in the user's
    directory; over the bound the least recently used image goes (by last use, not by the card's
    place in the feed), and a card whose image went has image_path None."""
    server = image_server
    config = dict(user_id="lru", storage_path=str(tmp_path / "store"), refresh_tokens=0,
                  source={"url": server.url}, images={"maxCount": 2})
    with ContentCards(**config) as cc:
        server.set_cards("lru", [banner(server, "lru1", 1, "size=1000")])
        cc.refresh(5)
        assert cc.wait_for_images(10).cached == 1
        p1 = cc.card("lru1").image_path
        cache = os.path.dirname(p1)

        # Feed lru2, lru1: lru2 fetched, then lru1 wanted again (its last use renewed).
        server.set_cards("lru", [banner(server, "lru2", 2, "size=1000")])
        cc.refresh(5)
        assert cc.wait_for_images(10).cached == 2
        p2 = cc.card("lru2").image_path
        assert p2 and cc.card("lru1").image_path == p1
        assert len(files_in(cache)) == 2

        # Feed lru4, lru3 (404), lru2, lru1: only the first two are wanted; lru4 is fetched and
        # one image must go: lru2, used before lru1 was used again.
        server.set_cards("lru", [banner(server, "lru3", 3, "status=404"),
                                 banner(server, "lru4", 4, "size=1000")])
        cc.refresh(5)
        assert cc.wait_for_images(10).cached == 2
        paths = {card.id: card.image_path for card in cc.cards()}
        assert set(paths) == {"lru1", "lru2", "lru3", "lru4"}
        assert paths["lru2"] is None and paths["lru3"] is None      # evicted; failed
        assert paths["lru1"] == p1 and paths["lru4"]
        assert files_in(cache) == sorted(os.path.basename(p) for p in (p1, paths["lru4"]))
        assert not os.path.exists(p2)
        assert cc.card("lru2").image_path is None
        p4 = paths["lru4"]

    # A reopen reads the bounded cache from the directory as it was left.
    with ContentCards(**config) as cc:
        assert cc.card("lru4").image_path == p4 and cc.card("lru2").image_path is None


def test_one_cache_per_user(image_server, tmp_path) -> None:
    """Two users of one storage path: a directory each; a user change shows only the new user's
    images, and the other user's cache is neither used nor cleaned by it."""
    server = image_server
    server.set_cards("ann", [banner(server, "same", 1, "size=1200"),   # the same image for both
                             banner(server, "annonly", 2, "size=1300")])
    server.set_cards("bob", [banner(server, "same", 1, "size=1200")])
    with ContentCards(user_id="ann", storage_path=str(tmp_path / "store"), refresh_tokens=0,
                      source={"url": server.url}, images={}) as cc:
        cc.refresh(5)
        assert cc.wait_for_images(10).cached == 2
        ann = {card.id: card.image_path for card in cc.cards()}
        ann_dir = os.path.dirname(ann["same"])
        assert os.path.dirname(ann["annonly"]) == ann_dir

        # Bob: nothing of Ann's shows, before or after his refresh; his image is his own file.
        before = len(server.images_served())
        cc.change_user("bob")
        assert all(card.image_path is None for card in cc.cards())
        cc.refresh(5)
        assert cc.wait_for_images(10).cached == 1
        assert len(server.images_served()) == before + 1           # fetched again, for bob
        bob = {card.id: card.image_path for card in cc.cards()}
        assert set(bob) == {"same"}
        bob_dir = os.path.dirname(bob["same"])
        assert bob_dir != ann_dir and bob["same"] != ann["same"]
        assert os.path.dirname(bob_dir) == os.path.dirname(ann_dir) == str(tmp_path / "store" / "images")
        assert stat.S_IMODE(os.stat(bob_dir).st_mode) == 0o700
        assert len(files_in(bob_dir)) == 1
        assert len(files_in(ann_dir)) == 2                         # Ann's not cleaned by Bob's
        assert not set(ann.values()) & set(bob.values())

        # Back to Ann: her paths again (from her cache, before any refresh), none of Bob's.
        cc.change_user("ann")
        assert {card.id: card.image_path for card in cc.cards()} == ann


def test_misuse(tmp_path) -> None:
    with ContentCards() as cc:
        with pytest.raises(NoSourceError):
            cc.wait_for_images(1)
    with pytest.raises(ConfigError, match="storagePath"):
        ContentCards(images={})
    with pytest.raises(ConfigError, match='did you mean "maxBytes"'):
        ContentCards(storage_path=str(tmp_path / "x"), images={"maxBytez": 1})


def test_through_the_host_transport(tmp_path) -> None:
    """With {"callback": true} the images go through the host's transport as well (kind "image")."""
    seen: list[tuple[str, str, bytes]] = []

    def transport(request: TransportRequest) -> TransportResponse:
        seen.append((request.kind, request.url, request.body))
        if request.kind == "sync":
            return TransportResponse(200, json.dumps({"cards": [
                {"id": "p", "tp": "banner_image", "ca": 1, "i": "https://cdn.example.com/p.png"}]}))
        return TransportResponse(200, b"\x89PNG" + b"x" * 96)

    with ContentCards(user_id="u", storage_path=str(tmp_path / "s"), source={"callback": True},
                      images={}) as cc:
        cc.set_transport(transport)
        cc.refresh(5)
        assert tuple(cc.wait_for_images(10)) == (1, 0, 1, 100, 0)
        with open(cc.card("p").image_path, "rb") as f:
            assert f.read(4) == b"\x89PNG"
    assert ("image", "https://cdn.example.com/p.png", b"") in seen


def test_a_wait_from_inside_the_prefetch_is_refused(tmp_path: os.PathLike[str]) -> None:
    """``wait_for_images`` from inside the prefetch's own transport call fails at once with
    RefusedError (as in C and Swift); it waited its whole timeout for the prefetch calling it."""
    from contentcards import RefusedError
    seen: list[BaseException | None] = []
    box: list[ContentCards] = []

    def transport(request: TransportRequest) -> TransportResponse:
        if request.kind == "image":
            try:
                box[0].wait_for_images(3)
                seen.append(None)
            except BaseException as e:  # noqa: BLE001 - recorded for the assertion
                seen.append(e)
            return TransportResponse(200, b"\x42" * 100)
        card = {"id": "c1", "tp": "banner_image", "ca": 1, "i": "https://img.example/1.png"}
        return TransportResponse(200, json.dumps({"cards": [card], "full_sync": True}))

    with ContentCards(user_id="u", storage_path=str(tmp_path), refresh_tokens=0,
                      source={"callback": True}, images={}) as c:
        box.append(c)
        c.set_transport(transport)
        c.refresh()
        c.wait_for_images(20)
        assert len(seen) == 1 and isinstance(seen[0], RefusedError), seen
