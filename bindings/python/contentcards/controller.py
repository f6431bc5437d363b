"""The controller: :class:`ContentCards`, one user's cards, and :class:`Subscription`."""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Iterable, Mapping

# json is imported by the functions that use it, on first use: importing it was a sixth of
# `import contentcards`, which should cost next to nothing (docs/PERFORMANCE.md).

from . import _ffi, _logs
from .cards import Card, _lazy_cards
from .convert import ContentCardable, Registry
from .errors import (CardNotFoundError, ClosedError, ConfigError, ContentCardsError,
                     InvalidHandleError, ParseError, TransportError, error_for)
from .results import (Counts, Diagnostics, FlushResult, ImageStats, LogResult, PendingEvents,
                      SyncSummary, Update, UpdateReason)
from .transport import TransportRequest, TransportResponse

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    from collections.abc import AsyncIterator
    from typing import Any, Callable, Literal, TypedDict, TypeVar

    # typing_extensions: these came to typing after Python 3.9 (typeshed has it, for any version)
    from typing_extensions import Concatenate, Never, ParamSpec, TypeAlias

    from .transport import TransportFunction

    P = ParamSpec("P")
    T = TypeVar("T")

    class FileEndpoint(TypedDict):
        """``{"file": PATH}``: a local file (the source's feed, or the events' JSON lines)."""

        file: str | os.PathLike[str]

    class _UrlEndpointBase(TypedDict):
        url: str

    class UrlEndpoint(_UrlEndpointBase, total=False):
        """``{"url": BASE, "apiKey": KEY}``: a server."""

        apiKey: str

    class CallbackEndpoint(TypedDict):
        """``{"callback": True}``: the host transport (:meth:`ContentCards.set_transport`)."""

        callback: Literal[True]

    class ImagesConfig(TypedDict, total=False):
        """The image cache (the "images" key): its limits."""

        maxBytes: int
        maxCount: int
        maxImageBytes: int

    #: Where cards come from, or where events go (the "source" and "events" keys).
    Endpoint: TypeAlias = "FileEndpoint | UrlEndpoint | CallbackEndpoint"

__all__ = ["CONFIG_KEYS", "CardRef", "ContentCards", "Subscription", "Subscriber",
           "UpdateStream"]

#: Keyword arguments of ContentCards() and the configuration keys they set.
CONFIG_KEYS: dict[str, str] = {
    "user_id": "userId",
    "storage_path": "storagePath",
    "source": "source",
    "events": "events",
    "refresh_tokens": "refreshTokens",
    "refresh_interval_seconds": "refreshIntervalSeconds",
    "timeout_seconds": "timeoutSeconds",
    "known_class_types": "knownClassTypes",
    "max_payload_bytes": "maxPayloadBytes",
    "device_id": "deviceId",
    "event_batch_size": "eventBatchSize",
    "event_batch_bytes": "eventBatchBytes",
    "event_flush_interval_seconds": "eventFlushIntervalSeconds",
    "images": "images",
    "refresh_on_open_after_seconds": "refreshOnOpenAfterSeconds",
    "refresh_period_seconds": "refreshPeriodSeconds",
    "refresh_period_jitter": "refreshPeriodJitter",
    "retry_base_seconds": "retryBaseSeconds",
    "retry_max_seconds": "retryMaxSeconds",
}

#: How many subscriber exceptions a controller keeps in ``subscriber_errors``.
MAX_SUBSCRIBER_ERRORS = 100

#: A card given by id, as a Card, or as an object with a ``card_id`` (a ContentCardable).
CardRef: TypeAlias = "str | Card | ContentCardable"
#: A subscriber: called with each Update.
Subscriber: TypeAlias = "Callable[[Update], object]"


def _json_default(value: Any) -> Any:
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"a value of type {type(value).__name__} is not JSON serializable")


def _dumps(value: Any, error: type[ContentCardsError], what: str) -> bytes:
    import json
    try:
        text = json.dumps(value, default=_json_default, allow_nan=False, ensure_ascii=False)
    except ValueError as exc:  # NaN, infinity, a circular reference
        raise error(f"{what} cannot be JSON: {exc}") from exc
    except RecursionError as exc:
        raise error(f"{what} is nested too deeply") from exc
    return _ffi.cstr(text, what)


def _unknown_keyword(options: Mapping[str, object]) -> None:
    """A misspelt keyword argument: a TypeError naming the closest one (mypy rejects it too:
    the catch-all is typed Never)."""
    import difflib   # only for a misspelt key: an import should not pay for it

    name = next(iter(options))
    close = difflib.get_close_matches(name, CONFIG_KEYS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise TypeError(f"ContentCards() got an unexpected keyword argument {name!r}{hint}")


def _config_json(config: Mapping[str, Any] | str | bytes | None,
                 options: dict[str, Any]) -> bytes | None:
    options = {name: value for name, value in options.items() if value is not None}
    if isinstance(config, (str, bytes)):
        if options:
            raise TypeError("ContentCards(): keyword options need a dict configuration, "
                            "not JSON text")
        return _ffi.cstr(config, "configuration")
    if config is not None and not isinstance(config, Mapping):
        raise TypeError(f"configuration must be a dict, not {type(config).__name__}")
    if config is None and not options:
        return None
    merged: dict[str, Any] = dict(config or {})
    for name, value in options.items():
        if name == "known_class_types" and value is not None and not isinstance(value, str):
            value = list(value)
        merged[CONFIG_KEYS[name]] = value
    return _dumps(merged, ConfigError, "configuration")


# The badge's one-number calls, bound once (see count() and unviewed_count()).
_total_count = _ffi.lib.cc_controller_total_count
_unviewed_count = _ffi.lib.cc_controller_unviewed_count
_unread_count = _ffi.lib.cc_controller_unread_count


def _filter_json(class_types: Iterable[str] | str | None) -> bytes | None:
    """A class-type filter: None for every card; a str is one class type."""
    if class_types is None:
        return None
    names = [class_types] if isinstance(class_types, str) else list(class_types)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"class types must be str, not {type(name).__name__}")
    return _dumps(names, ParseError, "class-type filter")


def _card_id(card: CardRef) -> str:
    if isinstance(card, str):
        return card
    if isinstance(card, Card):
        return card.id
    card_id = getattr(card, "card_id", None)
    if isinstance(card_id, str):
        return card_id
    raise TypeError(f"expected a card id (str), a Card or an object with a card_id, "
                    f"not {type(card).__name__}")


def _timeout(timeout: float | None) -> float:
    if timeout is None:
        return 0.0
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
    return float(timeout)


class _UnraisableArgs:
    """What ``sys.unraisablehook`` receives (the fields of CPython's UnraisableHookArgs)."""

    __slots__ = ("exc_type", "exc_value", "exc_traceback", "err_msg", "object")

    def __init__(self, exc_type: type[BaseException], exc_value: BaseException,
                 exc_traceback: Any, err_msg: str, obj: object) -> None:
        self.exc_type, self.exc_value, self.exc_traceback = exc_type, exc_value, exc_traceback
        self.err_msg, self.object = err_msg, obj


def _report_unraisable(exc: BaseException, message: str, obj: object) -> None:
    """Reports an exception that cannot propagate, as CPython does for ``__del__``: through
    ``sys.unraisablehook`` when the application (or pytest) set one, else on stderr."""
    try:
        hook = sys.unraisablehook
        if hook is not sys.__unraisablehook__:
            try:
                hook(_UnraisableArgs(type(exc), exc, exc.__traceback__, message, obj))  # type: ignore[arg-type]
                return
            except Exception:  # noqa: BLE001 - a hook that wants the real type: print below
                pass
        stream = sys.stderr
        if stream is not None:
            stream.write(f"{message}: {obj!r}\n")
            import traceback

            traceback.print_exception(type(exc), exc, exc.__traceback__, file=stream)
    except BaseException:  # noqa: BLE001 - reporting must never fail
        pass


#: How long the main thread waits at a time for a blocking call running in a worker thread:
#: between two waits, signal handlers run (Ctrl-C raises KeyboardInterrupt at once).
_WAIT_SLICE = 0.05


def _interruptible(call: Callable[[], T]) -> T:
    """Runs a blocking library call so that Ctrl-C interrupts the wait for it.

    Python runs signal handlers only on the main thread, between bytecodes; a ctypes call that
    blocks (a refresh waiting up to its timeout) would delay KeyboardInterrupt until it
    returned. On the main thread the call runs in a worker thread and the main thread waits
    for it in short slices; a KeyboardInterrupt (or any exception from a signal handler)
    propagates at once, and the abandoned call finishes on its own by its timeout (its outcome
    still reaches the subscribers). On any other thread the call runs directly.
    """
    if threading.current_thread() is not threading.main_thread():
        return call()
    outcome: list[Any] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome.append((False, exc))
        finally:
            done.set()

    worker = threading.Thread(target=run, name="contentcards-call", daemon=True)
    worker.start()
    while not done.wait(_WAIT_SLICE):
        pass
    ok, value = outcome[0]
    if ok:
        return value  # type: ignore[no-any-return]
    raise value


def _update_entry(controller: weakref.ref[ContentCards], fn: Subscriber) -> Callable[[bytes | None], None]:
    """The callable the update trampoline calls for one subscription."""
    report = _report_unraisable
    closed_error = ClosedError

    def entry(update_json: bytes | None) -> None:
        import json
        try:
            update = Update.from_json(json.loads(update_json or b"null"))
            fn(update)
        except BaseException as exc:  # noqa: BLE001 - never into C; reported instead
            owner = controller()
            if isinstance(exc, closed_error) and (owner is None or owner.closed):
                return  # the subscriber ran while its controller was being closed: not a bug
            if owner is not None:
                owner._record_subscriber_error(exc)
            report(exc, "Exception ignored in contentcards subscriber", fn)

    return entry


def _transport_entry(fn: TransportFunction,
                     controller: weakref.ref[ContentCards]) -> Callable[[Any, int | None], int]:
    """The callable the transport trampoline calls: runs ``fn`` and answers the library. A
    failure is kept on the controller, to become the TransportError's ``__cause__`` (the
    callback runs on a library thread for a refresh, so a thread-local would not do)."""
    response_set = _ffi.transport_response_set
    response_set_etag = _ffi.transport_response_set_etag
    response_fail = _ffi.transport_response_fail

    def entry(request: Any, response: int | None) -> int:
        try:
            answer = fn(TransportRequest._from_struct(request))
            if not isinstance(answer, TransportResponse):
                raise TypeError(f"the transport returned {type(answer).__name__}, "
                                "expected a TransportResponse")
            status, body, retry_after = answer._encoded()
            response_set(response, status, body, retry_after)
            if answer.etag is not None:
                if not isinstance(answer.etag, str) or "\0" in answer.etag:
                    raise TypeError("TransportResponse.etag must be a str without NUL characters")
                response_set_etag(response, answer.etag.encode("utf-8"))
            return 0
        except BaseException as exc:  # noqa: BLE001 - a transport failure for the library
            owner = controller()
            if owner is not None:
                owner._transport_error = exc
            text = f"{type(exc).__name__}: {exc}".replace("\0", " ")
            try:
                response_fail(response, text.encode("utf-8", "replace"))
            except BaseException:  # noqa: BLE001
                pass
            return -1

    return entry


_open_controllers: weakref.WeakSet[ContentCards] = weakref.WeakSet()


def _close_all_at_exit() -> None:
    """Closes the controllers still open when the interpreter exits, before module teardown,
    so no library thread calls back into a finalizing interpreter. (Registered with atexit by
    the package's ``__init__``, at import.)"""
    for controller in list(_open_controllers):
        try:
            controller.close()
        except BaseException:  # noqa: BLE001
            pass


class Subscription:
    """A subscriber registered with :meth:`ContentCards.subscribe`.

    :meth:`cancel` (idempotent) unsubscribes at once: when it returns the subscriber is not
    called again. As a context manager it cancels on exit. Dropping the Subscription object does
    not unsubscribe; closing the controller does.
    """

    __slots__ = ("_controller", "_cancelled", "_key", "_lock", "callback", "id")

    def __init__(self, controller: ContentCards, subscription_id: int, key: int,
                 callback: Subscriber) -> None:
        self._controller = controller
        self.id = subscription_id
        self._key = key
        self.callback = callback
        self._cancelled = False
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """True until cancelled or until the controller is closed."""
        return not self._cancelled and not self._controller.closed and self._key in _ffi.callbacks

    def cancel(self) -> None:
        """Unsubscribes. Harmless when already cancelled or the controller is closed. May be
        called from inside the subscriber itself."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
        try:
            self._controller._call(_ffi.controller_unsubscribe, self.id)
        except (ClosedError, CardNotFoundError):
            pass  # closed (every subscriber is gone) or already unsubscribed

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cancel()

    def __repr__(self) -> str:
        state = "active" if self.active else "cancelled"
        return f"<Subscription {self.id} {state} {self.callback!r}>"


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
    the traceback), as CPython does for exceptions in ``__del__``. The subscriber stays
    subscribed. One exception is not reported: a ClosedError raised while this controller is
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
        except InvalidHandleError:
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
        import asyncio

        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()

        def run() -> None:
            outcome: tuple[bool, Any]
            try:
                self.close()
                outcome = (True, None)
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
                outcome = (False, exc)
            try:
                loop.call_soon_threadsafe(_settle, future, outcome)
            except RuntimeError:
                pass  # the loop is closed: nobody is waiting any more

        threading.Thread(target=run, name="contentcards-close", daemon=True).start()
        await future

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
        except ContentCardsError:
            return "<ContentCards>"

    def _call(self, function: Callable[Concatenate[int, P], T], *args: P.args,
              **kwargs: P.kwargs) -> T:
        """Calls a ``_ffi`` function with the handle; ClosedError once closed, also when the
        close raced with the call (the library then reports an invalid handle)."""
        handle = self._handle
        if handle is None:
            raise ClosedError("the controller is closed")
        try:
            return function(handle, *args, **kwargs)
        except (InvalidHandleError, ClosedError) as exc:
            if self._handle is None:
                raise ClosedError("the controller was closed during the call") from exc
            raise

    def _record_subscriber_error(self, exc: BaseException) -> None:
        with self._errors_lock:
            self.subscriber_errors.append(exc)
            del self.subscriber_errors[:-MAX_SUBSCRIBER_ERRORS]

    # -- refresh ---------------------------------------------------------------------------

    def _with_transport_cause(self, function: Callable[Concatenate[int, P], T], *args: P.args,
                              **kwargs: P.kwargs) -> T:
        self._transport_error = None
        try:
            return _interruptible(lambda: self._call(function, *args, **kwargs))
        except TransportError as exc:
            cause = self._transport_error
            if cause is not None and exc.__cause__ is None:
                exc.__cause__ = cause
            raise
        finally:
            self._transport_error = None

    def refresh(self, timeout: float | None = None) -> SyncSummary:
        """Refreshes from the configured source, waiting at most ``timeout`` seconds (None: the
        configuration's timeoutSeconds). Raises on failure (the cached cards stay). Ctrl-C
        interrupts the wait at once (KeyboardInterrupt); the refresh then ends on its own."""
        text = self._with_transport_cause(_ffi.controller_refresh, _timeout(timeout))
        return SyncSummary.from_text(text)

    async def refresh_async(self, timeout: float | None = None) -> SyncSummary:
        """:meth:`refresh`, awaited without blocking the event loop or any thread: the library
        refreshes on a thread of its own (:meth:`refresh_in_background`) and its completion
        settles the awaited future. Cancelling the await (``asyncio.wait_for``, a task's
        ``cancel()``) returns at once, and ``asyncio.run`` does not wait for the refresh, which
        finishes on its own by its timeout (its outcome still reaches the subscribers)."""
        import asyncio   # imported by the caller already; `import contentcards` does not pay for it

        loop = asyncio.get_running_loop()
        future: asyncio.Future[SyncSummary] = loop.create_future()

        def done(status: int, result_json: bytes | None) -> None:
            try:
                loop.call_soon_threadsafe(_settle_refresh, future, status, result_json)
            except RuntimeError:
                pass  # the loop is closed: nobody is waiting any more

        key = _ffi.callbacks.add(done)
        if self._handle is None:
            _ffi.callbacks.release(key)
            raise ClosedError("the controller is closed")
        # On failure the library releases the key itself (free_userdata runs right away).
        seconds = _timeout(timeout)
        self._call(_ffi.controller_refresh_in_background, seconds, key)
        if seconds <= 0:
            return await future
        try:
            return await asyncio.wait_for(future, seconds)
        except asyncio.TimeoutError:
            raise error_for(-9, f"the refresh did not finish within {timeout} s; its outcome "
                                "will reach the subscribers") from None

    def refresh_in_background(self, timeout: float | None = None) -> None:
        """Starts a refresh on a library thread and returns at once; the outcome reaches the
        subscribers (on that thread). The source is waited for at most ``timeout`` seconds
        (None: the configuration's timeoutSeconds). Refusals known at once (no source, rate
        limited) raise."""
        self._call(_ffi.controller_refresh_in_background, _timeout(timeout), None)

    def apply(self, payload: str | bytes | list[Any] | dict[str, Any]) -> SyncSummary:
        """Hands in cards the application got itself: a sync response object or a JSON array of
        server cards (text, bytes, or a decoded list/dict), merged exactly as a refresh."""
        if isinstance(payload, (list, dict)):
            data = _dumps(payload, ParseError, "payload")
        elif isinstance(payload, (str, bytes, bytearray, memoryview)):
            data = _ffi.cstr(payload, "payload")
        else:
            raise TypeError(f"payload must be str, bytes, list or dict, not {type(payload).__name__}")
        return SyncSummary.from_text(self._call(_ffi.controller_apply, data))

    # -- the feed --------------------------------------------------------------------------

    def cards(self, class_types: Iterable[str] | str | None = None) -> list[Card]:
        """The visible feed in feed order, optionally only some class types (a str is one).
        Control cards are included: log their impression, do not draw them. Each card reads
        its fields from its part of the feed's text when one is first read (see :class:`Card`)."""
        text = self._call(_ffi.controller_feed_bytes, _filter_json(class_types))
        cards = _lazy_cards(text)
        if cards is None:  # the empty feed, "[]"
            import json
            cards = [Card._from_library(item) for item in json.loads(text)]
        return cards

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
        """Switches to another user's cards, state and cursors."""
        self._call(_ffi.controller_change_user, _ffi.cstr(user_id, "user id"))

    @property
    def user_id(self) -> str:
        """The current user id."""
        return self._call(_ffi.controller_user)

    def flush_events(self, timeout: float | None = None) -> FlushResult:
        """Delivers every pending event now, waiting at most ``timeout`` seconds (None: the
        configuration's timeoutSeconds). Raises on failure (the events stay pending)."""
        import json
        text = self._with_transport_cause(_ffi.controller_flush_events, _timeout(timeout))
        return FlushResult.from_json(json.loads(text))

    def wait_for_images(self, timeout: float | None = None) -> ImageStats:
        """Waits for the image prefetches queued by refreshes (configuration ``images``), at
        most ``timeout`` seconds (None: 4 x timeoutSeconds); what the image cache did.
        Raises NoSourceError when no image cache is configured."""
        import json
        text = self._call(_ffi.controller_wait_images, _timeout(timeout))
        return ImageStats.from_json(json.loads(text))

    async def flush_events_async(self, timeout: float | None = None) -> FlushResult:
        """:meth:`flush_events`, awaited: the flush runs on a daemon thread of its own, so
        cancelling the await returns at once and ``asyncio.run`` does not wait for it (the
        flush ends by its timeout; undelivered events stay pending)."""
        import asyncio

        loop = asyncio.get_running_loop()
        future: asyncio.Future[FlushResult] = loop.create_future()
        seconds = _timeout(timeout)

        def run() -> None:
            outcome: tuple[bool, Any]
            try:
                outcome = (True, self.flush_events(seconds or None))
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
                outcome = (False, exc)
            try:
                loop.call_soon_threadsafe(_settle, future, outcome)
            except RuntimeError:
                pass  # the loop is closed: nobody is waiting any more

        threading.Thread(target=run, name="contentcards-flush", daemon=True).start()
        return await future

    def pending_events(self) -> int:
        """The number of events waiting in the store's outbox (every user's)."""
        return self._call(_ffi.controller_pending_events)

    def list_pending_events(self, limit: int | None = None) -> PendingEvents:
        """The events waiting in the store's outbox (every user's), oldest first, at most
        ``limit`` of them (None: all), with the total pending and the failed delivery
        attempts in a row (see :class:`~contentcards.PendingEvents`)."""
        import json
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise ValueError(f"limit must be a whole number >= 0 or None, not {limit!r}")
        text = self._call(_ffi.controller_pending_events_json, limit or 0)
        return PendingEvents.from_json(json.loads(text))

    def diagnostics(self) -> Diagnostics:
        """Diagnostics: last refresh, last delivery, last error, rate limit, left-out cards...
        as a :class:`~contentcards.Diagnostics` with snake_case fields."""
        import json
        return Diagnostics.from_json(json.loads(self._call(_ffi.controller_diagnostics)))

    def current_update(self) -> Update:
        """The state as an Update (reason ``UpdateReason.CURRENT``, the counts of the visible
        feed now): what a new subscriber draws before the first change reaches it."""
        counts = self.counts()
        return Update(UpdateReason.CURRENT, True, None, None, counts, None,
                      {"reason": "current", "ok": True, "error": None, "cardId": None,
                       "counts": counts.to_json(), "sync": None, "origin": "store"})

    # -- callbacks -------------------------------------------------------------------------

    def subscribe(self, fn: Subscriber) -> Subscription:
        """Calls ``fn(update)`` after every refresh, apply, user change and logged impression,
        click or dismissal, on the thread that made the change (a library thread for
        :meth:`refresh_in_background`; a helper thread for :meth:`refresh` called on the main
        thread). An update caused from inside a subscriber is delivered after it returns.
        See the class docstring for exceptions."""
        if not callable(fn):
            raise TypeError(f"subscriber must be callable, not {type(fn).__name__}")
        key = _ffi.callbacks.add(_update_entry(weakref.ref(self), fn))
        if self._handle is None:
            _ffi.callbacks.release(key)  # never handed to the library
            raise ClosedError("the controller is closed")
        # On failure the library releases the key itself (free_userdata runs right away).
        subscription_id = self._call(_ffi.controller_subscribe, key)
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
        key = _ffi.callbacks.add(_transport_entry(fn, weakref.ref(self)))
        if self._handle is None:
            _ffi.callbacks.release(key)
            raise ClosedError("the controller is closed")
        self._call(_ffi.controller_set_transport, key)


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():
        return  # cancelled meanwhile
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


def _settle_refresh(future: asyncio.Future[SyncSummary], status: int,
                    result_json: bytes | None) -> None:
    """Settles a refresh_async future with the library's completion (on the loop's thread)."""
    import json
    if future.done():
        return
    try:
        data = json.loads(result_json or b"null")
        if status == 0:
            future.set_result(SyncSummary.from_json(data))
        else:
            retry_after = data.get("retryAfter")
            future.set_exception(error_for(status, str(data.get("message", "")),
                                           float(retry_after) if retry_after is not None else None))
    except BaseException as exc:  # noqa: BLE001 - a malformed completion still ends the await
        future.set_exception(exc)


class UpdateStream:
    """An async iterator of a controller's updates (:meth:`ContentCards.updates`); also an
    async context manager that closes it."""

    __slots__ = ("__weakref__", "_closed", "_loop", "_max", "_queue", "_subscription",
                 "_waiter")

    def __init__(self, controller: ContentCards, max_queued: int) -> None:
        import asyncio
        from collections import deque

        self._loop = asyncio.get_running_loop()
        self._max = max(1, int(max_queued))
        self._queue: deque[Update] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._subscription: Subscription | None = None

    def _from_library(self, update: Update) -> None:
        """The subscriber: runs on the thread that made the change."""
        try:
            self._loop.call_soon_threadsafe(self._push, update)
        except RuntimeError:  # the loop is closed: stop listening
            subscription = self._subscription
            if subscription is not None:
                subscription.cancel()

    def _push(self, update: Update) -> None:
        if self._closed:
            return
        self._queue.append(update)
        while len(self._queue) > self._max:
            self._queue.popleft()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _end(self) -> None:
        """The controller closed: the stream ends once the queued updates are taken."""
        try:
            self._loop.call_soon_threadsafe(self._finish)
        except RuntimeError:
            self._closed = True

    def _finish(self) -> None:
        self._closed = True
        self._wake()

    def __aiter__(self) -> UpdateStream:
        return self

    async def __anext__(self) -> Update:
        while not self._queue:
            if self._closed:
                raise StopAsyncIteration
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._queue.popleft()

    async def aclose(self) -> None:
        """Unsubscribes; iteration ends after the updates already queued."""
        subscription = self._subscription
        if subscription is not None:
            subscription.cancel()
        self._finish()

    async def __aenter__(self) -> UpdateStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
