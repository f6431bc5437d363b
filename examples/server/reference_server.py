"""Start the reference server (``cc_server.py``) from Python tests.

Usage::

    from reference_server import ReferenceServer

    with ReferenceServer() as server:               # the bundled sample feed
        server.fault(status=503, retry_after=1)     # next sync answers 503
        ...  # point the library at server.url
        assert len(server.events()) == 3

Standard library only. The server runs as a subprocess of ``sys.executable`` on an ephemeral
loopback port and is stopped (SIGTERM, then SIGKILL after 5 s) when the ``with`` block ends.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, NoReturn

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER_SCRIPT = os.path.join(HERE, "cc_server.py")
SAMPLE_FEED = os.path.join(os.path.dirname(HERE), "data", "sample_feed.json")
START_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 5.0
LISTENING_PREFIX = "listening on "


class ReferenceServerError(RuntimeError):
    """The server could not be started, or an admin call failed."""


class ReferenceServer:
    """A running ``cc_server.py``; a context manager.

    ``feed`` defaults to ``examples/data/sample_feed.json``; ``api_key`` makes the server require
    ``X-Api-Key``; ``secret`` makes it require per-user tokens (``Authorization: Bearer``, see
    ``token``); ``db`` keeps received events in a SQLite file; ``extra_args`` are passed on.
    """

    def __init__(self, feed: str | None = None, *, api_key: str | None = None,
                 secret: str | None = None, db: str | None = None, host: str = "127.0.0.1",
                 extra_args: tuple[str, ...] = ()) -> None:
        self.feed = feed or SAMPLE_FEED
        self.api_key = api_key
        self.secret = secret
        self.db = db
        self.host = host
        self.extra_args = tuple(extra_args)
        self.url = ""
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self._stderr: Any = None

    # -- life cycle ----------------------------------------------------------------------

    def __enter__(self) -> "ReferenceServer":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Starts the server and waits (up to 10 s) for its ``listening on`` line."""
        command = [sys.executable, SERVER_SCRIPT, "--feed", self.feed, "--host", self.host,
                   "--port", "0", "--quiet", *self.extra_args]
        if self.api_key is not None:
            command += ["--api-key", self.api_key]
        if self.secret is not None:
            command += ["--secret", self.secret]
        if self.db is not None:
            command += ["--db", self.db]
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self._stderr,
                                        stdin=subprocess.DEVNULL, text=True)
        line = self._read_first_line()
        if not line.startswith(LISTENING_PREFIX):
            self._fail(f"cc_server did not start (printed {line!r})")
        self.url = line[len(LISTENING_PREFIX):].strip()
        self.port = urllib.parse.urlsplit(self.url).port or 0

    def _read_first_line(self) -> str:
        assert self.process is not None and self.process.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        stdout = self.process.stdout
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        try:
            return lines.get(timeout=START_TIMEOUT_SECONDS)
        except queue.Empty:
            pass
        self._fail(f"cc_server printed nothing in {START_TIMEOUT_SECONDS} s")

    def stop(self) -> None:
        """Stops the server: SIGTERM, then SIGKILL if it is still running after 5 s."""
        process, self.process = self.process, None
        if process is not None:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(STOP_TIMEOUT_SECONDS)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def _fail(self, message: str) -> NoReturn:
        """Stops the server and raises, with what it wrote to stderr."""
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                pass  # stop() below kills it
        stderr = self._stderr_text()
        self.stop()
        raise ReferenceServerError(f"{message}: {stderr}" if stderr else message)

    def _stderr_text(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().strip()

    # -- admin API -----------------------------------------------------------------------

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        """Calls an admin endpoint and returns its decoded JSON answer."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise ReferenceServerError(f"{method} {path}: {exc.code} {exc.read()!r}") from None

    def events(self) -> list[dict[str, Any]]:
        """The events the server stored, in the order it received them."""
        return self.admin("GET", "/_admin/events")["events"]

    def event_stats(self) -> dict[str, Any]:
        """The whole ``/_admin/events`` answer: events, batches, accepted_batches, duplicates."""
        return self.admin("GET", "/_admin/events")

    def fault(self, **fault: Any) -> dict[str, Any]:
        """Queues a fault, e.g. ``fault(status=429, retry_after=2)`` or ``fault(path="/events",
        hang=True)``; returns the fault as the server understood it."""
        return self.admin("POST", "/_admin/fault", fault)["fault"]

    def faults(self) -> list[dict[str, Any]]:
        """The faults still pending."""
        return self.admin("GET", "/_admin/faults")["faults"]

    def set_cards(self, user_id: str, cards: list[dict[str, Any]]) -> dict[str, Any]:
        """Adds or replaces cards (short-key JSON) for a user; they count as changed now."""
        return self.admin("POST", "/_admin/cards", {"user_id": user_id, "cards": cards})

    def remove(self, user_id: str, ids: list[str]) -> dict[str, Any]:
        """Removes cards for a user; incremental syncs send them as ``"r": true``."""
        return self.admin("POST", "/_admin/remove", {"user_id": user_id, "ids": list(ids)})

    def force_full(self, user_id: str) -> dict[str, Any]:
        """Makes the user's next sync a full sync."""
        return self.admin("POST", "/_admin/force_full", {"user_id": user_id})

    def cards(self, user_id: str) -> dict[str, Any]:
        """The server's view of a user's cards (with change times and removals)."""
        query = urllib.parse.urlencode({"user_id": user_id})
        return self.admin("GET", f"/_admin/cards?{query}")

    def requests(self) -> list[dict[str, Any]]:
        """The sync and events requests received, oldest first."""
        return self.admin("GET", "/_admin/requests")["requests"]

    def images_served(self) -> list[str]:
        """The paths of the image requests answered (GET /images/...), oldest first."""
        return list(self.admin("GET", "/_admin/images")["paths"])

    def transfer(self, **options: Any) -> dict[str, Any]:
        """Sets transfer options, e.g. ``transfer(compress=False, etag=False)`` (the bytes an
        older client sees) or ``transfer(outage=True, outage_retry_after=5)``."""
        return self.admin("POST", "/_admin/transfer", options)["options"]

    def wire(self) -> dict[str, dict[str, int]]:
        """Bytes on the wire per client endpoint: ``{path: {requests, bytes_in, bytes_out}}``."""
        return self.admin("GET", "/_admin/transfer")["wire"]

    def token(self, user_id: str, ttl: float = 3600) -> str:
        """A token for the user signed with the server's current secret (``ttl`` seconds from
        now; negative: already expired)."""
        return self.admin("POST", "/_admin/token", {"user_id": user_id, "ttl": ttl})["token"]

    def set_secret(self, secret: str | None) -> None:
        """Rotates the token secret; None turns the token checks off."""
        self.admin("POST", "/_admin/secret", {"secret": secret})

    def auth(self) -> dict[str, Any]:
        """The token checks since the last reset: ``{"enabled", "accepted", "rejected"}``."""
        return self.admin("GET", "/_admin/auth")

    def hint(self, user_id: str) -> int:
        """Sends the user's open streams a hint; returns its id."""
        return self.admin("POST", "/_admin/hint", {"user_id": user_id})["id"]

    def stream_fault(self, **fault: Any) -> dict[str, Any]:
        """Queues a fault for the next stream connection, e.g. ``stream_fault(mode="silent")``
        or ``stream_fault(status=503, retry_after=1)``."""
        return self.admin("POST", "/_admin/stream_fault", fault)["fault"]

    def streams(self) -> dict[str, Any]:
        """``{"open", "opened", "by_user", "keepalive", "last_id", "faults"}``."""
        return self.admin("GET", "/_admin/streams")

    def reset(self) -> None:
        """Clears faults, events, counters and the request log; restores the feed."""
        self.admin("POST", "/_admin/reset", {})
