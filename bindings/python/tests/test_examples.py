"""The Python examples and the demo run to completion (exit 0) and print what they should."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from conftest import BINDING, REPO, TEST_INSTALLED
from reference_server import ReferenceServer

EXAMPLES = os.path.join(REPO, "examples", "python")


def run(name: str, *args: str) -> str:
    env = dict(os.environ)
    if not TEST_INSTALLED:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [BINDING, env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    return result.stdout


def test_supplemental_feed() -> None:
    out = run("supplemental_feed.py")
    assert "coupon-control" not in out
    lines = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    prices = [float(line[0]) for line in lines]
    assert prices == sorted(prices) and len(prices) == 6
    assert [line[1] for line in lines].count("card") == 3
    assert "tile-2" in out and "home_tile badge now 0 unread" in out


def test_message_center() -> None:
    out = run("message_center.py")
    assert "coupon-control" not in out
    assert "Inbox badge before: 3 unread" in out
    assert "Inbox badge after display: 0 unread" in out
    assert "msg-3  -> web view https://help.example.com/faq" in out
    assert 'full page "Store update"' in out
    assert 'card "msg-2" has no url' in out
    assert "Events recorded: 6" in out


def test_coupon() -> None:
    out = run("coupon.py")
    assert "a control variant: nothing shown" in out
    assert "coupon-control" not in out  # a control card is never drawn
    assert "20% off with code SAVE20 -> 64.00" in out
    assert "Events recorded: 3" in out


@pytest.mark.parametrize("name", ["supplemental_feed.py", "message_center.py", "coupon.py"])
def test_examples_with_a_server(server: ReferenceServer, name: str) -> None:
    out = run(name, "--server", server.url)
    assert "delivered to the server" in out
    assert len(server.events()) >= 3


def test_demo() -> None:
    started = time.monotonic()
    out = run("demo.py")
    assert time.monotonic() - started < 10
    for expected in ("full sync: 11 added", "3 cards of the payload left out",
                     "9 unviewed of 10 cards", "badge 9 -> 8 unviewed", "badge 8 -> 7 unviewed",
                     'why: click not logged: card "msg-2" has no url',
                     "(a control card: not drawn, its impression logged)",
                     "delivered 5, dropped 0, pending 0", "server stopped"):
        assert expected in out, expected
    feed = out.split("2. The feed")[1].split("3. The unviewed badge")[0]
    assert "coupon-control" not in feed and "control" in feed  # logged, never drawn
    received = out.split("What the server received")[1]
    assert [line.split()[:2] for line in received.splitlines()[2:7]] == [
        ["control_impression", "coupon-control"], ["feed_displayed", "-"],
        ["impression", "tile-1"], ["click", "tile-1"], ["dismissal", "tile-3"]]
    # The second device of the same user sees what the first did, through the server.
    tablet = out.split("8. A second device")[1]
    assert "tile-1  viewed=True clicked=True dismissed=False" in tablet
    assert "tile-3  viewed=False clicked=False dismissed=True" in tablet
    assert "msg-1 read=True, read-state badge 8 -> 7 unread" in tablet
