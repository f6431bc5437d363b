"""Tests/c/test_http.c through Python, against the reference server over real HTTP: full then
incremental sync, event delivery and server-side dedupe, and each fault keeping the cached
cards. Plus the asyncio refresh."""

from __future__ import annotations

import asyncio
import time

import pytest

import contentcards as cc
from conftest import open_remote
from reference_server import ReferenceServer


def test_full_then_incremental(server: ReferenceServer) -> None:
    with open_remote(server, "alice") as c:
        summary = c.refresh(5)
        assert summary.full_sync is True
        assert c.count() == 10

        server.set_cards("alice", [{"id": "new-1", "tp": "short_news", "ca": 1763799999,
                                    "ds": "fresh"}])
        server.remove("alice", ["tile-3"])
        summary = c.refresh(5)
        assert summary.full_sync is False
        assert summary.added == 1 and summary.removed == 1
        assert c.card("new-1").card_description == "fresh"
        with pytest.raises(cc.CardNotFoundError):
            c.card("tile-3")
        assert c.count() == 10
        # The API key went with each sync request.
        syncs = [r for r in server.requests() if r.get("path") == "/content_cards/sync"]
        assert len(syncs) == 2


def test_events_delivered_once(server: ReferenceServer) -> None:
    with open_remote(server, "bob") as c:
        c.refresh(5)
        assert c.log_impression("coupon-1").recorded
        assert c.log_click("coupon-1").recorded
        assert c.log_impression("coupon-control").recorded
        assert c.flush_events(5) == cc.FlushResult(delivered=3, dropped=0, pending=0)
        stats = server.event_stats()
        types = [event["type"] for event in stats["events"]]
        assert types == ["impression", "click", "control_impression"]
        assert all(event["user_id"] == "bob" for event in stats["events"])
        assert stats["duplicates"] == 0

        # A lost answer (truncated) makes the client send again: the server drops the duplicate.
        assert c.log_dismissal("coupon-1").recorded
        server.fault(path="/events", body="truncated")
        with pytest.raises(cc.ContentCardsError):
            c.flush_events(5)
        assert c.pending_events() == 1
        c.flush_events(5)
        stats = server.event_stats()
        assert stats["duplicates"] == 1
        assert [event["type"] for event in stats["events"]].count("dismissal") == 1


def test_faults_keep_the_cache(server: ReferenceServer) -> None:
    with open_remote(server, "carol", timeout=1) as c:
        c.refresh(5)
        assert c.count() == 10

        server.fault(status=500)
        with pytest.raises(cc.ServerError, match="HTTP 500"):
            c.refresh(5)
        assert c.count() == 10

        server.fault(delay=3)
        with pytest.raises(cc.RequestTimeoutError) as timeout:  # timeoutSeconds is 1
            c.refresh(5)
        assert isinstance(timeout.value, TimeoutError)
        assert c.count() == 10

        server.fault(body="truncated")
        with pytest.raises(cc.NetworkError):
            c.refresh(5)
        assert c.count() == 10

        server.fault(body="invalid")
        with pytest.raises(cc.ParseError):
            c.refresh(5)
        assert c.count() == 10

        server.fault(body="wrong_user")
        with pytest.raises(cc.WrongUserError, match="someone-else"):
            c.refresh(5)
        assert c.count() == 10

        diagnostics = c.diagnostics()
        assert isinstance(diagnostics.last_error, cc.WrongUserError)
        assert diagnostics.last_refresh is not None and diagnostics.last_refresh["ok"] is False
        assert diagnostics.last_refresh["error"]["name"] == "CC_E_WRONG_USER"

        # A 429 with Retry-After: the next refresh is not even sent.
        server.fault(status=429, retry_after=7)
        with pytest.raises(cc.RateLimitedError, match="429"):
            c.refresh(5)
        sent = len(server.requests())
        with pytest.raises(cc.RateLimitedError, match="the server asked to wait"):
            c.refresh(5)
        assert len(server.requests()) == sent
        assert c.count() == 10


def test_retry_after_of_a_429(server: ReferenceServer) -> None:
    """The server's Retry-After reaches the subscribers' error (update JSON "retryAfter")."""
    with open_remote(server, "erin") as c:
        updates: list[cc.Update] = []
        c.subscribe(updates.append)
        server.fault(status=429, retry_after=7)
        with pytest.raises(cc.RateLimitedError):
            c.refresh(5)
        error = updates[-1].error
        assert isinstance(error, cc.RateLimitedError)
        assert error.retry_after == 7


def test_retry_after_in_the_message(server: ReferenceServer) -> None:
    with open_remote(server, "frank") as c:
        server.fault(status=429, retry_after=7)
        with pytest.raises(cc.RateLimitedError) as info:
            c.refresh(5)
        assert info.value.retry_after == 7


def test_nothing_listening() -> None:
    with cc.ContentCards(refresh_tokens=0, timeout_seconds=2,
                         source={"url": "http://127.0.0.1:9"}) as dead:
        with pytest.raises(cc.NetworkError):
            dead.refresh(2)


def test_refresh_async(server: ReferenceServer) -> None:
    """refresh_async awaits the library's background refresh: the loop keeps going."""
    server.fault(delay=0.5)

    async def main() -> tuple[cc.SyncSummary, int]:
        with open_remote(server, "async") as c:
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            task = asyncio.create_task(ticker())
            started = time.monotonic()
            summary = await c.refresh_async(5)
            assert time.monotonic() - started >= 0.45
            task.cancel()
            return summary, ticks

    summary, ticks = asyncio.run(main())
    assert summary.added == 11
    assert ticks >= 10

    async def failing() -> None:
        with open_remote(server, "async2") as c:
            server.fault(status=500)
            await c.refresh_async(5)

    with pytest.raises(cc.ServerError):
        asyncio.run(failing())
