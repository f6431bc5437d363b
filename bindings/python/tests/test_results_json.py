"""Every public result class has ``to_json()``, and it gives back the JSON the C function
returned, byte for byte through ``json.dumps(..., separators=(",", ":"), ensure_ascii=False)``
(docs/API.md, "Results"). The texts are the C functions' own, taken through ``_ffi``; each case
reads one with the class as the binding does and writes it back. A result class added to the
package without a case here fails ``test_every_result_class_has_a_case``."""

from __future__ import annotations

import inspect
import json
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import contentcards as cc
from contentcards import _ffi, results
from contentcards.errors import error_for
from conftest import SAMPLE_FEED


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def subscribe_raw(c: cc.ContentCards, texts: list[str]) -> None:
    """Collects the update JSON the library hands a C subscriber (released at close)."""
    key = _ffi.callbacks.add(lambda data: texts.append(data.decode("utf-8")))
    _ffi.controller_subscribe(c._handle, key)


def refresh_in_background_raw(c: cc.ContentCards) -> tuple[int, str]:
    """The status and result JSON a C completion of cc_controller_refresh_in_background gets."""
    done = threading.Event()
    outcome: list[tuple[int, str]] = []

    def completion(status: int, data: bytes | None) -> None:
        outcome.append((status, (data or b"").decode("utf-8")))
        done.set()

    _ffi.controller_refresh_in_background(c._handle, 10, _ffi.callbacks.add(completion))
    assert done.wait(30)
    return outcome[0]


@pytest.fixture(scope="module")
def texts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[str]]]:
    """The JSON texts the C functions returned, by the result they are read as."""
    out: dict[str, list[str]] = {name: [] for name in ("summary", "feed", "log", "flush",
                                                       "outbox", "update", "diagnostics",
                                                       "images", "error", "forget", "export")}
    folder = tmp_path_factory.mktemp("results")
    events = os.path.join(folder, "events.jsonl")

    # The sample feed (cards left out, every kind), logging, the outbox, a flush to a file.
    with cc.ContentCards({"userId": "u-1", "refreshTokens": 0, "source": {"file": SAMPLE_FEED},
                          "events": {"file": events}, "eventFlushIntervalSeconds": 0,
                          "storagePath": os.path.join(folder, "store")}) as c:
        subscribe_raw(c, out["update"])
        out["summary"].append(_ffi.controller_refresh(c._handle, 10))
        out["feed"].append(_ffi.controller_feed(c._handle, None))
        for action, card in [(b"impression", b"tile-1"), (b"click", b"tile-1"),
                             (b"dismissal", b"msg-1"), (b"read", b"msg-2"),
                             (b"feed_displayed", None)]:
            out["log"].append(_ffi.controller_log(c._handle, action, card)[1])
        out["outbox"].append(_ffi.controller_pending_events_json(c._handle, 100))
        out["outbox"].append(_ffi.controller_pending_events_json(c._handle, 1))
        out["flush"].append(_ffi.controller_flush_events(c._handle, 10))
        out["summary"].append(_ffi.controller_apply(c._handle, json.dumps(
            {"cards": [{"id": "café", "tp": "short_news", "ca": 1763700000, "ds": "ünïcode"},
                       {"tp": "short_news"}]}).encode()))
        out["diagnostics"].append(_ffi.controller_diagnostics(c._handle))
        if _ffi.has("cc_controller_export_user"):
            # Everything stored for the user (a pending event too), nothing for another; what
            # forgetting each removed.
            _ffi.controller_log(c._handle, b"impression", b"tile-2")
            out["export"].append(_ffi.controller_export_user(c._handle, None))
            out["export"].append(_ffi.controller_export_user(c._handle, b"nobody"))
            out["forget"].append(_ffi.controller_forget_user(c._handle, b"nobody", 1, 10))
            out["forget"].append(_ffi.controller_forget_user(c._handle, None, 0, 10))

    # Refreshes that fail: a server's 503 with Retry-After, a rate limit (its retryAfter has a
    # fraction), a missing source file.
    def unavailable(request: cc.TransportRequest) -> cc.TransportResponse:
        return cc.TransportResponse(503, b"", retry_after=2)

    with cc.ContentCards({"userId": "u-2", "refreshTokens": 0,
                          "source": {"callback": True}}) as c:
        c.set_transport(unavailable)
        subscribe_raw(c, out["update"])
        status, text = refresh_in_background_raw(c)
        assert status == cc.ServerError.default_code, text
        out["error"].append(text)
        out["diagnostics"].append(_ffi.controller_diagnostics(c._handle))
    with cc.ContentCards({"userId": "u-2", "refreshTokens": 1, "refreshIntervalSeconds": 7.5,
                          "source": {"file": SAMPLE_FEED}}) as c:
        subscribe_raw(c, out["update"])
        out["summary"].append(_ffi.controller_refresh(c._handle, 10))
        with pytest.raises(cc.RateLimitedError):
            _ffi.controller_refresh(c._handle, 10)
        out["diagnostics"].append(_ffi.controller_diagnostics(c._handle))
    with cc.ContentCards({"userId": "u-3", "refreshTokens": 0,
                          "source": {"file": os.path.join(folder, "missing.json")}}) as c:
        subscribe_raw(c, out["update"])
        status, text = refresh_in_background_raw(c)
        assert status == cc.SourceFileError.default_code, text
        out["error"].append(text)
        out["diagnostics"].append(_ffi.controller_diagnostics(c._handle))

    # The image cache, fed by the host transport: one image cached, one that failed.
    def transport(request: cc.TransportRequest) -> cc.TransportResponse:
        if request.kind == "sync":
            return cc.TransportResponse(200, json.dumps({"cards": [
                {"id": "p", "tp": "banner_image", "ca": 1, "i": "https://cdn.example.com/p.png"},
                {"id": "q", "tp": "banner_image", "ca": 2, "i": "https://cdn.example.com/q.png"}]}))
        if request.url.endswith("q.png"):
            return cc.TransportResponse(404, b"")
        return cc.TransportResponse(200, b"\x89PNG" + b"x" * 96)

    with cc.ContentCards(user_id="u-4", storage_path=str(folder / "images"),
                         source={"callback": True}, images={}) as c:
        c.set_transport(transport)
        c.refresh(10)
        out["images"].append(_ffi.controller_wait_images(c._handle, 10))

    newer = {"forget": "cc_controller_forget_user", "export": "cc_controller_export_user"}
    assert all(v or not _ffi.has(newer.get(k, "cc_version")) for k, v in out.items()), \
        {k: len(v) for k, v in out.items()}
    yield out


def read_error(data: dict[str, Any]) -> cc.ContentCardsError:
    return error_for(data["code"], data["message"], data.get("retryAfter"))


#: Each public result class: which texts it is read from, and how the binding reads one.
CASES: dict[type, tuple[str, Callable[[Any], Any]]] = {
    results.SyncSummary: ("summary", results.SyncSummary.from_json),
    results.Counts: ("summary", lambda d: results.Counts.from_json(d["counts"])),
    results.LeftOut: ("summary", lambda d: results.SyncSummary.from_json(d).left_out),
    results.LogResult: ("log", results.LogResult.from_json),
    results.FlushResult: ("flush", results.FlushResult.from_json),
    results.PendingEvents: ("outbox", results.PendingEvents.from_json),
    results.PendingEvent: ("outbox", lambda d: results.PendingEvents.from_json(d).events),
    results.Update: ("update", results.Update.from_json),
    results.Diagnostics: ("diagnostics", results.Diagnostics.from_json),
    results.ImageStats: ("images", lambda d: results.ImageStats.from_json(d)),
    cc.ContentCardsError: ("error", read_error),
    cc.Card: ("feed", lambda d: [cc.Card.from_json(item) for item in d]),
    results.ForgetReceipt: ("forget", results.ForgetReceipt.from_json),
    results.UserExport: ("export", results.UserExport.from_json),
}


def result_classes() -> set[type]:
    """The package's public result classes: those of contentcards.results (not the enum of
    update reasons), the error, the card."""
    found = {getattr(results, name) for name in results.__all__}
    found = {c for c in found if inspect.isclass(c) and c is not results.UpdateReason}
    return found | {cc.ContentCardsError, cc.Card}


def test_every_result_class_has_a_case() -> None:
    assert result_classes() == set(CASES)


#: Results that are the members of a list in another result's JSON (that result's case
#: checks their bytes in place), by the list's key.
MEMBERS = {results.LeftOut: "leftOut", results.PendingEvent: "events"}


@pytest.mark.parametrize("cls", sorted(CASES, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_to_json_gives_the_c_json_back(cls: type, texts: dict[str, list[str]]) -> None:
    assert callable(getattr(cls, "to_json", None)), f"{cls.__name__} has no to_json()"
    which, read = CASES[cls]
    if not texts[which]:
        pytest.skip(f"the library has no function giving {cls.__name__} yet")
    seen = 0
    for text in texts[which]:
        data = json.loads(text)
        value = read(data)
        if cls is cc.Card:  # cc_controller_feed: the visible cards, an array
            assert dumps([card.to_json() for card in value]) == text
            seen += len(value)
        elif cls in MEMBERS:
            assert all(isinstance(v, cls) for v in value)
            assert dumps([v.to_json() for v in value]) == dumps(data[MEMBERS[cls]])
            seen += len(value)
        elif cls is results.Counts:  # a member of the summary (C gives counts as numbers)
            assert isinstance(value, cls)
            assert dumps(value.to_json()) == dumps(data["counts"])
            seen += 1
        else:
            assert isinstance(value, cls)
            assert dumps(value.to_json()) == text
            seen += 1
    assert seen, f"no {cls.__name__} in the texts"


def test_the_texts_cover_what_each_result_can_hold(texts: dict[str, list[str]]) -> None:
    """The cases are not vacuous: errors with and without retryAfter, diagnostics with a
    refresh, a delivery and an error, updates with a summary and with an error."""
    errors = [json.loads(t) for t in texts["error"]]
    assert any("retryAfter" in e for e in errors) and any("retryAfter" not in e for e in errors)
    diagnostics = [json.loads(t) for t in texts["diagnostics"]]
    assert any(d["lastDelivery"] for d in diagnostics)
    assert any(d["lastError"] and "retryAfter" in d["lastError"] for d in diagnostics)
    assert any(d["lastError"] and "retryAfter" not in d["lastError"] for d in diagnostics)
    assert any(d["lastRefresh"] and d["lastRefresh"]["summary"] for d in diagnostics)
    assert any(d["lastSuccessfulRefreshAt"] for d in diagnostics)
    updates = [json.loads(t) for t in texts["update"]]
    assert any(u["sync"] for u in updates) and any(u["error"] for u in updates)
    stats = json.loads(texts["images"][0])
    assert stats["fetched"] == 1 and stats["failed"] == 1 and stats["bytes"] == 100


def test_the_public_calls_return_what_to_json_writes_back(tmp_path: Any) -> None:
    """The values the controller's own calls return write the same JSON back."""
    with cc.ContentCards(user_id="u-5", refresh_tokens=0, source={"file": SAMPLE_FEED},
                         storage_path=str(tmp_path / "store")) as c:
        summary = c.refresh(10)
        diagnostics = c.diagnostics()
        assert dumps(diagnostics.to_json()) == dumps(diagnostics.raw)
        assert diagnostics.to_json()["lastRefresh"]["summary"] == summary.to_json()
        assert cc.Diagnostics.from_json(diagnostics.to_json()) == diagnostics
