"""Through the binding: the event file on a full disk; a
read-only store; values that reach HTTP headers and messages; errors that say what happened;
Retry-After as RFC 9110 writes it, and ``retry_after`` on the exceptions.

The HTTP tests run a small real server on 127.0.0.1 (a socket and a thread) that answers each
request with the raw bytes a test gives it: a 1 MiB header, a Retry-After of ``1e999`` or an
HTTP date, terminal escape codes in a body. The reference server cannot send those."""

from __future__ import annotations

import email.utils
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import contentcards as cc
from conftest import IMPORT_PRELUDE


# -- a raw HTTP server ------------------------------------------------------------------------


class RawServer:
    """Answers every request with ``self.response`` (bytes), after reading the request."""

    def __init__(self) -> None:
        self.response = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"
        self.requests: list[bytes] = []
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    head, _, body = data.partition(b"\r\n\r\n")
                    match = re.search(rb"(?i)content-length:\s*(\d+)", head)
                    length = int(match.group(1)) if match else 0
                    while len(body) < length:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        body += chunk
                    self.requests.append(head)
                    conn.sendall(self.response)
                except OSError:
                    pass

    def answer(self, status: str, body: bytes = b"{}", headers: list[str] | None = None) -> None:
        lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close",
                 *(headers or [])]
        self.response = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def close(self) -> None:
        self._sock.close()


@pytest.fixture
def raw() -> Iterator[RawServer]:
    server = RawServer()
    try:
        yield server
    finally:
        server.close()


def remote(url: str, **options: Any) -> cc.ContentCards:
    config: dict[str, Any] = {"user_id": "u", "refresh_tokens": 0, "timeout_seconds": 5,
                              "source": {"url": url, "apiKey": "k"}}
    config.update(options)
    return cc.ContentCards(**config)


# -- item 8: the event file on a full disk ---------------------------------------------------

FULL_DISK_CHILD = IMPORT_PRELUDE + textwrap.dedent("""
    import json, resource, signal, sys
    import contentcards as cc
    path, limit = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write past the limit fails with EFBIG
    c = cc.ContentCards(user_id="u", refresh_tokens=0, events={"file": path},
                        event_batch_size=500, event_flush_interval_seconds=0)
    for _ in range(190):
        c.log_feed_displayed()
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))   # the disk fills
    outcomes = []
    for _ in range(3):
        try:
            outcomes.append(c.flush_events(2).delivered)
        except cc.ContentCardsError as e:
            outcomes.append(type(e).__name__ + ": " + e.message)
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    flushed = c.flush_events(5)   # space again: the retry delivers, once
    outcomes.append(flushed.delivered)
    print(json.dumps({"outcomes": outcomes, "pending": c.pending_events()}))
""")


def test_event_file_on_a_full_disk_is_never_half_written(tmp_path: Any) -> None:
    path = os.path.join(os.fspath(tmp_path), "events.jsonl")
    earlier = b'{"id":"earlier","type":"feed_displayed"}\n'
    with open(path, "wb") as f:
        f.write(earlier)
    limit = len(earlier) + 4000   # room for some of the 190 events, not all
    child = subprocess.run([sys.executable, "-c", FULL_DISK_CHILD, path, str(limit)],
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout)
    failures = report["outcomes"][:3]
    assert all(isinstance(o, str) and "StorageError" in o for o in failures), failures
    assert "cut back" in failures[0], failures[0]
    assert report["outcomes"][3] == 190 and report["pending"] == 0, report
    lines = open(path, "rb").read().split(b"\n")
    assert lines[-1] == b""   # ends with a whole line
    events = [json.loads(line) for line in lines[:-1]]   # every line is valid JSON
    assert events[0]["id"] == "earlier"
    ids = [e["id"] for e in events[1:]]
    assert len(ids) == 190 and len(set(ids)) == 190   # each event exactly once


# -- item 11: a read-only store --------------------------------------------------------------

READ_ONLY_CHILD = IMPORT_PRELUDE + textwrap.dedent("""
    import sys
    import contentcards as cc
    try:
        cc.ContentCards(user_id="u", storage_path=sys.argv[1])
        print("opened")
    except cc.ContentCardsError as e:
        print(type(e).__name__ + ": " + e.message)
""")


def _python_for(uid: int | None) -> str:
    """A Python that ``uid`` may run: ours, or as root the system's (ours may live in /root)."""
    if uid is None:
        return sys.executable
    for candidate in (sys.executable, "/usr/bin/python3"):
        try:
            probe = subprocess.run([candidate, "-c", "pass"], user=uid, capture_output=True,
                                   check=False, cwd="/")
        except OSError:
            continue
        if probe.returncode == 0:
            return candidate
    pytest.skip("no Python that uid 65534 can run")


def _open_as_owner(store: str, uid: int | None) -> str:
    """Opens the store in a child process, as ``uid`` when given (root dropping to it)."""
    from contentcards import _ffi
    env = dict(os.environ, CONTENTCARDS_LIBRARY=os.fspath(_ffi.library_path))
    python = _python_for(uid)
    child = subprocess.run([python, "-c", READ_ONLY_CHILD, store], capture_output=True,
                           text=True, timeout=60, user=uid, env=env, cwd="/")
    assert child.returncode == 0, child.stderr
    return child.stdout.strip()


@pytest.mark.parametrize("what", ["directory", "file"])
def test_a_read_only_store_says_read_only(tmp_path: Any, what: str) -> None:
    # Root writes anything: as root the store is given to nobody (65534), who opens it.
    uid = 65534 if os.geteuid() == 0 else None
    # Not under tmp_path: pytest's base directory is private to root, nobody cannot reach it.
    # Removed with all in it however the test ends.
    with tempfile.TemporaryDirectory(prefix="cc-read-only-") as base:
        store = os.path.join(base, "store")
        cc.ContentCards(user_id="u", storage_path=store, source={"file": "/nonexistent"}).close()
        if uid is not None:
            for root, dirs, files in os.walk(base):
                for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                    os.chown(name, uid, uid)
        database = os.path.join(store, "contentcards.sqlite")
        before = open(database, "rb").read()
        if what == "directory":
            os.chmod(store, 0o500)
        else:
            os.chmod(database, 0o400)
        try:
            message = _open_as_owner(store, uid)
            after = open(database, "rb").read()
        finally:
            os.chmod(store, 0o700)
    assert message.startswith("StorageError: "), message
    assert "read-only" in message and "corrupt" not in message, message
    assert ("chmod 700" if what == "directory" else "chmod 600") in message, message
    assert after == before


# -- item 10: headers and messages -----------------------------------------------------------

def test_control_characters_in_the_api_key_are_a_config_error(raw: RawServer) -> None:
    for key in ["k\r\nX-Admin: yes", "k\nX", "k\x1b[2J", "k\x00"]:
        with pytest.raises(cc.ConfigError, match="must not contain control characters"):
            remote(raw.url, source={"url": raw.url, "apiKey": key})
    assert raw.requests == []


def test_credentials_never_appear_in_messages(raw: RawServer) -> None:
    with pytest.raises(cc.ConfigError) as info:
        cc.ContentCards(source={"url": "ftp://alice:hunter2@example.com/?token=T0KEN&x=1"})
    assert "hunter2" not in info.value.message and "T0KEN" not in info.value.message
    assert "ftp://***@example.com/?token=***&x=1" in info.value.message
    # Nothing listening, credentials in the URL: the network error does not show them.
    dead = "http://bob:s3cret@127.0.0.1:9/base?api_key=K3Y"
    with remote(dead, source={"url": dead}, timeout_seconds=2) as c:
        with pytest.raises(cc.NetworkError) as err:
            c.refresh(2)
        text = err.value.message + json.dumps(c.diagnostics().raw)
    assert "s3cret" not in text and "bob" not in text and "K3Y" not in text, text


def test_server_text_is_escaped_and_bounded(raw: RawServer) -> None:
    raw.answer("500 Internal Server Error", b"\x1b[2J\x1b]0;pwned\x07oops\r\nInjected: 1" + b"x" * 10000)
    with remote(raw.url) as c:
        with pytest.raises(cc.ServerError) as info:
            c.refresh(5)
    message = info.value.message
    assert not any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in message), repr(message)
    assert "\\u001b[2J\\u001b]0;pwned\\u0007oops\\u000d\\u000aInjected: 1" in message
    assert len(message) < 400 and info.value.http_status == 500


# -- item 11: errors that say what happened --------------------------------------------------

def test_a_huge_response_header_is_a_network_error_not_out_of_memory(raw: RawServer) -> None:
    raw.answer("200 OK", b'{"cards":[]}', ["X-Big: " + "a" * (1 << 20)])
    with remote(raw.url) as c:
        with pytest.raises(cc.NetworkError) as info:
            c.refresh(5)
    assert "header" in info.value.message and "too large" in info.value.message, info.value.message
    # Many small headers, together over the bound (64 KiB): the same.
    raw.answer("200 OK", b'{"cards":[]}', [f"X-H{i}: {'b' * 100}" for i in range(1000)])
    with remote(raw.url) as c:
        with pytest.raises(cc.NetworkError, match="header"):
            c.refresh(5)


def test_an_error_status_with_a_long_body_is_a_server_error(raw: RawServer) -> None:
    raw.answer("500 Internal Server Error", b"E" * 5000)
    with remote(raw.url, max_payload_bytes=1000) as c:
        with pytest.raises(cc.ServerError) as info:
            c.refresh(5)
    assert info.value.http_status == 500 and "HTTP 500" in info.value.message
    # A 2xx over the limit is still "too large", naming the key to raise.
    raw.answer("200 OK", b'{"cards":[' + b" " * 5000 + b"]}")
    with remote(raw.url, max_payload_bytes=1000) as c:
        with pytest.raises(cc.ParseError, match="too large.*maxPayloadBytes"):
            c.refresh(5)


def test_a_source_file_over_the_limit_says_too_large(tmp_path: Any, sample_feed: str) -> None:
    size = os.path.getsize(sample_feed)
    with cc.ContentCards(refresh_tokens=0, max_payload_bytes=size - 1,
                         source={"file": sample_feed}) as c:
        with pytest.raises(cc.ContentCardsError) as info:
            c.refresh(5)
    assert not isinstance(info.value, cc.NetworkError)
    assert "too large" in info.value.message and str(size - 1) in info.value.message
    assert "maxPayloadBytes" in info.value.message


# -- item 12: Retry-After --------------------------------------------------------------------

def _refused(raw: RawServer, status: str, retry_after: str) -> cc.ContentCardsError:
    raw.answer(status, b"{}", [f"Retry-After: {retry_after}"])
    with remote(raw.url) as c:
        with pytest.raises((cc.RateLimitedError, cc.ServerError)) as info:
            c.refresh(5)
    return info.value


def test_retry_after_only_as_rfc_9110_writes_it(raw: RawServer) -> None:
    for junk in ["1e999", "7abc", "-3", "1.5", "soon", "Sun, 06 Nov 1994 08:49:37 UTC"]:
        error = _refused(raw, "429 Too Many Requests", junk)
        assert error.retry_after is None, (junk, error.message)
        assert "retry after" not in error.message, (junk, error.message)
    error = _refused(raw, "503 Service Unavailable", "12")
    assert isinstance(error, cc.ServerError) and error.retry_after == 12.0
    assert "retry after 12 s" in error.message


def test_retry_after_as_an_http_date(raw: RawServer) -> None:
    when = email.utils.formatdate(time.time() + 120, usegmt=True)   # IMF-fixdate
    error = _refused(raw, "429 Too Many Requests", when)
    assert isinstance(error, cc.RateLimitedError)
    assert error.retry_after is not None and 100 <= error.retry_after <= 121, error.message
    asctime = time.strftime("%a %b %e %H:%M:%S %Y", time.gmtime(time.time() + 300))
    error = _refused(raw, "503 Service Unavailable", asctime)
    assert error.retry_after is not None and 280 <= error.retry_after <= 301, (asctime, error.message)


def test_the_wait_reported_is_the_wait_enforced(raw: RawServer) -> None:
    raw.answer("429 Too Many Requests", b"{}", ["Retry-After: 31536000"])
    with remote(raw.url) as c:
        with pytest.raises(cc.RateLimitedError) as info:
            c.refresh(5)
        assert info.value.retry_after == 3600.0 and "retry after 3600 s" in info.value.message
        # The next refresh is refused locally for that long, and says the same wait.
        requests = len(raw.requests)
        with pytest.raises(cc.RateLimitedError) as again:
            c.refresh(5)
        assert len(raw.requests) == requests
        assert again.value.retry_after is not None and 3590 <= again.value.retry_after <= 3600
        assert "retry after 3600 s" in again.value.message or "retry after 3599 s" in again.value.message


def test_a_class_type_with_a_nul_reaches_the_stored_event_whole(tmp_path: Any) -> None:
    # Texts were handed to SQLite as C strings and cut at a NUL: the event of a card whose
    # class type holds one was stored with the part before it ("tile"), and delivered so.
    store = os.fspath(tmp_path)
    payload = json.dumps({"cards": [{"id": "a", "tp": "short_news", "ca": 1, "ds": "x",
                                     "e": {"class_type": "tile\u0000x"}}]})
    with cc.ContentCards(storage_path=store, user_id="u") as c:
        c.apply(payload)
        assert c.cards()[0].class_type == "tile\x00x"
        c.log_impression("a")
    with cc.ContentCards(storage_path=store, user_id="u") as c:
        events = c.list_pending_events().events
        assert [e.class_type for e in events] == ["tile\x00x"]
        assert c.cards()[0].class_type == "tile\x00x"
