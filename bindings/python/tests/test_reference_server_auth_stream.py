"""The reference server alone (no library): per-user tokens and the hint stream, over real HTTP.

Tokens: mint and verify, every refusal reason with its 401, the admin endpoints. The stream: its
headers and retry line, a hint within a second of a change, Last-Event-ID, the keepalive, each
stream fault, 100 streams at once, and a shutdown that does not wait for open streams.

Needs only the standard library and pytest (``--noconftest`` runs it without a built library).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import selectors
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

SERVER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))), "examples", "server")
if SERVER_DIR not in sys.path:
    sys.path.insert(0, SERVER_DIR)

from cc_auth import b64url, mint_token, verify_token  # noqa: E402
from reference_server import ReferenceServer  # noqa: E402

SECRET = "test-secret"
API_KEY = "k"
EVENT = {"id": "e-1", "type": "click", "card_id": "tile-1", "class_type": None,
         "user_id": "alice", "time": 1700000000}


@pytest.fixture(scope="module")
def _process() -> Iterator[ReferenceServer]:
    with ReferenceServer(api_key=API_KEY, secret=SECRET) as server:
        yield server


@pytest.fixture
def server(_process: ReferenceServer) -> ReferenceServer:
    """A server that requires X-Api-Key and tokens signed with SECRET; reset."""
    _process.set_secret(SECRET)
    _process.reset()
    return _process


def call(server: ReferenceServer, method: str, path: str, body: Any = None,
         token: str | None = None, api_key: str | None = API_KEY,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    """One client request: (status, headers, decoded JSON body or None)."""
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    if api_key is not None:
        all_headers["X-Api-Key"] = api_key
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.url + path, data=data, method=method,
                                     headers=all_headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, head, raw = response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        status, head, raw = exc.code, dict(exc.headers), exc.read()
    try:
        return status, head, json.loads(raw) if raw else None
    except ValueError:
        return status, head, None


def sync(server: ReferenceServer, user: str, **options: Any) -> tuple[int, dict[str, str], Any]:
    return call(server, "POST", "/content_cards/sync", {"user_id": user}, **options)


def assert_refused(answer: tuple[int, dict[str, str], Any], reason: str) -> None:
    status, headers, body = answer
    assert status == 401
    assert body == {"error": "invalid_token", "reason": reason}
    assert headers["WWW-Authenticate"] == \
        f'Bearer error="invalid_token", error_description="{reason}"'


# --------------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------------

def test_mint_and_verify() -> None:
    now = 1_700_000_000
    token = mint_token("s", "alice", now + 60)
    prefix, payload, sig = token.split(".")
    assert prefix == "v1"
    assert json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))) == \
        {"sub": "alice", "exp": now + 60}
    assert "=" not in token
    expected = hmac.new(b"s", f"v1.{payload}".encode("ascii"), hashlib.sha256).digest()
    assert sig == b64url(expected)
    assert verify_token("s", token, "alice", now) is None
    assert verify_token("s", None, "alice", now) == "missing"
    assert verify_token("s", "v1.abc", "alice", now) == "malformed"
    assert verify_token("s", "v2" + token[2:], "alice", now) == "malformed"
    assert verify_token("s", f"v1.{b64url(b'[1]')}.{sig}", "alice", now) == "malformed"
    assert verify_token("s", f"v1.{payload}.{sig[:-2]}!!", "alice", now) == "malformed"
    assert verify_token("other", token, "alice", now) == "signature"
    assert verify_token("s", f"v1.{payload}.{b64url(bytes(32))}", "alice", now) == "signature"
    assert verify_token("s", token, "alice", now + 60) == "expired"
    assert verify_token("s", token, "bob", now) == "user"
    unicode_user = mint_token("s", "zoë", now + 1)
    assert verify_token("s", unicode_user, "zoë", now) is None


def test_admin_token(server: ReferenceServer) -> None:
    answer = server.admin("POST", "/_admin/token", {"user_id": "alice", "ttl": 120})
    assert abs(answer["exp"] - (time.time() + 120)) < 5
    assert verify_token(SECRET, answer["token"], "alice", time.time()) is None
    expired = server.admin("POST", "/_admin/token", {"user_id": "alice", "ttl": -10})
    assert verify_token(SECRET, expired["token"], "alice", time.time()) == "expired"
    default = server.admin("POST", "/_admin/token", {"user_id": "alice"})
    assert abs(default["exp"] - (time.time() + 3600)) < 5


def test_each_refusal_over_http(server: ReferenceServer) -> None:
    token = server.token("alice")
    assert sync(server, "alice", token=token)[0] == 200
    assert_refused(sync(server, "alice"), "missing")
    assert_refused(sync(server, "alice", token="not-a-token"), "malformed")
    assert_refused(sync(server, "alice", headers={"Authorization": f"Basic {token}"}),
                   "malformed")
    assert_refused(sync(server, "alice", token=server.token("alice", ttl=-10)), "expired")
    assert_refused(sync(server, "bob", token=token), "user")
    server.set_secret("rotated")
    assert_refused(sync(server, "alice", token=token), "signature")
    assert sync(server, "alice", token=server.token("alice"))[0] == 200

    report = server.auth()
    assert report["enabled"] is True and report["accepted"] == 2
    assert [(r["path"], r["reason"], r["user_id"]) for r in report["rejected"]] == [
        ("/content_cards/sync", "missing", "alice"), ("/content_cards/sync", "malformed", "alice"),
        ("/content_cards/sync", "malformed", "alice"), ("/content_cards/sync", "expired", "alice"),
        ("/content_cards/sync", "user", "bob"), ("/content_cards/sync", "signature", "alice")]
    # The request log says whether a token came, and whose, never the token itself.
    log = [r for r in server.requests() if r["path"] == "/content_cards/sync"]
    assert [r["authorization_present"] for r in log] == [True, False] + [True] * 6
    assert log[0]["token_sub"] == "alice"
    assert token not in json.dumps(server.requests())
    server.reset()
    assert server.auth() == {"enabled": True, "accepted": 0, "rejected": []}


def test_events_need_a_token_of_every_events_user(server: ReferenceServer) -> None:
    token = server.token("alice")
    batch = {"events": [EVENT, {**EVENT, "id": "e-2", "user_id": "bob"}]}
    assert_refused(call(server, "POST", "/events", batch), "missing")
    assert_refused(call(server, "POST", "/events", batch, token=token), "user")
    assert server.events() == []  # nothing of a refused batch is stored
    assert server.auth()["rejected"][-1] == {"path": "/events", "reason": "user",
                                             "user_id": "bob", "sub": "alice"}
    status, _, body = call(server, "POST", "/events", {"events": [EVENT]}, token=token)
    assert status == 200 and body == {"accepted": 1, "duplicates": 0}


def test_api_key_and_token_are_independent(server: ReferenceServer) -> None:
    token = server.token("alice")
    status, headers, body = sync(server, "alice", token=token, api_key=None)
    assert status == 401 and "API key" in body["error"] and "WWW-Authenticate" not in headers
    assert_refused(sync(server, "alice", api_key=API_KEY), "missing")
    server.set_secret(None)
    assert server.auth()["enabled"] is False
    assert sync(server, "alice")[0] == 200
    assert sync(server, "alice", token="anything at all")[0] == 200
    status, _, _ = call(server, "GET", "/images/a.png", api_key=None)
    assert status == 200  # images never need a token (nor a key)


# --------------------------------------------------------------------------------------------
# The stream
# --------------------------------------------------------------------------------------------

class Stream:
    """A raw client of GET /content_cards/stream."""

    def __init__(self, server: ReferenceServer, user: str, token: str | None = None,
                 last_event_id: str | None = None, api_key: str | None = API_KEY) -> None:
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        lines = [f"GET /content_cards/stream?user_id={user} HTTP/1.1", "Host: 127.0.0.1",
                 "Accept: text/event-stream"]
        if token is not None:
            lines.append(f"Authorization: Bearer {token}")
        if api_key is not None:
            lines.append(f"X-Api-Key: {api_key}")
        if last_event_id is not None:
            lines.append(f"Last-Event-ID: {last_event_id}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.buffer = b""
        self.closed = False

    def _fill(self, deadline: float) -> bool:
        """Reads what comes before ``deadline``; False when nothing came in time or at EOF."""
        remaining = deadline - time.monotonic()
        if remaining <= 0 or self.closed:
            return False
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return False
        if not data:
            self.closed = True
            return False
        self.buffer += data
        return True

    def read_until(self, marker: bytes, timeout: float = 2.0) -> bytes | None:
        """The bytes up to and including ``marker``, or None if it did not come in time."""
        deadline = time.monotonic() + timeout
        while marker not in self.buffer:
            if not self._fill(deadline):
                return None
        head, _, self.buffer = self.buffer.partition(marker)
        return head + marker

    def head(self) -> tuple[int, dict[str, str]]:
        raw = self.read_until(b"\r\n\r\n")
        assert raw is not None, "no response head"
        status_line, *lines = raw.decode("latin-1").strip().split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines)}
        return int(status_line.split()[1]), headers

    def block(self, timeout: float = 2.0) -> str | None:
        """The next event or comment block (without its blank line), or None."""
        raw = self.read_until(b"\n\n", timeout)
        return None if raw is None else raw[:-2].decode()

    def hint(self, timeout: float = 2.0) -> tuple[int, dict[str, Any]]:
        """The next hint event as (id, data), skipping keepalives."""
        while True:
            block = self.block(timeout)
            assert block is not None, "no hint came"
            if not block.startswith(":"):
                fields = dict(line.split(": ", 1) for line in block.split("\n"))
                assert fields["event"] == "hint"
                return int(fields["id"]), json.loads(fields["data"])

    def at_eof(self, timeout: float = 2.0) -> bool:
        deadline = time.monotonic() + timeout
        while not self.closed and time.monotonic() < deadline:
            self._fill(deadline)
        return self.closed

    def close(self) -> None:
        self.sock.close()


def open_stream(server: ReferenceServer, user: str, **options: Any) -> Stream:
    """A stream that got its 200 and its retry line."""
    stream = Stream(server, user, token=server.token(user), **options)
    status, _ = stream.head()
    assert status == 200
    assert stream.block() == "retry: 1000"
    return stream


def wait_for(predicate: Any, timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


CARD = {"id": "new-1", "tp": "short_news", "ca": 1763799999, "ds": "fresh"}


def test_stream_head_retry_and_hints(server: ReferenceServer) -> None:
    stream = Stream(server, "alice", token=server.token("alice"))
    status, headers = stream.head()
    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    assert headers["cache-control"] == "no-store"
    assert headers["connection"] == "close"
    assert "content-length" not in headers and "transfer-encoding" not in headers
    assert stream.block() == "retry: 1000"
    assert wait_for(lambda: server.streams()["by_user"] == {"alice": 1})

    started = time.monotonic()
    server.set_cards("alice", [CARD])
    first, data = stream.hint(timeout=1.0)
    assert time.monotonic() - started < 1.0
    assert data == {"user_id": "alice"}
    server.set_cards("bob", [CARD])  # another user's change is not alice's hint
    server.remove("alice", ["new-1"])
    second, _ = stream.hint()
    server.force_full("alice")
    third, _ = stream.hint()
    fourth = server.hint("alice")
    assert stream.hint()[0] == fourth
    assert first < second < third < fourth
    assert stream.block(timeout=0.3) is None  # nothing more: one event per change
    stream.close()
    assert wait_for(lambda: server.streams()["open"] == 0)
    assert server.streams()["opened"] == 1


def test_last_event_id_catch_up(server: ReferenceServer) -> None:
    newest = server.hint("alice")
    behind = open_stream(server, "alice", last_event_id=str(newest - 1))
    assert behind.hint(timeout=0.5) == (newest, {"user_id": "alice"})
    current = open_stream(server, "alice", last_event_id=str(newest))
    fresh = open_stream(server, "alice")
    lost = open_stream(server, "alice", last_event_id="garbage")
    assert lost.hint(timeout=0.5)[0] == newest
    assert current.block(timeout=0.3) is None and fresh.block(timeout=0.1) is None
    for stream in (behind, current, fresh, lost):
        stream.close()
    never = open_stream(server, "carol", last_event_id="0")  # carol never changed
    assert never.block(timeout=0.3) is None
    never.close()


def test_keepalive(server: ReferenceServer) -> None:
    stream = open_stream(server, "alice")
    server.admin("POST", "/_admin/streams", {"keepalive": 0.2})
    assert stream.block(timeout=1.0) == ": keepalive"
    assert stream.block(timeout=1.0) == ": keepalive"
    server.reset()
    assert server.streams()["keepalive"] == 15.0
    stream.close()


def test_stream_checks_key_and_token(server: ReferenceServer) -> None:
    for options, reason in (({}, "missing"), ({"token": server.token("bob")}, "user"),
                            ({"token": server.token("alice", ttl=-1)}, "expired")):
        stream = Stream(server, "alice", **options)
        status, headers = stream.head()
        assert status == 401
        assert headers["www-authenticate"].endswith(f'error_description="{reason}"')
        stream.close()
    stream = Stream(server, "alice", token=server.token("alice"), api_key=None)
    assert stream.head()[0] == 401
    stream.close()
    assert server.streams()["opened"] == 0
    assert [r["reason"] for r in server.auth()["rejected"]] == ["missing", "user", "expired"]


def test_fault_endless_line(server: ReferenceServer) -> None:
    server.stream_fault(mode="endless_line", rate=200_000)
    stream = Stream(server, "alice", token=server.token("alice"))
    assert stream.head()[0] == 200
    assert stream.read_until(b"data: ") == b"data: "
    deadline = time.monotonic() + 3
    while len(stream.buffer) < 20_000 and stream._fill(deadline):
        pass
    assert len(stream.buffer) >= 20_000 and b"\n" not in stream.buffer
    stream.close()
    assert wait_for(lambda: server.streams()["open"] == 0)


def test_fault_flood(server: ReferenceServer) -> None:
    server.stream_fault(mode="flood", count=500)
    stream = open_stream(server, "alice")
    ids = [stream.hint()[0] for _ in range(500)]
    assert ids == list(range(ids[0], ids[0] + 500))
    later = server.hint("alice")  # the connection stays, as an ordinary stream
    assert stream.hint() == (later, {"user_id": "alice"})
    stream.close()


@pytest.mark.parametrize("mode", ["silent", "silent_accept"])
def test_fault_silent(server: ReferenceServer, mode: str) -> None:
    server.stream_fault(mode=mode)
    stream = Stream(server, "alice", token=server.token("alice"))
    if mode == "silent":
        assert stream.head()[0] == 200
    server.hint("alice")
    assert stream.read_until(b"\n", timeout=0.5) is None and stream.buffer == b""
    assert server.streams()["open"] == 1
    stream.close()
    assert wait_for(lambda: server.streams()["open"] == 0)


def test_fault_close_after(server: ReferenceServer) -> None:
    server.stream_fault(close_after=2)
    stream = open_stream(server, "alice")
    for _ in range(3):
        server.hint("alice")
    assert stream.hint()[0] < stream.hint()[0]
    assert stream.at_eof()
    assert stream.buffer == b""


def test_fault_status_for_the_next_connections(server: ReferenceServer) -> None:
    assert server.stream_fault(status=503, retry_after=2, times=2) == \
        {"mode": "status", "times": 2, "status": 503, "retry_after": 2}
    for _ in range(2):
        stream = Stream(server, "alice", token=server.token("alice"))
        status, headers = stream.head()
        assert status == 503 and headers["retry-after"] == "2"
        stream.close()
    open_stream(server, "alice").close()  # used up
    server.stream_fault(mode="silent")
    server.reset()  # clears stream faults
    open_stream(server, "alice").close()


def test_bad_stream_faults_are_refused(server: ReferenceServer) -> None:
    for body in ({}, {"mode": "nope"}, {"mode": "flood", "count": -1}, {"mode": "silent",
                                                                        "status": 503},
                 {"mode": "silent", "extra": 1}, {"status": 99}):
        status, _, _ = call(server, "POST", "/_admin/stream_fault", body)
        assert status == 400, body


def test_hundred_streams_each_get_a_hint(server: ReferenceServer) -> None:
    users = [f"user-{i % 10}" for i in range(100)]
    tokens = {user: server.token(user) for user in set(users)}
    streams = [Stream(server, user, token=tokens[user]) for user in users]
    try:
        for stream in streams:
            assert stream.head()[0] == 200
            assert stream.block() == "retry: 1000"
        assert wait_for(lambda: server.streams()["open"] == 100, timeout=5)
        ids = {user: server.hint(user) for user in sorted(set(users))}
        selector = selectors.DefaultSelector()
        for stream in streams:
            stream.sock.setblocking(False)
            selector.register(stream.sock, selectors.EVENT_READ, stream)
        waiting = set(range(100))
        deadline = time.monotonic() + 5
        while waiting and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.2):
                stream = key.data
                stream.buffer += stream.sock.recv(65536)
                if b"\n\n" in stream.buffer:
                    waiting.discard(streams.index(stream))
        assert not waiting
        for user, stream in zip(users, streams):
            assert stream.buffer.decode() == \
                f'id: {ids[user]}\nevent: hint\ndata: {{"user_id":"{user}"}}\n\n'
        selector.close()
    finally:
        for stream in streams:
            stream.close()
    assert wait_for(lambda: server.streams()["open"] == 0, timeout=5)


def test_shutdown_with_open_streams_is_prompt() -> None:
    with ReferenceServer(secret=SECRET) as server:
        streams = [open_stream(server, f"u-{i}") for i in range(5)]
        server.stream_fault(mode="silent")
        silent = Stream(server, "u-0", token=server.token("u-0"))
        assert silent.head()[0] == 200
        server.stream_fault(mode="silent_accept")
        mute = Stream(server, "u-0", token=server.token("u-0"))
        assert wait_for(lambda: server.streams()["open"] == 7)
        process = server.process
        assert process is not None
        started = time.monotonic()
        process.terminate()
        assert process.wait(5) == 0
        assert time.monotonic() - started < 2.0
        for stream in (*streams, silent, mute):
            assert stream.at_eof(timeout=1.0)
            stream.close()
