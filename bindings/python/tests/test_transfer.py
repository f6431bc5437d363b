"""Compressed transfers and conditional sync through Python, against the reference server over real HTTP on 127.0.0.1: the
sync asks for gzip and decodes it, a gzip bomb is refused at the limit, event batches go
gzip-compressed (plain JSON after a 415), a 304 to the stored ETag keeps the cache with nothing
merged (also through a host transport of the application's own), and the automatic refresh
policies: periodic with jitter, stopping at close; on open when stale; backoff in an outage.
The same scenarios as TransferTests.swift, AutoRefreshTests.swift and Tests/c/test_http.c."""

from __future__ import annotations

import resource
import time
import urllib.error
import urllib.request

import pytest

import contentcards as cc
from conftest import open_remote
from reference_server import ReferenceServer


def sync_requests(server: ReferenceServer) -> list[dict]:
    return [r for r in server.requests() if r["path"] == "/content_cards/sync"]


def sync_count(server: ReferenceServer) -> int:
    return server.wire().get("/content_cards/sync", {}).get("requests", 0)


def wait_until(done, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)


# -- item 1: compression ----------------------------------------------------------------------

def test_sync_asks_for_gzip_and_decodes_it(server: ReferenceServer) -> None:
    with open_remote(server, "zed") as c:
        summary = c.refresh(5)
        assert summary.full_sync and summary.added == 11
    [sent] = sync_requests(server)
    assert "gzip" in sent["accept_encoding"]
    assert sent["response_encoding"] == "gzip"


def test_a_gzip_bomb_is_an_error_not_an_allocation(server: ReferenceServer) -> None:
    # The server makes the bomb on first use (256 MiB through zlib, seconds on a busy machine).
    with open_remote(server, "bomb", timeout=60, max_payload_bytes=1 << 20) as c:
        c.refresh(5)
        server.fault(body="gzip_bomb")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with pytest.raises(cc.ParseError, match="too large"):
            c.refresh(60)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        assert grown < 64 * 1024, f"max RSS grew by {grown} KiB for a 256 MiB bomb"
        assert c.count() == 10


def test_event_batches_go_compressed_and_fall_back_on_415(server: ReferenceServer) -> None:
    with open_remote(server, "gzev") as c:
        c.refresh(5)
        for card in c.cards():
            c.log_impression(card.id)
        assert c.flush_events(5).delivered == 10
        server.transfer(gzip_events=False)
        for _ in range(15):
            c.log_feed_displayed()
        assert c.flush_events(5).delivered == 15
        for _ in range(15):
            c.log_feed_displayed()
        assert c.flush_events(5).delivered == 15
    batches = [r for r in server.requests() if r["path"] == "/events"]
    assert [(b["content_encoding"], b["status"]) for b in batches] == [
        ("gzip", 200), ("gzip", 415), (None, 200), (None, 200)]
    assert len(server.events()) == 40


# -- item 2: conditional sync -----------------------------------------------------------------

def test_an_unchanged_refresh_is_a_304(server: ReferenceServer, tmp_path) -> None:
    with open_remote(server, "nina", storage_path=str(tmp_path / "s")) as c:
        assert not c.refresh(5).not_modified
        c.log_impression("tile-1")
        second = c.refresh(5)
        assert second.not_modified and second.added == 0 and not second.full_sync
        assert (second.counts.total, second.counts.unviewed) == (10, 8)
        server.set_cards("nina", [{"id": "n-1", "tp": "short_news", "ca": 1763799999, "ds": "x"}])
        third = c.refresh(5)
        assert not third.not_modified and third.added == 1
    # The validator survives reopen.
    with open_remote(server, "nina", storage_path=str(tmp_path / "s")) as c:
        assert c.refresh(5).not_modified
        c.change_user("other")
        assert c.refresh(5).full_sync
    statuses = [(r["status"], r["if_none_match"] is not None) for r in sync_requests(server)]
    assert statuses == [(200, False), (304, True), (200, True), (304, True), (200, False)]


def test_another_devices_event_changes_the_validator(server: ReferenceServer, tmp_path) -> None:
    """Item 5's state and the 304 together: what one device of a user reports changes the
    user's cards on the server, so the other device's next sync is a 200 with it, not a 304."""
    phone = open_remote(server, "vera", device_id="phone", storage_path=str(tmp_path / "phone"))
    tablet = open_remote(server, "vera", device_id="tablet", storage_path=str(tmp_path / "tablet"))
    with phone, tablet:
        phone.refresh(5)
        tablet.refresh(5)
        assert tablet.refresh(5).not_modified
        phone.log_dismissal("tile-2")
        phone.flush_events(5)
        after = tablet.refresh(5)
        assert not after.not_modified
        assert tablet.card("tile-2").dismissed
        assert tablet.refresh(5).not_modified


def test_a_host_transport_passes_the_validator(server: ReferenceServer) -> None:
    """The application's own HTTP (urllib here): it forwards the headers, hands back the
    decoded body, the ETag and a 304."""
    seen: list[cc.TransportRequest] = []

    def transport(request: cc.TransportRequest) -> cc.TransportResponse:
        seen.append(request)
        http = urllib.request.Request(server.url + request.url, data=request.body,
                                      headers=request.header_dict, method="POST")
        try:
            with urllib.request.urlopen(http, timeout=request.timeout) as answer:
                return cc.TransportResponse(answer.status, answer.read(),
                                            etag=answer.headers.get("ETag"))
        except urllib.error.HTTPError as exc:
            return cc.TransportResponse(exc.code, exc.read(), etag=exc.headers.get("ETag"))

    with cc.ContentCards(user_id="sam", refresh_tokens=0, source={"callback": True}) as c:
        c.set_transport(transport)
        assert c.refresh(5).added == 11
        assert c.refresh(5).not_modified
        assert c.count() == 10
    assert "If-None-Match" not in seen[0].header_dict
    assert seen[1].header_dict["If-None-Match"].startswith('"')
    assert all("Accept-Encoding" not in r.header_dict for r in seen)


# -- item 3: automatic refresh and backoff ----------------------------------------------------

def test_periodic_refresh_with_jitter_stops_at_close(server: ReferenceServer) -> None:
    opened = time.monotonic()
    c = open_remote(server, "per", refresh_period_seconds=0.25, refresh_period_jitter=0.2)
    time.sleep(2.0)
    c.close()
    elapsed = time.monotonic() - opened
    at_close = sync_count(server)
    # One per 0.25 s +- 20 %: late on a loaded machine (fewer), never early.
    assert 3 <= at_close <= elapsed / 0.2 + 1, (at_close, elapsed)
    time.sleep(0.8)
    assert sync_count(server) <= at_close + 1


def test_periodic_refresh_within_the_rate_limit(server: ReferenceServer) -> None:
    with open_remote(server, "lim", refresh_tokens=2, refresh_interval_seconds=100,
                     refresh_period_seconds=0.1, retry_base_seconds=0.05,
                     retry_max_seconds=0.1) as c:
        time.sleep(1.5)
        assert sync_count(server) == 2
        assert "rate limit" in c.diagnostics().raw["lastRefresh"]["error"]["message"]


def test_refresh_on_open_when_stale(server: ReferenceServer, tmp_path) -> None:
    store = str(tmp_path / "s")
    with open_remote(server, "opa", storage_path=store, refresh_on_open_after_seconds=3600) as c:
        wait_until(lambda: c.count() > 0)
        assert c.count() == 10
    with open_remote(server, "opa", storage_path=store, refresh_on_open_after_seconds=3600):
        time.sleep(0.6)
        assert sync_count(server) == 1
    with open_remote(server, "opa", storage_path=store, refresh_on_open_after_seconds=0):
        wait_until(lambda: sync_count(server) >= 2)
        assert sync_count(server) == 2


def test_an_outage_is_retried_with_backoff(server: ReferenceServer) -> None:
    server.transfer(outage=True)
    with open_remote(server, "out", refresh_on_open_after_seconds=0, refresh_period_seconds=60,
                     retry_base_seconds=0.05, retry_max_seconds=0.4) as c:
        time.sleep(2.0)
        during = sync_count(server)
        assert 3 <= during <= 30, during
        server.transfer(outage=False)
        wait_until(lambda: c.count() > 0)
        assert c.count() == 10
        recovered = sync_count(server)
        time.sleep(0.7)
        assert sync_count(server) == recovered


def test_the_new_keys_are_checked() -> None:
    with pytest.raises(cc.ConfigError, match="0 to 1"):
        cc.ContentCards(refresh_period_jitter=2)
    with pytest.raises(cc.ConfigError, match="less than"):
        cc.ContentCards(retry_base_seconds=10, retry_max_seconds=5)
