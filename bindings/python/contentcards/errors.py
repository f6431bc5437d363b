"""The exceptions of contentcards: one class per ``CC_E_*`` status code of the C API.

Each also derives from the built-in exception it means, so code that knows nothing of
contentcards catches it: a bad argument, configuration, payload or a closed controller is a
:class:`ValueError`; an unknown card a :class:`LookupError`; a timeout a :class:`TimeoutError`;
network, server, transport and storage failures an :class:`OSError`; running out of memory a
:class:`MemoryError` (docs/API.md, "Errors").

Every exception raised by the library is a :class:`ContentCardsError` with the status ``code``
(a negative int), its ``name`` (``"CC_E_NOT_FOUND"``, as ``cc_status_name`` gives it) and the
library's ``message`` for people. :func:`error_for` builds the right subclass from a code.
"""

from __future__ import annotations

import math

# typing is not imported at run time (issue 9: import time); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

__all__ = [
    "STATUS_NAMES",
    "CardNotFoundError",
    "ClosedError",
    "ConfigError",
    "ContentCardsError",
    "InternalError",
    "InvalidArgumentError",
    "InvalidHandleError",
    "NetworkError",
    "NoMemoryError",
    "NoSourceError",
    "ParseError",
    "RateLimitedError",
    "RefusedError",
    "RequestTimeoutError",
    "ServerError",
    "SourceFileError",
    "StorageError",
    "TransportError",
    "UnavailableError",
    "WrongUserError",
    "error_for",
]

#: The status codes of ``contentcards.h`` and their names (as ``cc_status_name`` returns them).
STATUS_NAMES: dict[int, str] = {
    0: "CC_OK",
    -1: "CC_E_INVALID_ARGUMENT",
    -2: "CC_E_INVALID_HANDLE",
    -3: "CC_E_CONFIG",
    -4: "CC_E_PARSE",
    -5: "CC_E_NOT_FOUND",
    -6: "CC_E_REFUSED",
    -7: "CC_E_RATE_LIMITED",
    -8: "CC_E_NETWORK",
    -9: "CC_E_TIMEOUT",
    -10: "CC_E_SERVER",
    -11: "CC_E_STORAGE",
    -12: "CC_E_NO_SOURCE",
    -13: "CC_E_UNAVAILABLE",
    -14: "CC_E_WRONG_USER",
    -15: "CC_E_TRANSPORT",
    -16: "CC_E_NO_MEMORY",
    -17: "CC_E_CLOSED",
    -18: "CC_E_SOURCE_FILE",
    -99: "CC_E_INTERNAL",
}


class ContentCardsError(Exception):
    """A failure reported by the Content Cards library (or detected by the binding).

    ``code`` is the ``CC_E_*`` status (negative), ``name`` its name, ``message`` the text.
    """

    #: The status code of this class; instances may carry another one (see :func:`error_for`).
    default_code: ClassVar[int] = 0

    def __new__(cls, message: str = "", code: int | None = None) -> ContentCardsError:
        # OSError.__new__ would read (message, code) as (errno, strerror): give it nothing.
        return Exception.__new__(cls) if not issubclass(cls, OSError) else OSError.__new__(cls)

    def __init__(self, message: str = "", code: int | None = None) -> None:
        super().__init__(message)
        self.args = (message,)
        self.message: str = message
        self.code: int = self.default_code if code is None else code
        self.name: str = STATUS_NAMES.get(self.code, "CC_E_UNKNOWN")
        #: Seconds to wait before trying again, as the library enforces it
        #: (``cc_last_error_retry_after``), or None. Set for rate limits and server answers
        #: with Retry-After; None for the other errors.
        self.retry_after: float | None = None

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code})"

    def __reduce__(self) -> tuple[object, ...]:
        return (error_for, (self.code, self.message, self.retry_after))

    def to_json(self) -> dict[str, Any]:
        """The error as the library gives it in JSON (a failed refresh's completion, an
        update's and the diagnostics' ``error``): ``code``, ``name``, ``message``, and
        ``retryAfter`` when there is one, a whole number written without a fraction as the
        library writes it."""
        out: dict[str, Any] = {"code": self.code, "name": self.name, "message": self.message}
        retry_after = self.retry_after
        if retry_after is not None:
            whole = abs(retry_after) < 1e15 and retry_after == int(retry_after)
            out["retryAfter"] = int(retry_after) if whole else retry_after
        return out


class InvalidArgumentError(ContentCardsError, ValueError):
    """A missing value, invalid UTF-8, an embedded NUL, or a value out of range."""

    default_code = -1


class InvalidHandleError(ContentCardsError):
    """The handle is closed, was never issued, or is of another kind."""

    default_code = -2


class ConfigError(ContentCardsError, ValueError):
    """The configuration is malformed, has an unknown key or a bad value."""

    default_code = -3


class ParseError(ContentCardsError, ValueError):
    """A payload or filter that is not valid JSON or not of the expected shape."""

    default_code = -4


class CardNotFoundError(ContentCardsError, LookupError):
    """No card with that id for the current user."""

    default_code = -5


class RefusedError(ContentCardsError):
    """A logging call that recorded nothing (the public API returns a LogResult instead)."""

    default_code = -6


class RateLimitedError(ContentCardsError):
    """A refresh refused by the rate limit, the local one or the server's (HTTP 429).

    ``retry_after`` is the number of seconds to wait (float; the library's value, not read
    from the message), or None when the library gave none.
    """

    default_code = -7


class NetworkError(ContentCardsError, OSError):
    """The connection failed, was reset or truncated (a file source that cannot be read is a
    :class:`SourceFileError`)."""

    default_code = -8


class RequestTimeoutError(ContentCardsError, TimeoutError):
    """The operation did not finish in time (also a builtin :class:`TimeoutError`)."""

    default_code = -9


class ServerError(ContentCardsError, OSError):
    """The server answered with an HTTP error status (``http_status`` when the message has it).

    ``retry_after``: seconds from the server's Retry-After (e.g. with a 503), bounded as the
    library enforces it, or None.
    """

    default_code = -10

    def __init__(self, message: str = "", code: int | None = None) -> None:
        super().__init__(message, code)
        import re  # here, not at import: `re` was a tenth of `import contentcards` (issue 9)
        match = re.search(r"HTTP (\d{3})", message)
        self.http_status: int | None = int(match.group(1)) if match else None


class StorageError(ContentCardsError, OSError):
    """The store cannot be opened, is corrupt or newer, or a write failed."""

    default_code = -11


class NoSourceError(ContentCardsError):
    """No source (refresh) or no event sink (flush) is configured."""

    default_code = -12


class UnavailableError(ContentCardsError, OSError):
    """libcurl is not installed; the message names the fix."""

    default_code = -13


class WrongUserError(ContentCardsError):
    """A response or payload for another user: discarded."""

    default_code = -14


class TransportError(ContentCardsError, OSError):
    """The host transport callback is missing or failed."""

    default_code = -15


class NoMemoryError(ContentCardsError, MemoryError):
    """The library ran out of memory."""

    default_code = -16


class ClosedError(ContentCardsError, ValueError):
    """The controller (or subscription) is closed: the operation was not attempted."""

    default_code = -17


class SourceFileError(ContentCardsError, OSError):
    """A file source that cannot be read (missing, unreadable, not a regular file): a local
    problem, not a :class:`NetworkError` (it is an :class:`OSError`, as an ``open()`` of the file
    would raise)."""

    default_code = -18


class InternalError(ContentCardsError):
    """A bug in the library; please report it."""

    default_code = -99


_CLASSES: dict[int, type[ContentCardsError]] = {
    cls.default_code: cls
    for cls in (InvalidArgumentError, InvalidHandleError, ConfigError, ParseError,
                CardNotFoundError, RefusedError, RateLimitedError, NetworkError,
                RequestTimeoutError, ServerError, StorageError, NoSourceError, UnavailableError,
                WrongUserError, TransportError, NoMemoryError, ClosedError, SourceFileError,
                InternalError)
}


def error_for(code: int, message: str, retry_after: float | None = None) -> ContentCardsError:
    """The exception for a status ``code`` with ``message`` (a plain ContentCardsError for a
    code this binding does not know) and ``retry_after`` (seconds, or None; a negative or
    non-finite value is None)."""
    cls = _CLASSES.get(code, ContentCardsError)
    error = cls(message, code)
    if retry_after is not None and math.isfinite(retry_after) and retry_after >= 0:
        error.retry_after = float(retry_after)
    return error
