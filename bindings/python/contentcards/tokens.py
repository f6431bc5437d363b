"""Per-user tokens: the application's token provider (``ContentCards.set_token_provider``).

The library asks the provider for a user's token before it sends a request for that user (a
sync, a batch of that user's events, the hint stream) and sends it as ``Authorization: Bearer
TOKEN`` (docs/WIRE.md, "Per-user tokens"). The provider is called with the user id and
returns the token: a ``str``, a ``(token, expires_at)`` tuple, or an :class:`AuthToken`.
``expires_at`` (unix seconds, or an aware ``datetime``; None when unknown) lets the library ask
again before the token stops working; without it a token is used until a server answers 401.

A provider that raises, returns something else, or returns a token that cannot go in a header
(empty, not printable ASCII, over 8192 bytes) makes the request fail with
:class:`~contentcards.errors.AuthError`, whose message has the exception's type and text; the
exception never reaches the library. The provider runs on a library thread (never with a lock
of the library held, so it may call the controller); one that has not returned by the
request's deadline is abandoned (AuthError) and its late answer discarded.
"""

from __future__ import annotations

import math

from ._value import Value

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime
    from typing import Callable, Union

    from typing_extensions import TypeAlias  # typing's since Python 3.10

__all__ = ["MAX_TOKEN_BYTES", "AuthToken", "TokenProvider"]

_set = object.__setattr__

#: The longest token the library sends (bytes).
MAX_TOKEN_BYTES = 8192


class AuthToken(Value):
    """A user's token and, when known, when it stops working: ``expires_at`` in unix seconds
    (a number, or an aware ``datetime``), None when unknown (Swift's ``AuthToken(_:expiresAt:)``,
    C's ``cc_token_response_set``). The ``repr`` never shows the token."""

    __slots__ = ("token", "expires_at")
    token: str
    expires_at: float | None

    def __init__(self, token: str, expires_at: float | datetime.datetime | None = None) -> None:
        _set(self, "token", token)
        _set(self, "expires_at", _seconds(expires_at))

    def __repr__(self) -> str:
        size = len(self.token) if isinstance(self.token, str) else 0
        return f"AuthToken(<{size} characters>, expires_at={self.expires_at!r})"


def _seconds(expires_at: object) -> float | None:
    """``expires_at`` as unix seconds (None for None); TypeError/ValueError for anything else."""
    if expires_at is None:
        return None
    if isinstance(expires_at, bool):
        raise TypeError("expires_at must be unix seconds, an aware datetime or None, not bool")
    if isinstance(expires_at, (int, float)):
        value = float(expires_at)
    else:
        import datetime  # here: only a provider that answers with a datetime pays for it

        if not isinstance(expires_at, datetime.datetime):
            raise TypeError(f"expires_at must be unix seconds, an aware datetime or None, "
                            f"not {type(expires_at).__name__}")
        if expires_at.tzinfo is None:
            raise ValueError("expires_at is a naive datetime: give it a timezone "
                             "(datetime.timezone.utc) or use unix seconds")
        value = expires_at.timestamp()
    if math.isnan(value):
        raise ValueError("expires_at is NaN")
    return value


def _describe(value: object) -> str:
    return "None" if value is None else type(value).__name__


def encode_answer(answer: object) -> tuple[bytes, float]:
    """What the library takes from a provider's answer: the token's bytes and its expiry (0.0
    when unknown). TypeError or ValueError saying what is wrong, never showing the token."""
    if isinstance(answer, AuthToken):
        token, expires_at = answer.token, answer.expires_at
    elif isinstance(answer, tuple):
        if len(answer) != 2:
            raise TypeError(f"it returned a tuple of {len(answer)} items, expected "
                            "(token, expires_at)")
        token, expires_at = answer[0], _seconds(answer[1])
    elif isinstance(answer, str):
        token, expires_at = answer, None
    else:
        raise TypeError(f"it returned {_describe(answer)}, expected a str, a (token, expires_at) "
                        "tuple or an AuthToken")
    if not isinstance(token, str):
        raise TypeError(f"its token is {_describe(token)}, not a str")
    if not token:
        raise ValueError("its token is empty")
    # The length first: a provider's answer of 50 MB was looked at a character at a time,
    # holding the interpreter's lock, before it was refused.
    if len(token) > MAX_TOKEN_BYTES:
        raise ValueError(f"its token is {len(token)} characters, over the limit of "
                         f"{MAX_TOKEN_BYTES} bytes")
    for offset, char in enumerate(token):
        if not "\x21" <= char <= "\x7e":
            what = "a space" if char == " " else f"U+{ord(char):04X}"
            raise ValueError(f"its token cannot be sent in a header: {what} at offset {offset} "
                             "(a token is printable ASCII without spaces)")
    return token.encode("ascii"), 0.0 if expires_at is None else expires_at


#: A token provider: the user id in, the token out (or raise: no token for that user).
TokenProvider: TypeAlias = "Callable[[str], Union[str, tuple[str, Union[float, datetime.datetime, None]], AuthToken]]"
