"""The cards of ``cards()`` are read lazily: each keeps the feed's text and where its part is
(the library's offsets, cc_controller_feed_indexed) until a field is read. Nothing of it may
show: every card equals the one built from the whole feed parsed at once, field by field,
whatever its text holds, also with a library that gives no offsets (found by the separator)."""

from __future__ import annotations

import copy
import json
import pickle
import threading
from typing import Any

import pytest

import contentcards as cc
from contentcards import _ffi
from contentcards import cards as cards_module
from contentcards import controller as controller_module
from conftest import open_sample

# Texts that look like the place where one card ends and the next begins, and extras whose
# key is "id": the split must still find exactly the cards.
TRICKY = ['},{"id":"x"}', ',{"id":', '{"id":', '"},{"id":"', '\\', '\\"},{"id":\\"',
          'caf\u00e9 \u2603 \U0001F600', '\n\t\u0001', '[{"id":"a"}]']


def tricky_payload() -> list[dict[str, Any]]:
    cards: list[dict[str, Any]] = []
    for i, text in enumerate(TRICKY):
        cards.append({"id": f"c{i}{text}", "tp": "captioned_image", "ca": 1700000000 + i,
                      "ea": -1, "tt": text, "ds": text + text, "i": "https://x.example/i.png",
                      "ar": 1.5 + i, "u": "https://x.example/?q=" + text,
                      "e": {"id": text, "class_type": "home_tile", text: text, "n": i}})
    cards.append({"id": "ctl", "tp": "control", "ca": 1600000000, "ea": -1, "e": {}})
    cards.append({"id": "b", "tp": "banner_image", "ca": 1600000001, "ea": 4102444800,
                  "i": "https://x.example/b.png", "ar": 2, "e": {"class_type": "coupon_code"}})
    return cards


@pytest.fixture
def tricky() -> Any:
    with cc.ContentCards() as controller:
        controller.apply(tricky_payload())
        yield controller


def eager(controller: cc.ContentCards, class_types: Any = None) -> list[cc.Card]:
    return [cc.Card.from_json(item) for item in json.loads(controller.cards_json(class_types))]


def test_lazy_cards_equal_the_whole_feed_parsed(tricky: cc.ContentCards) -> None:
    expected = eager(tricky)
    assert len(expected) == len(TRICKY) + 2
    lazy = tricky.cards()
    assert [card.id for card in lazy] == [card.id for card in expected]
    for got, want in zip(lazy, expected):
        for name in want._fields:
            assert getattr(got, name) == getattr(want, name), name
        assert got == want and hash(got) == hash(want) and repr(got) == repr(want)
        assert got.to_json() == want.to_json()
    assert tricky.cards("coupon_code") == eager(tricky, "coupon_code")
    assert tricky.cards(["nothing"]) == []
    with cc.ContentCards() as empty:
        assert empty.cards() == []


def test_the_librarys_offsets_are_the_cards_bounds(tricky: cc.ContentCards) -> None:
    # cc_controller_feed_indexed: the same text as cc_controller_feed, and each span one card.
    for class_types in (None, "coupon_code", ["nothing"]):
        shared, offsets = tricky._call(_ffi.controller_feed_indexed,
                                       None if class_types is None else
                                       json.dumps([class_types] if isinstance(class_types, str)
                                                  else class_types).encode())
        text = bytes(shared)
        assert len(shared) == len(text) and shared[:] == text and shared[5:-3] == text[5:-3]
        assert shared[len(text):] == b"" == shared[3:2]
        assert text.decode() == tricky.cards_json(class_types)
        cards = json.loads(text)
        assert len(offsets) == len(cards) + 1 and offsets[-1] == len(text)
        assert [json.loads(text[a:b - 1]) for a, b in zip(offsets, offsets[1:])] == cards
        assert all(text[b - 1:b] in (b",", b"]") for b in offsets[1:])
        assert offsets == (cards_module._offsets(text) or [2])
    with cc.ContentCards() as empty:
        shared, offsets = empty._call(_ffi.controller_feed_indexed, None)
        assert (bytes(shared), offsets) == (b"[]", [2])


class CountingFrees:
    """The library's functions, with its frees of the feed's text counted (by address)."""

    def __init__(self, lib: Any) -> None:
        self._lib = lib
        self.freed: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lib, name)

    def cc_string_free(self, address: Any) -> None:
        self.freed.append(address if isinstance(address, int) else address.value)
        self._lib.cc_string_free(address)


def test_the_feeds_text_is_freed_once_when_its_last_card_lets_go(
        tricky: cc.ContentCards, monkeypatch: pytest.MonkeyPatch) -> None:
    # The lazy cards share the library's own buffer (not a copy): it must live while any card
    # still needs it, whichever card goes last, and then be freed exactly once.
    expected = eager(tricky)
    counting = CountingFrees(_ffi.lib)
    monkeypatch.setattr(_ffi, "lib", counting)

    def frees_since(mark: int, address: int) -> int:   # malloc may hand an address out again
        return counting.freed[mark:].count(address)

    for last in (0, len(expected) - 1, 3):
        mark = len(counting.freed)
        cards = tricky.cards()
        address = cards[0]._text[0]._address
        keep = cards[last]
        del cards
        assert frees_since(mark, address) == 0
        assert keep == expected[last] and keep.to_json() == expected[last].to_json()
        assert frees_since(mark, address) == 1      # read: the card let go of the text
    mark = len(counting.freed)
    cards = tricky.cards()
    address = cards[0]._text[0]._address
    read = [card.title for card in cards[1:]]   # every card but the first has let go
    assert read == [card.title for card in expected[1:]] and frees_since(mark, address) == 0
    first = cards[0]
    del cards
    assert frees_since(mark, address) == 0
    del first                                   # never read: dropped with its text
    assert frees_since(mark, address) == 1


def test_a_library_without_offsets_gives_the_same_cards(tricky: cc.ContentCards,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # A library older than the package (no cc_controller_feed_indexed): the bounds are found
    # by the separator in the text, and the cards are the same.
    expected = tricky.cards()
    monkeypatch.setattr(controller_module, "_FEED_INDEXED", False)
    assert tricky.cards() == expected == eager(tricky)
    assert tricky.cards("coupon_code") == eager(tricky, "coupon_code")
    with cc.ContentCards() as empty:
        assert empty.cards() == []


def test_cards_parses_no_card_until_a_field_is_read(tricky: cc.ContentCards,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = json.loads

    def counting(text: Any, **kwargs: Any) -> Any:
        calls.append(len(text))
        return real(text, **kwargs)

    order = [card["id"] for card in real(tricky.cards_json())]
    at = order.index("c3" + TRICKY[3])
    other = (at + 1) % len(order)
    monkeypatch.setattr(json, "loads", counting)
    lazy = tricky.cards()
    assert calls == []
    assert lazy[at].title == TRICKY[3]
    assert len(calls) == 1
    assert lazy[at].extras["id"] == TRICKY[3] and lazy[at].image_aspect_ratio == 4.5
    assert len(calls) == 1  # one parse sets every field
    assert lazy[other] != lazy[at]
    assert len(calls) == 2


def test_a_lazy_card_is_an_ordinary_value(tricky: cc.ContentCards) -> None:
    card = tricky.cards()[1]
    assert pickle.loads(pickle.dumps(tricky.cards()[1])) == card
    assert copy.deepcopy(card) is card
    assert card._replace(title="t").title == "t"
    assert card._fields == cc.Card.__slots__[:-1]
    with pytest.raises(AttributeError, match="no attribute 'titel'"):
        card.titel  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(tricky.cards()[1], "_missing")
    with pytest.raises(AttributeError):
        card.title = "x"  # type: ignore[misc]
    assert {card: 1}[tricky.cards()[1]] == 1


def test_threads_reading_the_same_lazy_cards_see_the_same_values() -> None:
    with open_sample() as controller:
        controller.refresh(5)
        expected = eager(controller)
        for _ in range(20):
            lazy = controller.cards()
            seen: list[list[Any]] = []
            start = threading.Barrier(4)

            def read() -> None:
                start.wait()
                seen.append([card.to_json() for card in reversed(lazy)][::-1])

            threads = [threading.Thread(target=read) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert all(values == [card.to_json() for card in expected] for values in seen)
            assert lazy == expected


def test_a_feed_text_not_in_the_writers_form_is_parsed_whole() -> None:
    assert cards_module._offsets(b"[]") is None
    assert cards_module._offsets(b' [{"id":"a"}]') is None


def test_a_card_whose_text_is_not_json_says_so_when_read() -> None:
    # Never from the library; if it ever were, the error is the package's ParseError.
    text = b'[{"id":"a",},{"id":"b","type":"classic"}]'
    offsets = cards_module._offsets(text)
    assert offsets == [1, 13, len(text)]
    cards = cards_module._lazy_cards(text, offsets)
    assert len(cards) == 2
    with pytest.raises(cc.ParseError, match="not JSON"):
        cards[0].title  # noqa: B018
    with pytest.raises(cc.ParseError, match="missing"):
        cards[1].title  # noqa: B018
