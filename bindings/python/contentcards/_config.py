"""The configuration of :class:`~contentcards.ContentCards`: its keyword arguments
(:data:`CONFIG_KEYS`), their types, and the JSON text the library opens with.

This module is private: its names may change without notice. ``CONFIG_KEYS`` is public as
``contentcards.CONFIG_KEYS`` (and ``contentcards.controller.CONFIG_KEYS``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from . import _ffi
from ._arguments import dumps_small

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, TypedDict

    # typing_extensions: these came to typing after Python 3.9 (typeshed has it, for any version)
    from typing_extensions import TypeAlias

    class FileEndpoint(TypedDict):
        """``{"file": PATH}``: a local file (the source's feed, or the events' JSON lines)."""

        file: str | os.PathLike[str]

    class _UrlEndpointBase(TypedDict):
        url: str

    class UrlEndpoint(_UrlEndpointBase, total=False):
        """``{"url": BASE, "apiKey": KEY}``: a server; for the source, ``"hints": True`` also
        receives hints from BASE/content_cards/stream (a refresh when the cards change)."""

        apiKey: str
        hints: bool

    class CallbackEndpoint(TypedDict):
        """``{"callback": True}``: the host transport (:meth:`ContentCards.set_transport`)."""

        callback: Literal[True]

    class ImagesConfig(TypedDict, total=False):
        """The image cache (the "images" key): its limits."""

        maxBytes: int
        maxCount: int
        maxImageBytes: int

    #: Where cards come from, or where events go (the "source" and "events" keys).
    Endpoint: TypeAlias = "FileEndpoint | UrlEndpoint | CallbackEndpoint"

__all__ = ["CONFIG_KEYS", "config_json", "unknown_keyword"]

#: Keyword arguments of ContentCards() and the configuration keys they set.
CONFIG_KEYS: dict[str, str] = {
    "user_id": "userId",
    "storage_path": "storagePath",
    "source": "source",
    "events": "events",
    "refresh_tokens": "refreshTokens",
    "refresh_interval_seconds": "refreshIntervalSeconds",
    "timeout_seconds": "timeoutSeconds",
    "known_class_types": "knownClassTypes",
    "max_payload_bytes": "maxPayloadBytes",
    "device_id": "deviceId",
    "event_batch_size": "eventBatchSize",
    "event_batch_bytes": "eventBatchBytes",
    "event_flush_interval_seconds": "eventFlushIntervalSeconds",
    "images": "images",
    "refresh_on_open_after_seconds": "refreshOnOpenAfterSeconds",
    "refresh_period_seconds": "refreshPeriodSeconds",
    "refresh_period_jitter": "refreshPeriodJitter",
    "retry_base_seconds": "retryBaseSeconds",
    "retry_max_seconds": "retryMaxSeconds",
}


def unknown_keyword(options: Mapping[str, object]) -> None:
    """A misspelt keyword argument: a TypeError naming the closest one (mypy rejects it too:
    the catch-all is typed Never)."""
    import difflib   # only for a misspelt key: an import should not pay for it

    name = next(iter(options))
    close = difflib.get_close_matches(name, CONFIG_KEYS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise TypeError(f"ContentCards() got an unexpected keyword argument {name!r}{hint}")


def config_json(config: Mapping[str, Any] | str | bytes | None,
                options: dict[str, Any]) -> bytes | None:
    """The configuration's JSON text for cc_controller_open (None: the defaults): ``config``
    (a dict of the library's keys, or JSON text) with the keyword ``options`` that are not None
    set over it under their library keys."""
    options = {name: value for name, value in options.items() if value is not None}
    if isinstance(config, (str, bytes)):
        if options:
            raise TypeError("ContentCards(): keyword options need a dict configuration, "
                            "not JSON text")
        return _ffi.cstr(config, "configuration")
    if config is not None and not isinstance(config, Mapping):
        raise TypeError(f"configuration must be a dict, not {type(config).__name__}")
    if config is None and not options:
        return None
    merged: dict[str, Any] = dict(config or {})
    for name, value in options.items():
        if name == "known_class_types" and value is not None and not isinstance(value, str):
            value = list(value)
        merged[CONFIG_KEYS[name]] = value
    return dumps_small(merged, "ConfigError", "configuration")
