"""The controller: :class:`ContentCards`, one user's cards.

This file is over 400 lines for one reason: it is one class, the public API's controller, whose
methods are the operations of docs/API.md (one each, with its docstring). What it is built on
has a module of its own: the configuration (``_config``), the arguments as the library takes
them (``_arguments``), the callbacks' entries (``_callbacks``), waiting for the library
(``_waiting``), closing at exit (``_at_exit``), the subscribers (:mod:`.subscriptions`:
``Subscription`` and ``UpdateStream``, importable from here too).
"""

from __future__ import annotations

import collections
import os
import threading
import weakref
from collections.abc import Iterable, Mapping

# json is imported by the functions that use it, on first use: importing it was a sixth of
# `import contentcards`, which should cost next to nothing (docs/PERFORMANCE.md).

from . import _ffi, _logs
from ._arguments import CardRef
from ._arguments import card_id as _card_id
from ._arguments import dumps as _dumps
from ._arguments import filter_json as _filter_json
from ._arguments import timeout as _timeout
from ._at_exit import open_controllers as _open_controllers
from ._config import CONFIG_KEYS
from ._config import config_json as _config_json
from ._config import unknown_keyword as _unknown_keyword
from .cards import Card, _lazy_cards, _offsets

# What only some calls need is imported by those calls, on first use: the values they return
# (.results), the callbacks' entries (._callbacks, with .tokens and .transport), waiting for
# the library (._waiting) and the subscribers (.subscriptions, whose names this module still
# exports: __getattr__ below). Importing them here was 2 ms of a program's first
# ContentCards(...), against 0.3 us the first time each call imports its name
# (docs/PERFORMANCE.md, "Python open and first feed").

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctypes import c_char_p
    from typing import Any, Callable, TypeVar

    from . import errors as _errors

    # typing_extensions: these came to typing after Python 3.9 (typeshed has it, for any version)
    from typing_extensions import Concatenate, Never, ParamSpec

    # The configuration's types, still readable here by type checkers ("X as X": re-exported).
    from ._config import (CallbackEndpoint as CallbackEndpoint, Endpoint as Endpoint,
        FileEndpoint as FileEndpoint, ImagesConfig as ImagesConfig, UrlEndpoint as UrlEndpoint)
    from .convert import ContentCardable, Registry
    from .results import (Counts, Diagnostics, FlushResult, ForgetReceipt, ImageStats, LogResult,
                          PendingEvents, SyncSummary, Update, UserExport)
    from .subscriptions import Subscriber as Subscriber, Subscription as Subscription
    from .subscriptions import UpdateStream as UpdateStream
    from .tokens import TokenProvider
    from .transport import TransportFunction

    P = ParamSpec("P")
    T = TypeVar("T")
else:
    class _LazyErrors:
        """``contentcards.errors``, imported when a name of it is first needed: when a call
        fails (an ``except`` clause's names are looked up only then) or raises. Importing its
        twenty classes with the controller was 0.25 ms of opening one and reading its feed,
        which raise nothing (docs/PERFORMANCE.md, "Python open and first feed"). After the
        first use the module itself takes this object's place."""

        def __getattr__(self, name: str) -> object:
            global _errors
            from . import errors
            _errors = errors
            return getattr(errors, name)

    _errors = _LazyErrors()

    def __getattr__(name: str) -> object:
        """Subscriber, Subscription and UpdateStream, from .subscriptions on first use."""
        if name in ("Subscriber", "Subscription", "UpdateStream"):
            from . import subscriptions
            return getattr(subscriptions, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["CONFIG_KEYS", "CardRef", "ContentCards", "Subscription", "Subscriber",
           "UpdateStream"]

#: How many subscriber exceptions a controller keeps in ``subscriber_errors``.
MAX_SUBSCRIBER_ERRORS = 100

# The badge's one-number calls, bound once. count(), unviewed_count() and unread_count() each
# call theirs inline, not through a helper they could share: a badge is polled, and the extra
# Python call cost a tenth of unviewed_count() (docs/PERFORMANCE.md).
_total_count = _ffi.lib.cc_controller_total_count
_unviewed_count = _ffi.lib.cc_controller_unviewed_count
_unread_count = _ffi.lib.cc_controller_unread_count

#: Whether the library gives the feed with its cards' offsets (it is in _ffi.NEWER).
_FEED_INDEXED = _ffi.has("cc_controller_feed_indexed")


class ContentCards:
    """A Content Cards controller: one user's cards, from a source, with a store and events.

    ``ContentCards(config_dict)`` takes the configuration as the library's JSON keys
    (``{"userId": ..., "source": {"file": ...}}``); keyword arguments set the same keys in
    snake_case (``user_id=``, ``storage_path=``, ``source=``, ``events=``, ``refresh_tokens=``,
    ``refresh_interval_seconds=``, ``timeout_seconds=``, ``known_class_types=``,
    ``max_payload_bytes=``, ``device_id=``, ``event_batch_size=``, ``event_batch_bytes=``,
    ``event_flush_interval_seconds=``, ``images=``, ``refresh_on_open_after_seconds=``,
    ``refresh_period_seconds=``, ``refresh_period_jitter=``, ``retry_base_seconds=``,
    ``retry_max_seconds=``) and override the dict. JSON text is accepted too. What each key
    means: the C header's cc_controller_open.

    Use it as a context manager (``with``, or ``async with`` in a coroutine), or call
    :meth:`close`. Every method after close raises
    :class:`~contentcards.errors.ClosedError`; a controller that is garbage collected, or still
    open when the interpreter exits, is closed quietly. All methods may be called from any
    thread; blocking calls (refresh, flush) release the GIL and never block reading the feed.

    Subscriber exceptions: an exception raised by a subscriber never reaches the library and
    never interrupts the call that caused the update. It is appended to
    :attr:`subscriber_errors` (the latest 100) and reported through ``sys.unraisablehook``
    (by default printed on stderr as "Exception ignored in contentcards subscriber: ..." with
    the traceback), as CPython does for exceptions in ``__del__``; the exceptions kept there
    hold their traceback as text (a note), not as frames, which would keep the controller
    alive in a cycle until the garbage collector closed it on whatever thread it ran. The
    subscriber stays subscribed. One exception is not reported: a ClosedError raised while this controller is
    closed (a subscriber running on another thread when the controller was closed).
    """

    # The ctypes function itself: __del__ may run at interpreter exit, when module globals are
    # already None (it is used only once the atexit hook has closed what it could).
    _close_handle = staticmethod(_ffi.lib.cc_controller_close)

    def __init__(self, config: Mapping[str, Any] | str | bytes | None = None, /, *,
                 user_id: str | None = None,
                 storage_path: str | os.PathLike[str] | None = None,
                 source: Endpoint | None = None,
                 events: Endpoint | None = None,
                 refresh_tokens: int | None = None,
                 refresh_interval_seconds: float | None = None,
                 timeout_seconds: float | None = None,
                 known_class_types: Iterable[str] | None = None,
                 max_payload_bytes: int | None = None,
                 device_id: str | None = None,
                 event_batch_size: int | None = None,
                 event_batch_bytes: int | None = None,
                 event_flush_interval_seconds: float | None = None,
                 images: ImagesConfig | None = None,
                 refresh_on_open_after_seconds: float | None = None,
                 refresh_period_seconds: float | None = None,
                 refresh_period_jitter: float | None = None,
                 retry_base_seconds: float | None = None,
                 retry_max_seconds: float | None = None,
                 **misspelt: Never) -> None:
        self._handle: int | None = None
        self._lock = threading.RLock()
        self._errors_lock = threading.Lock()
        #: The exception of the host transport's last failure (see _with_transport_cause).
        self._transport_error: BaseException | None = None
        #: The token provider's last failures, newest last: (its message, the exception); see
        #: _with_transport_cause. A few, never cleared by a call: two threads' calls each find
        #: their own provider failure by its message (one slot, cleared at each call's start
        #: and end, lost one thread's to the other, or gave it the other's).
        self._token_errors: collections.deque[tuple[str, BaseException]] = collections.deque(maxlen=16)
        #: The update streams to end at close (see updates()).
        self._streams: weakref.WeakSet[UpdateStream] = weakref.WeakSet()
        #: Exceptions raised by subscribers of this controller, oldest first (latest 100).
        self.subscriber_errors: list[BaseException] = []
        if misspelt:
            _unknown_keyword(misspelt)
        config_json = _config_json(config, {
            "user_id": user_id, "storage_path": storage_path, "source": source,
            "events": events, "refresh_tokens": refresh_tokens,
            "refresh_interval_seconds": refresh_interval_seconds,
            "timeout_seconds": timeout_seconds, "known_class_types": known_class_types,
            "max_payload_bytes": max_payload_bytes, "device_id": device_id,
            "event_batch_size": event_batch_size, "event_batch_bytes": event_batch_bytes,
            "event_flush_interval_seconds": event_flush_interval_seconds, "images": images,
            "refresh_on_open_after_seconds": refresh_on_open_after_seconds,
            "refresh_period_seconds": refresh_period_seconds,
            "refresh_period_jitter": refresh_period_jitter,
            "retry_base_seconds": retry_base_seconds, "retry_max_seconds": retry_max_seconds})
        _logs.follow_logger_level()
        self._handle = _ffi.controller_open(config_json)
        _open_controllers.add(self)

    # -- life cycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the controller: the store is closed and every subscriber removed. Idempotent."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is None:
            return
        try:
            self._close_handle(handle)
        except _errors.InvalidHandleError:
            pass
        for stream in list(self._streams):
            stream._end()

    @property
    def closed(self) -> bool:
        return self._handle is None

    def __enter__(self) -> ContentCards:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> ContentCards:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Closes the controller without blocking the event loop: the close (which waits for
        subscriber calls running on other threads) runs on a thread of its own, and it
        happens even when the awaiting task is cancelled meanwhile."""
        from ._waiting import on_daemon_thread
        await on_daemon_thread(self.close, "contentcards-close")

    def __del__(self) -> None:
        try:
            self.close()
        except BaseException:  # noqa: BLE001 - never from __del__, also at interpreter exit
            pass

    def __repr__(self) -> str:
        if self.closed:
            return "<ContentCards closed>"
        try:
            return f"<ContentCards user_id={self.user_id!r}>"
        except _errors.ContentCardsError:
            return "<ContentCards>"

    def _call(self, function: Callable[Concatenate[int, P], T], *args: P.args,
              **kwargs: P.kwargs) -> T:
        """Calls a ``_ffi`` function with the handle; ClosedError once closed, also when the
        close raced with the call (the library then reports an invalid handle)."""
        handle = self._handle
        if handle is None:
            raise _errors.ClosedError("the controller is closed")
        try:
            return function(handle, *args, **kwargs)
        except (_errors.InvalidHandleError, _errors.ClosedError) as exc:
            if self._handle is None:
                raise _errors.ClosedError("the controller was closed during the call") from exc
            raise

    def _call_keyed(self, key: int, function: Callable[..., T], *args: Any) -> T:
        """``_call`` for a function handed the callback ``key`` (its last argument): a call
        that never reaches the library (the controller closed meanwhile) releases the key
        here; one that does leaves it to the library, which releases it on a failure."""
        handle = self._handle
        if handle is None:
            _ffi.callbacks.release(key)
            raise _errors.ClosedError("the controller is closed")
        try:
            return function(handle, *args, key)
        except (_errors.InvalidHandleError, _errors.ClosedError) as exc:
            if self._handle is None:
                raise _errors.ClosedError("the controller was closed during the call") from exc
            raise

    def _callback_key(self, entry: Callable[..., Any]) -> int:
        """Keeps ``entry`` in ``_ffi.callbacks`` for the library to call: the key to hand it as
        userdata. ClosedError, and nothing kept, once the controller is closed."""
        key = _ffi.callbacks.add(entry)
        if self._handle is None:
            _ffi.callbacks.release(key)  # never handed to the library
            raise _errors.ClosedError("the controller is closed")
        return key

    def _record_subscriber_error(self, exc: BaseException) -> None:
        with self._errors_lock:
            self.subscriber_errors.append(exc)
            del self.subscriber_errors[:-MAX_SUBSCRIBER_ERRORS]

    # -- refresh ---------------------------------------------------------------------------

    def _with_transport_cause(self, function: Callable[Concatenate[int, P], T], *args: P.args,
                              **kwargs: P.kwargs) -> T:
        """Runs a call that may send requests (interruptible): a TransportError's
        ``__cause__`` is the host transport's exception, an AuthError's the token provider's
        (when the error's message names it: the provider may have failed for another call)."""
        from ._waiting import interruptible
        self._transport_error = None
        try:
            return interruptible(lambda: self._call(function, *args, **kwargs))
        except _errors.TransportError as exc:
            cause = self._transport_error
            if cause is not None and exc.__cause__ is None:
                exc.__cause__ = cause
            raise
        except _errors.AuthError as exc:
            if exc.__cause__ is None:
                # A copy first (made under the interpreter's lock): another thread may append.
                for text, failure in reversed(list(self._token_errors)):
                    if text in exc.message:
                        exc.__cause__ = failure
                        break
            raise
        finally:
            self._transport_error = None

    def refresh(self, timeout: float | None = None) -> SyncSummary:
        """Refreshes from the configured source, waiting at most ``timeout`` seconds (None: the
        configuration's timeoutSeconds). Raises on failure (the cached cards stay). Ctrl-C
        interrupts the wait at once (KeyboardInterrupt); the refresh then ends on its own."""
        from .results import SyncSummary
        text = self._with_transport_cause(_ffi.controller_refresh, _timeout(timeout))
        return SyncSummary.from_text(text)

    async def refresh_async(self, timeout: float | None = None) -> SyncSummary:
        """:meth:`refresh`, awaited without blocking the event loop or any thread: the library
        refreshes on a thread of its own (:meth:`refresh_in_background`) and its completion
        settles the awaited future. Cancelling the await (``asyncio.wait_for``, a task's
        ``cancel()``) returns at once, and ``asyncio.run`` does not wait for the refresh, which
        finishes on its own by its timeout (its outcome still reaches the subscribers)."""
        import asyncio   # imported by the caller already; `import contentcards` does not pay for it

        from ._waiting import settle_refresh

        loop = asyncio.get_running_loop()
        future: asyncio.Future[SyncSummary] = loop.create_future()

        def done(status: int, result_json: bytes | None) -> None:
            try:
                loop.call_soon_threadsafe(settle_refresh, future, status, result_json)
            except RuntimeError:
                pass  # the loop is closed: nobody is waiting any more

        seconds = _timeout(timeout)   # before the key: a bad timeout must not leave one kept
        key = self._callback_key(done)
        # On failure the library releases the key itself (free_userdata runs right away).
        self._call_keyed(key, _ffi.controller_refresh_in_background, seconds)
        if seconds <= 0:
            return await future
        try:
            return await asyncio.wait_for(future, seconds)
        except asyncio.TimeoutError:
            raise _errors.error_for(-9, f"the refresh did not finish within {timeout} s; its outcome "
                                "will reach the subscribers") from None

    def refresh_in_background(self, timeout: float | None = None) -> None:
        """Starts a refresh on a library thread and returns at once; the outcome reaches the
        subscribers (on that thread). The source is waited for at most ``timeout`` seconds
        (None: the configuration's timeoutSeconds). Refusals known at once (no source, rate
        limited) raise."""
        self._call(_ffi.controller_refresh_in_background, _timeout(timeout), None)

    def apply(self, payload: str | bytes | list[Any] | dict[str, Any]) -> SyncSummary:
        """Hands in cards the application got itself: a sync response object or a JSON array of
        server cards (text, bytes, or a decoded list/dict), merged exactly as a refresh. A str
        is read where it is, not copied: CPython's own UTF-8 of it (the str's memory for ASCII
        text; for other text made once and kept with the str while it lives, as orjson does)."""
        data: bytes | c_char_p
        if isinstance(payload, (list, dict)):
            data = _dumps(payload, "ParseError", "payload")
        elif isinstance(payload, (str, bytes, bytearray, memoryview)):
            # A str's own UTF-8, not a copy (the argument holds the str).
            data = _ffi.borrowed_utf8(payload, "payload")
        else:
            raise TypeError(f"payload must be str, bytes, list or dict, not {type(payload).__name__}")
        from .results import SyncSummary
        return SyncSummary.from_text(self._call(_ffi.controller_apply, data))

    # -- the feed --------------------------------------------------------------------------

    def cards(self, class_types: Iterable[str] | str | None = None) -> list[Card]:
        """The visible feed in feed order, optionally only some class types (a str is one).
        Control cards are included: log their impression, do not draw them. Each card reads
        its fields from its part of the feed's text when one is first read (see :class:`Card`)."""
        if _FEED_INDEXED:
            return _lazy_cards(*self._call(_ffi.controller_feed_indexed, _filter_json(class_types)))
        # A library older than this package: the cards' bounds found in the text.
        text = self._call(_ffi.controller_feed_bytes, _filter_json(class_types))
        offsets = _offsets(text)
        if offsets is None:  # the empty feed, "[]"
            import json
            return [Card._from_library(item) for item in json.loads(text)]
        return _lazy_cards(text, offsets)

    def cards_json(self, class_types: Iterable[str] | str | None = None) -> str:
        """The same cards as the library's boundary JSON text (what C's ``cc_controller_feed``
        returns), without building a :class:`Card` of each: for handing a feed on to a web
        view, a cache or another process. ``json.loads`` of it gives each card's
        :meth:`Card.to_json`."""
        return self._call(_ffi.controller_feed, _filter_json(class_types))

    def card(self, card: CardRef) -> Card:
        """One stored card by id, visible or not. Raises CardNotFoundError."""
        import json
        return Card._from_library(json.loads(
            self._call(_ffi.controller_card, _ffi.cstr(_card_id(card), "card id"))))

    def counts(self, class_types: Iterable[str] | str | None = None) -> Counts:
        """Badge counts (total, unviewed, unread) of the visible feed, optionally for some class
        types."""
        from .results import Counts
        return Counts(*self._call(_ffi.controller_all_counts, _filter_json(class_types)))

    def count(self, class_types: Iterable[str] | str | None = None) -> int:
        """The number of visible cards (control cards included)."""
        if class_types is None:
            # One call returning the number (a badge is polled): a negative status means an
            # error, which the full path below raises.
            n: int = _total_count(self._handle, None)
            if n >= 0:
                return n
        return self.counts(class_types).total

    def unviewed_count(self, class_types: Iterable[str] | str | None = None) -> int:
        """The unread badge: visible cards not viewed and not control."""
        if class_types is None:
            n: int = _unviewed_count(self._handle, None)
            if n >= 0:
                return n
        return self.counts(class_types).unviewed

    def unread_count(self, class_types: Iterable[str] | str | None = None) -> int:
        """The read-state badge: visible cards not marked read and not control."""
        if class_types is None:
            n: int = _unread_count(self._handle, None)
            if n >= 0:
                return n
        return int(self._call(_ffi.controller_unread_count, _filter_json(class_types)))

    def convert(self, registry: Registry,
                class_types: Iterable[str] | str | None = None) -> list[ContentCardable]:
        """The visible cards of the registry's class types (or of ``class_types``) as the
        application's objects, in feed order; the objects can log themselves through this
        controller."""
        if class_types is None:
            class_types = registry.class_types
            if not class_types:
                return []
        return registry.convert(self.cards(class_types), class_types, controller=self)

    # -- logging ---------------------------------------------------------------------------

    def _log(self, action: bytes, card: CardRef | None) -> LogResult:
        import json

        from .results import LogResult
        card_id = None if card is None else _ffi.cstr(_card_id(card), "card id")
        _recorded, text = self._call(_ffi.controller_log, action, card_id)
        return LogResult.from_json(json.loads(text))

    def log_impression(self, card: CardRef) -> LogResult:
        """Marks the card viewed and records an impression (a control impression for a control
        card). Raises CardNotFoundError for an unknown id. A stored card that is no longer
        visible (expired, dismissed) is logged like any other."""
        return self._log(b"impression", card)

    def log_click(self, card: CardRef) -> LogResult:
        """Records a click; ``recorded`` is False (with the ``reason``) when the card has no
        valid url."""
        return self._log(b"click", card)

    def log_dismissal(self, card: CardRef) -> LogResult:
        """Dismisses the card; ``recorded`` is False (with the ``reason``) when it is not
        dismissible or is dismissed already."""
        return self._log(b"dismissal", card)

    def log_feed_displayed(self) -> LogResult:
        """Records that the application showed a feed."""
        return self._log(b"feed_displayed", None)

    # -- read state ------------------------------------------------------------------------

    def mark_read(self, card: CardRef) -> LogResult:
        """Marks the card read (a ``read`` event when it was unread; ``LogResult(False,
        reason)`` when it already was). Raises CardNotFoundError for an unknown id."""
        return self._mark(card, True)

    def mark_unread(self, card: CardRef) -> LogResult:
        """Marks the card unread (an ``unread`` event when it was read)."""
        return self._mark(card, False)

    def _mark(self, card: CardRef, read: bool) -> LogResult:
        # cc_controller_log's read actions give the whole result, the event's id included.
        return self._log(b"read" if read else b"unread", card)

    def mark_all_read(self, class_types: Iterable[str] | str | None = None) -> int:
        """Marks every visible card (of ``class_types``) read; returns how many changed."""
        return int(self._call(_ffi.controller_mark_all_read, _filter_json(class_types)))

    # -- users, events, diagnostics --------------------------------------------------------

    def change_user(self, user_id: str) -> None:
        """Switches to another user's cards, state and cursors. User ids are compared byte for
        byte ("é" as one code point and as "e" + U+0301 are two users); a NUL raises
        ValueError. A refresh still running for the previous user is discarded (its caller
        gets WrongUserError)."""
        self._call(_ffi.controller_change_user, _ffi.cstr(user_id, "user id"))

    @property
    def user_id(self) -> str:
        """The current user id."""
        return self._call(_ffi.controller_user)

    def forget_user(self, user_id: str | None = None, pending: str = "flush",
                    timeout: float | None = None) -> ForgetReceipt:
        """Removes everything stored for ``user_id`` (None: the current user): cards,
        dismissals, read state, sync state and ETag, pending events, and the user's image
        cache, leaving no recoverable bytes in the store or its WAL (logout,
        an erasure request). ``pending="flush"`` delivers the user's pending events first,
        waiting at most ``timeout`` seconds (None: the configuration's timeoutSeconds); when
        they cannot be delivered nothing is removed and the delivery's error is raised.
        ``pending="discard"`` removes them undelivered. A batch of the user's events already
        being delivered is waited for first, within ``timeout`` (past it RequestTimeoutError,
        nothing removed; from inside the events transport, RefusedError). Forgetting the
        current user leaves the controller open for that user with nothing stored (subscribers
        get an update). Returns what was removed."""
        import json

        from .results import ForgetReceipt
        modes = {"flush": 0, "discard": 1}
        if not isinstance(pending, str) or pending not in modes:
            raise ValueError(f'pending must be "flush" or "discard", not {pending!r}')
        user = None if user_id is None else _ffi.cstr(user_id, "user id")
        text = self._with_transport_cause(_ffi.controller_forget_user, user, modes[pending],
                                          _timeout(timeout))
        return ForgetReceipt.from_json(json.loads(text))

    def export_user(self, user_id: str | None = None) -> UserExport:
        """Everything stored for ``user_id`` (None: the current user), for an access request:
        every stored card with its local state, the dismissals, the sync state, the pending
        events and the cached images (a user with nothing stored gives empty lists).
        ``to_json()`` gives the document, the same in every runtime."""
        import json

        from .results import UserExport
        user = None if user_id is None else _ffi.cstr(user_id, "user id")
        return UserExport.from_json(json.loads(self._call(_ffi.controller_export_user, user)))

    def flush_events(self, timeout: float | None = None) -> FlushResult:
        """Delivers every pending event now, waiting at most ``timeout`` seconds (None: the
        configuration's timeoutSeconds). Raises on failure (the events stay pending)."""
        import json

        from .results import FlushResult
        text = self._with_transport_cause(_ffi.controller_flush_events, _timeout(timeout))
        return FlushResult.from_json(json.loads(text))

    def wait_for_images(self, timeout: float | None = None) -> ImageStats:
        """Waits for the image prefetches queued by refreshes (configuration ``images``), at
        most ``timeout`` seconds (None: 4 x timeoutSeconds); what the image cache did.
        Raises NoSourceError when no image cache is configured, and RefusedError when called
        from inside the prefetch (its image transport call, or a log hook it called): it
        would wait for itself."""
        import json

        from .results import ImageStats
        text = self._call(_ffi.controller_wait_images, _timeout(timeout))
        return ImageStats.from_json(json.loads(text))

    async def flush_events_async(self, timeout: float | None = None) -> FlushResult:
        """:meth:`flush_events`, awaited: the flush runs on a daemon thread of its own, so
        cancelling the await returns at once and ``asyncio.run`` does not wait for it (the
        flush ends by its timeout; undelivered events stay pending)."""
        from ._waiting import on_daemon_thread
        seconds = _timeout(timeout)
        return await on_daemon_thread(lambda: self.flush_events(seconds or None),
                                       "contentcards-flush")

    def pending_events(self) -> int:
        """The number of events waiting in the store's outbox (every user's)."""
        return self._call(_ffi.controller_pending_events)

    def list_pending_events(self, limit: int | None = None) -> PendingEvents:
        """The events waiting in the store's outbox (every user's), oldest first, at most
        ``limit`` of them (None or 0: all, as ``0`` is in C and Swift), with the total pending
        and the failed delivery attempts in a row (see :class:`~contentcards.PendingEvents`).
        A bool is refused (``True`` would be one event)."""
        import json

        from .results import PendingEvents
        if isinstance(limit, bool):
            raise TypeError("limit must be an int or None, not bool")
        if limit is not None and (not isinstance(limit, int) or limit < 0 or limit >= 2**63):
            # (ctypes would pass 2**64 to C as 0, which means all.)
            raise ValueError(f"limit must be a whole number >= 0 (below 2**63) or None, not {limit!r}")
        text = self._call(_ffi.controller_pending_events_json, limit or 0)
        return PendingEvents.from_json(json.loads(text))

    def diagnostics(self) -> Diagnostics:
        """Diagnostics: last refresh, last delivery, last error, rate limit, left-out cards...
        as a :class:`~contentcards.Diagnostics` with snake_case fields."""
        import json

        from .results import Diagnostics
        return Diagnostics.from_json(json.loads(self._call(_ffi.controller_diagnostics)))

    def current_update(self) -> Update:
        """The state as an Update (reason ``UpdateReason.CURRENT``, the counts of the visible
        feed now): what a new subscriber draws before the first change reaches it. It is
        numbered as updates are (``sequence``): an update with a smaller one that arrives
        after it describes an earlier state."""
        import json

        from .results import Update, UpdateReason
        if _ffi.has("cc_controller_current_update"):
            return Update.from_json(json.loads(self._call(_ffi.controller_current_update)))
        # A library from before the numbering: the counts alone, not numbered (sequence 0).
        counts = self.counts()
        return Update(UpdateReason.CURRENT, True, None, None, counts, None,
                      {"reason": "current", "ok": True, "error": None, "cardId": None,
                       "counts": counts.to_json(), "sync": None, "origin": "store", "sequence": 0})

    # -- callbacks -------------------------------------------------------------------------

    def subscribe(self, fn: Subscriber) -> Subscription:
        """Calls ``fn(update)`` after every refresh, apply, user change, forget of the current
        user, logged impression, click or dismissal, read-state change and card expiry, on the
        thread that made the change (a library thread for
        :meth:`refresh_in_background`; a helper thread for :meth:`refresh` called on the main
        thread). An update caused from inside a subscriber is delivered after it returns.
        See the class docstring for exceptions."""
        if not callable(fn):
            raise TypeError(f"subscriber must be callable, not {type(fn).__name__}")
        from ._callbacks import update_entry
        from .subscriptions import Subscription
        key = self._callback_key(update_entry(weakref.ref(self), fn))
        # On failure the library releases the key itself (free_userdata runs right away).
        subscription_id = self._call_keyed(key, _ffi.controller_subscribe)
        return Subscription(self, subscription_id, key, fn)

    def updates(self, *, current: bool = False, max_queued: int = 100) -> UpdateStream:
        """The updates subscribers receive, as an async iterator for the running event loop::

            async with cc.updates(current=True) as stream:
                async for update in stream:
                    badge.draw(update.counts.unviewed)

        With ``current`` the first update is :meth:`current_update`. The newest ``max_queued``
        updates a slow reader has not taken are kept (older ones are dropped). The stream ends
        when the controller closes or the stream is closed (``aclose()``, or leaving ``async
        with``). Must be called with an event loop running."""
        from .subscriptions import UpdateStream
        stream = UpdateStream(self, max_queued)
        stream._subscription = self.subscribe(stream._from_library)
        self._streams.add(stream)
        if current:
            # After subscribing: a change from now on is queued behind this state.
            stream._push(self.current_update())
        return stream

    def set_transport(self, fn: TransportFunction | None) -> None:
        """Sets the host transport used where the configuration says ``{"callback": true}``:
        ``fn(TransportRequest) -> TransportResponse``, or raise for a failure to reach the
        server. None removes it. See :mod:`contentcards.transport`."""
        if fn is None:
            self._call(_ffi.controller_set_transport, None)
            return
        if not callable(fn):
            raise TypeError(f"transport must be callable, not {type(fn).__name__}")
        from ._callbacks import transport_entry
        key = self._callback_key(transport_entry(fn, weakref.ref(self)))
        self._call_keyed(key, _ffi.controller_set_transport)

    def set_token_provider(self, fn: TokenProvider | None) -> None:
        """Sets the per-user token provider: ``fn(user_id)`` returns the user's token (a str,
        a ``(token, expires_at)`` tuple or an :class:`~contentcards.AuthToken`), sent as
        ``Authorization: Bearer`` on that user's requests; it is asked again before the expiry
        and once after a 401. An exception or an answer that is not a token fails the request
        with :class:`~contentcards.AuthError` (events stay pending). None removes it (requests
        go without a token). Replaces an earlier provider, whose tokens are forgotten. See
        :mod:`contentcards.tokens`."""
        if fn is None:
            self._call(_ffi.controller_set_token_provider, None)
            return
        if not callable(fn):
            raise TypeError(f"token provider must be callable, not {type(fn).__name__}")
        _ffi.require("cc_controller_set_token_provider")  # before the key is handed out
        from ._callbacks import token_entry
        key = self._callback_key(token_entry(fn, weakref.ref(self)))
        # On failure the library releases the key itself (free_userdata runs right away).
        self._call_keyed(key, _ffi.controller_set_token_provider)

    def hint(self, user_id: str | None = None) -> None:
        """Hands in a hint that ``user_id``'s cards (None: the current user's) may have
        changed: a push notification, the application's own socket. The controller answers it
        with a conditional refresh in the background, coalesced (however many hints, at most
        one refresh running and one queued); a hint for another user is ignored. Returns at
        once; the outcome reaches the subscribers. With ``source={"url": ..., "hints": True}``
        the controller receives hints from the server itself."""
        user = None if user_id is None else _ffi.cstr(user_id, "user id")
        self._call(_ffi.controller_hint, user)
