"""Per-user tokens (``ContentCards.set_token_provider``) against the reference server started
with a secret: every sync and event batch carries ``Authorization: Bearer`` with a token of its
own user; a refused token is asked for again once and the request retried once, then it is an
AuthError and the events stay pending; a token about to expire is asked for again before the
next request; a provider that raises, answers nonsense or hangs is an AuthError (with its
message), never a crash or a hang of the caller."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import contentcards as cc
from contentcards import _ffi
from reference_server import ReferenceServer

pytestmark = pytest.mark.skipif(not _ffi.has("cc_controller_set_token_provider"),
                                reason="the library has no cc_controller_set_token_provider yet")

SECRET = "tokens-test-secret"


@pytest.fixture(scope="module")
def _secured() -> Iterator[ReferenceServer]:
    with ReferenceServer(secret=SECRET) as server:
        yield server


@pytest.fixture
def server(_secured: ReferenceServer) -> ReferenceServer:
    """The reference server requiring tokens signed with SECRET; reset."""
    _secured.set_secret(SECRET)
    _secured.reset()
    return _secured


def open_secured(server: ReferenceServer, user: str = "alice", timeout: float = 5,
                 **options: Any) -> cc.ContentCards:
    config: dict[str, Any] = {
        "user_id": user, "refresh_tokens": 0, "timeout_seconds": timeout,
        "source": {"url": server.url}, "events": {"url": server.url},
        "event_flush_interval_seconds": 0}
    config.update(options)
    return cc.ContentCards(**config)


class Minting:
    """A provider that mints the asked user's token with the server's current secret, and
    records whom it was asked for."""

    def __init__(self, server: ReferenceServer, ttl: float = 3600) -> None:
        self.server, self.ttl = server, ttl
        self.asked: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, user_id: str) -> Any:
        with self.lock:
            self.asked.append(user_id)
        return self.server.token(user_id, self.ttl)


def rejections(server: ReferenceServer, path: str | None = None) -> list[dict[str, Any]]:
    return [r for r in server.auth()["rejected"] if path is None or r["path"] == path]


def test_a_refresh_and_a_flush_carry_the_users_token(server: ReferenceServer) -> None:
    with open_secured(server) as c:
        seen_user: list[str] = []

        def provider(user_id: str) -> str:
            seen_user.append(c.user_id)  # the provider may call the controller
            return server.token(user_id)

        c.set_token_provider(provider)
        assert c.refresh().added > 0
        c.log_impression(c.cards()[0])
        assert c.flush_events().delivered == 1
        assert seen_user == ["alice"]  # asked once: the token is kept for its user
    assert rejections(server) == [] and server.auth()["accepted"] == 2
    requests = server.requests()
    assert [(r["path"], r["authorization_present"], r["token_sub"]) for r in requests] == [
        ("/content_cards/sync", True, "alice"), ("/events", True, "alice")]
    assert len(server.events()) == 1


def test_the_three_answers_a_provider_may_give(server: ReferenceServer) -> None:
    in_an_hour = time.time() + 3600
    answers: list[Any] = [
        lambda user: server.token(user),
        lambda user: (server.token(user), in_an_hour),
        lambda user: (server.token(user), None),
        lambda user: cc.AuthToken(server.token(user)),
        lambda user: cc.AuthToken(server.token(user), expires_at=datetime.datetime.fromtimestamp(
            in_an_hour, datetime.timezone.utc)),
    ]
    with open_secured(server) as c:
        for answer in answers:
            c.set_token_provider(answer)   # a new provider: the earlier one's token is forgotten
            c.refresh()
    assert rejections(server) == [] and server.auth()["accepted"] == len(answers)


def test_another_users_token_is_refused_retried_once_then_an_auth_error(
        server: ReferenceServer) -> None:
    with open_secured(server) as c:
        wrong = Minting(server)
        c.set_token_provider(lambda user: wrong("bob"))
        with pytest.raises(cc.AuthError) as info:
            c.refresh()
        assert "401" in info.value.message and info.value.code == -19
        assert isinstance(info.value, PermissionError)
        assert len(wrong.asked) == 2   # once, and once more after the 401
        assert [r["reason"] for r in rejections(server, "/content_cards/sync")] == ["user"] * 2

        c.log_feed_displayed()
        c.log_feed_displayed()
        assert c.pending_events() == 2
        with pytest.raises(cc.AuthError):
            c.flush_events()
        assert c.pending_events() == 2 and server.events() == []
        assert [r["reason"] for r in rejections(server, "/events")] == ["user"] * 2

        good = Minting(server)
        c.set_token_provider(good)
        assert c.flush_events().delivered == 2
        assert c.pending_events() == 0 and good.asked == ["alice"]
    assert len(server.events()) == 2 and server.event_stats()["duplicates"] == 0


def test_a_token_that_expires_during_a_flush_is_asked_for_before_the_next_batch(
        server: ReferenceServer) -> None:
    # Tokens live 8 s and say so: the library asks again after half of that. The first batch
    # is held 5 s by the server (still within the token's life when it is checked); the second
    # batch of the same flush then needs a new token, and gets it without a 401.
    with open_secured(server, timeout=20, event_batch_size=1) as c:
        asked: list[float] = []

        def provider(user_id: str) -> tuple[str, float]:
            minted = server.admin("POST", "/_admin/token", {"user_id": user_id, "ttl": 8})
            asked.append(time.time())
            return minted["token"], float(minted["exp"])

        c.set_token_provider(provider)
        c.log_feed_displayed()
        c.log_feed_displayed()
        server.fault(path="/events", delay=5)
        result = c.flush_events(20)
        assert result.delivered == 2 and result.pending == 0
        assert len(asked) == 2, asked
        assert asked[1] - asked[0] >= 4   # asked again for the second batch, not before
    assert rejections(server) == []
    stats = server.event_stats()
    assert len(stats["events"]) == 2 and stats["batches"] == 2 and stats["duplicates"] == 0


def test_a_rotated_secret_costs_one_401_and_each_event_is_delivered_once(
        server: ReferenceServer) -> None:
    with open_secured(server) as c:
        provider = Minting(server)
        c.set_token_provider(provider)
        c.refresh()                       # a token kept for an hour
        server.set_secret("rotated-secret")
        impression = c.log_impression(c.cards()[0])
        assert c.flush_events().delivered == 1
        assert provider.asked == ["alice", "alice"]   # again after the 401 only
        assert [(r["path"], r["reason"]) for r in rejections(server)] == [("/events", "signature")]
        c.refresh()                       # the new token serves the sync too
        assert provider.asked == ["alice", "alice"]
    stats = server.event_stats()
    assert [e["id"] for e in stats["events"]] == [impression.event_id]
    assert stats["duplicates"] == 0


def test_a_provider_that_raises_is_an_auth_error_with_its_message(
        server: ReferenceServer) -> None:
    failure = RuntimeError("no session for this user")

    def provider(user_id: str) -> str:
        raise failure

    with open_secured(server) as c:
        c.set_token_provider(provider)
        with pytest.raises(cc.AuthError) as info:
            c.refresh()
        assert "RuntimeError: no session for this user" in info.value.message
        assert info.value.__cause__ is failure
        c.log_feed_displayed()
        with pytest.raises(cc.AuthError) as info:
            c.flush_events()
        assert "RuntimeError: no session for this user" in info.value.message
        assert c.pending_events() == 1 and c.count() == 0
        diagnostics = c.diagnostics()
        assert diagnostics.last_error is not None and diagnostics.last_error.code == -19
    assert server.requests() == []   # nothing went out without a token


@pytest.mark.parametrize("answer, says", [
    (None, "it returned None, expected a str"),
    (42, "it returned int"),
    (b"bytes-token", "it returned bytes"),
    ("", "its token is empty"),
    ("tok en", "a space at offset 3"),
    ("t\u00f6ken", "U+00F6 at offset 1"),
    ("x" * 8193, "over the limit of 8192"),
    (("only-a-token",), "a tuple of 1 items"),
    (("t", "tomorrow"), "expires_at must be unix seconds"),
    (("t", datetime.datetime(2030, 1, 1)), "naive datetime"),
    (cc.AuthToken(5), "its token is int"),  # type: ignore[arg-type]
])
def test_an_answer_that_is_not_a_token_is_an_auth_error_saying_why(
        server: ReferenceServer, answer: Any, says: str) -> None:
    with open_secured(server) as c:
        c.set_token_provider(lambda user: answer)
        with pytest.raises(cc.AuthError) as info:
            c.refresh()
        assert says in info.value.message
        assert "tok en" not in info.value.message and "t\u00f6ken" not in info.value.message
    assert server.requests() == []


def test_a_provider_that_hangs_is_abandoned_at_the_deadline(server: ReferenceServer) -> None:
    release = threading.Event()   # time.sleep(30) that the test can end at its end
    calls: list[str] = []

    def provider(user_id: str) -> str:
        calls.append(user_id)
        release.wait(30)
        return server.token(user_id)

    c = open_secured(server)
    try:
        c.set_token_provider(provider)
        outcome: list[BaseException | None] = []

        def refresh() -> None:
            try:
                c.refresh(2)
                outcome.append(None)
            except BaseException as exc:  # noqa: BLE001
                outcome.append(exc)

        started = time.monotonic()
        worker = threading.Thread(target=refresh)
        worker.start()
        # Meanwhile the process and the controller answer at once.
        while worker.is_alive() and time.monotonic() - started < 1.5:
            t = time.monotonic()
            assert c.count() == 0 and c.pending_events() == 0
            assert time.monotonic() - t < 0.5
            time.sleep(0.05)
        worker.join(15)
        assert not worker.is_alive() and time.monotonic() - started < 10
        assert isinstance(outcome[0], cc.AuthError), outcome
        assert calls == ["alice"]

        c.log_feed_displayed()
        started = time.monotonic()
        with pytest.raises(cc.AuthError):
            c.flush_events(2)
        assert time.monotonic() - started < 10 and c.pending_events() == 1
        assert server.requests() == []

        release.set()   # the late answers are discarded; a good provider works at once
        c.set_token_provider(Minting(server))
        assert c.flush_events(5).delivered == 1
    finally:
        release.set()
        c.close()


def test_after_change_user_the_provider_is_asked_for_the_new_user(
        server: ReferenceServer) -> None:
    server.set_cards("bob", [{"id": "bob-1", "tp": "short_news", "ca": 1700000000,
                              "ds": "for bob"}])
    with open_secured(server) as c:
        provider = Minting(server)
        c.set_token_provider(provider)
        c.refresh()
        c.log_feed_displayed()            # alice's event
        c.change_user("bob")
        c.refresh()
        assert "bob-1" in [card.id for card in c.cards()]
        c.log_feed_displayed()            # bob's event
        assert c.flush_events().delivered == 2
        assert sorted(set(provider.asked)) == ["alice", "bob"]
    assert rejections(server) == []
    # One batch per user, each with its own user's token (the server checks every event's
    # user_id against the token's: nothing was refused).
    subs = [r["token_sub"] for r in server.requests() if r["path"] == "/events"]
    assert sorted(subs) == ["alice", "bob"]


@pytest.mark.skipif(not _ffi.has("cc_controller_hint"),
                    reason="the library has no cc_controller_hint (the hint stream) yet")
def test_the_hint_stream_carries_the_users_token(server: ReferenceServer) -> None:
    with open_secured(server, source={"url": server.url, "hints": True}) as c:
        provider = Minting(server)
        c.set_token_provider(provider)
        c.refresh()
        deadline = time.monotonic() + 10
        while server.streams()["by_user"].get("alice", 0) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.streams()["by_user"].get("alice", 0) >= 1
        streams = [r for r in server.requests() if r["path"] == "/content_cards/stream"]
        assert streams and streams[-1]["token_sub"] == "alice"
        assert set(provider.asked) == {"alice"}
    # The stream may have been opened before the provider was set: refused for "missing" then.
    assert {r["reason"] for r in rejections(server)} <= {"missing"}


def test_removing_and_replacing_the_provider_releases_it(server: ReferenceServer) -> None:
    held = len(_ffi.callbacks)
    strays = _ffi.callbacks.stray_releases
    with open_secured(server) as c:
        c.set_token_provider(Minting(server))
        c.set_token_provider(Minting(server))
        assert len(_ffi.callbacks) == held + 1
        c.set_token_provider(None)
        assert len(_ffi.callbacks) == held
        with pytest.raises(cc.ServerError, match="401"):   # no provider: no Authorization
            c.refresh()
        c.set_token_provider(Minting(server))
        with pytest.raises(TypeError):
            c.set_token_provider("not callable")  # type: ignore[arg-type]
    assert len(_ffi.callbacks) == held and _ffi.callbacks.stray_releases == strays
    with pytest.raises(cc.ClosedError):
        c.set_token_provider(Minting(server))
    assert len(_ffi.callbacks) == held


def test_auth_token_is_a_value_that_never_shows_the_token() -> None:
    token = cc.AuthToken("secret-value", expires_at=1700000000)
    assert token == cc.AuthToken("secret-value", 1700000000.0) and token.expires_at == 1700000000.0
    assert "secret-value" not in repr(token) and hash(token) == hash(cc.AuthToken("secret-value",
                                                                                 1700000000))
    with pytest.raises(AttributeError):
        token.token = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        cc.AuthToken("t", expires_at=True)
    with pytest.raises(ValueError):
        cc.AuthToken("t", expires_at=float("nan"))
