"""The library's log, routed to Python's :mod:`logging` under the logger ``contentcards``.

At import the package installs one log handler in the library (``cc_set_log_handler``) that
forwards each message to ``logging.getLogger("contentcards")`` at the same level (the library's
CC_LOG_* numbers are logging's DEBUG, INFO, WARNING, ERROR), and adds a
:class:`logging.NullHandler` to that logger, as libraries do: nothing is printed until the
application configures logging. The library's threshold follows the logger's effective level,
read at import and again whenever a controller is opened (:func:`follow_logger_level`), so
messages nobody would see are not even made. Records carry the thread that did the work (a
library thread for background refreshes and deliveries). A logging handler may call the
package: the library does not deliver what it logs on that thread meanwhile (no recursion).
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Callable

from . import _ffi

logger = logging.getLogger("contentcards")
logger.addHandler(logging.NullHandler())

_lock = threading.Lock()
_installed_level: int | None = None


def _forward(userdata: int | None, level: int, message: bytes | None,
             _logger: logging.Logger = logger,
             _is_enabled: Callable[[int], bool] = logger.isEnabledFor) -> None:
    # Nothing may propagate into C; default arguments survive interpreter shutdown.
    try:
        if _is_enabled(level):
            _logger.log(level, (message or b"").decode("utf-8", "replace"))
    except BaseException:  # noqa: BLE001
        pass


LOG_TRAMPOLINE = _ffi.LOG_FN(_forward)


def follow_logger_level() -> None:
    """Sets the library's threshold to the logger's effective level, if it changed."""
    global _installed_level
    level = max(logger.getEffectiveLevel(), logging.DEBUG)
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


follow_logger_level()
atexit.register(_uninstall)
