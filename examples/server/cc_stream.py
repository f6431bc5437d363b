"""The hint stream of the reference server (docs/WIRE.md, "Hint stream").

Standard library only. ``GET /content_cards/stream?user_id=U`` answers ``200`` with
``Content-Type: text/event-stream``, no Content-Length and ``Connection: close`` (the body ends
when the connection does), then writes, each at once:

* ``retry: 1000`` and a blank line, first;
* one ``id: N`` / ``event: hint`` / ``data: {"user_id":"U"}`` event per change of U's cards
  (``N`` increases over the whole server, whatever the user);
* ``: keepalive`` and a blank line after K seconds with nothing else sent (``--stream-keepalive``,
  default 15).

A ``Last-Event-ID`` lower than U's newest hint (or not a number) gets one hint at once: something
changed while the client was away. A hint carries no card data.

Each stream is a thread of the ThreadingHTTPServer. It waits on one Condition (a change wakes
it at once), looks every POLL_SECONDS whether its client has gone, ends on a failed write, and
ends when ``HintHub.close`` (server shutdown) shuts its socket down.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

from cc_common import HttpError, Json, Response, is_number, json_response, parse_json, require_object

STREAM_PATH = "/content_cards/stream"
DEFAULT_KEEPALIVE_SECONDS = 15.0
RETRY_MILLISECONDS = 1000
POLL_SECONDS = 0.25           # how often a waiting stream looks whether its client has gone
MAX_HINTS_PER_USER = 1024     # hints kept per user for the streams that have not sent them yet
FLOOD_DEFAULT = 1000
ENDLESS_RATE_DEFAULT = 65536  # bytes per second of an endless line
STREAM_MODES = ("endless_line", "flood", "silent", "silent_accept", "close_after", "status")


def hint_event(hint_id: int, user_id: str) -> bytes:
    """One hint, as the stream sends it."""
    data = json.dumps({"user_id": user_id}, separators=(",", ":"), ensure_ascii=False)
    return f"id: {hint_id}\nevent: hint\ndata: {data}\n\n".encode("utf-8")


@dataclass
class StreamFault:
    """A misbehaviour of the next ``times`` stream connections (those past the API key and the
    token check). ``mode``:

    * ``endless_line``: headers, then ``data: `` and ``rate`` bytes per second (default 65536)
      without a newline, until the client closes;
    * ``flood``: the retry line, then ``count`` hints (default 1000) as fast as possible, then
      an ordinary stream;
    * ``silent``: headers, then nothing until the client closes;
    * ``silent_accept``: not even a status line, until the client closes;
    * ``close_after``: an ordinary stream closed after ``count`` hints (0: right after the
      retry line);
    * ``status``: answers ``status`` (e.g. 503), with ``Retry-After: retry_after`` when given;
      with ``"events": true`` its body is an event stream holding a hint (a client must read no
      events from a response that is not a 200).

    ``{"close_after": N}`` and ``{"status": S}`` may be written without a ``mode``.
    """

    mode: str
    times: int = 1
    count: int = 0
    status: int | None = None
    retry_after: float | None = None
    rate: int = ENDLESS_RATE_DEFAULT
    events: bool = False

    @classmethod
    def from_json(cls, doc: Json) -> "StreamFault":
        doc = dict(require_object(doc, "stream fault"))
        unknown = sorted(set(doc) - {"mode", "times", "count", "status", "retry_after", "rate",
                                     "close_after", "events"})
        if unknown:
            raise HttpError(400, f"unknown stream fault keys: {', '.join(unknown)}")
        if "close_after" in doc:
            doc.setdefault("mode", "close_after")
            doc.setdefault("count", doc.pop("close_after"))
        if "status" in doc:
            doc.setdefault("mode", "status")
        mode = doc.get("mode")
        if mode not in STREAM_MODES:
            raise HttpError(400, f"'mode' must be one of {', '.join(STREAM_MODES)}")
        fault = cls(mode=mode)
        fault.times = _integer(doc, "times", 1, minimum=1)
        fault.count = _integer(doc, "count", FLOOD_DEFAULT if mode == "flood" else 0, minimum=0)
        fault.rate = _integer(doc, "rate", ENDLESS_RATE_DEFAULT, minimum=1)
        if mode == "status":
            fault.status = _integer(doc, "status", 503, minimum=200)
            if fault.status > 599:
                raise HttpError(400, "'status' must be an HTTP status between 200 and 599")
            retry_after = doc.get("retry_after")
            if retry_after is not None and (not is_number(retry_after) or retry_after < 0):
                raise HttpError(400, "'retry_after' must be a number >= 0")
            fault.retry_after = retry_after
            events = doc.get("events", False)
            if not isinstance(events, bool):
                raise HttpError(400, "'events' must be true or false")
            fault.events = events
        elif "status" in doc or "retry_after" in doc or "events" in doc:
            raise HttpError(400, "'status', 'retry_after' and 'events' go with mode 'status' only")
        return fault

    def to_json(self) -> Json:
        out: dict[str, Json] = {"mode": self.mode, "times": self.times}
        if self.mode in ("flood", "close_after"):
            out["count"] = self.count
        if self.mode == "endless_line":
            out["rate"] = self.rate
        if self.mode == "status":
            out["status"] = self.status
            if self.retry_after is not None:
                out["retry_after"] = self.retry_after
            if self.events:
                out["events"] = True
        return out


def _integer(doc: dict[str, Json], key: str, default: int, *, minimum: int) -> int:
    value = doc.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise HttpError(400, f"'{key}' must be an integer >= {minimum}")
    return value


class StreamClosed(Exception):
    """The client went away, or the server is shutting down."""


class HintHub:
    """Hints per user, the open streams and the stream faults; one Condition guards them all."""

    def __init__(self, keepalive: float = DEFAULT_KEEPALIVE_SECONDS) -> None:
        self.cond = threading.Condition()
        self.default_keepalive = keepalive
        self.keepalive = keepalive
        self.last_id = 0                        # never goes back, not even on reset
        self.hints: dict[str, deque[int]] = {}  # user -> recent hint ids, oldest first
        self.sockets: dict[int, tuple[str, socket.socket]] = {}  # open streams
        self.opened = 0
        self.faults: list[StreamFault] = []
        self.closing = False

    # -- what the admin API and the card changes call ------------------------------------

    def publish(self, user_id: str) -> int:
        """A hint for ``user_id`` to every stream of that user; returns its id."""
        with self.cond:
            self.last_id += 1
            self.hints.setdefault(user_id, deque(maxlen=MAX_HINTS_PER_USER)).append(self.last_id)
            self.cond.notify_all()
            return self.last_id

    def add_fault(self, fault: StreamFault) -> None:
        with self.cond:
            self.faults.append(fault)

    def _take_fault(self) -> StreamFault | None:
        with self.cond:
            if not self.faults:
                return None
            fault = self.faults[0]
            fault.times -= 1
            if fault.times <= 0:
                self.faults.pop(0)
            return fault

    def report(self) -> Json:
        with self.cond:
            by_user: dict[str, int] = {}
            for user_id, _ in self.sockets.values():
                by_user[user_id] = by_user.get(user_id, 0) + 1
            return {"open": len(self.sockets), "opened": self.opened, "by_user": by_user,
                    "keepalive": self.keepalive, "last_id": self.last_id,
                    "faults": [f.to_json() for f in self.faults]}

    def reset(self) -> None:
        """Clears faults, the opened count and the hints kept (ids keep increasing); restores
        the keepalive. Open streams stay open."""
        with self.cond:
            self.faults.clear()
            self.hints.clear()
            self.opened = 0
            self.keepalive = self.default_keepalive
            self.cond.notify_all()

    def close(self) -> None:
        """Server shutdown: ends every stream (their sockets are shut down)."""
        with self.cond:
            self.closing = True
            sockets = [sock for _, sock in self.sockets.values()]
            self.cond.notify_all()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # -- one stream ----------------------------------------------------------------------

    def serve(self, handler: Any, user_id: str, last_event_id: str | None,
              unavailable: Response | None, note: Callable[..., None]) -> None:
        """Answers a stream request that passed the API key and token checks: a fault, else
        ``unavailable`` (the simulated outage) when given, else the stream."""
        fault = self._take_fault()
        if fault is not None:
            note(fault=fault.to_json())
        if fault is not None and fault.mode == "status":
            headers = {}
            if fault.retry_after is not None:
                value = fault.retry_after
                headers["Retry-After"] = str(int(value)) if float(value).is_integer() else str(value)
            note(status=fault.status)
            if fault.events:
                with self.cond:
                    self.last_id += 1
                    hint_id = self.last_id
                body = f"retry: {RETRY_MILLISECONDS}\n\n".encode() + hint_event(hint_id, user_id)
                handler._send(Response(fault.status or 503, body, "text/event-stream", headers))
                return
            handler._send(json_response(fault.status or 503, {"error": "injected fault",
                                                             "status": fault.status}, headers))
            return
        if fault is None and unavailable is not None:
            note(status=unavailable.status)
            handler._send(unavailable)
            return
        mode = fault.mode if fault is not None else None
        sock: socket.socket = handler.connection
        with self.cond:
            if self.closing:
                return
            newest = self._newest(user_id)
            self.sockets[id(sock)] = (user_id, sock)
            self.opened += 1
        try:
            if mode == "silent_accept":
                self._wait_until_gone(sock)
                return
            note(status=200)
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Cache-Control", "no-store")
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.flush()
            if mode == "silent":
                self._wait_until_gone(sock)
            elif mode == "endless_line":
                self._endless_line(handler.wfile, fault.rate if fault is not None else 1)
            else:
                self._stream(handler.wfile, sock, user_id, newest, parse_last_id(last_event_id),
                             fault)
        except (StreamClosed, OSError):
            pass  # the client went away (broken pipe, reset) or the server is stopping
        finally:
            handler.close_connection = True
            with self.cond:
                self.sockets.pop(id(sock), None)

    def _newest(self, user_id: str) -> int:
        hints = self.hints.get(user_id)
        return hints[-1] if hints else 0

    def _stream(self, wfile: Any, sock: socket.socket, user_id: str, newest: int,
                last_id: int | None, fault: StreamFault | None) -> None:
        limit = fault.count if fault is not None and fault.mode == "close_after" else None
        sent_events = 0
        wfile.write(f"retry: {RETRY_MILLISECONDS}\n\n".encode("ascii"))
        if fault is not None and fault.mode == "flood":
            self._flood(wfile, user_id, fault.count)
        # Catch-up: one hint at once when U changed since the client's last event id.
        pending = [newest] if last_id is not None and 0 < newest and last_id < newest else []
        sent_upto = newest
        last_write = time.monotonic()
        while True:
            for hint_id in pending:
                if limit is not None and sent_events >= limit:
                    return
                wfile.write(hint_event(hint_id, user_id))
                sent_events += 1
                last_write = time.monotonic()
            if limit is not None and sent_events >= limit:
                return
            with self.cond:
                if self.closing:
                    raise StreamClosed
                pending = [i for i in self.hints.get(user_id, ()) if i > sent_upto]
                if not pending:
                    due = last_write + self.keepalive - time.monotonic()
                    if due > 0:
                        self.cond.wait(min(POLL_SECONDS, due))
                    if self.closing:
                        raise StreamClosed
                    pending = [i for i in self.hints.get(user_id, ()) if i > sent_upto]
                keepalive = self.keepalive
            if pending:
                sent_upto = pending[-1]
            elif time.monotonic() - last_write >= keepalive:
                wfile.write(b": keepalive\n\n")
                last_write = time.monotonic()
            elif client_gone(sock):
                return

    def _flood(self, wfile: Any, user_id: str, count: int) -> None:
        """``count`` hints with fresh ids, written in batches as fast as the socket takes them."""
        with self.cond:
            first = self.last_id + 1
            self.last_id += count
        batch: list[bytes] = []
        for hint_id in range(first, first + count):
            batch.append(hint_event(hint_id, user_id))
            if len(batch) == 64:
                wfile.write(b"".join(batch))
                batch.clear()
        if batch:
            wfile.write(b"".join(batch))

    def _endless_line(self, wfile: Any, rate: int) -> None:
        """``data: `` and then ``x`` at ``rate`` bytes per second, never a newline."""
        wfile.write(b"data: ")
        tick = 0.05
        chunk = b"x" * max(1, int(rate * tick))
        while True:
            wfile.write(chunk)
            with self.cond:
                if self.closing or self.cond.wait_for(lambda: self.closing, tick):
                    raise StreamClosed

    def _wait_until_gone(self, sock: socket.socket) -> None:
        while True:
            with self.cond:
                if self.closing or self.cond.wait_for(lambda: self.closing, POLL_SECONDS):
                    raise StreamClosed
            if client_gone(sock):
                return


def parse_last_id(header: str | None) -> int | None:
    """The Last-Event-ID as an int; None without the header, -1 when it is not a number (the
    client has lost its place: it gets the newest hint)."""
    if header is None:
        return None
    text = header.strip()
    return int(text) if text.isdigit() and len(text) < 19 else -1


def client_gone(sock: socket.socket) -> bool:
    """True when the client closed its side (or the socket failed). Looks without waiting;
    what the client sends on a stream is read and ignored."""
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN | select.POLLHUP | select.POLLERR)
            events = poller.poll(0)
            if not events:
                return False
            if events[0][1] & (select.POLLHUP | select.POLLERR) and not events[0][1] & select.POLLIN:
                return True
        else:
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return False
        return not sock.recv(4096)
    except OSError:
        return True


# --------------------------------------------------------------------------------------------
# Admin endpoints: handler(request handler, raw body) -> Response
# --------------------------------------------------------------------------------------------

def _hub(handler: Any) -> HintHub:
    return handler.server.hints


def admin_hint(handler: Any, raw: bytes) -> Response:
    """``POST /_admin/hint {"user_id": U}`` -> ``{"user_id": U, "id": N}``."""
    doc = require_object(parse_json(raw), "body")
    user_id = doc.get("user_id")
    if not isinstance(user_id, str):
        raise HttpError(400, "'user_id' must be a string")
    return json_response(200, {"user_id": user_id, "id": _hub(handler).publish(user_id)})


def admin_stream_fault(handler: Any, raw: bytes) -> Response:
    """``POST /_admin/stream_fault {"mode": M, ...}`` (see ``StreamFault``)."""
    fault = StreamFault.from_json(parse_json(raw))
    _hub(handler).add_fault(fault)
    return json_response(200, {"fault": fault.to_json()})


def admin_streams(handler: Any, raw: bytes) -> Response:
    """``GET /_admin/streams`` -> ``{"open", "opened", "by_user", "keepalive", "last_id", "faults"}``."""
    return json_response(200, _hub(handler).report())


def admin_set_streams(handler: Any, raw: bytes) -> Response:
    """``POST /_admin/streams {"keepalive": SECONDS}``: the keepalive of every stream, open ones
    included (until ``/_admin/reset``)."""
    doc = require_object(parse_json(raw), "body")
    keepalive = doc.get("keepalive")
    if set(doc) != {"keepalive"} or not is_number(keepalive) or keepalive <= 0:
        raise HttpError(400, "expected {\"keepalive\": SECONDS} with SECONDS > 0")
    hub = _hub(handler)
    with hub.cond:
        hub.keepalive = float(keepalive)
        hub.cond.notify_all()
    return json_response(200, hub.report())


ADMIN_ROUTES = {
    ("POST", "/_admin/hint"): admin_hint,
    ("POST", "/_admin/stream_fault"): admin_stream_fault,
    ("GET", "/_admin/streams"): admin_streams,
    ("POST", "/_admin/streams"): admin_set_streams,
}
