"""Tests/c/test_misuse.c through Python: closed controllers, forged and foreign handles, NULLs,
invalid UTF-8, NUL characters, malformed JSON and unknown ids. Each gives its exception; none
crashes, and nothing is recorded."""

from __future__ import annotations

import ctypes
import math
from typing import Any, Callable

import pytest

import contentcards as cc
from contentcards import _ffi
from conftest import open_sample

BAD_UTF8 = b"card\xc3\x28"


def noop_transport(request: cc.TransportRequest) -> cc.TransportResponse:
    return cc.TransportResponse(200)


PUBLIC_CALLS: list[tuple[str, Callable[[cc.ContentCards], Any]]] = [
    ("refresh", lambda c: c.refresh(1)),
    ("refresh_in_background", lambda c: c.refresh_in_background()),
    ("apply", lambda c: c.apply("[]")),
    ("cards", lambda c: c.cards()),
    ("card", lambda c: c.card("tile-1")),
    ("counts", lambda c: c.counts()),
    ("count", lambda c: c.count()),
    ("unviewed_count", lambda c: c.unviewed_count()),
    ("convert", lambda c: c.convert(cc.Registry(), ["home_tile"])),
    ("log_impression", lambda c: c.log_impression("tile-1")),
    ("log_click", lambda c: c.log_click("tile-1")),
    ("log_dismissal", lambda c: c.log_dismissal("tile-1")),
    ("log_feed_displayed", lambda c: c.log_feed_displayed()),
    ("change_user", lambda c: c.change_user("x")),
    ("user_id", lambda c: c.user_id),
    ("flush_events", lambda c: c.flush_events(1)),
    ("pending_events", lambda c: c.pending_events()),
    ("diagnostics", lambda c: c.diagnostics()),
    ("current_update", lambda c: c.current_update()),
    ("subscribe", lambda c: c.subscribe(lambda update: None)),
    ("set_transport", lambda c: c.set_transport(noop_transport)),
    ("set_transport(None)", lambda c: c.set_transport(None)),
]


@pytest.mark.parametrize("name, call", PUBLIC_CALLS, ids=[name for name, _ in PUBLIC_CALLS])
def test_every_method_after_close_raises_closed(name: str, call: Callable[[cc.ContentCards], Any]) -> None:
    c = open_sample()
    c.close()
    callbacks_before = len(_ffi.callbacks)
    with pytest.raises(cc.ClosedError):
        call(c)
    assert len(_ffi.callbacks) == callbacks_before  # nothing registered, nothing leaked
    c.close()  # idempotent
    assert c.closed


def raw_controller_calls(handle: int) -> list[tuple[str, Callable[[], Any]]]:
    """Every function of the C API that takes a controller, through _ffi, with ``handle``."""
    n = ctypes.c_int64()
    return [
        ("refresh", lambda: _ffi.controller_refresh(handle, 1)),
        ("refresh_async", lambda: _ffi.controller_refresh_async(handle)),
        ("apply", lambda: _ffi.controller_apply(handle, b"[]")),
        ("feed", lambda: _ffi.controller_feed(handle, None)),
        ("card", lambda: _ffi.controller_card(handle, b"tile-1")),
        ("counts", lambda: _ffi.controller_counts(handle, None)),
        ("log_impression", lambda: _ffi.controller_log_impression(handle, b"tile-1")),
        ("log_click", lambda: _ffi.controller_log_click(handle, b"tile-1")),
        ("log_dismissal", lambda: _ffi.controller_log_dismissal(handle, b"tile-1")),
        ("log_feed_displayed", lambda: _ffi.controller_log_feed_displayed(handle)),
        ("change_user", lambda: _ffi.controller_change_user(handle, b"x")),
        ("user", lambda: _ffi.controller_user(handle)),
        ("flush_events", lambda: _ffi.controller_flush_events(handle, 1)),
        ("pending_events", lambda: _ffi.controller_pending_events(handle)),
        ("diagnostics", lambda: _ffi.controller_diagnostics(handle)),
        ("counts raw", lambda: _ffi.lib.cc_controller_counts(ctypes.byref(n), None, handle, None)),
        ("unsubscribe", lambda: _ffi.controller_unsubscribe(handle, 1)),
        ("set_transport(NULL)", lambda: _ffi.controller_set_transport(handle, None)),
        ("snapshot", lambda: _ffi.controller_snapshot(handle, None)),
    ]


def check_bad_handle(handle: int) -> None:
    for name, call in raw_controller_calls(handle):
        with pytest.raises(cc.InvalidHandleError):
            call()
    # free_userdata runs when a registration fails: the registry entries are released by the
    # library itself (the binding does not release them after a failed call).
    key = _ffi.callbacks.add(lambda update: None)
    with pytest.raises(cc.InvalidHandleError):
        _ffi.controller_subscribe(handle, key)
    assert key not in _ffi.callbacks
    key = _ffi.callbacks.add(lambda request, response: 0)
    with pytest.raises(cc.InvalidHandleError):
        _ffi.controller_set_transport(handle, key)
    assert key not in _ffi.callbacks
    with pytest.raises(cc.InvalidHandleError):
        _ffi.controller_close(handle)


def test_null_handle() -> None:
    check_bad_handle(0)
    assert "NULL" in _ffi.last_error_message()


def test_closed_handle() -> None:
    c = open_sample()
    handle = c._handle or 0
    c.close()
    check_bad_handle(handle)
    with pytest.raises(cc.InvalidHandleError, match="already closed"):
        _ffi.controller_close(handle)


def test_handle_of_another_kind_and_forged_handles() -> None:
    with open_sample() as c:
        handle = c._handle or 0
        snapshot = _ffi.controller_snapshot(handle, None)
        check_bad_handle(snapshot)
        with pytest.raises(cc.InvalidHandleError):
            _ffi.snapshot_count(handle)
        with pytest.raises(cc.InvalidHandleError):
            _ffi.snapshot_close(handle)
        _ffi.snapshot_close(snapshot)
        with pytest.raises(cc.InvalidHandleError):
            _ffi.snapshot_string(snapshot, 0, b"id")
        local = ctypes.c_int(0)
        forged = [1, 0xC1000000FFFFFF, 0xC1ABCDEF00000001, ctypes.addressof(local),
                  id(object()), 2**64 - 1]
        for value in forged:
            check_bad_handle(value)
        # The live controller still works after all that.
        assert c.count() == 0


def test_null_and_bad_arguments(refreshed: cc.ContentCards) -> None:
    c = refreshed
    h = c._handle or 0
    lib = _ffi.lib
    out = ctypes.c_void_p()
    n = ctypes.c_int64()
    with pytest.raises(cc.InvalidArgumentError):
        lib.cc_controller_open(None, b"{}")
    raw: list[Callable[[], Any]] = [
        lambda: lib.cc_controller_feed(None, h, None),
        lambda: lib.cc_controller_card(None, h, b"tile-1"),
        lambda: lib.cc_controller_card(ctypes.byref(out), h, None),
        lambda: lib.cc_controller_apply(None, h, None),
        lambda: lib.cc_controller_log_impression(h, None),
        lambda: lib.cc_controller_log_click(h, None),
        lambda: lib.cc_controller_log_dismissal(h, None),
        lambda: lib.cc_controller_change_user(h, None),
        lambda: lib.cc_controller_user(None, h),
        lambda: lib.cc_controller_pending_events(None, h),
        lambda: lib.cc_controller_diagnostics(None, h),
        lambda: lib.cc_controller_current_update(None, h),
        lambda: lib.cc_controller_snapshot(None, h, None),
    ]
    for call in raw:
        with pytest.raises(cc.InvalidArgumentError):
            call()
    assert not out.value
    with pytest.raises(cc.InvalidArgumentError):
        c.refresh(math.nan)
    with pytest.raises(cc.InvalidArgumentError):
        c.flush_events(math.nan)

    # subscribe with fn NULL or out NULL: an error, and free_userdata still runs.
    sub = ctypes.c_uint64()
    for args in ((ctypes.byref(sub), h, _ffi.NULL_UPDATE_FN), (None, h, _ffi.UPDATE_TRAMPOLINE)):
        key = _ffi.callbacks.add(lambda update: None)
        with pytest.raises(cc.InvalidArgumentError):
            lib.cc_controller_subscribe(*args, key, _ffi.FREE_TRAMPOLINE)
        assert key not in _ffi.callbacks
    with pytest.raises(cc.CardNotFoundError):
        _ffi.controller_unsubscribe(h, 0)
    with pytest.raises(cc.CardNotFoundError):
        _ffi.controller_unsubscribe(h, 424242)
    with pytest.raises(cc.InvalidArgumentError):
        _ffi.transport_response_set(None, 200, b"", -1)
    with pytest.raises(cc.InvalidArgumentError, match="not a response being answered"):
        _ffi.transport_response_set(ctypes.addressof(n), 200, b"", -1)
    with pytest.raises(cc.InvalidArgumentError):
        _ffi.transport_response_fail(None, b"x")
    lib.cc_string_free(None)

    # Invalid UTF-8 wherever a string goes in: raw bytes, and lone surrogates in a str.
    with pytest.raises(cc.InvalidArgumentError, match="UTF-8"):
        _ffi.controller_log_impression(h, BAD_UTF8)
    with pytest.raises(cc.InvalidArgumentError, match="UTF-8"):
        c.log_impression("card\udc80")
    with pytest.raises(cc.InvalidArgumentError):
        c.card("card\udc80")
    with pytest.raises(cc.InvalidArgumentError):
        c.change_user("\ud800")
    with pytest.raises(cc.InvalidArgumentError):
        c.apply(BAD_UTF8)
    with pytest.raises(cc.InvalidArgumentError, match="UTF-8"):
        c.apply('[{"id": "\udc80"}]')      # a str's lone surrogate: CPython has no UTF-8 of it
    with pytest.raises(cc.InvalidArgumentError):
        c.cards(["\udcff"])
    with pytest.raises(cc.InvalidArgumentError):
        cc.ContentCards(BAD_UTF8)
    with pytest.raises(cc.InvalidArgumentError):
        cc.ContentCards(user_id="\udc80")

    # A NUL would cut a C string short: refused before it reaches the library.
    with pytest.raises(cc.InvalidArgumentError, match="NUL"):
        c.log_impression("tile-1\0junk")
    with pytest.raises(cc.InvalidArgumentError, match="NUL"):
        c.apply(b"[]\0junk")
    with pytest.raises(cc.InvalidArgumentError, match="NUL"):
        c.apply("[]\0junk")               # a str, whose own UTF-8 the library would read
    with pytest.raises(cc.InvalidArgumentError, match="NUL"):
        cc.ContentCards(b'{"userId": "a"}\0junk')

    # Python-side type errors
    for call in (lambda: c.card(None), lambda: c.change_user(5), lambda: c.refresh("5"),
                 lambda: c.apply(5), lambda: c.cards([1]), lambda: c.subscribe(5),
                 lambda: c.set_transport(5)):
        with pytest.raises(TypeError):
            call()  # type: ignore[no-untyped-call]

    # Malformed JSON
    with pytest.raises(cc.ParseError):
        _ffi.controller_feed(h, b'["home_tile"')
    with pytest.raises(cc.ParseError):
        _ffi.controller_feed(h, b'{"class":1}')
    with pytest.raises(cc.ParseError):
        _ffi.controller_counts(h, b"[1]")
    with pytest.raises(cc.ParseError):
        c.apply('{"cards":')
    with pytest.raises(cc.ParseError):
        c.apply("nonsense")
    with pytest.raises(cc.ParseError):
        c.apply({"cards": [float("nan")]})
    with pytest.raises(cc.ConfigError):
        cc.ContentCards({"source": {"file": 1}})
    with pytest.raises(cc.ConfigError):
        cc.ContentCards("[1,2")
    with pytest.raises(cc.ConfigError):
        cc.ContentCards({"timeoutSeconds": float("inf")})

    # Unknown card id
    with pytest.raises(cc.CardNotFoundError, match='"ghost"'):
        c.card("ghost")
    with pytest.raises(cc.CardNotFoundError):
        c.log_click("ghost")
    with pytest.raises(cc.CardNotFoundError):
        c.log_dismissal("ghost")

    # Nothing of the above was recorded.
    assert c.pending_events() == 0
    assert c.count() == 10


def test_storage_errors() -> None:
    with pytest.raises(cc.StorageError) as info:
        cc.ContentCards(storage_path="/proc/contentcards-cannot-be-here")
    assert info.value.message
    assert info.value.code == -11 and info.value.name == "CC_E_STORAGE"


def test_exception_classes() -> None:
    """Every CC_E_* code maps to its class; TimeoutError and pickling work."""
    import pickle

    expected = {
        -1: cc.InvalidArgumentError, -2: cc.InvalidHandleError, -3: cc.ConfigError,
        -4: cc.ParseError, -5: cc.CardNotFoundError, -6: cc.RefusedError,
        -7: cc.RateLimitedError, -8: cc.NetworkError, -9: cc.RequestTimeoutError,
        -10: cc.ServerError, -11: cc.StorageError, -12: cc.NoSourceError,
        -13: cc.UnavailableError, -14: cc.WrongUserError, -15: cc.TransportError,
        -16: cc.NoMemoryError, -17: cc.ClosedError, -18: cc.SourceFileError,
        -19: cc.AuthError, -99: cc.InternalError,
    }
    assert set(expected) == set(cc.errors.STATUS_NAMES) - {0}
    for code, cls in expected.items():
        error = cc.errors.error_for(code, "m")
        assert type(error) is cls and error.code == code and isinstance(error, cc.ContentCardsError)
        assert error.name == _ffi.status_name(code)
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is cls and copy.message == "m"
    unknown = cc.errors.error_for(-1234, "?")
    assert type(unknown) is cc.ContentCardsError and unknown.name == "CC_E_UNKNOWN"
    assert isinstance(cc.RequestTimeoutError("t"), TimeoutError)
    # retry_after is the library's value (cc_last_error_retry_after), never read from the text.
    assert cc.errors.error_for(-7, "x (Retry-After: 7 s)", 7.0).retry_after == 7.0
    assert cc.RateLimitedError("x (Retry-After: 7 s)").retry_after is None
    assert cc.errors.error_for(-10, "HTTP 503", -1.0).retry_after is None
    assert pickle.loads(pickle.dumps(cc.errors.error_for(-10, "s", 3.0))).retry_after == 3.0
    assert cc.ServerError("sync failed with HTTP 503: ...").http_status == 503


def test_nul_inside_json_strings() -> None:
    """A NUL can reach the library inside JSON text. It must either be refused, or survive the
    trip back through char * outputs; a card id with a NUL cannot be passed to any char *
    function, so such a card should be left out."""
    try:
        controller = cc.ContentCards(user_id="a\0b")
    except cc.ConfigError:
        pass
    else:
        with controller:
            assert controller.user_id == "a\0b"
    with cc.ContentCards() as c:
        summary = c.apply([{"id": "x\u0000y", "tp": "short_news", "ca": 1, "ds": "d"}])
        assert summary.added == 0 and len(summary.left_out) == 1


def test_ints_ctypes_would_wrap_are_refused() -> None:
    """An int that ctypes would truncate on its way to C is refused in Python: a transport
    status of 2**32 + 200 reached the library as 200, a pending-events limit of 2**64 as 0
    (which means all)."""
    from contentcards.transport import TransportResponse
    with pytest.raises(ValueError):
        TransportResponse(2**32 + 200, b"")._encoded()
    assert TransportResponse(200, b"")._encoded()[0] == 200
    with open_sample() as c:
        with pytest.raises(ValueError):
            c.list_pending_events(limit=2**64)
        assert c.list_pending_events(limit=5).pending == 0
