"""Ctrl-C during a blocking call: KeyboardInterrupt arrives at once, not when
the call times out. A child process refreshes against the reference server, which hangs the
request; the test sends SIGINT and times the KeyboardInterrupt."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

from conftest import IMPORT_PRELUDE
from reference_server import ReferenceServer

# The child sets Python's own SIGINT handler first: Python installs it only when SIGINT is not
# ignored at start, and a shell's background job (`make test &`, CI runners started so) starts
# with SIGINT ignored; the child then heard no Ctrl-C at all (both tests timed out), whatever
# the library did.
CHILD = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
import contentcards as cc
c = cc.ContentCards(user_id="u-int", refresh_tokens=0, timeout_seconds=30,
                    source={{"url": {url!r}, "apiKey": "k"}}, events={{"url": {url!r}}},
                    event_flush_interval_seconds=0)
print("ready", flush=True)
try:
    {call}
    print("returned", flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
    c.close()
"""


def _wait_until_held(server: ReferenceServer, path: str, limit: float = 15) -> None:
    """Waits (at most ``limit`` s) until the server holds the child's request to ``path``: the
    fault is noted in its request log before the handler starts to hang."""
    deadline = time.monotonic() + limit
    while not any(r.get("path") == path and r.get("fault") for r in server.requests()):
        assert time.monotonic() < deadline, f"no request to {path} reached the server in {limit} s"
        time.sleep(0.02)


def _interrupt(server: ReferenceServer, call: str, path: str) -> None:
    server.fault(hang=True, path=path, times=5)
    code = IMPORT_PRELUDE + textwrap.dedent(CHILD.format(url=server.url, call=call))
    # -X faulthandler: a child still running 20 s after SIGINT is sent SIGABRT, and the
    # Python stacks of its threads, written to stderr, say where it was.
    child = subprocess.Popen([sys.executable, "-X", "faulthandler", "-c", code],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        _wait_until_held(server, path)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        try:
            out, err = child.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGABRT)
            out, err = child.communicate(timeout=10)
            raise AssertionError(f"no KeyboardInterrupt 20 s after SIGINT; stdout {out!r}, "
                                 f"the child's threads:\n{err}") from None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert out.startswith("interrupted"), (out, err)
    arrived = float(out.split()[1])
    assert arrived - sent < 2, f"KeyboardInterrupt {arrived - sent:.1f} s after SIGINT"


def test_ctrl_c_interrupts_a_blocking_refresh(server: ReferenceServer) -> None:
    _interrupt(server, "c.refresh(30)", "/content_cards/sync")


def test_ctrl_c_interrupts_a_blocking_flush(server: ReferenceServer) -> None:
    _interrupt(server, "c.log_feed_displayed(); c.flush_events(30)", "/events")
