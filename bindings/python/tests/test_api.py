"""Tests/c/test_api.c through the Python API: every call on its success path, and the failures
a correct program meets. Plus the Card model."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
from datetime import datetime, timezone

import pytest

import contentcards as cc
from contentcards import _ffi
from conftest import HEADER, SAMPLE_FEED, SAMPLE_ORDER, TEST_INSTALLED, open_sample


def header_version() -> str:
    """CC_VERSION_STRING of include/contentcards.h: the one place the version is written."""
    with open(HEADER, encoding="utf-8") as f:
        match = re.search(r'^#define CC_VERSION_STRING "([^"]+)"', f.read(), re.MULTILINE)
    assert match, "CC_VERSION_STRING not found in the header"
    return match.group(1)


def test_versions() -> None:
    assert cc.library_version() == cc.__version__ == header_version()
    if TEST_INSTALLED:
        assert importlib.metadata.version("contentcards") == header_version()
    assert cc.abi_version() == cc.ABI_VERSION == 1
    assert _ffi.status_name(-5) == "CC_E_NOT_FOUND"
    assert _ffi.status_name(0) == "CC_OK"
    assert _ffi.status_name(12345) == "CC_E_UNKNOWN"
    # The binding's table of names agrees with the library's.
    for code, name in cc.errors.STATUS_NAMES.items():
        assert _ffi.status_name(code) == name
    assert os.path.exists(cc.library_path())


def test_refresh_feed_counts(sample: cc.ContentCards) -> None:
    summary = sample.refresh(5)
    assert summary.added == 11
    assert summary.full_sync is True
    assert summary.counts == cc.Counts(total=10, unviewed=9, unread=9)
    assert len(summary.left_out) == 3
    assert [(item.index, item.id) for item in summary.left_out] == [
        (11, "bad-1"), (12, None), (13, "bad-type")]
    assert summary.left_out[0].reason == \
        'missing required field "tt" (title) for a captioned_image card'

    assert sample.counts() == (10, 9, 9)
    assert sample.count() == 10 and sample.unviewed_count() == 9
    assert sample.counts(["coupon_code"]) == (2, 1, 1)
    assert sample.unviewed_count(["HOME_TILE"]) == 3
    assert sample.unviewed_count("HOME_TILE") == 3  # a str is one class type

    assert [card.id for card in sample.cards()] == SAMPLE_ORDER
    messages = sample.cards(["message_full_page", "message_webview"])
    assert [card.id for card in messages] == ["msg-3", "msg-2", "msg-1"]

    # The same card gives the same bytes every time.
    a = _ffi.controller_card(sample._handle or 0, b"coupon-1")
    b = _ffi.controller_card(sample._handle or 0, b"coupon-1")
    assert a == b
    assert '"extras":{"class_type":"coupon_code","coupon_code":"SAVE20"' in a
    assert sample.card("coupon-1") == sample.card("coupon-1")


def test_card_model(refreshed: cc.ContentCards) -> None:
    tile = refreshed.card("tile-2")
    assert tile.type is cc.CardType.CAPTIONED_IMAGE
    assert tile.created_timestamp == 1763710000
    assert tile.created == datetime.fromtimestamp(1763710000, timezone.utc)
    assert tile.created.tzinfo is not None
    assert tile.expires_at is None and tile.expires_at_timestamp == -1
    assert tile.pinned and tile.dismissible and not tile.viewed
    assert tile.extras["tile_price"] == "34.50"
    with pytest.raises(TypeError):
        tile.extras["tile_price"] = "0"  # type: ignore[index]
    with pytest.raises(AttributeError):
        tile.title = "x"  # type: ignore[misc]
    assert tile.image_aspect_ratio == 1.0
    assert tile.domain == "shop.example.com"
    assert hash(tile) == hash(refreshed.card("tile-2"))

    control = refreshed.card("coupon-control")
    assert control.type is cc.CardType.CONTROL and control.is_control
    assert control.url is None and control.title is None and control.image_aspect_ratio is None
    assert control.extras["discount_percentage"] == "20"  # a JSON number kept as its text

    msg3 = refreshed.card("msg-3")
    assert msg3.class_type == "message_webview"  # " Message_WebView " normalized
    assert msg3.open_url_in_web_view
    assert refreshed.card("msg-2").type is cc.CardType.CLASSIC
    assert refreshed.card("test-1").is_test and refreshed.card("test-1").class_type == ""
    assert refreshed.card("banner-noclass").type is cc.CardType.BANNER

    # An expired card is stored (and readable by id) but not in the feed.
    expired = refreshed.card("promo-expired")
    assert expired.expires_at == datetime.fromtimestamp(1700000000, timezone.utc)
    assert "promo-expired" not in [card.id for card in refreshed.cards()]

    # from_json / to_json round trip the boundary JSON exactly (key order included).
    raw = json.loads(_ffi.controller_feed(refreshed._handle or 0, None))
    for item in raw:
        card = cc.Card.from_json(item)
        assert card.to_json() == item and list(card.to_json()) == list(item)
    with pytest.raises(cc.ParseError, match="missing"):
        cc.Card.from_json({"id": "x"})
    with pytest.raises(cc.ParseError, match="unknown card type"):
        cc.Card.from_json({**raw[0], "type": "hologram"})


def test_logging(refreshed: cc.ContentCards) -> None:
    c = refreshed
    first = c.log_impression("tile-1")
    assert first.recorded and first.state_changed and first.reason is None and first.event_id
    assert c.log_impression("tile-1")
    assert c.unviewed_count() == 8
    assert c.card("tile-1").viewed
    assert c.log_click("tile-1").recorded
    refused = c.log_click("msg-2")
    assert not refused and refused.recorded is False
    assert refused.reason is not None and "has no url" in refused.reason
    assert c.log_dismissal("tile-1").recorded
    again = c.log_dismissal("tile-1")
    assert not again.recorded and again.reason is not None and "already dismissed" in again.reason
    not_dismissible = c.log_dismissal("msg-1")
    assert not not_dismissible and "not dismissible" in (not_dismissible.reason or "")
    with pytest.raises(cc.CardNotFoundError, match="no-such-card") as info:
        c.log_impression("no-such-card")
    assert info.value.code == -5 and info.value.name == "CC_E_NOT_FOUND"
    assert _ffi.last_error_code() == -5
    assert c.log_feed_displayed().recorded
    assert _ffi.last_error_code() == 0
    assert c.pending_events() == 5
    assert c.count() == 9
    # No sink configured: events stay.
    with pytest.raises(cc.NoSourceError):
        c.flush_events(1)
    assert c.pending_events() == 5


def test_logging_accepts_cards_and_objects(refreshed: cc.ContentCards) -> None:
    card = refreshed.card("coupon-1")

    class Holder:
        card_id = "tile-3"

    assert refreshed.log_impression(card).recorded
    assert refreshed.log_impression(Holder()).recorded
    assert refreshed.card("coupon-1").viewed and refreshed.card(Holder()).viewed
    with pytest.raises(TypeError):
        refreshed.log_impression(42)


def test_apply_user_diagnostics() -> None:
    with cc.ContentCards() as c:
        summary = c.apply('[{"id":"a","tp":"short_news","ca":1,"ds":"hello"}]')
        assert summary.added == 1 and not summary.full_sync
        # dict / list / bytes payloads
        assert c.apply([{"id": "b", "tp": "short_news", "ca": 2, "ds": "x"}]).added == 1
        assert c.apply({"cards": [{"id": "b", "tp": "short_news", "ca": 3, "ds": "y"}]}).updated == 1
        assert c.apply(b"[]").added == 0
        with pytest.raises(cc.ParseError, match="truncated"):
            c.apply('{"cards":[{"id":')
        with pytest.raises(cc.WrongUserError):
            c.apply('{"cards":[],"user_id":"mallory"}')
        with pytest.raises(cc.NoSourceError):
            c.refresh(1)

        assert c.user_id == ""
        c.change_user("bob")
        assert c.user_id == "bob"
        assert c.count() == 0

        diagnostics = c.diagnostics()
        assert isinstance(diagnostics, cc.Diagnostics)
        assert diagnostics.user_id == "bob" and diagnostics.raw["userId"] == "bob"
        assert diagnostics.rate_limit["enabled"] is True
        assert diagnostics.rate_limit["capacity"] == 5
        assert diagnostics.last_refresh is not None and diagnostics.last_refresh["ok"] is False
        assert isinstance(diagnostics.last_error, cc.NoSourceError)
        assert diagnostics.counts == (0, 0, 0) and diagnostics.subscribers == 0


def test_a_str_subclass_cannot_hide_a_nul_from_apply() -> None:
    """A NUL would end the payload early in C (`[]` applied and the rest ignored): a str
    subclass's own `__contains__` must not be what looks for it."""
    class Hiding(str):
        def __contains__(self, item: object) -> bool:
            return False
    with cc.ContentCards() as c, pytest.raises(cc.InvalidArgumentError, match="NUL"):
        c.apply(Hiding('[]\0[{"id": "x"}]'))


@pytest.mark.skipif(_ffi.str_utf8_function() is None, reason="a Python without PyUnicode_AsUTF8AndSize")
def test_a_str_payload_is_applied_from_its_own_utf8_not_a_copy() -> None:
    """apply(str) hands the library the str's own UTF-8 (CPython keeps it in the str: the str's
    memory for ASCII text, made once and kept for other text), not a copy made for each call:
    a payload of megabytes was copied at every apply. tracemalloc counts what Python
    allocates (the library's own allocations are not Python's)."""
    import tracemalloc
    cards = [{"id": f"card-{i:06d}", "tp": "short_news", "ca": 1700000000, "ds": "x" * 200,
              "e": {"class_type": "home_tile"}} for i in range(8000)]
    ascii_text = json.dumps(cards)
    accented = json.dumps(cards, ensure_ascii=False).replace("xxxx", "éxxx", 1)
    assert ascii_text.isascii() and not accented.isascii() and len(ascii_text) > 2_000_000
    for text, calls in ((ascii_text, 1), (accented, 2)):
        with cc.ContentCards() as c:
            c.apply("[]")   # what a first apply imports (compiled from source: megabytes) is not counted
            tracemalloc.start()
            try:
                summaries = []
                for _ in range(calls):
                    tracemalloc.reset_peak()
                    held = tracemalloc.get_traced_memory()[0]    # the kept UTF-8, after a first call
                    summaries.append(c.apply(text))
                    peak = tracemalloc.get_traced_memory()[1] - held
            finally:
                tracemalloc.stop()
            assert [(s.added, s.updated) for s in summaries] == [(8000, 0)] + [(0, 0)] * (calls - 1)
            assert len(c.cards()) == 8000
            # The last call's peak: the ASCII str at once, the other once its UTF-8 is kept (a
            # copy was the payload's size, 2.4 MB; what is left is the call's own few objects).
            assert peak < 100_000, f"{peak} bytes allocated for a {len(text)}-character payload"


def test_rate_limit_and_config() -> None:
    with pytest.raises(cc.ConfigError, match='did you mean "refreshTokens"'):
        cc.ContentCards({"refreshToken": 1})
    with pytest.raises(cc.ConfigError):
        cc.ContentCards('{"userId":')
    with cc.ContentCards(refresh_tokens=1, source={"file": SAMPLE_FEED}) as c:
        c.refresh(5)
        with pytest.raises(cc.RateLimitedError, match="next token in 180 s") as info:
            c.refresh(5)
        assert info.value.retry_after == pytest.approx(180.0, abs=1)  # the library's value
        with pytest.raises(cc.RateLimitedError):
            c.refresh_in_background()
        assert c.count() == 10


def test_config_keywords(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(TypeError, match="'refresh_token'.*did you mean 'refresh_tokens'"):
        cc.ContentCards(refresh_token=1)
    with pytest.raises(TypeError):
        cc.ContentCards(42)  # type: ignore[arg-type]
    # Every keyword maps to its camelCase key; the library accepts them all.
    with cc.ContentCards(
            user_id="kw", storage_path=os.path.join(os.fspath(tmp_path), "store"),
            source={"file": SAMPLE_FEED}, events={"file": os.path.join(os.fspath(tmp_path), "ev")},
            refresh_tokens=3, refresh_interval_seconds=60, timeout_seconds=2,
            known_class_types=("home_tile", "coupon_code"), max_payload_bytes=1 << 20,
            device_id="dev-1", event_batch_size=10, event_batch_bytes=4096,
            event_flush_interval_seconds=0) as c:
        assert c.user_id == "kw"
        c.refresh()
        # knownClassTypes: other class types normalize to "".
        assert c.card("msg-1").class_type == ""
        assert c.card("tile-1").class_type == "home_tile"
        assert c.diagnostics().rate_limit["capacity"] == 3
    # A dict in camelCase, and keywords overriding it.
    with cc.ContentCards({"userId": "a", "refreshTokens": 0}, user_id="b") as c:
        assert c.user_id == "b"
    with cc.ContentCards('{"userId": "json"}') as c:
        assert c.user_id == "json"
    with cc.ContentCards(storage_path=tmp_path) as c:  # a PathLike is fine
        assert c.diagnostics().storage_path == os.fspath(tmp_path)


def test_snapshot(refreshed: cc.ContentCards) -> None:
    """The snapshot functions (cc_controller_snapshot & co.) through _ffi."""
    c = refreshed
    s = _ffi.controller_snapshot(c._handle or 0, b'["coupon_code"]')
    assert _ffi.snapshot_count(s) == 2
    assert _ffi.snapshot_string(s, 0, b"id") == "coupon-control"
    assert (_ffi.snapshot_string(s, 1, b"url") or "").startswith("https://")
    assert _ffi.snapshot_string(s, 1, b"title") is None
    assert _ffi.snapshot_bool(s, 0, b"isControl") is True
    assert _ffi.snapshot_int(s, 1, b"created") == 1763760000
    assert _ffi.snapshot_double(s, 0, b"imageAspectRatio") is None
    assert _ffi.snapshot_double(s, 1, b"imageAspectRatio") == 3.0
    assert _ffi.snapshot_extra(s, 0, b"discount_percentage") == "20"
    assert _ffi.snapshot_extra(s, 0, b"nope") is None
    assert _ffi.snapshot_extras_count(s, 1) == 4
    assert _ffi.snapshot_extra_at(s, 1, 0) == ("class_type", "coupon_code")
    with pytest.raises(cc.InvalidArgumentError):
        _ffi.snapshot_extra_at(s, 1, 4)
    with pytest.raises(cc.InvalidArgumentError, match="out of range"):
        _ffi.snapshot_string(s, 2, b"id")
    with pytest.raises(cc.InvalidArgumentError, match="is an integer"):
        _ffi.snapshot_string(s, 0, b"created")
    with pytest.raises(cc.InvalidArgumentError, match="unknown card field"):
        _ffi.snapshot_int(s, 0, b"colour")
    # The snapshot agrees with cards() field by field.
    for index, card in enumerate(c.cards("coupon_code")):
        assert _ffi.snapshot_string(s, index, b"id") == card.id
        assert _ffi.snapshot_string(s, index, b"classType") == card.class_type
        assert _ffi.snapshot_int(s, index, b"expiresAt") == card.expires_at_timestamp
        assert _ffi.snapshot_bool(s, index, b"openURLInWebView") == card.open_url_in_web_view
        assert dict(_ffi.snapshot_extra_at(s, index, i)
                    for i in range(_ffi.snapshot_extras_count(s, index))) == dict(card.extras)
    # The snapshot does not change with the controller, and outlives it.
    assert c.log_dismissal("coupon-1").recorded
    c.close()
    assert _ffi.snapshot_count(s) == 2
    _ffi.snapshot_close(s)
    with pytest.raises(cc.InvalidHandleError):
        _ffi.snapshot_close(s)


def test_storage(tmp_path: os.PathLike[str]) -> None:
    store = os.path.join(os.fspath(tmp_path), "store")
    with open_sample(user_id="u", storage_path=store) as c:
        c.refresh(5)
        assert c.log_impression("tile-2").recorded
    with open_sample(user_id="u", storage_path=store) as c:
        assert c.counts() == (10, 8, 9)
        assert c.pending_events() == 1
    mode = os.stat(store).st_mode & 0o777
    assert mode == 0o700


def test_badge_fast_path_agrees_with_the_full_path() -> None:
    """Tests/c/test_badge.c: count() and unviewed_count() without a filter answer from the
    counts the library republishes on every change; they must equal the full path's (a filter
    of every class type takes it) after every kind of change, and fail once closed."""
    c = open_sample()

    def same() -> tuple[int, int, int]:
        full = c.counts([])
        assert (c.count(), c.unviewed_count(), c.unread_count()) == tuple(full) == tuple(c.counts())
        return tuple(full)

    assert same() == (0, 0, 0)
    c.refresh(5)
    assert same() == (10, 9, 9)
    c.log_impression("tile-1")
    assert same() == (10, 8, 9)
    c.mark_read("tile-3")
    assert same() == (10, 8, 8)
    c.log_dismissal("tile-2")
    assert same() == (9, 7, 7)
    c.apply('[{"id":"new","tp":"short_news","ca":1,"ds":"x"}]')
    assert same() == (10, 8, 8)
    c.mark_all_read()
    assert same() == (10, 8, 0)
    c.change_user("someone-else")
    assert same() == (0, 0, 0)
    c.change_user("u-1")
    assert same() == (10, 8, 0)
    c.close()
    with pytest.raises(cc.ClosedError):
        c.unviewed_count()
    with pytest.raises(cc.ClosedError):
        c.unread_count()
    with pytest.raises(cc.ClosedError):
        c.count()


def test_cards_built_directly_equal_checked_ones(sample: cc.ContentCards) -> None:
    """cards() builds Cards straight into their slots; they are the same values as the checked
    from_json() builds: equal, the same hash, frozen, every field."""
    sample.refresh(5)
    for card in sample.cards():
        checked = cc.Card.from_json(card.to_json())
        assert card == checked and hash(card) == hash(checked) and repr(card) == repr(checked)
        with pytest.raises(AttributeError):
            card.title = "x"  # type: ignore[misc]


def test_cards_json_is_the_cards_as_json(sample: cc.ContentCards) -> None:
    """cards_json() is the boundary JSON of exactly what cards() gives, filtered alike."""
    import json
    sample.refresh(5)
    for class_types in (None, "home_tile", ["message_webview", "coupon_code"], []):
        assert json.loads(sample.cards_json(class_types)) == [c.to_json() for c in sample.cards(class_types)]
    sample.close()
    with pytest.raises(cc.ClosedError):
        sample.cards_json()


def test_the_lazy_names_and_the_type_checkers_imports_agree() -> None:
    # The package lists its lazily imported names once for run time (_LAZY) and once, as
    # imports, for type checkers: the two lists are compared here, module by module.
    import ast
    import contentcards
    tree = ast.parse(open(contentcards.__file__, encoding="utf-8").read())
    imported: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    for alias in statement.names:
                        imported[alias.name] = statement.module
    assert imported == contentcards._LAZY
    assert set(cc.__all__) == set(contentcards._LAZY) | {
        "ABI_VERSION", "abi_version", "library_path", "library_version"}
    from contentcards import _library
    assert cc.ABI_VERSION == _library.ABI_VERSION == cc.abi_version()


def test_import_loads_the_library_and_defers_the_rest() -> None:
    # Import time: `import contentcards` loads and checks the library; the modules
    # behind the controller, the results and conversion are imported when first used.
    import subprocess
    import sys
    script = ("import sys, contentcards as cc; "
              "print(sorted(m for m in sys.modules if m.startswith('contentcards.'))); "
              "print(cc.ContentCards.__module__, 'contentcards.controller' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env=dict(os.environ)).stdout.splitlines()
    assert out[0] == "['contentcards._ffi', 'contentcards._library', 'contentcards._logs']"
    assert out[1] == "contentcards.controller True"
    for name in cc.__all__:
        assert getattr(cc, name) is not None, name
    assert set(cc.__all__) <= set(dir(cc))
    assert cc.ParseError is cc.errors.ParseError and cc.Card is cc.cards.Card
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        cc.Nope  # type: ignore[attr-defined]  # noqa: B018


def test_submodules_and_exit_order_are_as_an_eager_import_left_them() -> None:
    # The package's submodules stay its attributes (they were when `import contentcards`
    # imported them all), and the hook that closes controllers at exit is registered at import:
    # an exit handler the application registers after importing still finds its controller open.
    import subprocess
    import sys
    script = ("import atexit, contentcards as cc\n"
              "print(cc.results.Update.__name__, cc.convert.Registry.__name__)\n"
              "atexit.register(lambda: print('at exit', c.count()))\n"
              "c = cc.ContentCards()\n"
              "c.apply([{'id': 'a', 'tp': 'short_news', 'ca': 1, 'ds': 'x'}])\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=dict(os.environ), timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["Update Registry", "at exit 1"], result.stderr


def test_user_ids_are_compared_by_bytes() -> None:
    """"café" with U+00E9 and with "e" + U+0301 are two users (as in C and Swift: the core
    compared them with Swift's string equality, and the change stayed on the first user)."""
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    with cc.ContentCards(user_id=composed, refresh_tokens=0) as c:
        c.apply('[{"id":"first","tp":"short_news","ca":5,"ds":"x"}]')
        c.change_user(decomposed)
        assert c.user_id == decomposed and c.counts().total == 0
        c.change_user(composed)
        assert c.counts().total == 1
        with pytest.raises(ValueError):
            c.change_user("a\0b")
