"""The library's log routed to logging.getLogger("contentcards") (contentcards._logs): a
refresh from a file, a refusal (rate limited), a delivery failure and its retry; silent by
default; a logging handler that calls back into the library does not deadlock."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

import pytest

import contentcards
from conftest import IMPORT_PRELUDE, SAMPLE_FEED, open_sample


def messages(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "contentcards"]


def test_a_refresh_from_a_file(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="contentcards")
    with open_sample(user_id="log-file") as c:   # the threshold follows the logger at open
        c.refresh(5)
    got = messages(caplog)
    assert (logging.DEBUG, f'refresh started for user "log-file" (file {SAMPLE_FEED})') in got
    assert any(level == logging.INFO and text.startswith(
        'refresh for user "log-file": added 11, updated 0, removed 0') for level, text in got)
    assert any(level == logging.WARNING and "index 13" in text for level, text in got)


def test_a_refusal_and_a_delivery_failure_with_its_retry(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="contentcards")
    with open_sample(user_id="log-refusals", refresh_tokens=1, events={"url": "http://127.0.0.1:1"},
                     event_flush_interval_seconds=0, timeout_seconds=3) as c:
        c.refresh(5)
        with pytest.raises(contentcards.RateLimitedError):
            c.refresh(5)
        c.log_impression("tile-1")
        with pytest.raises(contentcards.NetworkError):
            c.flush_events(5)
        outbox = c.list_pending_events()
        assert outbox.pending == 1 and outbox.failed_attempts == 1
        assert outbox.events[0].card_id == "tile-1" and outbox.events[0].type == "impression"
        assert outbox.events[0].user_id == "log-refusals" and outbox.events[0].time > 0
    got = messages(caplog)
    assert any(level == logging.WARNING and text.startswith("refresh refused (CC_E_RATE_LIMITED)")
               for level, text in got)
    assert any(level == logging.WARNING and text.startswith("event delivery failed (CC_E_NETWORK)")
               for level, text in got)
    assert any(level == logging.INFO and text.startswith("event delivery retry in ")
               for level, text in got)
    assert all(level >= logging.INFO for level, _ in got)


def test_silent_by_default() -> None:
    code = IMPORT_PRELUDE + f"""
import contentcards
c = contentcards.ContentCards(user_id="u", refresh_tokens=1, source={{"file": {SAMPLE_FEED!r}}})
c.refresh(5)
try:
    c.refresh(5)
except contentcards.RateLimitedError:
    print("refused")
c.close()
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, "refused\n", "")


def test_a_level_set_after_open_is_followed_at_once() -> None:
    """The library's threshold follows later level changes of the logger, of its parent, and
    logging.disable, also for a controller that is already open (its background work too)."""
    code = IMPORT_PRELUDE + f"""
import logging
import contentcards

records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record.levelno)
log = logging.getLogger("contentcards")
log.addHandler(Keep(logging.DEBUG))
c = contentcards.ContentCards(user_id="u", refresh_tokens=0, source={{"file": {SAMPLE_FEED!r}}})
def refresh():
    records.clear()
    c.refresh(5)
    return sorted(set(records))
print("at open", refresh())                # WARNING, logging's default
log.setLevel(logging.DEBUG)
print("debug", refresh())
log.setLevel(logging.NOTSET)
logging.getLogger().setLevel(logging.INFO)  # the parent's level
print("root info", refresh())
logging.disable(logging.WARNING)
print("disabled", refresh())
logging.disable(logging.NOTSET)
log.setLevel(logging.ERROR)
print("error", refresh())
c.close()
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "at open [30]", "debug [10, 20, 30]", "root info [20, 30]", "disabled []", "error []"]


def test_a_logging_handler_may_call_back_into_the_library() -> None:
    calls: list[str] = []

    class Reentrant(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            calls.append(record.getMessage())
            c.count()
            c.refresh(5)          # would join the refresh that is logging: must not wait for it

    logger = logging.getLogger("contentcards")
    handler = Reentrant(logging.DEBUG)
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        c = open_sample(user_id="log-reentrant")
        start = time.monotonic()
        c.refresh(5)
        assert time.monotonic() - start < 4
        assert any(text.startswith('refresh for user "log-reentrant"') for text in calls)
        c.close()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


def test_the_outbox_listing_checks_its_limit(sample: contentcards.ContentCards) -> None:
    with pytest.raises(ValueError):
        sample.list_pending_events(-1)
    assert sample.list_pending_events() == contentcards.PendingEvents(0, 0, [])
    # A bool is an int to Python: True was a limit of one event, False all of them.
    for flag in (True, False):
        with pytest.raises(TypeError):
            sample.list_pending_events(flag)
    sample.refresh()
    for card in ("tile-1", "tile-2", "tile-3"):
        sample.log_impression(card)
    assert len(sample.list_pending_events(0).events) == 3      # 0 is all, as in C and Swift
    assert len(sample.list_pending_events(2).events) == 2
