"""The library's log, routed to Python's :mod:`logging` under the logger ``contentcards``.

At import the package installs one log handler in the library (``cc_set_log_handler``) that
forwards each message to ``logging.getLogger("contentcards")`` at the same level (the library's
CC_LOG_* numbers are logging's DEBUG, INFO, WARNING, ERROR), and adds a
:class:`logging.NullHandler` to that logger, as libraries do: nothing is printed until the
application configures logging. The library's threshold follows the logger's effective level,
read whenever a controller is opened (:func:`follow_logger_level`), so messages nobody would
see are not even made; before logging is imported it is WARNING, logging's default. Records carry the thread that did the work (a
library thread for background refreshes and deliveries). A logging handler may call the
package: the library does not deliver what it logs on that thread meanwhile (no recursion).
"""

from __future__ import annotations

import atexit
import sys
import threading

from . import _ffi

TYPE_CHECKING = False  # typing is not imported at run time (import time)
if TYPE_CHECKING:
    from typing import Any

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
    return _logger


def _forward(userdata: int | None, level: int, message: bytes | None) -> None:
    # Nothing may propagate into C (also during interpreter shutdown).
    try:
        target = _logger if _logger is not None else logger()
        if target.isEnabledFor(level):
            target.log(level, (message or b"").decode("utf-8", "replace"))
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
        level = max(logger().getEffectiveLevel(), _DEBUG)
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
