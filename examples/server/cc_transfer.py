"""Transfers of the reference server: compression, validators, outage, bytes on the wire.

Standard library only; see docs/WIRE.md, "Compression" and "Conditional sync".
"""

from __future__ import annotations

import hashlib
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any

from cc_common import (MAX_BODY_BYTES, SYNC_PATH, HttpError, Json, Response, is_number,
                       json_response, require_object)


COMPRESS_MIN_BYTES = 256  # below this gzip's 18 bytes of frame cost more than they save


@dataclass
class TransferOptions:
    """What ``POST /_admin/transfer`` sets (every key optional):

    * ``compress`` (true): gzip sync responses for clients that accept it;
    * ``etag`` (true): send ``ETag`` and answer ``If-None-Match`` with 304;
    * ``gzip_events`` (true): accept compressed event batches (else 415, and the client falls
      back to plain JSON);
    * ``outage`` (false): answer every client request 503, as a server that is down would
      (with ``Retry-After: outage_retry_after`` when that is set) -- the fleet simulation;
    * ``outage_retry_after`` (null): seconds, or null for no Retry-After.

    ``compress`` and ``etag`` false give the bytes an older client sees (the "before" of the
    bandwidth figures).
    """

    compress: bool = True
    etag: bool = True
    gzip_events: bool = True
    outage: bool = False
    outage_retry_after: float | None = None

    def update(self, doc: Json) -> None:
        doc = require_object(doc, "body")
        for key, value in doc.items():
            if key in ("compress", "etag", "gzip_events", "outage"):
                if not isinstance(value, bool):
                    raise HttpError(400, f"'{key}' must be a boolean")
                setattr(self, key, value)
            elif key == "outage_retry_after":
                if value is not None and (not is_number(value) or value < 0):
                    raise HttpError(400, "'outage_retry_after' must be a number >= 0 or null")
                self.outage_retry_after = value
            else:
                raise HttpError(400, f"unknown transfer option '{key}'")


class WireCounters:
    """Bytes on the wire per client endpoint (request and response, headers included), and the
    arrival time of each sync request (the fleet simulation's request rate; at most
    MAX_ARRIVALS kept)."""

    MAX_ARRIVALS = 2_000_000

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_path: dict[str, dict[str, int]] = {}
        self.arrivals: list[float] = []

    def arrived(self, path: str) -> None:
        if path == SYNC_PATH:
            with self.lock:
                if len(self.arrivals) < self.MAX_ARRIVALS:
                    self.arrivals.append(time.time())

    def add(self, path: str, received: int, sent: int) -> None:
        with self.lock:
            entry = self.by_path.setdefault(path, {"requests": 0, "bytes_in": 0, "bytes_out": 0})
            entry["requests"] += 1
            entry["bytes_in"] += received
            entry["bytes_out"] += sent

    def report(self) -> Json:
        with self.lock:
            return {path: dict(entry) for path, entry in self.by_path.items()}

    def clear(self) -> None:
        with self.lock:
            self.by_path.clear()
            self.arrivals.clear()

    def arrivals_report(self) -> Json:
        with self.lock:
            return {"sync": list(self.arrivals)}


class CountingReader:
    """A request stream that counts the bytes read from it."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.count = 0

    def read(self, *args: Any) -> bytes:
        data = self.raw.read(*args)
        self.count += len(data)
        return data

    def readline(self, *args: Any) -> bytes:
        data = self.raw.readline(*args)
        self.count += len(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


class CountingWriter:
    """A response stream that counts the bytes written to it."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.count = 0

    def write(self, data: bytes) -> int:
        self.count += len(data)
        return self.raw.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def sync_validator(user_id: str, latest: int, cards: int) -> str:
    """The ETag of a user's cards: it changes whenever any card does (every change ticks the
    change clock, so ``latest`` moves), and is the user's own (the user id is in it)."""
    digest = hashlib.sha256(f"{user_id}\0{latest}\0{cards}".encode("utf-8")).hexdigest()[:20]
    return f'"{digest}"'



def validator_matches(header: str | None, validator: str) -> bool:
    """If-None-Match (RFC 9110 13.1.2): ``*`` or a list of tags, compared weakly."""
    if not header:
        return False
    if header.strip() == "*":
        return True
    strip = lambda tag: tag.strip().removeprefix("W/")  # noqa: E731
    return any(strip(tag) == strip(validator) for tag in header.split(","))


def accepts_gzip(header: str | None) -> bool:
    """True when Accept-Encoding lists gzip (or ``*``) without ``q=0``."""
    for item in (header or "").split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() in ("gzip", "x-gzip", "*"):
            q = params.replace(" ", "").lower()
            if q.startswith("q="):
                try:
                    if float(q[2:]) <= 0:
                        continue
                except ValueError:
                    continue
            return True
    return False


def gzip_response(response: Response) -> Response:
    """The response gzip-compressed (level 6), unless small or already encoded."""
    if len(response.body) < COMPRESS_MIN_BYTES or "Content-Encoding" in response.headers:
        return response
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    body = compressor.compress(response.body) + compressor.flush()
    return Response(response.status, body, response.content_type,
                    {**response.headers, "Content-Encoding": "gzip", "Vary": "Accept-Encoding"})


def decode_request_body(raw: bytes, encoding: str | None, options: TransferOptions) -> bytes:
    """An events body decoded by its Content-Encoding, bounded to MAX_BODY_BYTES decoded:
    a gzip bomb is a 413, never an allocation."""
    coding = (encoding or "identity").strip().lower()
    if coding == "identity":
        return raw
    if coding not in ("gzip", "x-gzip", "deflate") or not options.gzip_events:
        raise HttpError(415, f"Content-Encoding {coding!r} is not accepted here: send the JSON as it is")
    # wbits 47: gzip or zlib, detected from the header (a "deflate" body is zlib, RFC 9110).
    decompressor = zlib.decompressobj(47)
    try:
        data = decompressor.decompress(raw, MAX_BODY_BYTES + 1)
    except zlib.error as exc:
        raise HttpError(400, f"the body does not decode as {coding}: {exc}") from None
    if len(data) > MAX_BODY_BYTES or decompressor.unconsumed_tail:
        raise HttpError(413, f"body larger than {MAX_BODY_BYTES} bytes once decompressed")
    if not decompressor.eof:
        raise HttpError(400, f"the body is a truncated {coding} stream")
    return data


_GZIP_BOMB: bytes | None = None


def gzip_bomb() -> bytes:
    """256 KiB of gzip that inflate to 256 MiB of zeros (made once, on first use)."""
    global _GZIP_BOMB
    if _GZIP_BOMB is None:
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        chunk = bytes(1 << 20)
        _GZIP_BOMB = b"".join(compressor.compress(chunk) for _ in range(256)) + compressor.flush()
    return _GZIP_BOMB


def outage_response(options: TransferOptions) -> Response:
    headers = {}
    if options.outage_retry_after is not None:
        value = options.outage_retry_after
        headers["Retry-After"] = str(int(value)) if float(value).is_integer() else str(value)
    return json_response(503, {"error": "the service is down (simulated outage)"}, headers)
