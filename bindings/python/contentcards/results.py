"""The small value types the controller returns: counts, sync summaries, logging and flush
results, the event outbox, diagnostics, and the updates subscribers receive.

Each has the fields of the library's JSON under snake_case names (docs/API.md lists them for
Swift, C and Python) and ``to_json()``, which gives that JSON back with the library's keys.
They are immutable values (see :mod:`contentcards._value`).

This file is over 400 lines because it holds the whole family: the results of docs/API.md's
"Results" table and their parts (LeftOut, PendingEvent, UpdateReason), each a small class of
one shape (fields, ``from_json``, ``to_json``); split, each module would hold one or two of
them and repeat the same imports.
"""

from __future__ import annotations

import enum

# json is imported by the functions that use it, on first use: importing it was a sixth of
# `import contentcards`, which should cost next to nothing (docs/PERFORMANCE.md).
from ._value import Value
from .cards import Card, json_number
from .errors import ContentCardsError, ParseError, error_for

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Counts", "Diagnostics", "FlushResult", "ForgetReceipt", "ImageStats", "LeftOut",
           "LogResult", "PendingEvent", "PendingEvents", "SyncSummary", "Update", "UpdateReason",
           "UserExport"]

_set = object.__setattr__


class Counts(tuple[int, int, int]):
    """Badge counts of the visible feed: ``total`` includes control cards, ``unviewed`` (no
    impression yet) and ``unread`` (not marked read) do not. A tuple:
    ``total, unviewed, unread = counts`` works."""

    __slots__ = ()

    def __new__(cls, total: int, unviewed: int, unread: int = 0) -> Counts:
        return tuple.__new__(cls, (total, unviewed, unread))

    @property
    def total(self) -> int:
        return self[0]

    @property
    def unviewed(self) -> int:
        return self[1]

    @property
    def unread(self) -> int:
        return self[2]

    def __repr__(self) -> str:
        return f"Counts(total={self[0]}, unviewed={self[1]}, unread={self[2]})"

    def _replace(self, **changes: int) -> Counts:
        return Counts(changes.pop("total", self[0]), changes.pop("unviewed", self[1]),
                      changes.pop("unread", self[2]))

    def __getnewargs__(self) -> tuple[int, int, int]:
        return (self[0], self[1], self[2])

    @classmethod
    def from_json(cls, data: Any) -> Counts:
        return cls(int(data["total"]), int(data["unviewed"]), int(data.get("unread", 0)))


    def to_json(self) -> dict[str, Any]:
        return {"total": self[0], "unviewed": self[1], "unread": self[2]}


class ImageStats(tuple[int, int, int, int, int]):
    """What the image cache did: images ``fetched`` and fetches ``failed`` since the controller
    opened; images ``cached`` for the current user and their ``bytes``; prefetches ``pending``
    (0 unless the wait timed out)."""

    __slots__ = ()

    def __new__(cls, fetched: int, failed: int, cached: int, bytes: int,  # noqa: A002
                pending: int) -> ImageStats:
        return tuple.__new__(cls, (fetched, failed, cached, bytes, pending))

    @property
    def fetched(self) -> int:
        return self[0]

    @property
    def failed(self) -> int:
        return self[1]

    @property
    def cached(self) -> int:
        return self[2]

    @property
    def bytes(self) -> int:
        return self[3]

    @property
    def pending(self) -> int:
        return self[4]

    def __repr__(self) -> str:
        return (f"ImageStats(fetched={self[0]}, failed={self[1]}, cached={self[2]}, "
                f"bytes={self[3]}, pending={self[4]})")

    def __getnewargs__(self) -> tuple[int, int, int, int, int]:
        return (self[0], self[1], self[2], self[3], self[4])

    @classmethod
    def from_json(cls, data: Any) -> ImageStats:
        return cls(int(data["fetched"]), int(data["failed"]), int(data["cached"]),
                   int(data["bytes"]), int(data["pending"]))

    def to_json(self) -> dict[str, Any]:
        return {"fetched": self[0], "failed": self[1], "cached": self[2], "bytes": self[3],
                "pending": self[4]}


class FlushResult(tuple[int, int, int]):
    """The outcome of an event flush: ``delivered``, ``dropped``, and still ``pending``."""

    __slots__ = ()

    def __new__(cls, delivered: int, dropped: int, pending: int) -> FlushResult:
        return tuple.__new__(cls, (delivered, dropped, pending))

    @property
    def delivered(self) -> int:
        return self[0]

    @property
    def dropped(self) -> int:
        return self[1]

    @property
    def pending(self) -> int:
        return self[2]

    def __repr__(self) -> str:
        return f"FlushResult(delivered={self[0]}, dropped={self[1]}, pending={self[2]})"

    def __getnewargs__(self) -> tuple[int, int, int]:
        return (self[0], self[1], self[2])

    @classmethod
    def from_json(cls, data: Any) -> FlushResult:
        return cls(int(data["delivered"]), int(data["dropped"]), int(data["pending"]))

    def to_json(self) -> dict[str, Any]:
        return {"delivered": self[0], "dropped": self[1], "pending": self[2]}


class LeftOut(Value):
    """A card of a payload that was left out: its position, its id (None when it had none)
    and why."""

    __slots__ = ("index", "id", "reason")
    index: int
    id: str | None
    reason: str

    def __init__(self, index: int, id: str | None, reason: str) -> None:  # noqa: A002
        _set(self, "index", index)
        _set(self, "id", id)
        _set(self, "reason", reason)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "id": self.id, "reason": self.reason}


class SyncSummary(Value):
    """What a refresh or an apply did (``cc_controller_refresh``'s summary)."""

    __slots__ = ("added", "updated", "removed", "kept_newer", "full_sync", "left_out", "counts",
                 "not_modified")
    added: int
    updated: int
    removed: int
    kept_newer: int
    full_sync: bool
    left_out: tuple[LeftOut, ...]
    counts: Counts
    #: The server answered 304 to the stored validator: nothing was merged or written.
    not_modified: bool

    def __init__(self, added: int, updated: int, removed: int, kept_newer: int, full_sync: bool,
                 left_out: tuple[LeftOut, ...], counts: Counts,
                 not_modified: bool = False) -> None:
        _set(self, "added", added)
        _set(self, "updated", updated)
        _set(self, "removed", removed)
        _set(self, "kept_newer", kept_newer)
        _set(self, "full_sync", full_sync)
        _set(self, "left_out", left_out)
        _set(self, "counts", counts)
        _set(self, "not_modified", not_modified)

    @classmethod
    def from_json(cls, data: Any) -> SyncSummary:
        try:
            return cls(
                added=int(data["added"]),
                updated=int(data["updated"]),
                removed=int(data["removed"]),
                kept_newer=int(data["keptNewer"]),
                full_sync=bool(data["fullSync"]),
                left_out=tuple(LeftOut(int(item["index"]), item["id"], str(item["reason"]))
                               for item in data["leftOut"]),
                counts=Counts.from_json(data["counts"]),
                not_modified=bool(data.get("notModified", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"unexpected sync summary from the library: {exc!r}") from exc

    @classmethod
    def from_text(cls, text: str | bytes) -> SyncSummary:
        import json
        return cls.from_json(json.loads(text))

    def to_json(self) -> dict[str, Any]:
        return {"added": self.added, "updated": self.updated, "removed": self.removed,
                "keptNewer": self.kept_newer, "fullSync": self.full_sync,
                "notModified": self.not_modified, "leftOut": [item.to_json() for item in self.left_out],
                "counts": self.counts.to_json()}


class LogResult(Value):
    """The outcome of a logging call, with the fields of Swift's ``LogResult`` and
    ``cc_controller_log``'s JSON: ``recorded`` is False when the library refused the call (no
    valid url for a click, not dismissible, already dismissed), with the ``reason``;
    ``event_id`` is the recorded event's id; ``state_changed`` is True when the card's state
    changed (first impression, first click, the dismissal). True in a boolean context when the
    event was recorded."""

    __slots__ = ("recorded", "reason", "event_id", "state_changed")
    recorded: bool
    reason: str | None
    event_id: str | None
    state_changed: bool

    def __init__(self, recorded: bool, reason: str | None = None, event_id: str | None = None,
                 state_changed: bool = False) -> None:
        _set(self, "recorded", recorded)
        _set(self, "reason", reason)
        _set(self, "event_id", event_id)
        _set(self, "state_changed", state_changed)

    def __bool__(self) -> bool:
        return self.recorded

    @classmethod
    def from_json(cls, data: Any) -> LogResult:
        return cls(bool(data["recorded"]), data["reason"], data["eventId"],
                   bool(data["stateChanged"]))

    def to_json(self) -> dict[str, Any]:
        return {"recorded": self.recorded, "reason": self.reason, "eventId": self.event_id,
                "stateChanged": self.state_changed}


class UpdateReason(str, enum.Enum):
    """Why a subscriber got an :class:`Update` (a str: ``reason == "refresh"`` works)."""

    REFRESH = "refresh"
    CARDS_APPLIED = "cards_applied"
    USER_CHANGED = "user_changed"
    IMPRESSION = "impression"
    CLICK = "click"
    DISMISSAL = "dismissal"
    #: Cards marked read (``card_id`` None: :meth:`ContentCards.mark_all_read`), or unread.
    READ = "read"
    UNREAD = "unread"
    #: Not a change: the state as it is (:meth:`ContentCards.current_update`).
    CURRENT = "current"
    #: A visible card expired: the counts are those after it.
    EXPIRED = "expired"
    #: The current user was forgotten (:meth:`ContentCards.forget_user`): nothing of it is stored.
    USER_FORGOTTEN = "user_forgotten"

    def __str__(self) -> str:
        return str(self.value)


_REASONS = {r.value: r for r in UpdateReason}


class Update(Value):
    """What a subscriber receives after a refresh, an apply, a user change, a logged
    impression, click or dismissal, or a read-state change.

    ``reason`` is an :class:`UpdateReason`; ``error`` is the failure as an exception object (not
    raised) when ``ok`` is False; ``sync`` is the summary of a successful refresh or apply;
    ``origin`` where the cards came from: "server" (a refresh that succeeded), "application"
    (an apply that succeeded) or "store" (the rest); ``sequence`` where ``counts`` stand among
    the controller's updates (taken with them: a larger one holds counts no older; updates made
    on several threads may arrive in another order, and the largest holds the newest counts;
    0: not numbered, a current update from a library built before the numbers); ``raw`` the
    update's JSON as the library gave it (not compared).
    """

    __slots__ = ("reason", "ok", "error", "card_id", "counts", "sync", "origin", "sequence", "raw")
    _not_compared = frozenset({"raw"})
    reason: UpdateReason
    ok: bool
    error: ContentCardsError | None
    card_id: str | None
    counts: Counts
    sync: SyncSummary | None
    origin: str
    sequence: int
    raw: dict[str, Any]

    def __init__(self, reason: UpdateReason | str, ok: bool, error: ContentCardsError | None,
                 card_id: str | None, counts: Counts, sync: SyncSummary | None,
                 raw: dict[str, Any] | None = None, origin: str = "store", sequence: int = 0) -> None:
        _set(self, "reason", UpdateReason(reason))
        _set(self, "ok", ok)
        _set(self, "error", error)
        _set(self, "card_id", card_id)
        _set(self, "counts", counts)
        _set(self, "sync", sync)
        _set(self, "origin", origin)
        _set(self, "sequence", sequence)
        _set(self, "raw", {} if raw is None else raw)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Update:
        error_data = data.get("error")
        error = None
        if error_data is not None:
            retry_after = error_data.get("retryAfter")
            error = error_for(int(error_data.get("code", -99)), str(error_data.get("message", "")),
                              float(retry_after) if isinstance(retry_after, (int, float)) else None)
        sync_data = data.get("sync")
        reason = data["reason"]
        return cls(
            reason=_REASONS.get(reason, reason),
            ok=bool(data["ok"]),
            error=error,
            card_id=data.get("cardId"),
            counts=Counts.from_json(data["counts"]),
            sync=None if sync_data is None else SyncSummary.from_json(sync_data),
            raw=data,
            origin=str(data.get("origin", "store")),
            sequence=int(data.get("sequence", 0)),
        )

    def to_json(self) -> dict[str, Any]:
        error = self.error
        return {"reason": self.reason.value, "ok": self.ok,
                "error": None if error is None else error.to_json(),
                "cardId": self.card_id, "counts": self.counts.to_json(),
                "sync": None if self.sync is None else self.sync.to_json(),
                "origin": self.origin, "sequence": self.sequence}


class PendingEvent(Value):
    """An event waiting in the outbox: ``type`` is "impression", "control_impression",
    "click", "dismissal" or "feed_displayed"; ``time`` is unix seconds; ``attempts`` the failed
    delivery attempts of this event in this process (the store keeps no count)."""

    __slots__ = ("id", "type", "card_id", "class_type", "user_id", "time", "attempts")
    id: str
    type: str
    card_id: str | None
    class_type: str | None
    user_id: str
    time: float
    attempts: int

    def __init__(self, id: str, type: str, card_id: str | None,  # noqa: A002
                 class_type: str | None, user_id: str, time: float, attempts: int = 0) -> None:
        _set(self, "id", id)
        _set(self, "type", type)
        _set(self, "card_id", card_id)
        _set(self, "class_type", class_type)
        _set(self, "user_id", user_id)
        _set(self, "time", time)
        _set(self, "attempts", attempts)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "cardId": self.card_id,
                "classType": self.class_type, "userId": self.user_id,
                "time": json_number(self.time), "attempts": self.attempts}


class PendingEvents(Value):
    """The event outbox (``cc_controller_pending_events_json``): ``pending`` counts every
    event, also those a limit left out of ``events`` (oldest first); ``failed_attempts`` is the
    number of delivery attempts of this controller that failed in a row since it last
    delivered (the outbox keeps no per-event count)."""

    __slots__ = ("pending", "failed_attempts", "events")
    pending: int
    failed_attempts: int
    events: tuple[PendingEvent, ...]

    def __init__(self, pending: int, failed_attempts: int,
                 events: tuple[PendingEvent, ...] | list[PendingEvent] = ()) -> None:
        _set(self, "pending", pending)
        _set(self, "failed_attempts", failed_attempts)
        _set(self, "events", tuple(events))

    @classmethod
    def from_json(cls, data: Any) -> PendingEvents:
        return cls(int(data["pending"]), int(data["failedAttempts"]),
                   tuple(PendingEvent(e["id"], e["type"], e["cardId"], e["classType"],
                                      e["userId"], float(e["time"]), int(e.get("attempts", 0)))
                         for e in data["events"]))

    def to_json(self) -> dict[str, Any]:
        return {"pending": self.pending, "failedAttempts": self.failed_attempts,
                "events": [e.to_json() for e in self.events]}


def _snake(key: str) -> str:
    out = []
    for ch in key:
        if ch.isupper():
            out.append("_")
            out.append(ch.lower())
        else:
            out.append(ch)
    return "".join(out)


def _camel(key: str) -> str:
    """The library's key of a snake_case one (``_snake`` undone: its keys have no "_")."""
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _camel_tree(value: Any) -> Any:
    if isinstance(value, dict):
        return {_camel(k): _camel_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel_tree(v) for v in value]
    return value


class Diagnostics(Value):
    """A controller's diagnostics (``cc_controller_diagnostics``) with snake_case fields:
    ``user_id``, ``storage_path``, ``closed``, ``refresh_in_flight``, ``last_refresh`` and
    ``last_delivery`` (dicts with snake_case keys, or None), ``last_error`` (the exception
    object, not raised, or None), ``rate_limit`` (a dict), ``left_out`` (LeftOut values),
    ``stored_cards``, ``unreadable_stored_cards``, ``counts``, ``pending_events``,
    ``delivered_events``, ``dropped_events``, ``subscribers``, ``last_successful_refresh_at``
    (unix seconds of the last refresh that brought the user's cards, kept across reopens; None
    when never), ``thread_starts_refused`` (library threads the system refused to start).
    ``raw`` is the JSON (not compared); a key a newer library adds is in ``raw`` until this
    class names it, and ``to_json()`` gives it back too."""

    __slots__ = ("user_id", "storage_path", "closed", "refresh_in_flight", "last_refresh",
                 "last_delivery", "last_error", "rate_limit", "left_out", "stored_cards",
                 "unreadable_stored_cards", "counts", "pending_events", "delivered_events",
                 "dropped_events", "subscribers", "last_successful_refresh_at",
                 "thread_starts_refused", "raw")
    _not_compared = frozenset({"raw"})
    _not_hashed = frozenset({"last_refresh", "last_delivery", "rate_limit"})
    user_id: str
    storage_path: str | None
    closed: bool
    refresh_in_flight: bool
    last_refresh: dict[str, Any] | None
    last_delivery: dict[str, Any] | None
    last_error: ContentCardsError | None
    rate_limit: dict[str, Any]
    left_out: tuple[LeftOut, ...]
    stored_cards: int
    unreadable_stored_cards: int
    counts: Counts
    pending_events: int
    delivered_events: int
    dropped_events: int
    subscribers: int
    last_successful_refresh_at: float | None
    thread_starts_refused: int
    raw: dict[str, Any]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Diagnostics:
        new = object.__new__(cls)

        def tree(value: Any) -> Any:
            if isinstance(value, dict):
                return {_snake(k): tree(v) for k, v in value.items()}
            if isinstance(value, list):
                return [tree(v) for v in value]
            return value

        error = data.get("lastError")
        values: dict[str, Any] = {
            "user_id": data["userId"],
            "storage_path": data.get("storagePath"),
            "closed": bool(data["closed"]),
            "refresh_in_flight": bool(data["refreshInFlight"]),
            "last_refresh": tree(data.get("lastRefresh")),
            "last_delivery": tree(data.get("lastDelivery")),
            "last_error": None if error is None else error_for(
                int(error["code"]), str(error["message"]), error.get("retryAfter")),
            "rate_limit": tree(data["rateLimit"]),
            "left_out": tuple(LeftOut(int(i["index"]), i["id"], str(i["reason"]))
                              for i in data["leftOut"]),
            "stored_cards": int(data["storedCards"]),
            "unreadable_stored_cards": int(data.get("unreadableStoredCards", 0)),
            "counts": Counts.from_json(data["counts"]),
            "pending_events": int(data["pendingEvents"]),
            "delivered_events": int(data["deliveredEvents"]),
            "dropped_events": int(data["droppedEvents"]),
            "subscribers": int(data["subscribers"]),
            "last_successful_refresh_at": (None if data.get("lastSuccessfulRefreshAt") is None
                                           else float(data["lastSuccessfulRefreshAt"])),
            "thread_starts_refused": int(data.get("threadStartsRefused", 0)),
            "raw": data,
        }
        for name in cls.__slots__:
            _set(new, name, values[name])
        return new

    def to_json(self) -> dict[str, Any]:
        """The JSON of ``cc_controller_diagnostics``: the fields under the library's keys (the
        dicts' keys too), in the order of ``raw``, the JSON they were read from; a key this
        class does not name comes from ``raw`` as it is."""
        error = self.last_error
        refreshed = self.last_successful_refresh_at
        fields: dict[str, Any] = {
            "userId": self.user_id, "storagePath": self.storage_path, "closed": self.closed,
            "refreshInFlight": self.refresh_in_flight,
            "lastRefresh": _camel_tree(self.last_refresh),
            "lastDelivery": _camel_tree(self.last_delivery),
            "lastError": None if error is None else error.to_json(),
            "rateLimit": _camel_tree(self.rate_limit),
            "leftOut": [item.to_json() for item in self.left_out],
            "storedCards": self.stored_cards,
            "unreadableStoredCards": self.unreadable_stored_cards,
            "lastSuccessfulRefreshAt": None if refreshed is None else json_number(refreshed),
            "counts": self.counts.to_json(), "pendingEvents": self.pending_events,
            "deliveredEvents": self.delivered_events, "droppedEvents": self.dropped_events,
            "subscribers": self.subscribers, "threadStartsRefused": self.thread_starts_refused,
        }
        out = {key: fields.pop(key) if key in fields else value for key, value in self.raw.items()}
        out.update(fields)  # a field the JSON it was read from did not have
        return out


class ForgetReceipt(Value):
    """What ``forget_user`` removed (``cc_controller_forget_user``'s receipt): the ``user_id``;
    its ``cards``, ``dismissals``, events delivered first (``events_delivered``, pending
    "flush") or removed undelivered (``events_discarded``, pending "discard"); whether it had a
    sync state (``sync_state``: cursors, ETag); the image files removed (``images``); and
    ``wal_truncated``, False when another connection to the store (another process) kept the
    WAL from being truncated (its bytes are overwritten at that connection's next checkpoint)."""

    __slots__ = ("user_id", "cards", "dismissals", "events_delivered", "events_discarded",
                 "sync_state", "images", "wal_truncated")
    user_id: str
    cards: int
    dismissals: int
    events_delivered: int
    events_discarded: int
    sync_state: bool
    images: int
    wal_truncated: bool

    def __init__(self, user_id: str, cards: int, dismissals: int, events_delivered: int,
                 events_discarded: int, sync_state: bool, images: int,
                 wal_truncated: bool) -> None:
        _set(self, "user_id", user_id)
        _set(self, "cards", cards)
        _set(self, "dismissals", dismissals)
        _set(self, "events_delivered", events_delivered)
        _set(self, "events_discarded", events_discarded)
        _set(self, "sync_state", sync_state)
        _set(self, "images", images)
        _set(self, "wal_truncated", wal_truncated)

    @classmethod
    def from_json(cls, data: Any) -> ForgetReceipt:
        try:
            return cls(str(data["user_id"]), int(data["cards"]), int(data["dismissals"]),
                       int(data["events_delivered"]), int(data["events_discarded"]),
                       bool(data["sync_state"]), int(data["images"]),
                       bool(data["wal_truncated"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"unexpected forget receipt from the library: {exc!r}") from exc

    def to_json(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "cards": self.cards, "dismissals": self.dismissals,
                "events_delivered": self.events_delivered,
                "events_discarded": self.events_discarded, "sync_state": self.sync_state,
                "images": self.images, "wal_truncated": self.wal_truncated}


class UserExport(Value):
    """Everything stored for a user (``export_user``; ``cc_controller_export_user``'s document,
    docs/schema/export.schema.json): ``format`` (1), ``user_id``, ``exported_at`` (unix
    seconds), ``cards`` (every stored card with its local state, visible or not, as
    :class:`~contentcards.Card` values), ``dismissed`` (card ids), ``sync`` (a dict: its
    cursors ``last_full_sync_at`` and ``last_card_updated_at``, ``etag``, ``synced_at``),
    ``pending_events`` (dicts, each the event as it is sent) and ``images`` (dicts with ``url``
    and ``bytes``). ``raw`` is the document (not compared); ``to_json()`` gives it back, a key
    a newer library adds included."""

    __slots__ = ("format", "user_id", "exported_at", "cards", "dismissed", "sync",
                 "pending_events", "images", "raw")
    _not_compared = frozenset({"raw"})
    _not_hashed = frozenset({"cards", "sync", "pending_events", "images"})
    format: int
    user_id: str
    exported_at: float
    cards: tuple[Card, ...]
    dismissed: tuple[str, ...]
    sync: dict[str, Any]
    pending_events: tuple[dict[str, Any], ...]
    images: tuple[dict[str, Any], ...]
    raw: dict[str, Any]

    @classmethod
    def from_json(cls, data: Any) -> UserExport:
        new = object.__new__(cls)
        try:
            values: dict[str, Any] = {
                "format": int(data["format"]),
                "user_id": str(data["user_id"]),
                "exported_at": float(data["exported_at"]),
                "cards": tuple(Card._from_library(card) for card in data["cards"]),
                "dismissed": tuple(str(card_id) for card_id in data["dismissed"]),
                "sync": dict(data["sync"]),
                "pending_events": tuple(dict(event) for event in data["pending_events"]),
                "images": tuple(dict(image) for image in data["images"]),
                "raw": data,
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"unexpected user export from the library: {exc!r}") from exc
        for name in cls.__slots__:
            _set(new, name, values[name])
        return new

    def to_json(self) -> dict[str, Any]:
        """The document of ``cc_controller_export_user``, in the order of ``raw``."""
        fields: dict[str, Any] = {
            "format": self.format, "user_id": self.user_id,
            "exported_at": json_number(self.exported_at),
            "cards": [card.to_json() for card in self.cards],
            "dismissed": list(self.dismissed), "sync": dict(self.sync),
            "pending_events": [dict(event) for event in self.pending_events],
            "images": [dict(image) for image in self.images],
        }
        out = {key: fields.pop(key) if key in fields else value for key, value in self.raw.items()}
        out.update(fields)
        return out
