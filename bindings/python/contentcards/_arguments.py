"""The controller's arguments as the library takes them: JSON text, a class-type filter, a card
id, a timeout in seconds; wrong types are a TypeError before the library is called.

This module is private: its names may change without notice. ``CardRef`` is public as
``contentcards.controller.CardRef``.
"""

from __future__ import annotations

import os

# json is imported by the functions that use it, on first use: importing it was a sixth of
# `import contentcards`, which should cost next to nothing (docs/PERFORMANCE.md).

from . import _ffi
from .cards import Card

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from typing_extensions import TypeAlias

    from .convert import ContentCardable

__all__ = ["CardRef", "card_id", "dumps", "dumps_small", "filter_json", "timeout"]

#: A card given by id, as a Card, or as an object with a ``card_id`` (a ContentCardable).
CardRef: TypeAlias = "str | Card | ContentCardable"


def _json_default(value: Any) -> Any:
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"a value of type {type(value).__name__} is not JSON serializable")


def _for_library(encode: Callable[[Any], str], value: Any, error: str, what: str) -> bytes:
    """``encode(value)`` as the library's UTF-8 bytes; the exception of contentcards.errors
    named ``error`` (naming ``what``) when the value cannot be JSON. By name: the errors module
    is imported when one is raised, not by opening a controller (docs/PERFORMANCE.md)."""
    try:
        text = encode(value)
    except ValueError as exc:  # NaN, infinity, a circular reference
        raise _ffi.error_class(error)(f"{what} cannot be JSON: {exc}") from exc
    except RecursionError as exc:
        raise _ffi.error_class(error)(f"{what} is nested too deeply") from exc
    return _ffi.cstr(text, what)


def dumps(value: Any, error: str, what: str) -> bytes:
    """``value`` as JSON text for the library; ``error`` (naming ``what``) when it cannot be."""
    import json
    return _for_library(lambda v: json.dumps(v, default=_json_default, allow_nan=False, ensure_ascii=False),
                        value, error, what)


# What a JSON string escapes: the quote, the backslash and the control characters (as
# json.dumps with ensure_ascii=False does; the library reads any valid escape).
_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)}
_ESCAPES.update({0x22: '\\"', 0x5C: "\\\\", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x08: "\\b", 0x0C: "\\f"})


def _key(key: Any) -> str:
    """A dict key as json.dumps writes it: a str as it is; a number, bool or None as its JSON."""
    if isinstance(key, str):
        return key
    if key is True or key is False or key is None or isinstance(key, (int, float)):
        return _small(key, set())
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _small(value: Any, open_: set[int]) -> str:
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPES) + '"'
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        return float.__repr__(value)
    if isinstance(value, (list, tuple, dict)):
        if id(value) in open_:
            raise ValueError("Circular reference detected")
        open_.add(id(value))
        if isinstance(value, dict):
            text = "{" + ",".join('"' + _key(k).translate(_ESCAPES) + '":' + _small(v, open_)
                                  for k, v in value.items()) + "}"
        else:
            text = "[" + ",".join(_small(v, open_) for v in value) + "]"
        open_.discard(id(value))
        return text
    return _small(_json_default(value), open_)


def dumps_small(value: Any, error: str, what: str) -> bytes:
    """``dumps`` for the few hundred bytes of a configuration or a filter, without importing
    json: its import (1.3 ms, most of it loading the _json extension) was an eighth of opening
    a controller and reading its first feed from Python. The same text as json.dumps's, but for
    spacing, and the same errors; a payload (``apply``) still goes through json's C encoder."""
    return _for_library(lambda v: _small(v, set()), value, error, what)


def filter_json(class_types: Iterable[str] | str | None) -> bytes | None:
    """A class-type filter: None for every card; a str is one class type."""
    if class_types is None:
        return None
    names = [class_types] if isinstance(class_types, str) else list(class_types)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"class types must be str, not {type(name).__name__}")
    return dumps_small(names, "ParseError", "class-type filter")


def card_id(card: CardRef) -> str:
    """The id of a card given by id, as a Card, or as an object with a ``card_id``."""
    if isinstance(card, str):
        return card
    if isinstance(card, Card):
        return card.id
    card_id = getattr(card, "card_id", None)
    if isinstance(card_id, str):
        return card_id
    raise TypeError(f"expected a card id (str), a Card or an object with a card_id, "
                    f"not {type(card).__name__}")


def timeout(timeout: float | None) -> float:
    """A timeout in seconds for the library (0: the configuration's)."""
    if timeout is None:
        return 0.0
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
    return float(timeout)
