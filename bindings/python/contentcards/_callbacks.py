"""What the library's callbacks run in Python: the entries that ``_ffi``'s trampolines find
by their ``userdata`` key in ``_ffi.callbacks``, one for each subscriber and each host
transport, and the report of an exception that cannot propagate.

The trampolines themselves, and the registry of keys, are in ``_ffi`` (loaded by ``import
contentcards``); these entries are made by the controller when it hands a callable to the
library. An entry never lets an exception reach C: a subscriber's is kept on its controller and
reported through ``sys.unraisablehook``, a transport's becomes a transport failure, a token provider's a token failure (AuthError).

This module is private: its names may change without notice.
"""

from __future__ import annotations

import sys

from . import _ffi
from .errors import ClosedError
from .results import Update
from .tokens import encode_answer
from .transport import TransportRequest, TransportResponse

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import weakref
    from typing import Any, Callable

    from .controller import ContentCards
    from .subscriptions import Subscriber
    from .tokens import TokenProvider
    from .transport import TransportFunction

__all__ = ["report_unraisable", "token_entry", "transport_entry", "update_entry"]


class _UnraisableArgs:
    """What ``sys.unraisablehook`` receives (the fields of CPython's UnraisableHookArgs)."""

    __slots__ = ("exc_type", "exc_value", "exc_traceback", "err_msg", "object")

    def __init__(self, exc_type: type[BaseException], exc_value: BaseException,
                 exc_traceback: Any, err_msg: str, obj: object) -> None:
        self.exc_type, self.exc_value, self.exc_traceback = exc_type, exc_value, exc_traceback
        self.err_msg, self.object = err_msg, obj


def report_unraisable(exc: BaseException, message: str, obj: object) -> None:
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


def detached(exc: BaseException) -> BaseException:
    """``exc`` as a controller keeps it: its traceback as text (a note, shown when it is
    printed), not as frames. The frames would keep the call that ran the callback alive, the
    controller's own among them: the controller holding the exception holding the controller,
    a cycle that only the garbage collector ends, closing the controller on whatever thread it
    runs (which may hold a lock a subscriber waits for)."""
    try:
        import traceback
        text = "".join(traceback.format_tb(exc.__traceback__)).rstrip()
        if text:
            notes = getattr(exc, "__notes__", None)
            if not isinstance(notes, list):
                notes = []
                # setattr: `__notes__` is declared from Python 3.11 on (on 3.9 and 3.10 the
                # note is kept but not printed), and mypy for 3.9 refuses the attribute.
                setattr(exc, "__notes__", notes)
            notes.append("raised in the callback at:\n" + text)
        exc.__traceback__ = None
    except BaseException:  # noqa: BLE001 - keeping it must never fail
        pass
    return exc


def update_entry(controller: weakref.ref[ContentCards], fn: Subscriber) -> Callable[[bytes | None], None]:
    """The callable the update trampoline calls for one subscription."""
    report = report_unraisable
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
            report(exc, "Exception ignored in contentcards subscriber", fn)
            if owner is not None:
                owner._record_subscriber_error(detached(exc))

    return entry


def transport_entry(fn: TransportFunction,
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
                owner._transport_error = detached(exc)
            return _fail(response_fail, response, f"{type(exc).__name__}: {exc}")

    return entry


def _fail(response_fail: Callable[[int | None, bytes], object], response: int | None, text: str) -> int:
    """Tells the library why a callback has no answer (the text, NUL-free, in the error it
    reports); returns the callback's failure status."""
    try:
        response_fail(response, text.replace("\0", " ").encode("utf-8", "replace"))
    except BaseException:  # noqa: BLE001 - nothing more can be told
        pass
    return -1


def token_entry(fn: TokenProvider,
                controller: weakref.ref[ContentCards]) -> Callable[[bytes | None, int | None], int]:
    """The callable the token trampoline calls: asks ``fn`` for the user's token and answers
    the library. An exception (its type and text), or an answer that is not a token (what is
    wrong with it; never the token), is the failure's message, which the library puts in the
    AuthError; the exception is kept on the controller with that text, to become the
    AuthError's ``__cause__``."""
    response_set = _ffi.token_response_set
    response_fail = _ffi.token_response_fail

    def entry(user_id: bytes | None, response: int | None) -> int:
        answered = False
        try:
            answer = fn((user_id or b"").decode("utf-8", "replace"))
            answered = True
            token, expires_at = encode_answer(answer)
            response_set(response, token, expires_at)
            return 0
        except BaseException as exc:  # noqa: BLE001 - a token failure for the library
            # Raised by fn: its type and text; after it answered: what is wrong with the answer.
            text = (str(exc) if answered else f"{type(exc).__name__}: {exc}").replace("\0", " ")
            owner = controller()
            if owner is not None:
                owner._token_errors.append((text, detached(exc)))
            return _fail(response_fail, response, text)

    return entry
