"""The Python side of the one API (docs/API.md). Log results with the Swift and C
fields, awaits that return at once when cancelled, async flush and updates, exceptions that are
also the built-ins they mean, immutable value classes without dataclasses, ContentCardData."""

from __future__ import annotations

import asyncio
import copy
import os
import pickle
import subprocess
import sys
import time

import pytest

import contentcards as cc
from conftest import IMPORT_PRELUDE, open_sample
from reference_server import ReferenceServer


def open_remote(server: ReferenceServer, user: str, **options: object) -> cc.ContentCards:
    return cc.ContentCards({"userId": user, "refreshTokens": 0, "timeoutSeconds": 10,
                            "source": {"url": server.url}, **options})


# -- item 1: one log result ---------------------------------------------------------------


def test_log_results_have_the_fields_of_swift_and_c(refreshed: cc.ContentCards) -> None:
    first = refreshed.log_impression("tile-1")
    assert first.to_json().keys() == {"recorded", "reason", "eventId", "stateChanged"}
    assert first.recorded and first.state_changed and first.event_id and first.reason is None
    again = refreshed.log_impression("tile-1")
    assert again.recorded and not again.state_changed and again.event_id != first.event_id
    refused = refreshed.log_dismissal("msg-1")
    assert (refused.recorded, refused.event_id, refused.state_changed) == (False, None, False)
    assert refused.reason == 'dismissal not logged: card "msg-1" is not dismissible'
    shown = refreshed.log_feed_displayed()
    assert shown.recorded and shown.event_id and not shown.state_changed
    ids = {e.id for e in refreshed.list_pending_events().events}
    assert {first.event_id, again.event_id, shown.event_id} <= ids
    with pytest.raises(cc.CardNotFoundError):
        refreshed.log_click("ghost")


def test_an_expired_card_is_still_logged(sample: cc.ContentCards) -> None:
    sample.apply([{"id": "old", "tp": "short_news", "ca": 1700000000, "ea": 1000000000,
                   "db": True, "u": "https://example.com/", "ds": "gone"}])
    assert sample.count() == 0 and sample.card("old").expires_at_timestamp == 1000000000
    assert sample.log_impression("old").state_changed
    assert sample.log_click("old").recorded
    assert sample.log_dismissal("old").recorded
    assert sample.pending_events() == 3


# -- items 2 and 3: names, async, cancellation ----------------------------------------------


def test_a_cancelled_refresh_async_returns_at_once(server: ReferenceServer) -> None:
    """asyncio.wait_for(refresh_async(timeout=4), 0.5) ends after 0.5 s, and asyncio.run does
    not wait for the refresh (it used to wait the full 4 s for an executor thread)."""
    server.fault(delay=4)
    c = open_remote(server, "cancel")
    try:
        async def main() -> None:
            # asyncio.TimeoutError: the built-in TimeoutError since Python 3.11, not before
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(c.refresh_async(timeout=4), 0.5)

        started = time.monotonic()
        asyncio.run(main())
        assert time.monotonic() - started < 1.5
    finally:
        c.close()


def test_a_process_that_cancels_a_refresh_exits_at_once(server: ReferenceServer) -> None:
    server.fault(delay=4)
    code = IMPORT_PRELUDE + f"""
import asyncio, contentcards as cc
c = cc.ContentCards(user_id="p", refresh_tokens=0, source={{"url": {server.url!r}}})
async def main():
    try:
        await asyncio.wait_for(c.refresh_async(timeout=4), 0.3)
    except asyncio.TimeoutError:
        print("timed out")
asyncio.run(main())
"""
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=30, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "timed out"
    assert time.monotonic() - started < 3


def test_refresh_async_timeout_and_refusals(server: ReferenceServer) -> None:
    async def main() -> None:
        with open_remote(server, "t") as c:
            server.fault(delay=2)
            with pytest.raises(cc.RequestTimeoutError) as info:
                await c.refresh_async(timeout=0.3)
            assert isinstance(info.value, TimeoutError)
        with cc.ContentCards(user_id="n") as none:
            with pytest.raises(cc.NoSourceError):
                await none.refresh_async()

    asyncio.run(main())


def test_refresh_in_background_reaches_subscribers(sample: cc.ContentCards) -> None:
    updates: list[cc.Update] = []
    sample.subscribe(updates.append)
    sample.refresh_in_background(timeout=5)
    deadline = time.monotonic() + 10
    while not updates and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [u.reason for u in updates] == [cc.UpdateReason.REFRESH]
    assert updates[0].sync is not None and updates[0].sync.added == 11


def test_flush_events_async(tmp_path: os.PathLike[str]) -> None:
    events = os.path.join(os.fspath(tmp_path), "events.jsonl")

    async def main() -> cc.FlushResult:
        with open_sample(events={"file": events}, event_flush_interval_seconds=0) as c:
            c.refresh()
            c.log_impression("tile-1")
            return await c.flush_events_async()

    assert asyncio.run(main()) == cc.FlushResult(1, 0, 0)
    with open(events) as f:
        assert '"card_id":"tile-1"' in f.read()


def test_updates_async_iterator(refreshed: cc.ContentCards) -> None:
    async def main() -> list[tuple[str, int]]:
        seen = []
        stream = refreshed.updates(current=True)
        refreshed.log_impression("tile-1")
        refreshed.log_dismissal("tile-3")
        refreshed.close()   # ends the stream after what is queued
        async for update in stream:
            seen.append((update.reason.value, update.counts.unviewed))
        return seen

    assert asyncio.run(main()) == [("current", 9), ("impression", 8), ("dismissal", 7)]


def test_updates_stream_closes_with_async_with(refreshed: cc.ContentCards) -> None:
    async def main() -> int:
        async with refreshed.updates() as stream:
            refreshed.log_impression("tile-1")
            update = await stream.__anext__()
            assert update.reason is cc.UpdateReason.IMPRESSION and update.card_id == "tile-1"
        return refreshed.diagnostics().subscribers

    assert asyncio.run(main()) == 0


def test_current_update(refreshed: cc.ContentCards) -> None:
    current = refreshed.current_update()
    assert current.reason == "current" and current.reason is cc.UpdateReason.CURRENT
    assert current.counts == cc.Counts(10, 9, 9) and current.ok and current.error is None


def test_subscribers_see_a_visible_card_expire() -> None:
    """Item 6: a badge drawn from updates stays true when a card expires."""
    with cc.ContentCards(user_id="x") as c:
        soon = int(time.time()) + 2
        c.apply([{"id": "soon", "tp": "short_news", "ca": 5, "ea": soon, "ds": "a"},
                  {"id": "stays", "tp": "short_news", "ca": 6, "ds": "b"}])
        updates: list[cc.Update] = []
        c.subscribe(updates.append)
        deadline = time.monotonic() + 6
        while not updates and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [(u.reason, u.counts, u.origin) for u in updates] == [
            (cc.UpdateReason.EXPIRED, cc.Counts(1, 1, 1), "store")]
        assert time.time() >= soon


def test_updates_say_where_their_cards_came_from(sample: cc.ContentCards) -> None:
    updates: list[cc.Update] = []
    sample.subscribe(updates.append)
    sample.refresh()
    sample.apply([])
    with pytest.raises(cc.ParseError):
        sample.apply("not json")
    sample.log_impression("tile-1")
    assert [u.origin for u in updates] == ["server", "application", "store", "store"]
    assert updates[0].to_json() == updates[0].raw


def test_the_outbox_lists_each_events_failed_attempts() -> None:
    """Item 7: type, card, user, time, id and attempts, without opening the SQLite file."""
    failing = [True]

    def transport(request: cc.TransportRequest) -> cc.TransportResponse:
        if failing[0]:
            raise ConnectionError("down (test)")
        return cc.TransportResponse(202)

    with cc.ContentCards(user_id="u", events={"callback": True},
                         event_flush_interval_seconds=0) as c:
        c.set_transport(transport)
        c.apply([{"id": "a", "tp": "short_news", "ca": 5, "ds": "x"},
                 {"id": "b", "tp": "short_news", "ca": 6, "ds": "y"}])
        c.log_impression("a")
        for _ in range(2):
            with pytest.raises(cc.TransportError):
                c.flush_events(5)
        c.log_impression("b")
        outbox = c.list_pending_events()
        assert [(e.card_id, e.user_id, e.type, e.attempts) for e in outbox.events] == [
            ("a", "u", "impression", 2), ("b", "u", "impression", 0)]
        assert all(e.id and e.time > 0 for e in outbox.events)
        failing[0] = False
        assert c.flush_events(5).delivered == 2
        assert c.list_pending_events().events == ()


# -- item 4: Python as Python developers expect -----------------------------------------------


@pytest.mark.parametrize("cls, base", [
    (cc.InvalidArgumentError, ValueError), (cc.ConfigError, ValueError),
    (cc.ParseError, ValueError), (cc.CardNotFoundError, LookupError),
    (cc.RequestTimeoutError, TimeoutError), (cc.NetworkError, OSError),
    (cc.ServerError, OSError), (cc.StorageError, OSError), (cc.TransportError, OSError),
    (cc.ClosedError, ValueError), (cc.NoMemoryError, MemoryError),
    (cc.SourceFileError, OSError), (cc.AuthError, PermissionError),
])
def test_exceptions_are_the_builtins_they_mean(cls: type[cc.ContentCardsError],
                                               base: type[BaseException]) -> None:
    error = cls("boom")
    assert isinstance(error, base) and isinstance(error, cc.ContentCardsError)
    assert str(error) == "boom" and error.args == ("boom",)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is cls and again.message == "boom" and again.code == error.code


def test_builtin_exceptions_from_real_calls(refreshed: cc.ContentCards) -> None:
    with pytest.raises(LookupError):
        refreshed.card("ghost")
    with pytest.raises(ValueError):
        cc.ContentCards({"userId": 5})
    with pytest.raises(ValueError):
        refreshed.apply("not json")
    refreshed.close()
    with pytest.raises(ValueError):
        refreshed.cards()


def test_a_missing_feed_file_is_not_a_network_error(tmp_path: os.PathLike[str]) -> None:
    missing = os.path.join(os.fspath(tmp_path), "missing.json")
    with cc.ContentCards(user_id="u", source={"file": missing}, refresh_tokens=0) as c:
        with pytest.raises(cc.SourceFileError) as info:
            c.refresh()
    assert isinstance(info.value, OSError) and not isinstance(info.value, cc.NetworkError)
    assert info.value.name == "CC_E_SOURCE_FILE" and "missing.json" in info.value.message


def test_file_errors_are_the_oserrors_open_would_raise(tmp_path: os.PathLike[str]) -> None:
    """errno, strerror and filename set, and the built-in of that errno: `except
    FileNotFoundError` catches a missing feed file (a path holding ": " included)."""
    import errno

    folder = os.fspath(tmp_path)
    missing = os.path.join(folder, "no such: feed.json")
    with cc.ContentCards(user_id="u", source={"file": missing}, refresh_tokens=0) as c:
        try:
            c.refresh()
        except FileNotFoundError as error:
            caught: BaseException = error
        else:
            pytest.fail("a missing feed file was not a FileNotFoundError")
    assert isinstance(caught, cc.SourceFileError) and type(caught).__name__ == "SourceFileError"
    assert (caught.errno, caught.strerror, caught.filename) == (
        errno.ENOENT, os.strerror(errno.ENOENT), missing)
    assert str(caught) == caught.message and caught.args == (caught.message,)
    again = pickle.loads(pickle.dumps(caught))
    assert isinstance(again, FileNotFoundError) and again.filename == missing
    with cc.ContentCards(user_id="u", source={"file": folder}, refresh_tokens=0) as c:
        with pytest.raises(IsADirectoryError) as directory:
            c.refresh()
    assert directory.value.errno == errno.EISDIR and directory.value.filename == folder
    # An event file in a folder that does not exist: a StorageError, and FileNotFoundError.
    events = os.path.join(folder, "gone", "events.jsonl")
    with cc.ContentCards(user_id="u", events={"file": events}, event_flush_interval_seconds=0,
                         refresh_tokens=0) as c:
        c.apply([{"id": "c1", "tp": "control", "ca": 1}])
        c.log_impression("c1")
        with pytest.raises(FileNotFoundError) as sink:
            c.flush_events(5)
    assert isinstance(sink.value, cc.StorageError) and sink.value.filename == events
    # Errors that name no file keep errno and filename None, and their own classes.
    plain = cc.errors.error_for(-11, "the store is damaged")
    assert type(plain) is cc.StorageError and plain.errno is None and plain.filename is None


def test_keyword_arguments_are_explicit() -> None:
    import inspect

    parameters = inspect.signature(cc.ContentCards).parameters
    assert set(cc.CONFIG_KEYS) <= set(parameters)
    assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in cc.CONFIG_KEYS)
    with pytest.raises(TypeError, match="did you mean 'user_id'"):
        cc.ContentCards(user_idd="u")  # type: ignore[call-arg, arg-type]
    with pytest.raises(cc.ConfigError):   # mypy --strict rejects it before (test_typing.py)
        cc.ContentCards(storage_path=42)  # type: ignore[arg-type]


def test_library_path_is_a_function() -> None:
    assert os.path.isfile(cc.library_path())
    assert cc.library_version() and cc.abi_version() == cc.ABI_VERSION


# -- the value classes: immutable, equal by value, no dataclasses ----------------------------


def test_value_classes(refreshed: cc.ContentCards) -> None:
    card = refreshed.card("tile-1")
    with pytest.raises(AttributeError):
        card.title = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del card.title  # type: ignore[misc]
    assert card == refreshed.card("tile-1") and hash(card) == hash(refreshed.card("tile-1"))
    changed = card._replace(title="other")
    assert changed.title == "other" and changed != card and card.title != "other"
    with pytest.raises(TypeError):
        card._replace(nope=1)
    assert pickle.loads(pickle.dumps(card)) == card and copy.deepcopy(card) is card
    assert repr(card).startswith("Card(id='tile-1', type=<CardType.CAPTIONED_IMAGE")
    summary = refreshed.refresh()
    assert summary == summary._replace() and "kept_newer=0" in repr(summary)
    assert summary.counts.total == 10 and tuple(summary.counts) == (10, 9, 9)
    log = refreshed.log_impression("tile-2")
    assert log == cc.LogResult.from_json(log.to_json()) and hash(log) == hash(log._replace())


def test_importing_the_package_imports_neither_dataclasses_nor_typing() -> None:
    # -S: no site, so nothing of site's own imports counts; the folder of the package under
    # test (the checkout's, or site-packages where it is installed) on sys.path instead.
    folder = os.path.dirname(os.path.dirname(os.path.abspath(cc.__file__)))
    code = f"import sys; sys.path.insert(0, {folder!r})\n" + (
        "import sys, contentcards\n"
        "print(sorted(m for m in ('dataclasses', 'typing', 'inspect') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- item 5: ContentCardable ------------------------------------------------------------------


class Tile(cc.ContentCardable):
    class_types = ("home_tile",)

    def __init__(self, title: str) -> None:
        self.title = title

    @classmethod
    def from_card(cls, card: cc.Card) -> Tile | None:
        return cls(card.title or "")


def test_content_card_data_and_self_logging(refreshed: cc.ContentCards) -> None:
    tiles = refreshed.convert(cc.Registry(Tile))
    assert len(tiles) == 3 and all(t.is_content_card for t in tiles)
    tile = next(t for t in tiles if t.card_id == "tile-1")
    data = tile.content_card_data
    assert data is not None
    assert (data.card_id, data.class_type, data.expires_at, data.is_pinned,
            data.is_dismissible, data.is_control) == ("tile-1", "home_tile", -1, False, True, False)
    assert tile.log_impression().state_changed
    assert tile.log_dismissal().recorded
    again = cc.Registry(Tile).convert([refreshed.card("tile-1")])[0]
    assert again.content_card_data == data and hash(again.content_card_data) == hash(data)
    with pytest.raises(RuntimeError, match="not converted through a controller"):
        again.log_click()
    own = Tile("mine")
    assert not own.is_content_card
    with pytest.raises(RuntimeError, match="not a content card"):
        own.log_impression()




# -- item 6: the last successful refresh survives a reopen -----------------------------------


def test_the_last_successful_refresh_time_survives_a_reopen(tmp_path: object) -> None:
    store = str(tmp_path)
    with open_sample(storage_path=store) as c:
        assert c.diagnostics().last_successful_refresh_at is None
        c.refresh()
        at = c.diagnostics().last_successful_refresh_at
        assert at is not None and abs(at - time.time()) < 60
        c.apply('[]')                                   # handed in by the app: not a refresh
        assert c.diagnostics().last_successful_refresh_at == at
    with open_sample(storage_path=store) as c:
        assert c.diagnostics().last_successful_refresh_at == at
        assert c.diagnostics().raw["lastSuccessfulRefreshAt"] == at
