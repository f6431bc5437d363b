"""The host transport: the application does the HTTP itself (``ContentCards.set_transport``).

The transport function receives a :class:`TransportRequest` and returns a
:class:`TransportResponse`, or raises: an exception means the server could not be reached, and
the library keeps the cached cards / the pending events (the call that needed the request fails
with :class:`~contentcards.errors.TransportError`, whose ``__cause__`` is the exception). A
refresh calls the transport on a library thread of its own (so the refresh returns by its
timeout whatever the transport does); a flush calls it on the calling thread.
"""

from __future__ import annotations

import ctypes
import math

from ._value import Value

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from typing_extensions import TypeAlias  # typing's since Python 3.10

__all__ = ["TransportFunction", "TransportRequest", "TransportResponse"]

_set = object.__setattr__


class TransportRequest(Value):
    """One request the library needs sent.

    ``kind`` is "sync", "events" or "image" (a GET of ``url``, the image's full URL, no body);
    ``url`` the path (``/content_cards/sync`` or ``/events``)
    for ``{"callback": true}``; ``headers`` the "Name: value" strings; ``body`` the JSON body;
    ``timeout`` the seconds after which the transport should give up.
    """

    __slots__ = ("kind", "url", "headers", "body", "timeout")
    _not_hashed = frozenset({"headers"})
    kind: str
    url: str
    headers: list[str]
    body: bytes
    timeout: float

    def __init__(self, kind: str, url: str, headers: list[str], body: bytes,
                 timeout: float) -> None:
        _set(self, "kind", kind)
        _set(self, "url", url)
        _set(self, "headers", headers)
        _set(self, "body", body)
        _set(self, "timeout", timeout)

    @property
    def header_dict(self) -> dict[str, str]:
        """The headers as a dict (names as sent)."""
        out = {}
        for header in self.headers:
            name, _, value = header.partition(":")
            out[name.strip()] = value.strip()
        return out

    @classmethod
    def _from_struct(cls, request: Any) -> TransportRequest:
        def text(raw: bytes | None) -> str:
            return "" if raw is None else raw.decode("utf-8", "replace")

        headers = [text(request.headers[i]) for i in range(int(request.header_count))]
        body = b""
        if request.body and request.body_len:
            body = ctypes.string_at(request.body, int(request.body_len))
        return cls(kind=text(request.kind), url=text(request.url), headers=headers, body=body,
                   timeout=float(request.timeout_seconds))


class TransportResponse(Value):
    """The server's answer: the HTTP ``status``, the ``body`` (str is sent as UTF-8, decoded:
    compression is the transport's own business), the Retry-After seconds (None for none) and,
    for a sync, the response's ``etag`` (its ETag header, None for none): the library keeps it
    and sends it back as an ``If-None-Match`` header of the next sync; a 304 answer to that
    keeps the cached cards with no merge and no write (docs/WIRE.md, "Conditional sync")."""

    __slots__ = ("status", "body", "retry_after", "etag")
    status: int
    body: bytes | str
    retry_after: float | None
    etag: str | None

    def __init__(self, status: int, body: bytes | str = b"",
                 retry_after: float | None = None, etag: str | None = None) -> None:
        _set(self, "status", status)
        _set(self, "body", body)
        _set(self, "retry_after", retry_after)
        _set(self, "etag", etag)

    def _encoded(self) -> tuple[int, bytes, float]:
        status = self.status
        if isinstance(status, bool) or not isinstance(status, int):
            raise TypeError(f"TransportResponse.status must be an int, not {type(status).__name__}")
        if not 100 <= status <= 999:
            # Checked here: ctypes would pass 2**32 + 200 to C as 200.
            raise ValueError(f"TransportResponse.status {status} is not an HTTP status (100...999)")
        body = self.body
        if isinstance(body, str):
            data = body.encode("utf-8")
        elif isinstance(body, (bytes, bytearray, memoryview)):
            data = bytes(body)
        else:
            raise TypeError(f"TransportResponse.body must be bytes or str, not {type(body).__name__}")
        retry = -1.0 if self.retry_after is None else float(self.retry_after)
        if math.isnan(retry):
            raise ValueError("TransportResponse.retry_after is NaN")
        return status, data, retry


#: A host transport: a request in, a response out (or raise for a failure to reach the server).
TransportFunction: TypeAlias = "Callable[[TransportRequest], TransportResponse]"
