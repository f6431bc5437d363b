"""The image cache (docs/BEHAVIOUR.md, "Images"): the scenario of tests/c/test_images.c against
the reference server over HTTP on 127.0.0.1 (serving images, no cards of its own), with the same
results; then the same cache through the host transport."""
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
