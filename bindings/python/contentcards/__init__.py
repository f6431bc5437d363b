"""Python bindings of libcontentcards, a Content Cards library.

Content Cards are messages an application shows inside itself: a feed or inbox of cards, each
with extras whose ``class_type`` decides which of the application's own objects it becomes::

    import contentcards

    with contentcards.ContentCards(user_id="u-1",
                                   source={"file": "examples/data/sample_feed.json"}) as cc:
        summary = cc.refresh()
        for card in cc.cards(["home_tile"]):
            print(card.id, card.title)
        cc.log_impression("tile-1")
        print(cc.unviewed_count())

The library (``libcontentcards.so.1``, a C ABI) is found as described in
``contentcards._library``; its ABI version is checked at import.
"""

from __future__ import annotations

import atexit as _atexit
import sys as _sys

from . import _ffi, _logs  # noqa: F401 - _logs routes the library's log to logging
from ._library import ABI_VERSION

# The rest of the package is imported when one of its names is first used (PEP 562): `import
# contentcards` loads and checks the library and nothing else (import time), and a
# program that uses the controller imports the controller's modules then, once.
_LAZY: dict[str, str] = {
    **dict.fromkeys(("Card", "CardType", "normalize_class_type"), "cards"),
    **dict.fromkeys(("CONFIG_KEYS", "ContentCards"), "controller"),
    **dict.fromkeys(("ContentCardable", "ContentCardData", "Registry"), "convert"),
    **dict.fromkeys((
        "AuthError", "CardNotFoundError", "ClosedError", "ConfigError", "ContentCardsError", "InternalError",
        "InvalidArgumentError", "InvalidHandleError", "NetworkError", "NoMemoryError",
        "NoSourceError", "ParseError", "RateLimitedError", "RefusedError", "RequestTimeoutError",
        "ServerError", "SourceFileError", "StorageError", "TransportError", "UnavailableError",
        "WrongUserError"), "errors"),
    **dict.fromkeys(("Counts", "Diagnostics", "FlushResult", "ForgetReceipt", "ImageStats",
                     "LeftOut", "LogResult", "PendingEvent", "PendingEvents", "SyncSummary",
                     "Update", "UpdateReason", "UserExport"), "results"),
    **dict.fromkeys(("Subscription", "UpdateStream"), "subscriptions"),
    "AuthToken": "tokens",
    **dict.fromkeys(("TransportRequest", "TransportResponse"), "transport"),
}

TYPE_CHECKING = False  # typing is not imported at run time; type checkers read this as True
if TYPE_CHECKING:
    # "X as X": re-exported explicitly, as mypy --strict wants.
    from .cards import (Card as Card, CardType as CardType,
        normalize_class_type as normalize_class_type)
    from .controller import CONFIG_KEYS as CONFIG_KEYS, ContentCards as ContentCards
    from .convert import (ContentCardable as ContentCardable, ContentCardData as ContentCardData,
        Registry as Registry)
    from .errors import (AuthError as AuthError, CardNotFoundError as CardNotFoundError, ClosedError as ClosedError,
        ConfigError as ConfigError, ContentCardsError as ContentCardsError,
        InternalError as InternalError, InvalidArgumentError as InvalidArgumentError,
        InvalidHandleError as InvalidHandleError, NetworkError as NetworkError,
        NoMemoryError as NoMemoryError, NoSourceError as NoSourceError, ParseError as ParseError,
        RateLimitedError as RateLimitedError, RefusedError as RefusedError,
        RequestTimeoutError as RequestTimeoutError, ServerError as ServerError,
        SourceFileError as SourceFileError, StorageError as StorageError,
        TransportError as TransportError, UnavailableError as UnavailableError,
        WrongUserError as WrongUserError)
    from .results import (Counts as Counts, Diagnostics as Diagnostics,
        FlushResult as FlushResult, ForgetReceipt as ForgetReceipt, ImageStats as ImageStats,
        LeftOut as LeftOut, LogResult as LogResult, PendingEvent as PendingEvent,
        PendingEvents as PendingEvents, SyncSummary as SyncSummary, Update as Update,
        UpdateReason as UpdateReason, UserExport as UserExport)
    from .subscriptions import Subscription as Subscription, UpdateStream as UpdateStream
    from .tokens import AuthToken as AuthToken
    from .transport import (TransportRequest as TransportRequest,
        TransportResponse as TransportResponse)


# The submodules the package imported when it imported everything: still attributes of it.
_SUBMODULES = frozenset({"cards", "controller", "convert", "errors", "results", "transport", "_value"})

if not TYPE_CHECKING:  # (type checkers see the imports above, and reject unknown names)
    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None and name not in _SUBMODULES:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        imported = __import__(f"{__name__}.{module or name}", fromlist=[name])
        value = imported if module is None else getattr(imported, name)
        globals()[name] = value  # found directly from now on
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)


def _close_controllers_at_exit() -> None:
    """Closes the controllers still open at exit (``_at_exit.close_all_at_exit``),
    registered here, at import, as it was before the controller's module was imported on
    first use: exit handlers run newest first, so one the application registers after
    importing the package (a last flush) still runs while its controllers are open."""
    at_exit = _sys.modules.get(f"{__name__}._at_exit")
    if at_exit is not None:
        at_exit.close_all_at_exit()


_atexit.register(_close_controllers_at_exit)


#: The package's version: the version of the library it carries (CC_VERSION_STRING of
#: include/contentcards.h, the one place the version is written), as loaded.
__version__: str = _ffi.version()

def library_path() -> str:
    """Where the library actually loaded was loaded from (a file path)."""
    return _ffi.library_path


def library_version() -> str:
    """The version of the library actually loaded, "MAJOR.MINOR.PATCH"."""
    return _ffi.version()


def abi_version() -> int:
    """The ABI version of the library actually loaded (1)."""
    return _ffi.abi_version()


#: The package's names: each lazily imported name (`_LAZY`, which the imports for type checkers
#: above repeat: `test_api.py` checks that they agree), and those defined here. ABI_VERSION
#: (the CC_ABI_VERSION this package needs) is written once, in `_library`.
__all__ = sorted([*_LAZY, "ABI_VERSION", "abi_version", "library_path", "library_version"])
