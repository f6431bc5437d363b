"""Tests/c/test_subscribers.c and Tests/c/test_callbacks.c through Python: subscribers get the
right data, the library releases their userdata exactly once, callbacks may call back into the
library (and unsubscribe themselves), the host transport serves refreshes and event delivery,
also when it fails. Plus what is Python's own: subscriber exceptions, library threads, no leaked
callbacks."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

import contentcards as cc
from contentcards import _ffi
from conftest import IMPORT_PRELUDE, SAMPLE_FEED, open_sample


@pytest.fixture(autouse=True)
def no_stray_releases() -> Any:
    """free_userdata never runs twice (or for a key it was not given)."""
    before = _ffi.callbacks.stray_releases
    yield
    assert _ffi.callbacks.stray_releases == before


class Recorder:
    def __init__(self) -> None:
        self.updates: list[cc.Update] = []
        self.threads: list[int] = []

    def __call__(self, update: cc.Update) -> None:
        self.updates.append(update)
        self.threads.append(threading.get_ident())

    @property
    def calls(self) -> int:
        return len(self.updates)

    @property
    def last(self) -> cc.Update:
        return self.updates[-1]


def test_subscriber_data_and_free(sample: cc.ContentCards) -> None:
    c = sample
    r = Recorder()
    sub = c.subscribe(r)
    assert sub.id != 0 and sub.active
    c.refresh(5)
    assert r.calls == 1
    update = r.last
    assert (update.reason, update.ok, update.error, update.card_id) == ("refresh", True, None, None)
    assert update.counts == (10, 9, 9)
    assert update.sync is not None and update.sync.added == 11
    assert list(update.raw) == ["reason", "ok", "error", "cardId", "counts", "sync", "origin", "sequence"]
    # On the thread that ran the library call: on the main thread refresh() runs it in a
    # helper thread (so that Ctrl-C interrupts the wait); from another thread, that thread.
    assert len(r.threads) == 1 and r.threads[0] != threading.get_ident()
    other: list[int] = []
    thread = threading.Thread(target=lambda: (c.refresh(5), other.append(threading.get_ident())))
    thread.start()
    thread.join()
    assert r.threads[1:] == other
    del r.updates[1:], r.threads[1:]

    c.log_impression("coupon-1")
    assert (r.last.reason, r.last.ok, r.last.card_id) == ("impression", True, "coupon-1")
    assert r.last.counts == (10, 8, 9) and r.last.sync is None

    with pytest.raises(cc.ParseError):
        c.apply("{")
    assert (r.last.reason, r.last.ok) == ("cards_applied", False)
    assert isinstance(r.last.error, cc.ParseError) and r.last.error.code == -4
    assert r.last.error.name == "CC_E_PARSE"
    assert r.last.raw["error"]["name"] == "CC_E_PARSE"  # the same names as cc_status_name

    sub.cancel()
    assert sub._key not in _ffi.callbacks and not sub.active
    sub.cancel()  # idempotent
    with pytest.raises(cc.CardNotFoundError):
        _ffi.controller_unsubscribe(c._handle or 0, sub.id)
    calls = r.calls
    c.log_impression("coupon-1")
    assert r.calls == calls

    # Close releases the remaining subscribers, once.
    r2 = Recorder()
    sub2 = c.subscribe(r2)
    assert sub2._key in _ffi.callbacks
    c.close()
    assert sub2._key not in _ffi.callbacks and not sub2.active
    sub2.cancel()  # harmless after close


def test_other_update_reasons(refreshed: cc.ContentCards) -> None:
    r = Recorder()
    with refreshed.subscribe(r) as sub:
        refreshed.log_click("tile-1")
        refreshed.log_dismissal("tile-1")
        refreshed.change_user("other")
        refreshed.change_user("other")  # the same user: no update
        refreshed.apply([{"id": "n", "tp": "short_news", "ca": 1, "ds": "x"}])
    assert not sub.active
    assert [u.reason for u in r.updates] == ["click", "dismissal", "user_changed", "cards_applied"]
    assert r.updates[1].counts == (9, 8, 8)
    assert r.updates[2].counts == (0, 0, 0)
    assert r.updates[3].sync is not None and r.updates[3].sync.added == 1
    # A refused log changes nothing: no update (the click above was on a card with a url).
    before = len(r.updates)
    with refreshed.subscribe(r):
        assert not refreshed.log_click("n").recorded
    assert len(r.updates) == before


def test_reentrancy(sample: cc.ContentCards) -> None:
    c = sample
    state: dict[str, Any] = {"calls": 0, "ok": False}

    def reenter(update: cc.Update) -> None:
        state["calls"] += 1
        if update.reason == "refresh":
            # Reading, logging and diagnostics from inside the callback must not deadlock.
            state["ok"] = (c.count() == 10 and len(c.cards(["home_tile"])) == 3
                           and c.log_impression("tile-2").recorded
                           and c.diagnostics().subscribers >= 1)

    sub = c.subscribe(reenter)
    c.refresh(5)
    assert state["ok"]
    assert state["calls"] == 2  # the refresh, then the impression logged inside it

    self_state: dict[str, Any] = {"calls": 0}
    holder: list[cc.Subscription] = []

    def unsubscribe_self(update: cc.Update) -> None:
        self_state["calls"] += 1
        holder[0].cancel()
        self_state["inactive_inside"] = not holder[0].active

    holder.append(c.subscribe(unsubscribe_self))
    c.log_impression("tile-1")
    assert self_state == {"calls": 1, "inactive_inside": True}
    assert holder[0]._key not in _ffi.callbacks
    c.log_impression("tile-3")
    assert self_state["calls"] == 1
    c.close()
    assert sub._key not in _ffi.callbacks


# --- host transport -------------------------------------------------------------------------


class HostTransport:
    def __init__(self) -> None:
        self.requests: list[cc.TransportRequest] = []
        self.fail: BaseException | None = None
        self.status = 0
        self.threads: list[int] = []

    def __call__(self, request: cc.TransportRequest) -> cc.TransportResponse:
        self.requests.append(request)
        self.threads.append(threading.get_ident())
        if self.fail is not None:
            raise self.fail
        if request.kind == "sync":
            body = ('{"cards":[{"id":"h1","tp":"short_news","ca":5,"ds":"from the host",'
                    '"u":"https://x.test"}],"full_sync":true}')
            return cc.TransportResponse(self.status or 200, body)
        return cc.TransportResponse(self.status or 202)

    @property
    def last(self) -> cc.TransportRequest:
        return self.requests[-1]


def test_host_transport() -> None:
    c = cc.ContentCards({"userId": "h", "source": {"callback": True},
                         "events": {"callback": True}, "eventFlushIntervalSeconds": 0,
                         "refreshTokens": 0})
    try:
        # No transport set yet
        with pytest.raises(cc.TransportError, match="none is set"):
            c.refresh(2)

        t = HostTransport()
        c.set_transport(t)
        c.refresh(2)
        assert len(t.requests) == 1 and t.last.kind == "sync"
        assert t.last.url == "/content_cards/sync"
        assert json.loads(t.last.body)["user_id"] == "h"
        assert "application/json" in t.last.header_dict.get("Content-Type", "")
        assert 0 < t.last.timeout <= 2
        assert t.threads[0] != threading.get_ident()  # on a library thread (the fetch's own)
        assert c.count() == 1

        assert c.log_click("h1").recorded
        result = c.flush_events(2)
        assert result.delivered == 1 and result.pending == 0
        assert t.last.kind == "events" and t.last.url == "/events"
        event = json.loads(t.last.body)["events"][0]
        assert (event["type"], event["card_id"]) == ("click", "h1")

        # A failing transport keeps the cache and the events; the Python exception is the
        # TransportError's cause and its text is in the message.
        t.fail = ConnectionResetError("no network in this test")
        with pytest.raises(cc.TransportError, match="no network in this test") as info:
            c.refresh(2)
        assert info.value.__cause__ is t.fail
        assert c.log_impression("h1").recorded
        with pytest.raises(cc.TransportError, match="ConnectionResetError"):
            c.flush_events(2)
        assert c.pending_events() == 1
        assert c.count() == 1

        # A transport that returns something else is a failure too.
        t.fail = None
        c.set_transport(lambda request: "200 OK")  # type: ignore[arg-type,return-value]
        with pytest.raises(cc.TransportError, match="expected a TransportResponse"):
            c.refresh(2)
        c.set_transport(t)

        # A server error through the host transport
        t.status = 503
        with pytest.raises(cc.ServerError, match="HTTP 503") as server_error:
            c.refresh(2)
        assert server_error.value.http_status == 503

        # A permanent 4xx drops the batch and says so.
        t.status = 400
        result = c.flush_events(2)
        assert result.dropped == 1
        assert c.diagnostics().dropped_events == 1

        # Replacing releases the old callable once; close releases the new one.
        key_of = lambda: max(k for k in _ffi.callbacks._entries)  # noqa: E731
        c.set_transport(t)
        k1 = key_of()
        t2 = HostTransport()
        c.set_transport(t2)
        k2 = key_of()
        assert k1 not in _ffi.callbacks and k2 in _ffi.callbacks
        c.set_transport(None)
        assert k2 not in _ffi.callbacks
        with pytest.raises(cc.TransportError):
            c.refresh(2)
        c.set_transport(HostTransport())
        k3 = key_of()

        # 429 with Retry-After through the host transport; the next refresh is held back.
        t.status = 0
        c.set_transport(lambda request: cc.TransportResponse(429, "{}", retry_after=4))
        with pytest.raises(cc.RateLimitedError, match="retry after 4 s"):
            c.refresh(2)
        with pytest.raises(cc.RateLimitedError, match="the server asked to wait"):
            c.refresh(2)
    finally:
        c.close()
    assert k3 not in _ffi.callbacks


def test_unsubscribe_waits(refreshed: cc.ContentCards) -> None:
    """Unsubscribing from another thread waits for a running callback to finish."""
    c = refreshed
    state = {"inside": threading.Event(), "finished": False, "calls_after": 0,
             "unsubscribed": False}

    def slow(update: cc.Update) -> None:
        if state["unsubscribed"]:
            state["calls_after"] += 1  # type: ignore[operator]
        state["inside"].set()  # type: ignore[attr-defined]
        time.sleep(0.2)
        state["finished"] = True

    sub = c.subscribe(slow)
    thread = threading.Thread(target=c.log_impression, args=("tile-1",))
    thread.start()
    assert state["inside"].wait(5)  # type: ignore[attr-defined]
    sub.cancel()
    assert state["finished"] is True  # returned only after the running call ended
    state["unsubscribed"] = True
    thread.join()
    c.log_impression("tile-2")
    assert state["calls_after"] == 0


def test_refresh_in_background(sample: cc.ContentCards) -> None:
    """The async refresh reaches subscribers on a library thread."""
    done = threading.Event()
    r = Recorder()

    def fn(update: cc.Update) -> None:
        r(update)
        done.set()

    sample.subscribe(fn)
    sample.refresh_in_background()
    assert done.wait(5)
    assert r.calls == 1 and (r.last.reason, r.last.ok) == ("refresh", True)
    assert r.threads[0] != threading.get_ident()
    assert sample.count() == 10


def test_subscriber_exception_is_visible(sample: cc.ContentCards,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A subscriber that raises: the call that caused the update succeeds, the other
    subscribers are called, and the exception is in subscriber_errors and goes to
    sys.unraisablehook."""
    reported: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)

    def broken(update: cc.Update) -> None:
        raise ValueError(f"boom on {update.reason}")

    r = Recorder()
    sample.subscribe(broken)
    sample.subscribe(r)
    sample.refresh(5)
    assert r.calls == 1
    assert len(sample.subscriber_errors) == 1
    error = sample.subscriber_errors[0]
    assert isinstance(error, ValueError) and str(error) == "boom on refresh"
    assert len(reported) == 1
    assert reported[0].exc_value is error and reported[0].object is broken
    assert "contentcards subscriber" in reported[0].err_msg
    assert reported[0].exc_traceback is not None

    # Still subscribed; also from a library thread.
    done = threading.Event()
    sample.subscribe(lambda update: done.set())
    sample.refresh_in_background()
    assert done.wait(5)
    deadline = time.monotonic() + 5
    while len(sample.subscriber_errors) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [str(e) for e in sample.subscriber_errors] == ["boom on refresh"] * 2


def test_subscriber_exception_default_report() -> None:
    """Without a custom hook, the exception is printed on stderr with its traceback."""
    code = IMPORT_PRELUDE + f"""
import contentcards as cc
with cc.ContentCards(refresh_tokens=0, source={{"file": {SAMPLE_FEED!r}}}) as c:
    def broken(update):
        raise ValueError("boom")
    c.subscribe(broken)
    c.refresh()
    assert len(c.subscriber_errors) == 1
    print("count", c.count())
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "count 10"
    assert "Exception ignored in contentcards subscriber" in result.stderr
    assert "Traceback" in result.stderr and "ValueError: boom" in result.stderr


def test_no_callbacks_leak() -> None:
    before = len(_ffi.callbacks)
    for _ in range(20):
        c = open_sample()
        c.subscribe(lambda update: None)
        c.subscribe(lambda update: None).cancel()
        c.set_transport(lambda request: cc.TransportResponse(200))
        c.set_transport(lambda request: cc.TransportResponse(200))
        c.close()
    assert len(_ffi.callbacks) == before


def test_a_blocking_call_from_a_subscriber_on_the_main_thread_waits_for_its_return(
        refreshed: cc.ContentCards, monkeypatch: pytest.MonkeyPatch) -> None:
    # The subscriber runs on the main thread (the impression is logged there) and refreshes. The
    # refresh ran on a worker thread (to keep Ctrl-C working), which the library did not know
    # to be inside a callback: its update reached the subscriber at once, on the worker, while
    # it still ran on the main thread (and one holding a lock waited for itself for ever).
    c = refreshed
    running = threading.Lock()
    seen: list[str] = []

    def subscriber(update: cc.Update) -> None:
        if not running.acquire(blocking=False):
            seen.append("entered while running")
            return
        try:
            seen.append(update.reason)
            if update.reason == "impression":
                c.refresh(5)
        finally:
            running.release()

    with c.subscribe(subscriber):
        assert threading.current_thread() is threading.main_thread()
        c.log_impression("tile-1")
    assert seen == ["impression", "refresh"]
    assert not _ffi.inside_callback()     # the count is back where it was, also after a raise

    def raising(update: cc.Update) -> None:
        raise RuntimeError("from a subscriber")

    monkeypatch.setattr(sys, "unraisablehook", lambda report: None)   # reported there
    with c.subscribe(raising):
        c.log_impression("tile-2")
    assert not _ffi.inside_callback()


def test_a_host_transports_answer_over_the_limit() -> None:
    # An error answer with a body over maxPayloadBytes failed as a broken transport, its status
    # and Retry-After lost; a success's failed as a transport too, where libcurl's says "too large".
    answers = [cc.TransportResponse(503, "busy " + "x" * 5000, retry_after=60),
               cc.TransportResponse(200, '{"cards":[]}' + " " * 5000)]

    def transport(request: cc.TransportRequest) -> cc.TransportResponse:
        return answers.pop(0)

    config = {"userId": "big", "source": {"callback": True}, "refreshTokens": 0, "maxPayloadBytes": 1000}
    with cc.ContentCards(config) as c:
        c.set_transport(transport)
        with pytest.raises(cc.ServerError, match="503") as server:
            c.refresh(5)
        assert server.value.retry_after is not None and server.value.retry_after >= 59
        with pytest.raises(cc.RateLimitedError):     # the server's wait is kept
            c.refresh(5)
    with cc.ContentCards(config) as c:
        c.set_transport(transport)
        with pytest.raises(cc.ParseError, match="too large"):
            c.refresh(5)
