"""Hints: new cards without polling (docs/SYNC.md, "Hints"). ``hint()`` hands in a hint (a push
notification, the application's own socket) and the controller answers it with a refresh of
its own, coalesced; ``source={"url": ..., "hints": True}`` makes the controller receive hints
from the reference server's stream itself, so a card added on the server reaches the
subscribers without any refresh call."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import contentcards as cc
from contentcards import _ffi
from reference_server import ReferenceServer

pytestmark = pytest.mark.skipif(not _ffi.has("cc_controller_hint"),
                                reason="the library has no cc_controller_hint yet")

SYNC = "/content_cards/sync"


def open_remote(server: ReferenceServer, user: str = "hinted", hints: bool = False,
                **options: Any) -> cc.ContentCards:
    source: dict[str, Any] = {"url": server.url}
    if hints:
        source["hints"] = True
    config: dict[str, Any] = {"user_id": user, "refresh_tokens": 0, "timeout_seconds": 5,
                              "source": source}
    config.update(options)
    return cc.ContentCards(**config)


def syncs(server: ReferenceServer, user: str | None = None) -> int:
    return sum(1 for r in server.requests()
               if r["path"] == SYNC and (user is None or r["user_id"] == user))


def wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def card(card_id: str, title: str) -> dict[str, Any]:
    return {"id": card_id, "tp": "captioned_image", "ca": int(time.time()), "tt": title,
            "ds": "pushed", "i": "https://cdn.example.com/x.png", "ar": 1.0}


def test_a_card_added_on_the_server_arrives_through_the_hint_stream(
        server: ReferenceServer) -> None:
    with open_remote(server, hints=True) as c:
        c.refresh()
        assert wait_until(lambda: server.streams()["by_user"].get("hinted", 0) >= 1, 10), \
            server.streams()
        arrived = threading.Event()

        def subscriber(update: cc.Update) -> None:
            if any(card.id == "pushed-1" for card in c.cards()):
                arrived.set()

        c.subscribe(subscriber)
        before = syncs(server, "hinted")
        started = time.monotonic()
        server.set_cards("hinted", [card("pushed-1", "Pushed by the server")])
        assert arrived.wait(2), "the card did not arrive within 2 s"
        assert time.monotonic() - started < 2
        assert c.card("pushed-1").title == "Pushed by the server"
        assert syncs(server, "hinted") >= before + 1   # the controller's own refresh


def test_another_users_change_sends_no_hint(server: ReferenceServer) -> None:
    with open_remote(server, hints=True) as c:
        c.refresh()
        assert wait_until(lambda: server.streams()["by_user"].get("hinted", 0) >= 1, 10)
        before = syncs(server)
        server.set_cards("someone-else", [card("elsewhere", "Not for hinted")])
        time.sleep(1)
        assert syncs(server) == before
        with pytest.raises(cc.CardNotFoundError):
            c.card("elsewhere")


def test_hint_refreshes_in_the_background(server: ReferenceServer) -> None:
    with open_remote(server) as c:
        c.refresh()
        server.set_cards("hinted", [card("hinted-1", "After a push notification")])
        before = syncs(server, "hinted")
        updates: list[cc.Update] = []
        c.subscribe(updates.append)
        started = time.monotonic()
        c.hint()
        assert time.monotonic() - started < 0.5      # returns at once
        assert wait_until(lambda: syncs(server, "hinted") == before + 1, 5)
        assert wait_until(lambda: any(u.reason == cc.UpdateReason.REFRESH for u in updates), 5)
        assert c.card("hinted-1").title == "After a push notification"
        c.hint("hinted")                               # the current user, by name
        assert wait_until(lambda: syncs(server, "hinted") == before + 2, 5)


def test_a_hint_for_another_user_is_ignored(server: ReferenceServer) -> None:
    with open_remote(server) as c:
        c.refresh()
        before = syncs(server)
        c.hint("someone-else")
        time.sleep(1)
        assert syncs(server) == before


def test_a_flood_of_hints_costs_a_handful_of_syncs(server: ReferenceServer) -> None:
    with open_remote(server) as c:
        c.refresh()
        before = syncs(server)
        # A flood while a refresh is in flight (the server holds that sync a second): one
        # refresh runs, one waits, the other 999 join the waiting one, on any machine.
        server.fault(path="/content_cards/sync", times=1, delay=1.0)
        c.hint()
        assert wait_until(lambda: c.diagnostics().refresh_in_flight, 5)
        coalesced = c.diagnostics().raw["hints"]["coalesced"]
        started = time.monotonic()
        for _ in range(1000):
            c.hint()
        assert time.monotonic() - started < 5            # each returns at once
        assert c.diagnostics().raw["hints"]["coalesced"] - coalesced == 999
        assert wait_until(lambda: c.diagnostics().raw["hints"]["refreshes"] >= 2, 10)
        assert syncs(server) - before == 2


def test_hint_without_a_source_and_after_close(tmp_path: Any) -> None:
    with cc.ContentCards(user_id="u") as c:
        with pytest.raises(cc.NoSourceError):
            c.hint()
        with pytest.raises(ValueError):
            c.hint("nul\0inside")
        with pytest.raises(TypeError):
            c.hint(5)  # type: ignore[arg-type]
    with pytest.raises(cc.ClosedError):
        c.hint()


def test_a_hint_answered_with_no_wait_is_not_asked_again_at_once() -> None:
    """A hint's refresh answered 503 with ``Retry-After: 0`` every time: not asked again at
    once (as in Swift; it was, in a loop as fast as the server answered, with the rate limit
    off)."""
    calls: list[str] = []

    def transport(request: cc.TransportRequest) -> cc.TransportResponse:
        calls.append(request.kind)
        return cc.TransportResponse(503, retry_after=0)

    with cc.ContentCards(user_id="u", refresh_tokens=0, source={"callback": True}) as c:
        c.set_transport(transport)
        c.hint()
        deadline = time.monotonic() + 10
        while not calls and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # nothing can follow: no retry is scheduled after the answer
        assert calls == ["sync"]


def test_an_error_answer_holding_events_is_not_read_as_a_stream(server: ReferenceServer) -> None:
    """HintTests.anErrorResponseHoldingEventsIsNotReadAsAStream: a 503 whose body is an event
    stream with a hint is a refusal, not a stream (it refreshed and counted as connected)."""
    server.stream_fault(status=503, events=True, times=1000)
    with open_remote(server, user="eve", hints=True,
                     source={"url": server.url, "hints": {"idleSeconds": 2, "retryMaxSeconds": 1}}) as c:
        assert wait_until(lambda: c.diagnostics().raw["hints"]["lastError"] is not None, 5)
        time.sleep(0.3)   # a second answer or more: the backoff waits at most 1 s
        hints = c.diagnostics().raw["hints"]
        assert "HTTP 503" in hints["lastError"], hints
        assert (hints["connects"], hints["connected"], hints["streamHints"]) == (0, False, 0), hints
        assert hints["refreshes"] == 0 and syncs(server, "eve") == 0


def test_forgetting_the_current_user_starts_the_stream_anew(server: ReferenceServer) -> None:
    """HintTests.forgettingTheCurrentUserStartsTheStreamAnew: the last event id is named in the
    diagnostics, and a forget drops it and connects again."""
    with open_remote(server, user="fay", hints=True,
                     source={"url": server.url, "hints": {"idleSeconds": 2}}) as c:
        assert wait_until(lambda: c.diagnostics().raw["hints"]["connected"], 5)
        server.hint("fay")
        assert wait_until(lambda: c.diagnostics().raw["hints"]["lastEventId"] is not None, 5)
        before = c.diagnostics().raw["hints"]["connects"]
        c.forget_user()
        assert c.diagnostics().raw["hints"]["lastEventId"] is None
        assert wait_until(lambda: c.diagnostics().raw["hints"]["connects"] > before
                          and c.diagnostics().raw["hints"]["connected"], 5), c.diagnostics().raw["hints"]


def test_a_retry_max_under_a_second_is_refused(server: ReferenceServer) -> None:
    with pytest.raises(cc.ConfigError, match="retryMaxSeconds"):
        open_remote(server, source={"url": server.url, "hints": {"retryMaxSeconds": 0.001}})
