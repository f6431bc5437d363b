"""Closing at exit: the controllers still open when the interpreter exits are closed before
module teardown, so no library thread calls back into a finalizing interpreter.

Every controller is added to :data:`open_controllers` when it opens (a weak set: a controller
garbage collected is closed by its ``__del__``). The exit hook is registered by the package's
``__init__`` at import (exit handlers run newest first, so one the application registers after
importing the package still finds its controllers open); it calls :func:`close_all_at_exit`
once this module has been imported.

This module is private: its names may change without notice.
"""

from __future__ import annotations

import weakref

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    class _Closable(Protocol):
        """What is closed at exit (a ContentCards; not imported here: it imports this)."""

        def close(self) -> None: ...

__all__ = ["close_all_at_exit", "open_controllers"]

open_controllers: weakref.WeakSet[_Closable] = weakref.WeakSet()


def close_all_at_exit() -> None:
    """Closes the controllers still open when the interpreter exits, before module teardown,
    so no library thread calls back into a finalizing interpreter. (Registered with atexit by
    the package's ``__init__``, at import.)"""
    for controller in list(open_controllers):
        try:
            controller.close()
        except BaseException:  # noqa: BLE001
            pass
