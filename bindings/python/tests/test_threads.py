"""Tests/c/test_threads.c through Python: 8 threads mixing every call on one shared controller
and on controllers of their own, with subscribers coming and going; the counts stay consistent
and nothing crashes. Plus: blocking calls release the GIL, and close races with calls."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import contentcards as cc
from contentcards import _ffi
from conftest import open_remote, open_sample
from reference_server import ReferenceServer

THREADS = 8
ROUNDS = 150
IDS = ["tile-1", "tile-2", "tile-3", "msg-1", "msg-2", "msg-3", "coupon-1", "coupon-control"]


def test_threads_mixing_every_call() -> None:
    shared = open_sample()
    failures: list[str] = []
    updates = [0]
    lock = threading.Lock()

    def on_update(update: cc.Update) -> None:
        with lock:
            updates[0] += 1

    def expect(ok: bool, what: str) -> None:
        if not ok:
            with lock:
                failures.append(what)

    def mix(c: cc.ContentCards, seed: int, round_: int) -> None:
        card_id = IDS[(seed + round_) % 8]
        op = (seed * 31 + round_) % 10
        try:
            if op == 0:
                try:
                    c.refresh(5)
                except cc.RateLimitedError:
                    pass
            elif op == 1:
                c.refresh_in_background()
            elif op == 2:
                cards = c.cards(["home_tile", "coupon_code"])
                expect(all(card.class_type in ("home_tile", "coupon_code") for card in cards),
                       "feed")
            elif op == 3:
                total, unviewed, unread = c.counts()
                expect(total >= 0 and unviewed <= total and unread <= total, "counts")
            elif op == 4:
                try:
                    c.log_impression(card_id)
                except cc.CardNotFoundError:
                    pass
            elif op == 5:
                try:
                    c.log_click(card_id)
                except cc.CardNotFoundError:
                    pass
            elif op == 6:
                try:
                    c.log_dismissal(card_id)
                except cc.CardNotFoundError:
                    pass
            elif op == 7:
                c.subscribe(on_update).cancel()
            elif op == 8:
                snapshot = _ffi.controller_snapshot(c._handle or 0, None)
                try:
                    for index in range(_ffi.snapshot_count(snapshot)):
                        expect(bool(_ffi.snapshot_string(snapshot, index, b"id")),
                               "snapshot id")
                finally:
                    _ffi.snapshot_close(snapshot)
            else:
                c.diagnostics()
                c.log_feed_displayed()
        except Exception as exc:  # noqa: BLE001
            expect(False, f"op {op}: {exc!r}")

    def worker(seed: int) -> None:
        own = open_sample(user_id=f"t{seed}")
        for round_ in range(ROUNDS):
            mix(shared, seed, round_)
            mix(own, seed + 3, round_)
        own.close()

    shared.subscribe(on_update)
    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert updates[0] > 0
    # Consistency after the storm: counts match the feed.
    shared.refresh(5)
    total, unviewed, _unread = shared.counts()
    cards = shared.cards()
    assert len(cards) == total
    assert unviewed == sum(1 for card in cards if not card.viewed and not card.is_control)
    shared.close()


def test_blocking_refresh_releases_the_gil(server: ReferenceServer) -> None:
    """A refresh waiting 1.5 s on the server does not stop other Python threads."""
    server.fault(delay=1.5)
    with open_remote(server, "gil") as c:
        stop = threading.Event()
        iterations = [0]

        def count() -> None:
            while not stop.is_set():
                iterations[0] += 1

        started = time.monotonic()
        result: list[Any] = []
        refresher = threading.Thread(target=lambda: result.append(c.refresh(5)))
        refresher.start()
        time.sleep(0.1)
        before = iterations[0]
        counter = threading.Thread(target=count)
        counter.start()
        # While the refresh is blocked in C, this thread and the counter both run.
        time.sleep(0.5)
        during = iterations[0]
        assert refresher.is_alive()
        assert c.count() == 0  # reading is not blocked by the refresh either
        refresher.join()
        stop.set()
        counter.join()
        assert time.monotonic() - started >= 1.4
        assert isinstance(result[0], cc.SyncSummary) and result[0].added == 11
        assert during - before > 10_000, f"only {during - before} iterations in 0.5 s"


def test_close_while_another_thread_refreshes(server: ReferenceServer) -> None:
    """Closing while a refresh runs on another thread: the refresh ends as ClosedError
    (the library's invalid handle / closed status), and nothing crashes."""
    server.fault(delay=1)
    c = open_remote(server, "racer")
    outcome: list[BaseException | cc.SyncSummary] = []

    def run() -> None:
        try:
            outcome.append(c.refresh(5))
        except BaseException as exc:  # noqa: BLE001
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.3)
    c.close()
    thread.join(10)
    assert not thread.is_alive()
    assert isinstance(outcome[0], cc.ClosedError), outcome
    with pytest.raises(cc.ClosedError):
        c.count()


def test_last_error_is_per_thread(refreshed: cc.ContentCards) -> None:
    """cc_last_error_message() belongs to the calling thread: another thread's calls do not
    change it, which is why the errcheck reads it right after the call."""
    handle = refreshed._handle or 0
    with pytest.raises(cc.CardNotFoundError):
        _ffi.controller_log_impression(handle, b"ghost-a")
    seen: list[tuple[str, int]] = []

    def other() -> None:
        try:
            _ffi.controller_card(handle, b"ghost-b")
        except cc.CardNotFoundError:
            pass
        seen.append((_ffi.last_error_message(), _ffi.last_error_code()))
        _ffi.controller_counts(handle, None)
        seen.append((_ffi.last_error_message(), _ffi.last_error_code()))

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert 'ghost-b' in seen[0][0] and seen[0][1] == -5
    assert seen[1] == ("", 0)
    assert "ghost-a" in _ffi.last_error_message() and _ffi.last_error_code() == -5
