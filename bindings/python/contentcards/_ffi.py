"""The low level: ctypes declarations of every function of ``contentcards.h`` and thin wrappers.

Like llvmlite's ``binding/ffi.py``: :data:`SIGNATURES` is the one table of argument and result
types for every function of the header; every function that returns a status gets
:func:`_errcheck`, which turns a negative status into the matching
:class:`~contentcards.errors.ContentCardsError`, with the message read from
``cc_last_error_message()`` at once, on the calling thread. The wrappers below take the
``char **`` outputs and always free them with ``cc_string_free`` (try/finally).

Callbacks: the library gets module-level trampolines (:data:`UPDATE_TRAMPOLINE`,
:data:`TRANSPORT_TRAMPOLINE`, :data:`TOKEN_TRAMPOLINE`, :data:`FREE_TRAMPOLINE`...) that live as
long as the module, so no
ctypes thunk is ever freed while C may still call it (not even from inside its own call, as
when a subscriber unsubscribes itself). The ``userdata`` handed to the library is a key into
:data:`callbacks`, a registry of the Python callables; the library's ``free_userdata`` (the free
trampoline) removes the key, which drops the last reference the binding holds. So nothing leaks
and nothing is released while the library may still call it.

This module is private: its names may change without notice. Use the package's public API.

This file is over 400 lines because it is one table and its wrappers, one per function of the
header, and because it is what ``import contentcards`` loads (with ``_library`` and ``_logs``):
the trampolines and the registry of callbacks must be loaded then, so they are here too rather
than in a module that the import would load as well.
"""

from __future__ import annotations

import ctypes
import os
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_int, c_int64, c_size_t,
                    c_uint64, c_void_p)

from . import _library

TYPE_CHECKING = False  # typing is not imported at run time (import time)
if TYPE_CHECKING:
    from typing import Any, Callable

    from .errors import ContentCardsError


def error_for(code: int, message: str, retry_after: float | None = None) -> ContentCardsError:
    """:func:`contentcards.errors.error_for`. The errors module (some twenty classes) is
    imported when a call first fails, not at ``import contentcards`` (import time)."""
    from .errors import error_for as make
    return make(code, message, retry_after)


def error_class(name: str) -> type[ContentCardsError]:
    """The class of :mod:`contentcards.errors` named ``name`` (``"ParseError"``), the module
    imported on first use as for :func:`error_for`: the modules an open needs name the errors
    they may raise through this, so that an open that raises nothing imports none of them."""
    from . import errors
    cls: type[ContentCardsError] = getattr(errors, name)
    return cls

__all__ = [
    "CALLBACK_KEY_NONE", "FREE_TRAMPOLINE", "NEWER", "SIGNATURES", "TOKEN_TRAMPOLINE",
    "TRANSPORT_TRAMPOLINE", "UPDATE_TRAMPOLINE", "TransportRequestStruct", "borrowed_utf8", "callbacks",
    "cstr", "str_utf8_function",
    "has", "lib", "library_path", "require",
]

# -- types ---------------------------------------------------------------------------------------


class TransportRequestStruct(Structure):
    """``cc_transport_request``: every pointer is valid only during the callback."""

    _fields_ = [
        ("kind", c_char_p),
        ("url", c_char_p),
        ("headers", POINTER(c_char_p)),
        ("header_count", c_size_t),
        ("body", c_void_p),
        ("body_len", c_size_t),
        ("timeout_seconds", c_double),
    ]


#: void (*cc_update_fn)(void *userdata, const char *update_json)
UPDATE_FN = CFUNCTYPE(None, c_void_p, c_char_p)
#: void (*free_userdata)(void *userdata)
FREE_FN = CFUNCTYPE(None, c_void_p)
#: void (*cc_refresh_done_fn)(void *userdata, int status, const char *result_json)
REFRESH_DONE_FN = CFUNCTYPE(None, c_void_p, c_int, c_char_p)
#: void (*cc_log_fn)(void *userdata, int level, const char *message)
LOG_FN = CFUNCTYPE(None, c_void_p, c_int, c_char_p)
#: int (*cc_transport_fn)(void *userdata, const cc_transport_request *, cc_transport_response *)
TRANSPORT_FN = CFUNCTYPE(c_int, c_void_p, POINTER(TransportRequestStruct), c_void_p)
#: int (*cc_token_fn)(void *userdata, const char *user_id, cc_token_response *response)
TOKEN_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, c_void_p)

handle_t = c_void_p          # cc_controller *, cc_snapshot *: opaque handles
out_string_t = POINTER(c_void_p)  # char **: library-allocated, freed with cc_string_free
P_int64 = POINTER(c_int64)

STATUS = "status"  # returns int status: gets the errcheck
PLAIN = "plain"    # returns a value: no errcheck

# name: (restype, argtypes, kind). The order follows contentcards.h.
SIGNATURES: dict[str, tuple[Any, list[Any], str]] = {
    # versions and errors
    "cc_version": (c_char_p, [], PLAIN),
    "cc_abi_version": (c_int, [], PLAIN),
    "cc_last_error_message": (c_char_p, [], PLAIN),
    "cc_last_error_code": (c_int, [], PLAIN),
    "cc_last_error_retry_after": (c_double, [], PLAIN),
    "cc_status_name": (c_char_p, [c_int], PLAIN),
    "cc_string_free": (None, [c_void_p], PLAIN),
    # building a configuration (for C programs: the binding writes its JSON with json.dumps)
    "cc_config_new": (c_int, [POINTER(handle_t)], STATUS),
    "cc_config_set_string": (c_int, [handle_t, c_char_p, c_char_p], STATUS),
    "cc_config_set_number": (c_int, [handle_t, c_char_p, c_double], STATUS),
    "cc_config_set_bool": (c_int, [handle_t, c_char_p, c_int], STATUS),
    "cc_config_append_string": (c_int, [handle_t, c_char_p, c_char_p], STATUS),
    "cc_config_json": (c_int, [out_string_t, handle_t], STATUS),
    "cc_config_close": (c_int, [handle_t], STATUS),
    # the controller
    "cc_controller_open": (c_int, [POINTER(handle_t), c_char_p], STATUS),
    "cc_controller_close": (c_int, [handle_t], STATUS),
    "cc_controller_refresh": (c_int, [out_string_t, handle_t, c_double], STATUS),
    "cc_controller_refresh_in_background": (
        c_int, [handle_t, c_double, REFRESH_DONE_FN, c_void_p, FREE_FN], STATUS),
    "cc_controller_refresh_async": (c_int, [handle_t], STATUS),
    "cc_controller_apply": (c_int, [out_string_t, handle_t, c_char_p], STATUS),
    "cc_controller_feed": (c_int, [out_string_t, handle_t, c_char_p], STATUS),
    "cc_controller_feed_indexed": (
        c_int, [out_string_t, POINTER(c_size_t), POINTER(c_void_p), POINTER(c_size_t), handle_t,
                c_char_p], STATUS),
    "cc_controller_card": (c_int, [out_string_t, handle_t, c_char_p], STATUS),
    "cc_controller_counts": (c_int, [P_int64, P_int64, handle_t, c_char_p], STATUS),
    "cc_controller_total_count": (c_int64, [handle_t, c_char_p], PLAIN),
    "cc_controller_unviewed_count": (c_int64, [handle_t, c_char_p], PLAIN),
    "cc_controller_unread_count": (c_int64, [handle_t, c_char_p], PLAIN),
    "cc_controller_all_counts": (c_int, [P_int64, P_int64, P_int64, handle_t, c_char_p], STATUS),
    "cc_controller_mark_read": (c_int, [POINTER(c_int), handle_t, c_char_p, c_int], STATUS),
    "cc_controller_mark_all_read": (c_int, [P_int64, handle_t, c_char_p], STATUS),
    "cc_controller_wait_images": (c_int, [out_string_t, handle_t, c_double], STATUS),
    "cc_controller_log_impression": (c_int, [handle_t, c_char_p], STATUS),
    "cc_controller_log_click": (c_int, [handle_t, c_char_p], STATUS),
    "cc_controller_log_dismissal": (c_int, [handle_t, c_char_p], STATUS),
    "cc_controller_log_feed_displayed": (c_int, [handle_t], STATUS),
    # PLAIN: CC_E_REFUSED comes with a result to read (controller_log checks the status).
    "cc_controller_log": (c_int, [out_string_t, handle_t, c_char_p, c_char_p], PLAIN),
    "cc_controller_change_user": (c_int, [handle_t, c_char_p], STATUS),
    "cc_controller_user": (c_int, [out_string_t, handle_t], STATUS),
    "cc_controller_flush_events": (c_int, [out_string_t, handle_t, c_double], STATUS),
    "cc_controller_pending_events": (c_int, [P_int64, handle_t], STATUS),
    "cc_controller_pending_events_json": (c_int, [out_string_t, handle_t, c_size_t], STATUS),
    "cc_controller_diagnostics": (c_int, [out_string_t, handle_t], STATUS),
    "cc_controller_current_update": (c_int, [out_string_t, handle_t], STATUS),
    # logging
    "cc_set_log_handler": (c_int, [LOG_FN, c_int, c_void_p, FREE_FN], STATUS),
    # subscriptions
    "cc_controller_subscribe": (
        c_int, [POINTER(c_uint64), handle_t, UPDATE_FN, c_void_p, FREE_FN], STATUS),
    "cc_controller_unsubscribe": (c_int, [handle_t, c_uint64], STATUS),
    # host transport
    "cc_transport_response_set": (
        c_int, [c_void_p, c_int, c_char_p, c_size_t, c_double], STATUS),
    "cc_transport_response_fail": (c_int, [c_void_p, c_char_p], STATUS),
    "cc_transport_response_set_etag": (c_int, [c_void_p, c_char_p], STATUS),
    "cc_controller_set_transport": (c_int, [handle_t, TRANSPORT_FN, c_void_p, FREE_FN], STATUS),
    # per-user tokens
    "cc_token_response_set": (c_int, [c_void_p, c_char_p, c_double], STATUS),
    "cc_token_response_fail": (c_int, [c_void_p, c_char_p], STATUS),
    "cc_controller_set_token_provider": (c_int, [handle_t, TOKEN_FN, c_void_p, FREE_FN], STATUS),
    # hints
    "cc_controller_hint": (c_int, [handle_t, c_char_p], STATUS),
    # forgetting and exporting a user
    "cc_controller_forget_user": (c_int, [out_string_t, handle_t, c_char_p, c_int, c_double],
                                  STATUS),
    "cc_controller_export_user": (c_int, [out_string_t, handle_t, c_char_p], STATUS),
    # snapshots
    "cc_controller_snapshot": (c_int, [POINTER(handle_t), handle_t, c_char_p], STATUS),
    "cc_snapshot_count": (c_int, [POINTER(c_size_t), handle_t], STATUS),
    "cc_snapshot_string": (c_int, [POINTER(c_char_p), handle_t, c_size_t, c_char_p], STATUS),
    "cc_snapshot_int": (c_int, [P_int64, handle_t, c_size_t, c_char_p], STATUS),
    "cc_snapshot_bool": (c_int, [POINTER(c_int), handle_t, c_size_t, c_char_p], STATUS),
    "cc_snapshot_double": (
        c_int, [POINTER(c_double), POINTER(c_int), handle_t, c_size_t, c_char_p], STATUS),
    "cc_snapshot_extra": (c_int, [POINTER(c_char_p), handle_t, c_size_t, c_char_p], STATUS),
    "cc_snapshot_extras_count": (c_int, [POINTER(c_size_t), handle_t, c_size_t], STATUS),
    "cc_snapshot_extra_at": (
        c_int, [POINTER(c_char_p), POINTER(c_char_p), handle_t, c_size_t, c_size_t], STATUS),
    "cc_snapshot_close": (c_int, [handle_t], STATUS),
}

#: Functions of the header that a library of the same ABI built before them lacks. Such a
#: library still loads; the method that needs one raises UnavailableError naming it (``has``
#: says whether the loaded library has a function). Every other function must be there.
NEWER = frozenset({
    "cc_token_response_set", "cc_token_response_fail", "cc_controller_set_token_provider",
    "cc_controller_hint", "cc_controller_forget_user", "cc_controller_export_user",
    "cc_controller_feed_indexed", "cc_controller_current_update",
})

lib, library_path = _library.load()


def _errcheck(result: int, func: Any, arguments: tuple[Any, ...]) -> int:
    """Raises the exception of a negative status, with the thread's last error message."""
    if result < 0:
        raise _error(result)
    return result


def _error(result: int) -> Exception:
    """The exception of status ``result``, with the thread's last error when it is that
    call's: Python code may run between the call and this read (a garbage collection running
    a finalizer that calls the library, which clears the thread's error), and another call's
    message or wait would then be reported as this one's."""
    message = _last_error_message()
    retry_after = lib.cc_last_error_retry_after()
    if lib.cc_last_error_code() != result:
        name = lib.cc_status_name(result)
        message = f"{name.decode('utf-8') if name else result} (the library's message for it was not available)"
        retry_after = -1.0
    return error_for(result, message, retry_after)


def _declare() -> None:
    missing = []
    for name, (restype, argtypes, kind) in SIGNATURES.items():
        try:
            function = getattr(lib, name)
        except AttributeError:
            if name not in NEWER:
                missing.append(name)
            continue
        function.restype = restype
        function.argtypes = argtypes
        if kind == STATUS:
            function.errcheck = _errcheck
    if missing:
        raise _library.LibraryLoadError(
            f"{library_path} lacks functions of contentcards.h: {', '.join(missing)}")


def _last_error_message() -> str:
    raw: bytes | None = lib.cc_last_error_message()
    return "" if raw is None else raw.decode("utf-8", "replace")


_declare()


def has(name: str) -> bool:
    """Whether the loaded library has the function ``name`` (see :data:`NEWER`)."""
    return hasattr(lib, name)


def require(name: str) -> Any:
    """The library's function ``name``; UnavailableError when the loaded library predates it."""
    try:
        return getattr(lib, name)
    except AttributeError:
        raise error_for(-13, f"{library_path} has no {name}: it is older than this package "
                             f"(version {version()}); install the library built with it") from None

# -- strings ---------------------------------------------------------------------------------------


def cstr(value: str | bytes, what: str) -> bytes:
    """A string argument as UTF-8 bytes. An embedded NUL would silently cut the string short in
    C, so it is refused here. Lone surrogates are passed on as they are (invalid UTF-8), so the
    library reports them like any other invalid UTF-8."""
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    if b"\0" in data:
        from .errors import InvalidArgumentError
        raise InvalidArgumentError(f"{what} contains a NUL character", -1)
    return data


_str_utf8: Any = None


def str_utf8_function() -> Any:
    """CPython's ``PyUnicode_AsUTF8AndSize`` through a prototype of this module's own (setting
    ``restype`` on ``ctypes.pythonapi``'s shared function object would change it for every
    other user in the process); None where there is none (no ``ctypes.pythonapi``, as on PyPy,
    or the symbol not found)."""
    global _str_utf8
    if _str_utf8 is None:
        try:
            prototype = ctypes.PYFUNCTYPE(c_void_p, ctypes.py_object, POINTER(ctypes.c_ssize_t))
            _str_utf8 = prototype(("PyUnicode_AsUTF8AndSize", ctypes.pythonapi))
        except (AttributeError, OSError):
            _str_utf8 = False
    return _str_utf8 or None


def borrowed_utf8(value: str | bytes, what: str) -> c_char_p | bytes:
    """A text argument of any size (a payload of megabytes) for a ``const char *`` parameter,
    without copying a str: CPython's own UTF-8 of the str (``PyUnicode_AsUTF8AndSize``), which
    is the str's memory itself for an ASCII str and otherwise made once and kept with the str
    for as long as the str lives (as orjson reads a str). Encoding a copy of a 4.6 MB payload
    at every call cost 0.4 ms in a warm process and 4.5 ms on fresh pages (docs/PERFORMANCE.md,
    "The pipeline and its stages"). The pointer is into ``value``: the argument returned holds
    ``value`` too, so the str lives as long as the argument. Refused, as :func:`cstr`: an
    embedded NUL. A str subclass (its ``__contains__`` could hide a NUL), a str CPython cannot
    give as UTF-8 (a lone surrogate), or a Python without the function, goes through
    :func:`cstr`."""
    function = str_utf8_function() if type(value) is str else None
    if function is None or "\0" in value:
        return cstr(value, what)  # cstr raises for the NUL
    try:
        address = function(value, None)
    except UnicodeError:  # ctypes raised the pending error: none is left behind
        return cstr(value, what)
    argument = c_char_p(address)
    argument._owner = value  # type: ignore[attr-defined]  # the str the pointer is into
    return argument


def _take_string(out: c_void_p) -> str | None:
    """The string behind a ``char **`` output (None for NULL); the caller frees it."""
    if not out.value:
        return None
    return ctypes.string_at(out.value).decode("utf-8")


def _call_string_out(function: Any, *args: Any) -> str:
    """Calls ``function(&out, *args)`` and returns ``*out``, always freed with cc_string_free."""
    out = c_void_p()
    try:
        function(ctypes.byref(out), *args)
        text = _take_string(out)
    finally:
        if out.value:
            lib.cc_string_free(out)
    if text is None:
        raise error_for(-99, f"{function.__name__} succeeded but returned no string")
    return text


# -- versions and errors ------------------------------------------------------------------------


def version() -> str:
    raw: bytes = lib.cc_version()
    return raw.decode("utf-8")


def abi_version() -> int:
    return int(lib.cc_abi_version())


def last_error_message() -> str:
    return _last_error_message()


def last_error_code() -> int:
    return int(lib.cc_last_error_code())


def status_name(status: int) -> str:
    raw: bytes = lib.cc_status_name(status)
    return raw.decode("utf-8")


# -- the controller -----------------------------------------------------------------------------


def controller_open(config: bytes | None) -> int:
    out = handle_t()
    lib.cc_controller_open(ctypes.byref(out), config)
    if not out.value:
        raise error_for(-99, "cc_controller_open succeeded but returned no handle")
    return int(out.value)


def controller_close(handle: int) -> None:
    lib.cc_controller_close(handle)


def controller_refresh(handle: int, timeout_seconds: float) -> str:
    return _call_string_out(lib.cc_controller_refresh, handle, timeout_seconds)


def controller_refresh_in_background(handle: int, timeout_seconds: float,
                                     key: int | None) -> None:
    """Starts a background refresh; with ``key`` the registry entry gets ``(status,
    result_json)`` once, on a library thread, and is released after (or at once on failure)."""
    if key is None:
        lib.cc_controller_refresh_in_background(handle, timeout_seconds, NULL_REFRESH_DONE_FN,
                                                None, NULL_FREE_FN)
    else:
        lib.cc_controller_refresh_in_background(handle, timeout_seconds,
                                                REFRESH_DONE_TRAMPOLINE, key, FREE_TRAMPOLINE)


def controller_apply(handle: int, payload: bytes | c_char_p) -> str:
    return _call_string_out(lib.cc_controller_apply, handle, payload)


def controller_feed(handle: int, filter_json: bytes | None) -> str:
    return _call_string_out(lib.cc_controller_feed, handle, filter_json)


def controller_feed_bytes(handle: int, filter_json: bytes | None) -> bytes:
    """The feed as its UTF-8 bytes, not decoded: `Controller.cards` splits it into cards."""
    out = c_void_p()
    try:
        lib.cc_controller_feed(ctypes.byref(out), handle, filter_json)
        if not out.value:
            raise error_for(-99, "cc_controller_feed succeeded but returned no string")
        return ctypes.string_at(out.value)
    finally:
        if out.value:
            lib.cc_string_free(out)


class LibraryText:
    """Bytes the library allocated, handed on without a copy and freed (``cc_string_free``)
    when the last holder lets go: the feed's text that the lazy cards of ``cards()`` share.

    Why not ``ctypes.string_at``: copying the feed of 1,000 cards into a fresh ``bytes`` was
    0.38 ms of a program's first ``cards()``, nearly all of it the page faults of the copy's
    656 KB (docs/PERFORMANCE.md, "Python open and first feed"); the library's buffer is
    already written. A slice (``text[start:end]``) is a ``bytes`` copy of that part, as a
    slice of ``bytes`` is, taken through a memoryview of the buffer (``string_at`` for each
    card's part was 0.8 us a card, the memoryview 0.3). Nothing writes the buffer after the
    library returns it, so any thread may read it; it is freed only once nothing holds this
    object, and ``view`` must not be kept apart from it."""

    __slots__ = ("_address", "_length", "view")

    def __init__(self, address: int, length: int) -> None:
        self._address = address
        self._length = length
        #: The buffer's bytes (read-only use), valid while this object lives.
        self.view = memoryview((ctypes.c_char * length).from_address(address)).cast("B") if length else memoryview(b"")

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, span: slice) -> bytes:
        return self.view[span].tobytes()

    def __bytes__(self) -> bytes:
        return self.view.tobytes()

    def __del__(self) -> None:
        address, self._address, self._length = self._address, 0, 0
        self.view = memoryview(b"")
        if address:
            try:
                lib.cc_string_free(address)
            except Exception:  # noqa: BLE001 - at interpreter exit, `lib` may be gone already
                pass


def controller_feed_indexed(handle: int, filter_json: bytes | None) -> tuple[LibraryText, list[int]]:
    """The feed's UTF-8 text, as the library wrote it (not copied), and where each card of it
    begins: the card count plus one offsets, the last the text's length
    (cc_controller_feed_indexed). `Controller.cards` makes a lazy card of each span without
    scanning the text."""
    out, offsets, length, count = c_void_p(), c_void_p(), c_size_t(), c_size_t()
    lib.cc_controller_feed_indexed(ctypes.byref(out), ctypes.byref(length), ctypes.byref(offsets),
                                   ctypes.byref(count), handle, filter_json)
    if not out.value:
        raise error_for(-99, "cc_controller_feed_indexed succeeded but returned no feed")
    # Owned from here: freed with the text, also when what follows fails.
    text = LibraryText(out.value, length.value)
    if not offsets.value:
        raise error_for(-99, "cc_controller_feed_indexed succeeded but returned no offsets")
    # A pointer's slice is a list of ints made in C (no array type made per length). The
    # offsets live in the text's allocation: read now, while `text` holds it.
    return text, ctypes.cast(offsets, POINTER(c_size_t))[:count.value + 1]


def controller_card(handle: int, card_id: bytes) -> str:
    return _call_string_out(lib.cc_controller_card, handle, card_id)


def controller_counts(handle: int, filter_json: bytes | None) -> tuple[int, int]:
    total, unviewed = c_int64(), c_int64()
    lib.cc_controller_counts(ctypes.byref(total), ctypes.byref(unviewed), handle, filter_json)
    return int(total.value), int(unviewed.value)


def controller_all_counts(handle: int, filter_json: bytes | None) -> tuple[int, int, int]:
    """Total, unviewed and unread at one moment."""
    total, unviewed, unread = c_int64(), c_int64(), c_int64()
    lib.cc_controller_all_counts(ctypes.byref(total), ctypes.byref(unviewed), ctypes.byref(unread),
                                 handle, filter_json)
    return int(total.value), int(unviewed.value), int(unread.value)


def controller_unread_count(handle: int, filter_json: bytes | None) -> int:
    """The unread count; raises the error of a negative status."""
    return _errcheck(lib.cc_controller_unread_count(handle, filter_json), None, ())


def controller_mark_read(handle: int, card_id: bytes, read: bool) -> bool:
    changed = c_int()
    lib.cc_controller_mark_read(ctypes.byref(changed), handle, card_id, 1 if read else 0)
    return changed.value != 0


def controller_mark_all_read(handle: int, filter_json: bytes | None) -> int:
    changed = c_int64()
    lib.cc_controller_mark_all_read(ctypes.byref(changed), handle, filter_json)
    return int(changed.value)


def controller_wait_images(handle: int, timeout: float) -> str:
    return _call_string_out(lib.cc_controller_wait_images, handle, timeout)


def controller_refresh_async(handle: int) -> None:
    """The former name of the background refresh (kept in the C ABI; tests call it)."""
    lib.cc_controller_refresh_async(handle)


def controller_log_impression(handle: int, card_id: bytes) -> None:
    lib.cc_controller_log_impression(handle, card_id)


def controller_log_click(handle: int, card_id: bytes) -> None:
    lib.cc_controller_log_click(handle, card_id)


def controller_log_dismissal(handle: int, card_id: bytes) -> None:
    lib.cc_controller_log_dismissal(handle, card_id)


def controller_log_feed_displayed(handle: int) -> None:
    lib.cc_controller_log_feed_displayed(handle)


def controller_log(handle: int, action: bytes, card_id: bytes | None) -> tuple[bool, str]:
    """``cc_controller_log``: (recorded, result JSON). A refusal (CC_E_REFUSED) is not raised:
    its result JSON says why, as the Swift and Python APIs return it."""
    out = c_void_p()
    recorded = True
    try:
        status = lib.cc_controller_log(ctypes.byref(out), handle, action, card_id)
        if status == -6:
            recorded = False
        elif status < 0:
            raise _error(status)
        text = _take_string(out)
    finally:
        if out.value:
            lib.cc_string_free(out)
    if text is None:
        raise error_for(-99, "cc_controller_log succeeded but returned no result")
    return recorded, text


def controller_change_user(handle: int, user_id: bytes) -> None:
    lib.cc_controller_change_user(handle, user_id)


def controller_user(handle: int) -> str:
    return _call_string_out(lib.cc_controller_user, handle)


def controller_flush_events(handle: int, timeout_seconds: float) -> str:
    return _call_string_out(lib.cc_controller_flush_events, handle, timeout_seconds)


def controller_pending_events(handle: int) -> int:
    out = c_int64()
    lib.cc_controller_pending_events(ctypes.byref(out), handle)
    return int(out.value)


def controller_pending_events_json(handle: int, limit: int) -> str:
    return _call_string_out(lib.cc_controller_pending_events_json, handle, limit)


def controller_diagnostics(handle: int) -> str:
    return _call_string_out(lib.cc_controller_diagnostics, handle)


def controller_current_update(handle: int) -> str:
    return _call_string_out(lib.cc_controller_current_update, handle)


# -- callbacks ------------------------------------------------------------------------------------


class CallbackRegistry:
    """The Python callables the library may call, by the integer key given to it as userdata."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[int, Callable[..., Any]] = {}
        self._next = 1  # never 0: userdata 0 is NULL and comes back as None
        #: free_userdata calls for a key that was not registered (or released already): a
        #: library that frees userdata twice shows up here (tests check it stays 0).
        self.stray_releases = 0

    def add(self, entry: Callable[..., Any]) -> int:
        with self._lock:
            key = self._next
            self._next += 1
            self._entries[key] = entry
            return key

    def get(self, key: int | None) -> Callable[..., Any] | None:
        if key is None:
            return None
        with self._lock:
            return self._entries.get(key)

    def release(self, key: int | None) -> bool:
        """Drops the entry (free_userdata); True when it was there."""
        if key is None:
            self.stray_releases += 1
            return False
        with self._lock:
            found = self._entries.pop(key, None) is not None
            if not found:
                self.stray_releases += 1
            return found

    def _after_fork_in_child(self) -> None:
        # A thread that held the lock at the fork does not exist in the child: a new lock, or
        # the child's first subscribe waits forever.
        self._lock = threading.Lock()

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


callbacks = CallbackRegistry()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=callbacks._after_fork_in_child)
CALLBACK_KEY_NONE = 0


#: Per thread: how many library callbacks it is inside. A blocking call made from inside one
#: runs on that very thread (`_waiting.interruptible`), which the library knows to be inside a
#: callback: what the call causes is delivered after the callback returns, as the header says.
#: From another thread it would be delivered at once, to a subscriber still running.
#: `in_callback` saves the count before a callback and puts it back after, inside one `try` (a
#: KeyboardInterrupt between an increment and its `try` left it raised for good); the
#: trampolines hold it as a default argument (at interpreter exit the globals may be gone).
CALLBACK_DEPTH = threading.local()


def inside_callback() -> bool:
    return getattr(CALLBACK_DEPTH, "n", 0) > 0


def in_callback(call: Callable[..., Any], *args: Any, _d: Any = CALLBACK_DEPTH) -> Any:
    """``call(*args)`` counted as inside a library callback on this thread (the trampolines'
    one way in). Reads no global: it runs at interpreter exit too."""
    before = getattr(_d, "n", 0)
    try:
        _d.n = before + 1
        return call(*args)
    finally:
        _d.n = before


def _update_trampoline(userdata: int | None, update_json: bytes | None,
                       _get: Callable[[int | None], Any] = callbacks.get, _in: Callable[..., Any] = in_callback) -> None:
    # Never lets an exception reach ctypes (it would print to stderr and return garbage to C);
    # the entry reports its own errors (see controller.py). Default arguments keep what this
    # needs alive at interpreter exit, when module globals may already be None.
    try:
        entry = _get(userdata)
        if entry is not None:
            _in(entry, update_json)
    except BaseException:  # noqa: BLE001 - nothing may propagate into C
        pass


def _transport_trampoline(userdata: int | None, request: Any, response: int | None,
                          _get: Callable[[int | None], Any] = callbacks.get, _in: Callable[..., Any] = in_callback) -> int:
    try:
        entry = _get(userdata)
        if entry is None:
            return -1
        return int(_in(entry, request.contents, response))
    except BaseException:  # noqa: BLE001 - nothing may propagate into C
        return -1


def _token_trampoline(userdata: int | None, user_id: bytes | None, response: int | None,
                      _get: Callable[[int | None], Any] = callbacks.get, _in: Callable[..., Any] = in_callback) -> int:
    try:
        entry = _get(userdata)
        if entry is None:
            return -1
        return int(_in(entry, user_id, response))
    except BaseException:  # noqa: BLE001 - nothing may propagate into C
        return -1


def _free_trampoline(userdata: int | None,
                     _release: Callable[[int | None], bool] = callbacks.release) -> None:
    try:
        _release(userdata)
    except BaseException:  # noqa: BLE001
        pass


def _refresh_done_trampoline(userdata: int | None, status: int, result_json: bytes | None,
                             _get: Callable[[int | None], Any] = callbacks.get, _in: Callable[..., Any] = in_callback) -> None:
    try:
        entry = _get(userdata)
        if entry is not None:
            _in(entry, status, result_json)
    except BaseException:  # noqa: BLE001 - nothing may propagate into C
        pass


UPDATE_TRAMPOLINE = UPDATE_FN(_update_trampoline)
REFRESH_DONE_TRAMPOLINE = REFRESH_DONE_FN(_refresh_done_trampoline)
NULL_REFRESH_DONE_FN = REFRESH_DONE_FN()
TRANSPORT_TRAMPOLINE = TRANSPORT_FN(_transport_trampoline)
TOKEN_TRAMPOLINE = TOKEN_FN(_token_trampoline)
FREE_TRAMPOLINE = FREE_FN(_free_trampoline)

# NULL function pointers (a CFUNCTYPE argument does not take None).
NULL_UPDATE_FN = UPDATE_FN()
NULL_TRANSPORT_FN = TRANSPORT_FN()
NULL_TOKEN_FN = TOKEN_FN()
NULL_FREE_FN = FREE_FN()


def controller_subscribe(handle: int, key: int) -> int:
    """Subscribes the registry entry ``key``; the library releases it (free_userdata) at
    unsubscribe, at close, or right away when this fails."""
    out = c_uint64()
    lib.cc_controller_subscribe(ctypes.byref(out), handle, UPDATE_TRAMPOLINE, key,
                                FREE_TRAMPOLINE)
    return int(out.value)


def controller_unsubscribe(handle: int, subscription: int) -> None:
    lib.cc_controller_unsubscribe(handle, subscription)


def controller_set_transport(handle: int, key: int | None) -> None:
    """Sets the registry entry ``key`` as the transport (None removes it)."""
    if key is None:
        lib.cc_controller_set_transport(handle, NULL_TRANSPORT_FN, None, NULL_FREE_FN)
    else:
        lib.cc_controller_set_transport(handle, TRANSPORT_TRAMPOLINE, key, FREE_TRAMPOLINE)


def transport_response_set(response: int | None, status: int, body: bytes,
                           retry_after_seconds: float) -> None:
    lib.cc_transport_response_set(response, status, body, len(body), retry_after_seconds)


def transport_response_set_etag(response: int | None, etag: bytes) -> None:
    lib.cc_transport_response_set_etag(response, etag)


def transport_response_fail(response: int | None, message: bytes) -> None:
    lib.cc_transport_response_fail(response, message)


def controller_set_token_provider(handle: int, key: int | None) -> None:
    """Sets the registry entry ``key`` as the token provider (None removes it); the library
    releases the key when the provider is replaced, at close, or at once when this fails."""
    function = require("cc_controller_set_token_provider")
    if key is None:
        function(handle, NULL_TOKEN_FN, None, NULL_FREE_FN)
    else:
        function(handle, TOKEN_TRAMPOLINE, key, FREE_TRAMPOLINE)


def token_response_set(response: int | None, token: bytes, expires_at: float) -> None:
    lib.cc_token_response_set(response, token, expires_at)


def token_response_fail(response: int | None, message: bytes) -> None:
    lib.cc_token_response_fail(response, message)


# -- hints, forgetting and exporting a user -------------------------------------------------------


def controller_hint(handle: int, user_id: bytes | None) -> None:
    require("cc_controller_hint")(handle, user_id)


def controller_forget_user(handle: int, user_id: bytes | None, pending: int,
                           timeout_seconds: float) -> str:
    return _call_string_out(require("cc_controller_forget_user"), handle, user_id, pending,
                            timeout_seconds)


def controller_export_user(handle: int, user_id: bytes | None) -> str:
    return _call_string_out(require("cc_controller_export_user"), handle, user_id)


# -- snapshots ------------------------------------------------------------------------------------


def controller_snapshot(handle: int, filter_json: bytes | None) -> int:
    out = handle_t()
    lib.cc_controller_snapshot(ctypes.byref(out), handle, filter_json)
    if not out.value:
        raise error_for(-99, "cc_controller_snapshot succeeded but returned no handle")
    return int(out.value)


def snapshot_count(snapshot: int) -> int:
    out = c_size_t()
    lib.cc_snapshot_count(ctypes.byref(out), snapshot)
    return int(out.value)


def _borrowed(out: c_char_p) -> str | None:
    raw = out.value
    return None if raw is None else raw.decode("utf-8")


def snapshot_string(snapshot: int, index: int, field: bytes) -> str | None:
    out = c_char_p()
    lib.cc_snapshot_string(ctypes.byref(out), snapshot, index, field)
    return _borrowed(out)


def snapshot_int(snapshot: int, index: int, field: bytes) -> int:
    out = c_int64()
    lib.cc_snapshot_int(ctypes.byref(out), snapshot, index, field)
    return int(out.value)


def snapshot_bool(snapshot: int, index: int, field: bytes) -> bool:
    out = c_int()
    lib.cc_snapshot_bool(ctypes.byref(out), snapshot, index, field)
    return bool(out.value)


def snapshot_double(snapshot: int, index: int, field: bytes) -> float | None:
    out, present = c_double(), c_int()
    lib.cc_snapshot_double(ctypes.byref(out), ctypes.byref(present), snapshot, index, field)
    return float(out.value) if present.value else None


def snapshot_extra(snapshot: int, index: int, key: bytes) -> str | None:
    out = c_char_p()
    lib.cc_snapshot_extra(ctypes.byref(out), snapshot, index, key)
    return _borrowed(out)


def snapshot_extras_count(snapshot: int, index: int) -> int:
    out = c_size_t()
    lib.cc_snapshot_extras_count(ctypes.byref(out), snapshot, index)
    return int(out.value)


def snapshot_extra_at(snapshot: int, index: int, extra_index: int) -> tuple[str, str]:
    key, value = c_char_p(), c_char_p()
    lib.cc_snapshot_extra_at(ctypes.byref(key), ctypes.byref(value), snapshot, index,
                             extra_index)
    return _borrowed(key) or "", _borrowed(value) or ""


def snapshot_close(snapshot: int) -> None:
    lib.cc_snapshot_close(snapshot)


# -- logging ----------------------------------------------------------------------------------------

#: A NULL log handler (removes the handler: silence).
NULL_LOG_FN = LOG_FN()


def set_log_handler(fn: Any, min_level: int) -> None:
    """Sets the process's log handler (a LOG_FN that lives as long as the process), or removes
    it (None). No userdata: the handler is a module-level function."""
    lib.cc_set_log_handler(NULL_LOG_FN if fn is None else fn, min_level, None, NULL_FREE_FN)
