"""Property tests: random payloads to apply() and random configurations to ContentCards()
give a result or an exception of the ContentCardsError/TypeError kind, never a crash; and
whatever was merged reads back as valid cards."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import contentcards as cc
from contentcards.controller import CONFIG_KEYS

# CONTENTCARDS_HYPOTHESIS_EXAMPLES=2000 for a longer hunt; 100 keeps the suite fast.
EXAMPLES = int(os.environ.get("CONTENTCARDS_HYPOTHESIS_EXAMPLES", "100"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

SHORT_KEYS = ["id", "tp", "ca", "ea", "v", "cl", "d", "r", "p", "db", "t", "uw", "e", "u", "i",
              "image_alt", "ar", "tt", "ds", "dm", "cards", "full_sync", "user_id",
              "last_full_sync_at", "last_card_updated_at", "x"]
TYPES = ["banner_image", "captioned_image", "short_news", "text_announcement", "control",
         "hologram", ""]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
                    st.sampled_from(TYPES))
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.sampled_from(SHORT_KEYS) | st.text(max_size=4),
                                               children, max_size=6)),
    max_leaves=30)
cards = st.fixed_dictionaries(
    {"id": st.one_of(st.text(max_size=6), st.integers(), st.none()),
     "tp": st.sampled_from(TYPES) | scalars,
     "ca": st.one_of(st.integers(-2**62, 2**62), st.floats(allow_nan=False,
                                                            allow_infinity=False), st.text())},
    optional={key: json_values for key in SHORT_KEYS if key not in ("id", "tp", "ca")})
payloads = st.one_of(
    st.lists(cards, max_size=5),
    st.fixed_dictionaries({"cards": st.lists(cards, max_size=5)},
                          optional={"full_sync": st.booleans() | scalars,
                                    "user_id": st.sampled_from(["", "u-1", "other"]) | scalars,
                                    "last_full_sync_at": scalars,
                                    "last_card_updated_at": scalars}),
    json_values,
)
# JSON-ish text: fragments of JSON glued at random, and arbitrary text.
json_text = st.one_of(
    st.lists(st.sampled_from(['{', '}', '[', ']', '"', ':', ',', '"id"', '"tp"', '"cards"',
                              '"ca"', '1', '-1', '1e999', 'true', 'null', '"\\u0000"',
                              '"\\ud800"', ' ', '"short_news"', '"ds"', '"x"', '0.5']),
             max_size=30).map("".join),
    st.text(max_size=40),
    st.binary(max_size=40).filter(lambda b: b"\0" not in b),
)


@pytest.fixture(scope="module")
def controller() -> Iterator[cc.ContentCards]:
    with cc.ContentCards(user_id="u-1") as c:
        yield c


def check_feed(c: cc.ContentCards) -> None:
    """Whatever was merged reads back as valid cards with consistent counts."""
    feed = c.cards()
    total, unviewed, unread = c.counts()
    assert len(feed) == total
    assert unviewed == sum(1 for card in feed if not card.viewed and not card.is_control)
    assert unread == sum(1 for card in feed if not card.read and not card.is_control)
    for card in feed[:3]:
        assert c.card(card.id) == card
    # Feed order: pinned first, then created descending, then id descending.
    keys = [(not card.pinned, -card.created_timestamp) for card in feed]
    assert keys == sorted(keys)
    for a, b in zip(feed, feed[1:]):
        if (a.pinned, a.created_timestamp) == (b.pinned, b.created_timestamp) \
                and a.id.isascii() and b.id.isascii():  # see test_ids_are_compared_as_bytes
            assert a.id > b.id, (a.id, b.id)


@SETTINGS
@given(payload=payloads)
def test_apply_random_payloads(controller: cc.ContentCards, payload: Any) -> None:
    try:
        summary = controller.apply(payload)
    except (cc.ContentCardsError, TypeError):
        pass
    else:
        assert summary.added + summary.updated + summary.kept_newer <= max(
            len(payload) if isinstance(payload, list) else
            len(payload.get("cards", [])) if isinstance(payload, dict)
            and isinstance(payload.get("cards"), list) else 0, 0)
        assert all(isinstance(item.reason, str) and item.reason for item in summary.left_out)
    check_feed(controller)


@SETTINGS
@given(text=json_text)
def test_apply_random_text(controller: cc.ContentCards, text: str | bytes) -> None:
    try:
        controller.apply(text)
    except (cc.ContentCardsError, TypeError):
        pass
    check_feed(controller)


@SETTINGS
@given(filter_=st.lists(st.text(max_size=8), max_size=4))
def test_random_filters(controller: cc.ContentCards, filter_: list[str]) -> None:
    try:
        cards = controller.cards(filter_)
        counts = controller.counts(filter_)
    except cc.ContentCardsError:
        return
    assert len(cards) == counts.total


config_values = st.one_of(scalars, st.lists(scalars, max_size=3),
                          st.dictionaries(st.sampled_from(["file", "url", "apiKey", "callback",
                                                           "x"]), scalars, max_size=3))
CAMEL = sorted(set(CONFIG_KEYS.values()) - {"storagePath", "events"})


@SETTINGS
@given(config=st.dictionaries(st.sampled_from(CAMEL) | st.text(max_size=8), config_values,
                              max_size=6),
       use_storage=st.booleans())
def test_random_configs(config: dict[str, Any], use_storage: bool) -> None:
    # storagePath and events only point into a temporary directory (no files left in the tree).
    with tempfile.TemporaryDirectory() as tmp:
        if use_storage:
            config["storagePath"] = os.path.join(tmp, "store")
        config.pop("events", None)
        try:
            controller = cc.ContentCards(config)
        except (cc.ContentCardsError, TypeError):
            return
        with controller:
            assert isinstance(controller.user_id, str)
            assert isinstance(controller.diagnostics(), cc.Diagnostics)
            controller.counts()


@SETTINGS
@given(text=json_text)
def test_random_config_text(text: str | bytes) -> None:
    try:
        controller = cc.ContentCards(text)
    except (cc.ContentCardsError, TypeError):
        return
    controller.close()


def test_card_json_round_trip_after_random_payloads(controller: cc.ContentCards) -> None:
    for card in controller.cards():
        assert cc.Card.from_json(json.loads(json.dumps(card.to_json()))) == card


def test_ids_are_compared_as_bytes() -> None:
    with cc.ContentCards() as c:
        summary = c.apply([{"id": "\u00e9", "tp": "short_news", "ca": 1, "ds": "nfc"},
                           {"id": "e\u0301", "tp": "short_news", "ca": 1, "ds": "nfd"},
                           {"id": "e\u0301x", "tp": "short_news", "ca": 1, "ds": "nfd"},
                           {"id": "f", "tp": "short_news", "ca": 1, "ds": "ascii"}])
        assert summary.added == 4, summary.left_out
        assert c.card("e\u0301").card_description == "nfd"
        ids = [card.id for card in c.cards()]
        assert ids == sorted(ids, key=lambda i: i.encode("utf-8"), reverse=True)


# -- the small encoder of configurations and filters ---------------------------------------

odd_scalars = st.one_of(scalars, st.floats(), st.text(alphabet=st.characters(max_codepoint=0x10FFFF),
                                                       max_size=8))
odd_values = st.recursive(
    odd_scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.tuples(children, children),
                               st.dictionaries(st.one_of(st.text(max_size=4), st.integers(-5, 5),
                                                         st.floats(), st.booleans(), st.none()),
                                               children, max_size=5)),
    max_leaves=25)


@SETTINGS
@given(odd_values)
def test_dumps_small_writes_what_json_dumps_writes(value: Any) -> None:
    """dumps_small (configurations and filters, without importing json) gives the bytes dumps
    (json.dumps) gives, or the same error (NaN and infinity refused; a lone surrogate is passed
    on, for the library to refuse as invalid UTF-8)."""
    from contentcards import _arguments
    try:
        expected = _arguments.dumps(value, "ConfigError", "configuration")
    except cc.ContentCardsError as exc:
        with pytest.raises(type(exc)):
            _arguments.dumps_small(value, "ConfigError", "configuration")
        return
    assert _arguments.dumps_small(value, "ConfigError", "configuration") == \
        json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                   default=_arguments._json_default).encode("utf-8", "surrogatepass")
    assert json.loads(_arguments.dumps_small(value, "ConfigError", "configuration")
                      .decode("utf-8", "surrogatepass")) == json.loads(expected.decode("utf-8", "surrogatepass"))


def test_dumps_small_refuses_what_json_dumps_refuses() -> None:
    from contentcards import _arguments
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(cc.ConfigError, match="Circular reference"):
        _arguments.dumps_small({"a": loop}, "ConfigError", "configuration")
    with pytest.raises(TypeError, match="keys must be str"):
        _arguments.dumps_small({(1, 2): 1}, "ConfigError", "configuration")
    with pytest.raises(TypeError, match="not JSON serializable"):
        _arguments.dumps_small({"a": object()}, "ConfigError", "configuration")
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(cc.ConfigError, match="nested too deeply"):
        _arguments.dumps_small(deep, "ConfigError", "configuration")
    assert _arguments.dumps_small({"p": __import__("pathlib").Path("/x"), "s": {"b", "a"}},
                                  "ConfigError", "configuration") == b'{"p":"/x","s":["a","b"]}'
