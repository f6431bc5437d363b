"""The card model as Python sees it: :class:`Card`, built from the boundary JSON (long keys)."""

from __future__ import annotations

import enum
import types
from collections.abc import Mapping

from . import _ffi
from ._value import Value

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from ._ffi import LibraryText

__all__ = ["Card", "CardType", "json_number", "normalize_class_type"]

_set = object.__setattr__


def json_number(value: float) -> float | int:
    """A float as the library writes it in JSON: a whole number below 1e15 without a
    fraction (1.0 -> 1), so ``json.dumps(card.to_json())`` gives the library's bytes."""
    if abs(value) < 1e15 and value == int(value):
        return int(value)
    return value


def normalize_class_type(class_type: str) -> str:
    """A class type as the library matches it: surrounding white space removed, lower case."""
    return class_type.strip().lower()


def _utc(timestamp: int) -> datetime:
    """Unix seconds as an aware UTC datetime, clamped to what datetime can hold. (datetime is
    imported here, on first use: it was a tenth of ``import contentcards``.)"""
    from datetime import datetime, timedelta, timezone
    try:
        return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=timestamp)
    except OverflowError:
        return (datetime.min if timestamp < 0 else datetime.max).replace(tzinfo=timezone.utc)


class CardType(enum.Enum):
    """The kind of a card."""

    CLASSIC = "classic"
    BANNER = "banner"
    CAPTIONED_IMAGE = "captioned_image"
    CONTROL = "control"


_TYPES = {t.value: t for t in CardType}

# boundary key -> (attribute, expected type, nullable)
_STR, _BOOL, _NUM = "string", "boolean", "number"
_FIELDS: tuple[tuple[str, str, str, bool], ...] = (
    ("id", "id", _STR, False),
    ("type", "type", _STR, False),
    ("created", "created_timestamp", _NUM, False),
    ("expiresAt", "expires_at_timestamp", _NUM, False),
    ("viewed", "viewed", _BOOL, False),
    ("clicked", "clicked", _BOOL, False),
    ("dismissed", "dismissed", _BOOL, False),
    ("read", "read", _BOOL, False),
    ("dismissible", "dismissible", _BOOL, False),
    ("pinned", "pinned", _BOOL, False),
    ("isTest", "is_test", _BOOL, False),
    ("isControl", "is_control", _BOOL, False),
    ("url", "url", _STR, True),
    ("openURLInWebView", "open_url_in_web_view", _BOOL, False),
    ("extras", "extras", "object", False),
    ("classType", "class_type", _STR, False),
    ("image", "image", _STR, True),
    ("imageAltText", "image_alt_text", _STR, True),
    ("imageAspectRatio", "image_aspect_ratio", _NUM, True),
    ("title", "title", _STR, True),
    ("cardDescription", "card_description", _STR, True),
    ("domain", "domain", _STR, True),
    ("imagePath", "image_path", _STR, True),
)


def _parse_error(message: str) -> Exception:
    """``contentcards.errors.ParseError(message)``; the errors module comes in with the first
    error (``_ffi.error_class``), not with the cards (docs/PERFORMANCE.md, "Python open and
    first feed")."""
    return _ffi.error_class("ParseError")(message)


def _check(key: str, value: Any, kind: str, nullable: bool) -> Any:
    if value is None and nullable:
        return None
    ok = {
        _STR: isinstance(value, str),
        _BOOL: isinstance(value, bool),
        _NUM: isinstance(value, (int, float)) and not isinstance(value, bool),
        "object": isinstance(value, Mapping),
    }[kind]
    if not ok:
        raise _parse_error(f"card field {key!r} must be a {kind}"
                            f"{' or null' if nullable else ''}, not {type(value).__name__}")
    return value


# The fields, in order: the attributes of a Card and the order of its boundary JSON.
_FIELD_NAMES = ("id", "type", "created_timestamp", "expires_at_timestamp", "viewed", "clicked",
                "dismissed", "read", "dismissible", "pinned", "is_test", "is_control", "url",
                "open_url_in_web_view", "extras", "class_type", "image", "image_alt_text",
                "image_aspect_ratio", "title", "card_description", "domain", "image_path")
_FIELD_SET = frozenset(_FIELD_NAMES)


class Card(Value):
    """One card, with every field of the boundary JSON under a snake_case name.

    ``created`` and ``expires_at`` are aware UTC datetimes (``expires_at`` is None for a card
    that never expires); the raw unix seconds are in ``created_timestamp`` and
    ``expires_at_timestamp`` (-1 = never). ``extras`` is a read-only mapping of strings.
    A Card is a value: it does not change when the controller does; its fields cannot be
    assigned (``card._replace(title="x")`` gives a changed copy). Two cards are equal when
    every field is; the hash leaves ``extras`` out.

    The cards of :meth:`ContentCards.cards` are read lazily: each keeps the feed's text (one
    buffer the feed's cards share) and where its part of it is, until one of its fields is
    first read, and then takes all of them at once and lets go of the text (a feed of 4,000
    cards is handed over without parsing 4,000 cards nobody draws; the buffer is the one the
    library wrote, not a copy, freed when no card holds it). So a card never read keeps
    the whole feed's text alive. Nothing else of this shows: the values, equality, hash, repr
    and pickling are those of a card built field by field.
    """

    # `_text`: a lazy card's span of the feed, (feed text, start, end) (see `_lazy_cards`), or
    # None once its fields are set; unset on a card built by __init__.
    __slots__ = _FIELD_NAMES + ("_text",)
    _not_hashed = frozenset({"extras"})
    id: str
    type: CardType
    created_timestamp: int
    expires_at_timestamp: int
    viewed: bool
    clicked: bool
    dismissed: bool
    read: bool
    dismissible: bool
    pinned: bool
    is_test: bool
    is_control: bool
    url: str | None
    open_url_in_web_view: bool
    extras: Mapping[str, str]
    class_type: str
    image: str | None
    image_alt_text: str | None
    image_aspect_ratio: float | None
    title: str | None
    card_description: str | None
    domain: str | None
    image_path: str | None  # the image's file in the image cache; None when not cached

    def __init__(self, *, id: str, type: CardType, created_timestamp: int,
                 expires_at_timestamp: int, viewed: bool, clicked: bool, dismissed: bool,
                 read: bool, dismissible: bool, pinned: bool, is_test: bool, is_control: bool,
                 url: str | None, open_url_in_web_view: bool, extras: Mapping[str, str],
                 class_type: str, image: str | None, image_alt_text: str | None,
                 image_aspect_ratio: float | None, title: str | None,
                 card_description: str | None, domain: str | None, image_path: str | None) -> None:
        _set(self, "id", id)
        _set(self, "type", type)
        _set(self, "created_timestamp", created_timestamp)
        _set(self, "expires_at_timestamp", expires_at_timestamp)
        _set(self, "viewed", viewed)
        _set(self, "clicked", clicked)
        _set(self, "dismissed", dismissed)
        _set(self, "read", read)
        _set(self, "dismissible", dismissible)
        _set(self, "pinned", pinned)
        _set(self, "is_test", is_test)
        _set(self, "is_control", is_control)
        _set(self, "url", url)
        _set(self, "open_url_in_web_view", open_url_in_web_view)
        _set(self, "extras", extras)
        _set(self, "class_type", class_type)
        _set(self, "image", image)
        _set(self, "image_alt_text", image_alt_text)
        _set(self, "image_aspect_ratio", image_aspect_ratio)
        _set(self, "title", title)
        _set(self, "card_description", card_description)
        _set(self, "domain", domain)
        _set(self, "image_path", image_path)

    def __reduce__(self) -> tuple[Any, ...]:
        # extras is a read-only view (mappingproxy), which pickle cannot take: a dict instead.
        return (_unpickle_card, (tuple(dict(self.extras) if name == "extras" else
                                       getattr(self, name) for name in _FIELD_NAMES),))

    @property
    def _fields(self) -> tuple[str, ...]:
        """The fields, in order (``_text`` is how a lazy card holds them, not a field)."""
        return _FIELD_NAMES

    if not TYPE_CHECKING:  # (so that type checkers still reject an unknown attribute)
        def __getattr__(self, name: str) -> Any:
            # Python calls this only when the attribute is not found: here, a field of a lazy
            # card not read yet. Another thread may be filling the same card: both parse the
            # same text and set the same values; `_text` becomes None only after every field
            # is set, so a thread that finds it None finds the fields.
            if name not in _FIELD_SET:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            text = _get_text(self)
            if text is not None:
                _fill(self, text)
            return _FIELD_GETTERS[name](self)

    @property
    def created(self) -> datetime:
        """When the server created the card (UTC)."""
        return _utc(self.created_timestamp)

    @property
    def expires_at(self) -> datetime | None:
        """When the card expires (UTC), or None when it never does."""
        if self.expires_at_timestamp == -1:
            return None
        return _utc(self.expires_at_timestamp)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Card:
        """A Card from one card of the boundary JSON (a decoded dict with the long keys).
        Raises ParseError when a field is missing or of the wrong type."""
        if not isinstance(data, Mapping):
            raise _parse_error(f"a card must be a JSON object, not {type(data).__name__}")
        values: dict[str, Any] = {}
        for key, attribute, kind, nullable in _FIELDS:
            if key not in data:
                raise _parse_error(f"card field {key!r} is missing")
            values[attribute] = _check(key, data[key], kind, nullable)
        try:
            values["type"] = CardType(values["type"])
        except ValueError:
            raise _parse_error(f"unknown card type {values['type']!r}") from None
        for key in ("created_timestamp", "expires_at_timestamp"):
            values[key] = int(values[key])
        if values["image_aspect_ratio"] is not None:
            values["image_aspect_ratio"] = float(values["image_aspect_ratio"])
        extras = {}
        for name, value in values["extras"].items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise _parse_error("card extras must map strings to strings")
            extras[name] = value
        values["extras"] = types.MappingProxyType(extras)
        return cls(**values)

    @classmethod
    def _from_library(cls, d: dict[str, Any]) -> Card:
        """A Card from the library's own boundary JSON, whose shape the library guarantees
        (every key present, the types of the header): built directly, without checking each
        field. Anything unexpected falls back to :meth:`from_json`, which says what is wrong."""
        try:
            return _build(d)
        except (KeyError, TypeError, ValueError):
            return cls.from_json(d)

    def to_json(self) -> dict[str, Any]:
        """The card as the boundary JSON (long keys, the library's key order)."""
        out: dict[str, Any] = {}
        for key, attribute, _kind, _nullable in _FIELDS:
            value = getattr(self, attribute)
            if attribute == "type":
                value = value.value
            elif attribute == "extras":
                value = dict(value)
            elif attribute == "image_aspect_ratio" and value is not None:
                value = json_number(value)
            out[key] = value
        return out


# The fields' slot descriptors, in declaration order: `_build` sets them directly on a new Card,
# which is what the frozen dataclass's __init__ does through object.__setattr__, in half the
# time (a feed of 4,000 cards: 20 ms -> 11 ms). The result is the same value: equal, same hash.
_SLOT_SETTERS = tuple(Card.__dict__[name].__set__ for name in _FIELD_NAMES)
_FIELD_GETTERS = {name: Card.__dict__[name].__get__ for name in _FIELD_NAMES}
_get_text = Card.__dict__["_text"].__get__
_set_text = Card.__dict__["_text"].__set__
_new_card = object.__new__
_mapping = types.MappingProxyType

# Where one card of the boundary JSON array ends and the next begins. In that text a `{` outside
# a string opens a card or its extras, and extras (an object of strings) follow a `:`; inside a
# string a `"` is always escaped (`\"`), so `{"` never occurs there. `,{"id":` is therefore
# exactly the start of every card but the first (the writer puts "id" first and no white space).
_CARD_START = b'{"id":'
_NEXT_CARD = b',{"id":'


def _unpickle_card(values: tuple[Any, ...]) -> Card:
    card = _new_card(Card)
    for setter, name, value in zip(_SLOT_SETTERS, _FIELD_NAMES, values):
        setter(card, _mapping(value) if name == "extras" else value)
    return card


def _build(d: dict[str, Any]) -> Card:
    card = _new_card(Card)
    _set_fields(card, d)
    return card


def _set_fields(card: Card, d: dict[str, Any]) -> None:
    (set_id, set_type, set_created, set_expires, set_viewed, set_clicked, set_dismissed, set_read,
     set_dismissible, set_pinned, set_is_test, set_is_control, set_url, set_web_view, set_extras,
     set_class_type, set_image, set_alt, set_ratio, set_title, set_description,
     set_domain, set_image_path) = _SLOT_SETTERS
    set_id(card, d["id"])
    set_type(card, _TYPES[d["type"]])
    set_created(card, d["created"])
    set_expires(card, d["expiresAt"])
    set_viewed(card, d["viewed"])
    set_clicked(card, d["clicked"])
    set_dismissed(card, d["dismissed"])
    set_read(card, d["read"])
    set_dismissible(card, d["dismissible"])
    set_pinned(card, d["pinned"])
    set_is_test(card, d["isTest"])
    set_is_control(card, d["isControl"])
    set_url(card, d["url"])
    set_web_view(card, d["openURLInWebView"])
    set_extras(card, _mapping(d["extras"]))
    set_class_type(card, d["classType"])
    set_image(card, d["image"])
    set_alt(card, d["imageAltText"])
    ratio = d["imageAspectRatio"]
    set_ratio(card, None if ratio is None else float(ratio))
    set_title(card, d["title"])
    set_description(card, d["cardDescription"])
    set_domain(card, d["domain"])
    set_image_path(card, d["imagePath"])


def _lazy_cards(feed: bytes | LibraryText, offsets: list[int]) -> list[Card]:
    """The cards of a feed text of the library, given where each begins (`offsets`: one a card
    and, last, the text's length, as cc_controller_feed_indexed gives them; each card is
    followed by one byte, a `,` or the closing `]`). Each card holds the feed and its bounds
    until a field is read: no card's text is copied or parsed before then."""
    cards: list[Card] = []
    append = cards.append
    for start, after in zip(offsets, offsets[1:]):
        card = _new_card(Card)
        _set_text(card, (feed, start, after - 1))
        append(card)
    return cards


def _offsets(feed: bytes) -> list[int] | None:
    """Where each card of a feed text begins, and its length, found by the separator (for a
    library without cc_controller_feed_indexed); None when the text is not a non-empty array
    in the writer's form (the caller then parses it whole)."""
    if not feed.startswith(b"[" + _CARD_START) or not feed.endswith(b"}]"):
        return None
    offsets = [1]
    find = feed.find
    at = find(_NEXT_CARD, 1)
    while at >= 0:
        offsets.append(at + 1)
        at = find(_NEXT_CARD, at + 1)
    offsets.append(len(feed))
    return offsets


def _fill(card: Card, span: tuple[bytes | LibraryText, int, int]) -> None:
    """Sets every field of a lazy card from its span of the feed, then lets go of the feed."""
    import json
    feed, start, end = span
    # The library's buffer through its memoryview (no method call: this runs for every card
    # read), or the bytes of a library without offsets.
    text = feed[start:end] if isinstance(feed, bytes) else feed.view[start:end].tobytes()
    try:
        d = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError: never from the library
        raise _parse_error(f"a card of the feed is not JSON: {exc}") from None
    try:
        _set_fields(card, d)
    except (KeyError, TypeError, ValueError):
        # Not the shape the library guarantees: from_json says what is wrong (ParseError).
        checked = Card.from_json(d)
        for setter, name in zip(_SLOT_SETTERS, _FIELD_NAMES):
            setter(card, _FIELD_GETTERS[name](checked))
    _set_text(card, None)
