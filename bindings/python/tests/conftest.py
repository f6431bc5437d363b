"""Fixtures of the Python binding tests.

The tests import ``contentcards`` from this source tree (bindings/python) unless
CONTENTCARDS_TEST_INSTALLED is set, in which case the installed package is tested. The library
is the one the loader finds: $CONTENTCARDS_LIBRARY, else the package's, else the checkout's
build trees (build/lib/libcontentcards.so.1, .build/release/libcontentcards.so).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
BINDING = os.path.dirname(TESTS)
REPO = os.path.dirname(os.path.dirname(BINDING))
SERVER_DIR = os.path.join(REPO, "examples", "server")
SAMPLE_FEED = os.path.join(REPO, "examples", "data", "sample_feed.json")
HEADER = os.path.join(REPO, "include", "contentcards.h")

TEST_INSTALLED = bool(os.environ.get("CONTENTCARDS_TEST_INSTALLED"))
if not TEST_INSTALLED:
    sys.path.insert(0, BINDING)

#: Python code that makes a subprocess import the same contentcards as the tests.
IMPORT_PRELUDE = "" if TEST_INSTALLED else f"import sys; sys.path.insert(0, {BINDING!r})\n"
sys.path.insert(0, SERVER_DIR)

import contentcards  # noqa: E402
from reference_server import ReferenceServer  # noqa: E402

# The feed order of the sample feed, and its counts.
SAMPLE_ORDER = ["tile-2", "banner-noclass", "test-1", "coupon-control", "coupon-1", "msg-3",
                "msg-2", "msg-1", "tile-3", "tile-1"]


@pytest.fixture(scope="session")
def sample_feed() -> str:
    """The path of examples/data/sample_feed.json."""
    return SAMPLE_FEED


def open_sample(**options: Any) -> contentcards.ContentCards:
    """A controller on the sample feed with the rate limit off, in memory (cc_test_open_sample)."""
    config: dict[str, Any] = {"user_id": "u-1", "refresh_tokens": 0,
                              "source": {"file": SAMPLE_FEED}}
    config.update(options)
    return contentcards.ContentCards(**config)


@pytest.fixture
def sample() -> Iterator[contentcards.ContentCards]:
    """An open controller on the sample feed (not refreshed yet); closed afterwards."""
    controller = open_sample()
    try:
        yield controller
    finally:
        controller.close()


@pytest.fixture
def refreshed(sample: contentcards.ContentCards) -> contentcards.ContentCards:
    """The sample controller after one refresh."""
    sample.refresh(5)
    return sample


@pytest.fixture(scope="session")
def _server_process() -> Iterator[ReferenceServer]:
    with ReferenceServer() as server:
        yield server


@pytest.fixture
def server(_server_process: ReferenceServer) -> ReferenceServer:
    """The reference server on 127.0.0.1, reset (sample feed, no faults, no events)."""
    _server_process.reset()
    return _server_process


def open_remote(server: ReferenceServer, user: str, timeout: float = 5,
                **options: Any) -> contentcards.ContentCards:
    """A controller on the reference server, events to it, flushed only on demand."""
    config: dict[str, Any] = {
        "user_id": user, "refresh_tokens": 0, "timeout_seconds": timeout,
        "source": {"url": server.url, "apiKey": "k"}, "events": {"url": server.url},
        "event_flush_interval_seconds": 0}
    config.update(options)
    return contentcards.ContentCards(**config)
