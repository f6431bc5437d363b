"""The ContentCardable pattern: registered classes per class type, conversion in feed order,
declining, normalization, and objects that log themselves by card id."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import contentcards as cc
from contentcards import Card, ContentCardable, Registry


class HomeTile(ContentCardable):
    class_types = ("home_tile",)

    def __init__(self, title: str, price: float) -> None:
        self.title = title
        self.price = price

    @classmethod
    def from_card(cls, card: Card) -> HomeTile | None:
        try:
            return cls(card.extras["tile_title"], float(card.extras["tile_price"]))
        except (KeyError, ValueError):
            return None


@dataclass(frozen=True)
class Message(ContentCardable):
    class_types = (" Message_Full_Page ", "message_webview")  # normalized when registered
    title: str
    web: bool

    @classmethod
    def from_card(cls, card: Card) -> Message | None:
        return cls(card.extras.get("message_title", ""), card.class_type == "message_webview")


@dataclass(frozen=True)
class Coupon(ContentCardable):
    # A frozen dataclass with slots: what dataclass(slots=True) makes, written out (Python 3.9
    # has no slots=).
    __slots__ = ("percent", "control")
    percent: int
    control: bool

    @classmethod
    def from_card(cls, card: Card) -> Coupon | None:
        if card.is_control:
            return cls(0, True)
        return cls(int(card.extras["discount_percentage"]), False)


class Picky(ContentCardable):
    class_types = ("home_tile",)

    @classmethod
    def from_card(cls, card: Card) -> Picky | None:
        return cls() if card.id == "tile-3" else None  # declines every other tile


def test_convert_in_feed_order(refreshed: cc.ContentCards) -> None:
    registry = Registry(HomeTile, Message)
    registry.register("coupon_code", Coupon)
    assert registry.class_types == ("home_tile", "message_full_page", "message_webview",
                                    "coupon_code")
    assert "MESSAGE_WEBVIEW " in registry and "ad_banner" not in registry
    objects = refreshed.convert(registry)
    # Feed order, cards without a factory (banner-noclass, test-1) skipped.
    assert [obj.card_id for obj in objects] == [
        "tile-2", "coupon-control", "coupon-1", "msg-3", "msg-2", "msg-1", "tile-3", "tile-1"]
    assert [type(obj).__name__ for obj in objects] == [
        "HomeTile", "Coupon", "Coupon", "Message", "Message", "Message", "HomeTile", "HomeTile"]
    tile = objects[0]
    assert isinstance(tile, HomeTile) and tile.price == 34.5 and tile.class_type == "home_tile"
    coupon = objects[2]
    assert isinstance(coupon, Coupon) and coupon.percent == 20 and not coupon.control
    msg3 = objects[3]
    assert isinstance(msg3, Message) and msg3.web and msg3.class_type == "message_webview"

    # Only some class types
    only = refreshed.convert(registry, ["message_full_page"])
    assert [obj.card_id for obj in only] == ["msg-1"]
    assert registry.convert(refreshed.cards(), "HOME_TILE")[0].card_id == "tile-2"


def test_objects_log_themselves(refreshed: cc.ContentCards) -> None:
    registry = Registry(HomeTile)
    tiles = refreshed.convert(registry)
    assert refreshed.unviewed_count("home_tile") == 3
    assert tiles[0].log_impression().recorded
    assert refreshed.unviewed_count("home_tile") == 2
    assert tiles[0].log_click().recorded
    assert tiles[0].log_dismissal().recorded
    assert not tiles[0].log_dismissal().recorded  # already dismissed
    assert [obj.card_id for obj in refreshed.convert(registry)] == ["tile-3", "tile-1"]
    # The controller accepts the objects too.
    assert refreshed.log_impression(tiles[1]).recorded
    assert refreshed.card(tiles[1]).viewed

    # Converted without a controller: they say how to log.
    detached = registry.convert(refreshed.cards())
    with pytest.raises(RuntimeError, match="not converted through a controller"):
        detached[0].log_impression()


def test_declined_and_unregistered(refreshed: cc.ContentCards) -> None:
    assert [obj.card_id for obj in refreshed.convert(Registry(Picky))] == ["tile-3"]
    assert refreshed.convert(Registry()) == []
    # "" selects cards without a class type.
    registry = Registry()

    @registry.register("")
    class Plain(ContentCardable):
        @classmethod
        def from_card(cls, card: Card) -> Plain | None:
            return cls()

    assert [obj.card_id for obj in refreshed.convert(registry)] == ["banner-noclass", "test-1"]


def test_registry_rules() -> None:
    registry = Registry(HomeTile)
    registry.register(HomeTile)  # the same class again: fine
    with pytest.raises(ValueError, match="already registered"):
        registry.register("home_tile", Picky)
    with pytest.raises(ValueError, match="declares no class_types"):
        registry.register(Coupon)
    with pytest.raises(TypeError):
        registry.register("x", int)  # type: ignore[call-overload]

    @registry.register
    class Banner(ContentCardable):
        class_types = ("ad_banner",)

        @classmethod
        def from_card(cls, card: Card) -> Banner | None:
            return cls()

    assert registry.factory_for(" AD_BANNER") is Banner
    assert "Banner" in repr(registry)


def test_from_card_errors_propagate(refreshed: cc.ContentCards) -> None:
    class Broken(ContentCardable):
        class_types = ("coupon_code",)

        @classmethod
        def from_card(cls, card: Card) -> Broken | None:
            raise KeyError("discount")

    with pytest.raises(KeyError):
        refreshed.convert(Registry(Broken))


def test_known_class_types_and_conversion(sample_feed: str) -> None:
    """With knownClassTypes, other class types normalize to "" (an enum with a none case)."""
    with cc.ContentCards(refresh_tokens=0, source={"file": sample_feed},
                         known_class_types=["home_tile"]) as c:
        c.refresh()
        registry = Registry(HomeTile, Message)
        assert [obj.card_id for obj in c.convert(registry)] == ["tile-2", "tile-3", "tile-1"]
