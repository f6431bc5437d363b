"""How the controller waits for the library: a blocking call that Ctrl-C still interrupts
(:func:`interruptible`), and an awaited future settled from another thread
(:func:`on_daemon_thread`, :func:`settle_refresh`).

This module is private: its names may change without notice.
"""

from __future__ import annotations

import threading

from . import _ffi
from .errors import error_for
from .results import SyncSummary

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    from typing import Any, Callable, TypeVar

    T = TypeVar("T")

__all__ = ["WAIT_SLICE", "interruptible", "on_daemon_thread", "settle", "settle_refresh"]

#: How long the main thread waits at a time for a blocking call running in a worker thread:
#: between two waits, signal handlers run (Ctrl-C raises KeyboardInterrupt at once).
WAIT_SLICE = 0.05


def interruptible(call: Callable[[], T]) -> T:
    """Runs a blocking library call so that Ctrl-C interrupts the wait for it.

    Python runs signal handlers only on the main thread, between bytecodes; a ctypes call that
    blocks (a refresh waiting up to its timeout) would delay KeyboardInterrupt until it
    returned. On the main thread the call runs in a worker thread and the main thread waits
    for it in short slices; a KeyboardInterrupt (or any exception from a signal handler)
    propagates at once, and the abandoned call finishes on its own by its timeout (its outcome
    still reaches the subscribers). On any other thread the call runs directly, and so does
    a call made from inside a library callback (a subscriber, a transport, a log handler): the
    library delivers what such a call causes after the callback returns only on the
    callback's own thread (a worker's call had its update delivered at once, to the subscriber
    still running; one that held a lock waited for itself for ever).
    """
    if threading.current_thread() is not threading.main_thread() or _ffi.inside_callback():
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
    while not done.wait(WAIT_SLICE):
        pass
    ok, value = outcome[0]
    if ok:
        return value  # type: ignore[no-any-return]
    raise value


def settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    """Settles an awaited future with ``(True, result)`` or ``(False, exception)`` (on the
    loop's thread); nothing when it was cancelled meanwhile."""
    if future.done():
        return  # cancelled meanwhile
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


async def on_daemon_thread(call: Callable[[], T], name: str) -> T:
    """Awaits ``call()`` run on a daemon thread of its own (named ``name``): the event loop is
    not blocked, and the call happens even when the awaiting task is cancelled meanwhile;
    cancelling the await returns at once and ``asyncio.run`` does not wait for the thread
    (the call ends on its own)."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        outcome: tuple[bool, Any]
        try:
            outcome = (True, call())
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, future, outcome)
        except RuntimeError:
            pass  # the loop is closed: nobody is waiting any more

    threading.Thread(target=run, name=name, daemon=True).start()
    return await future


def settle_refresh(future: asyncio.Future[SyncSummary], status: int,
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
