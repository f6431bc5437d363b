"""The exceptions of contentcards: one class per ``CC_E_*`` status code of the C API.

Each also derives from the built-in exception it means, so code that knows nothing of
contentcards catches it: a bad argument, configuration, payload or a closed controller is a
:class:`ValueError`; an unknown card a :class:`LookupError`; a timeout a :class:`TimeoutError`;
network, server, transport and storage failures an :class:`OSError`; running out of memory a
:class:`MemoryError`; no usable per-user token a :class:`PermissionError` (docs/API.md, "Errors").

Every exception raised by the library is a :class:`ContentCardsError` with the status ``code``
(a negative int), its ``name`` (``"CC_E_NOT_FOUND"``, as ``cc_status_name`` gives it) and the
library's ``message`` for people. :func:`error_for` builds the right subclass from a code.
"""

from __future__ import annotations

import math

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

__all__ = [
    "STATUS_NAMES",
    "AuthError",
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
    -19: "CC_E_AUTH",
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
        if isinstance(self, OSError) and message:
            # OSError's errno, strerror and filename, as open() would set them, from the
            # library's message ("cannot open PATH: No such file or directory").
            for name, value in zip(("errno", "strerror", "filename"), _os_details(message)):
                setattr(self, name, value)

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
    """A call refused without effect: a logging call that recorded nothing (the public API
    returns a LogResult instead), or a call that would wait for itself (refresh or flush from
    inside the controller's transport, wait_for_images from inside the image prefetch,
    forget_user from inside the events transport while the user's batch is out)."""

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
        import re  # here, not at import: `re` was a tenth of `import contentcards`
        match = re.search(r"HTTP (\d{3})", message)
        self.http_status: int | None = int(match.group(1)) if match else None


class StorageError(ContentCardsError, OSError):
    """The store cannot be opened, is corrupt or newer, or a write failed. When the C library
    refused a file (the store's, the event file's), ``errno``, ``strerror`` and ``filename`` say
    which and why, and the error is also the built-in of that errno (:class:`PermissionError`
    for a read-only store...)."""

    default_code = -11


class NoSourceError(ContentCardsError):
    """No source (refresh) or no event sink (flush) is configured."""

    default_code = -12


class UnavailableError(ContentCardsError, OSError):
    """libcurl is not installed; the message names the fix."""

    default_code = -13


class WrongUserError(ContentCardsError):
    """A response or payload for another user, or a refresh's answer that crossed a change of
    user (also away and back) or a forget of the user by any controller or process: discarded."""

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
    problem, not a :class:`NetworkError`. It is the :class:`OSError` an ``open()`` of the file
    would raise: ``errno``, ``strerror`` and ``filename`` are set, and a missing file is also a
    :class:`FileNotFoundError`, an unreadable one a :class:`PermissionError`, a directory an
    :class:`IsADirectoryError`."""

    default_code = -18


class AuthError(ContentCardsError, PermissionError):
    """No usable per-user token: the token provider (``ContentCards.set_token_provider``)
    raised, returned something that is not a token, or did not answer by the request's
    deadline; or the server refused the token (HTTP 401) again after the one retry with a new
    one. The request was not sent or not accepted: the cached cards stay and events stay
    pending. When the provider raised, the message has the exception's type and text (and it
    is the ``__cause__``, when it ran for the call that failed)."""

    default_code = -19


class InternalError(ContentCardsError):
    """A bug in the library; please report it."""

    default_code = -99


_CLASSES: dict[int, type[ContentCardsError]] = {
    cls.default_code: cls
    for cls in (InvalidArgumentError, InvalidHandleError, ConfigError, ParseError,
                CardNotFoundError, RefusedError, RateLimitedError, NetworkError,
                RequestTimeoutError, ServerError, StorageError, NoSourceError, UnavailableError,
                WrongUserError, TransportError, NoMemoryError, ClosedError, SourceFileError,
                AuthError, InternalError)
}


#: The phrases of the library's messages that name a file and the C library's error text
#: (strerror) for it: "cannot open PATH: No such file or directory", "the store file PATH is
#: read-only (Permission denied)", "the source file: PATH is a directory, not a regular file".
_FILE_FAILURE = (r"cannot (?:open|read|stat|append to|lock|create directory|create or read the "
                 r"store file|resolve the storage directory) ")
_READ_ONLY = r"the (?:store file|storage directory) (?P<file>.+?) is read-only \((?P<error>[^()]+)\)"
_NOT_REGULAR = (r"cannot read the source file: (?P<file>.+) is (?P<kind>a FIFO \(named pipe\)|"
                r"a directory|a device|a socket|not a regular file), not a regular file$")


def _os_details(message: str) -> tuple[int | None, str | None, str | None]:
    """(errno, strerror, filename) of a file the message says could not be used, each None
    when it says none: the error text is the C library's own (the library's messages quote
    strerror), so its number is the one of the same text here."""
    import os
    import re  # here, not at import: `re` was a tenth of `import contentcards`

    def number(text: str) -> int | None:
        global _STRERRORS
        if _STRERRORS is None:
            import errno
            _STRERRORS = {os.strerror(n): n for n in sorted(errno.errorcode, reverse=True)}
        return _STRERRORS.get(text)

    # The innermost "cannot VERB PATH: ERROR" ("cannot read the source file: cannot open ...").
    for start in reversed([m.end() for m in re.finditer(_FILE_FAILURE, message)]):
        found = re.match(r"(?P<file>.+): (?P<error>[^:]+)$", message[start:], flags=re.S)
        if found and number(found["error"]) is not None:
            return number(found["error"]), found["error"], found["file"]
    found = re.search(_READ_ONLY, message, flags=re.S)
    if found and number(found["error"]) is not None:
        return number(found["error"]), found["error"], found["file"]
    found = re.search(_NOT_REGULAR, message, flags=re.S)
    if found:
        import errno
        if found["kind"] == "a directory":
            return errno.EISDIR, os.strerror(errno.EISDIR), found["file"]
        return None, None, found["file"]
    return None, None, None


_STRERRORS: dict[str, int] | None = None
#: (class, built-in OSError subclass): the class that is both, made on first use.
_WITH_BUILTIN: dict[tuple[type[ContentCardsError], type[OSError]], type[ContentCardsError]] = {}


def _with_builtin(cls: type[ContentCardsError], number: int | None) -> type[ContentCardsError]:
    """``cls``, or a subclass of it that is also the built-in exception ``OSError(number)``
    would be (FileNotFoundError for ENOENT, PermissionError for EACCES...), so that ``except
    FileNotFoundError`` catches a missing feed file. It has cls's name and module."""
    if number is None or not issubclass(cls, OSError):
        return cls
    builtin = type(OSError(number, ""))
    if builtin is OSError or issubclass(cls, builtin):
        return cls
    made = _WITH_BUILTIN.get((cls, builtin))
    if made is None:
        made = type(cls.__name__, (cls, builtin),
                    {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                     "__doc__": cls.__doc__})
        _WITH_BUILTIN[(cls, builtin)] = made
    return made


def error_for(code: int, message: str, retry_after: float | None = None) -> ContentCardsError:
    """The exception for a status ``code`` with ``message`` (a plain ContentCardsError for a
    code this binding does not know) and ``retry_after`` (seconds, or None; a negative or
    non-finite value is None). An OSError one whose message names a file and the C library's
    error for it carries ``errno``, ``strerror`` and ``filename``, and is also the built-in
    exception of that errno (a missing feed file is a FileNotFoundError)."""
    cls = _CLASSES.get(code, ContentCardsError)
    error = cls(message, code)
    if isinstance(error, OSError) and error.errno is not None:
        special = _with_builtin(cls, error.errno)
        if special is not cls:
            error = special(message, code)
    if retry_after is not None and math.isfinite(retry_after) and retry_after >= 0:
        error.retry_after = float(retry_after)
    return error
