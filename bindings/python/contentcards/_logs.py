"""The library's log, routed to Python's :mod:`logging` under the logger ``contentcards``.

At import the package installs one log handler in the library (``cc_set_log_handler``) that
forwards each message to ``logging.getLogger("contentcards")`` at the same level (the library's
CC_LOG_* numbers are logging's DEBUG, INFO, WARNING, ERROR), and adds a
:class:`logging.NullHandler` to that logger, as libraries do: nothing is printed until the
application configures logging. The library's threshold follows the logger's effective level
(:func:`follow_logger_level`), so messages nobody would see are not even made: it is read when
a controller is opened, and again at once whenever a level changes later (``setLevel`` on the
``contentcards`` logger or an ancestor, ``logging.disable``, ``basicConfig``, ``dictConfig``:
each clears the logging manager's cache, which this module follows). Before logging is imported
it is WARNING, logging's default. Records carry the thread that did the work (a
library thread for background refreshes and deliveries). A logging handler may call the
package: the library does not deliver what it logs on that thread meanwhile (no recursion).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

from . import _ffi

TYPE_CHECKING = False  # typing is not imported at run time (import time)
if TYPE_CHECKING:
    from typing import Any, Callable

# `logging` is imported when it is needed, not by `import contentcards` (it and what it
# imports were a fifth of the import's time): when the library first has a message for it,
# or when a controller opens in a process that imported it already (the only way an
# application can have configured it).
_WARNING = 30  # logging.WARNING: the effective level of a logger nobody configured
_DEBUG = 10

_lock = threading.Lock()
_installed_level: int | None = None
_logger: Any = None


def logger() -> Any:
    """The ``contentcards`` logger, with its :class:`logging.NullHandler` (made on first use)."""
    global _logger
    if _logger is None:
        import logging

        made = logging.getLogger("contentcards")
        made.addHandler(logging.NullHandler())
        _logger = made
        _watch_levels()
    return _logger


_watching = False


def _watch_levels() -> None:
    """Makes every later change of a level reach the library at once. Each way the standard
    library changes one (Logger.setLevel, logging.disable, and basicConfig, dictConfig and
    fileConfig through them) ends by clearing the manager's cache of effective levels
    (``Manager._clear_cache``): that call is wrapped to set the library's threshold again."""
    global _watching
    import logging

    with _lock:
        if _watching:
            return
        _watching = True
        manager = logging.Logger.manager
        clear = getattr(manager, "_clear_cache", None)
        if clear is None:  # not this logging module: the level is read at each open only
            return

        def clear_and_follow() -> None:
            clear()
            try:
                follow_logger_level()
            except Exception:  # noqa: BLE001 - a level change must never fail because of us
                pass

        setattr(manager, "_clear_cache", clear_and_follow)


def _forward(userdata: int | None, level: int, message: bytes | None,
             _in: Callable[..., Any] = _ffi.in_callback) -> None:
    # Nothing may propagate into C (also during interpreter shutdown). A logging handler is
    # host code inside a library callback (`_ffi.CALLBACK_DEPTH`).
    try:
        target = _logger if _logger is not None else logger()
        if target.isEnabledFor(level):
            _in(target.log, level, (message or b"").decode("utf-8", "replace"))
    except BaseException:  # noqa: BLE001
        pass


LOG_TRAMPOLINE = _ffi.LOG_FN(_forward)


def follow_logger_level() -> None:
    """Sets the library's threshold to the logger's effective level, if it changed (WARNING,
    logging's default, while the process has not imported logging)."""
    global _installed_level
    if _logger is None and "logging" not in sys.modules:
        level = _WARNING
    else:
        target = logger()
        _watch_levels()
        # logging.disable(N) silences N and below, whatever the loggers' levels.
        level = max(target.getEffectiveLevel(), target.manager.disable + 1, _DEBUG)
    with _lock:
        if level == _installed_level:
            return
        _installed_level = level
        _ffi.set_log_handler(LOG_TRAMPOLINE, level)


def reinstall() -> None:
    """Installs the forwarding handler again (after someone replaced it)."""
    global _installed_level
    with _lock:
        _installed_level = None
    follow_logger_level()


def _uninstall() -> None:
    # Before the interpreter shuts down: no library thread calls into Python after this.
    global _installed_level
    with _lock:
        _installed_level = None
        _ffi.set_log_handler(None, 0)


def _after_fork_in_child() -> None:
    # The lock may have been held at the fork by a thread the child does not have (it is held
    # across the C call that installs the handler): a new one, or the child's first controller
    # waits forever in follow_logger_level.
    global _lock
    _lock = threading.Lock()


follow_logger_level()
atexit.register(_uninstall)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
