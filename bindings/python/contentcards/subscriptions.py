"""A controller's subscribers: :class:`Subscription` (:meth:`ContentCards.subscribe`) and
:class:`UpdateStream` (:meth:`ContentCards.updates`, the updates as an async iterator).

Both are also importable from :mod:`contentcards.controller` (and the package).
"""

from __future__ import annotations

import threading
import weakref

from . import _ffi
from .errors import CardNotFoundError, ClosedError

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from typing_extensions import TypeAlias

    from .controller import ContentCards
    from .results import Update

__all__ = ["Subscriber", "Subscription", "UpdateStream"]

#: A subscriber: called with each Update.
Subscriber: TypeAlias = "Callable[[Update], object]"


class Subscription:
    """A subscriber registered with :meth:`ContentCards.subscribe`.

    :meth:`cancel` (idempotent) unsubscribes at once: when it returns the subscriber is not
    called again. As a context manager it cancels on exit. Dropping the Subscription object does
    not unsubscribe; closing the controller does.
    """

    __slots__ = ("_controller", "_cancelled", "_key", "_lock", "callback", "id")

    def __init__(self, controller: ContentCards, subscription_id: int, key: int,
                 callback: Subscriber) -> None:
        # Weak: the library's registry holds the subscriber until the controller closes, and an
        # update stream's subscriber holds this object; a strong reference back made the
        # controller unreachable yet never collected (its __del__, which closes it, never ran).
        self._controller = weakref.ref(controller)
        self.id = subscription_id
        self._key = key
        self.callback = callback
        self._cancelled = False
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """True until cancelled or until the controller is closed."""
        controller = self._controller()
        return (not self._cancelled and controller is not None and not controller.closed
                and self._key in _ffi.callbacks)

    def cancel(self) -> None:
        """Unsubscribes. Harmless when already cancelled or the controller is closed. May be
        called from inside the subscriber itself."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
        controller = self._controller()
        if controller is None:
            return  # collected, and so closed: every subscriber is gone
        try:
            controller._call(_ffi.controller_unsubscribe, self.id)
        except (ClosedError, CardNotFoundError):
            pass  # closed (every subscriber is gone) or already unsubscribed

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cancel()

    def __repr__(self) -> str:
        state = "active" if self.active else "cancelled"
        return f"<Subscription {self.id} {state} {self.callback!r}>"


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
