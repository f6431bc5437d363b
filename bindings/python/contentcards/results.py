"""The small value types the controller returns: counts, sync summaries, logging and flush
results, and the updates subscribers receive."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .errors import ContentCardsError, ParseError, error_for

__all__ = ["Counts", "FlushResult", "LeftOut", "LogResult", "PendingEvent", "PendingEvents",
           "SyncSummary", "Update"]


class Counts(NamedTuple):
    """Badge counts of the visible feed: ``total`` includes control cards, ``unviewed`` (no
    impression yet) and ``unread`` (not marked read) do not."""

    total: int
    unviewed: int
    unread: int = 0

    @classmethod
    def from_json(cls, data: Any) -> Counts:
        return cls(int(data["total"]), int(data["unviewed"]), int(data.get("unread", 0)))


class ImageStats(NamedTuple):
    """What the image cache did: images ``fetched`` and fetches ``failed`` since the controller
    opened; images ``cached`` for the current user and their ``bytes``; prefetches ``pending``
    (0 unless the wait timed out)."""

    fetched: int
    failed: int
    cached: int
    bytes: int
    pending: int


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A card of a payload that was left out: its position, its id (None when it had none)
    and why."""

    index: int
    id: str | None
    reason: str


class FlushResult(NamedTuple):
    """The outcome of an event flush."""

    delivered: int
    dropped: int
    pending: int

    @classmethod
    def from_json(cls, data: Any) -> FlushResult:
        return cls(int(data["delivered"]), int(data["dropped"]), int(data["pending"]))


@dataclass(frozen=True, slots=True)
class SyncSummary:
    """What a refresh or an apply did (``cc_controller_refresh``'s summary)."""

    added: int
    updated: int
    removed: int
    kept_newer: int
    full_sync: bool
    left_out: tuple[LeftOut, ...]
    counts: Counts
    #: The server answered 304 to the stored validator: nothing was merged or written.
    not_modified: bool = False

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
    def from_text(cls, text: str) -> SyncSummary:
        return cls.from_json(json.loads(text))


@dataclass(frozen=True, slots=True)
class LogResult:
    """The outcome of a logging call: ``recorded`` is False when the library refused it
    (no valid url for a click, not dismissible, already dismissed), with the ``reason``.
    True in a boolean context when the event was recorded."""

    recorded: bool
    reason: str | None = None

    def __bool__(self) -> bool:
        return self.recorded


@dataclass(frozen=True, slots=True)
class Update:
    """What a subscriber receives after a refresh, an apply, a user change, a logged
    impression, click or dismissal, or a read-state change.

    ``reason`` is one of "refresh", "cards_applied", "user_changed", "impression", "click",
    "dismissal", "read", "unread" ("read" with ``card_id`` None: ``mark_all_read``); ``error`` is the failure as an exception object (not raised) when ``ok`` is
    False; ``sync`` is the summary of a successful refresh or apply.
    """

    reason: str
    ok: bool
    error: ContentCardsError | None
    card_id: str | None
    counts: Counts
    sync: SyncSummary | None
    raw: dict[str, Any] = field(repr=False, compare=False, hash=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Update:
        error_data = data.get("error")
        error = None
        if error_data is not None:
            retry_after = error_data.get("retryAfter")
            error = error_for(int(error_data.get("code", -99)), str(error_data.get("message", "")),
                              float(retry_after) if isinstance(retry_after, (int, float)) else None)
        sync_data = data.get("sync")
        return cls(
            reason=str(data["reason"]),
            ok=bool(data["ok"]),
            error=error,
            card_id=data.get("cardId"),
            counts=Counts.from_json(data["counts"]),
            sync=None if sync_data is None else SyncSummary.from_json(sync_data),
            raw=data,
        )


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """An event waiting in the outbox: ``type`` is "impression", "control_impression",
    "click", "dismissal" or "feed_displayed"; ``time`` is unix seconds."""

    id: str
    type: str
    card_id: str | None
    class_type: str | None
    user_id: str
    time: float


@dataclass(frozen=True, slots=True)
class PendingEvents:
    """The event outbox (``cc_controller_pending_events_json``): ``pending`` counts every
    event, also those a limit left out of ``events`` (oldest first); ``failed_attempts`` is the
    number of delivery attempts of this controller that failed in a row since it last
    delivered (the outbox keeps no per-event count)."""

    pending: int
    failed_attempts: int
    events: list[PendingEvent] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: Any) -> PendingEvents:
        return cls(int(data["pending"]), int(data["failedAttempts"]),
                   [PendingEvent(e["id"], e["type"], e["cardId"], e["classType"], e["userId"],
                                 float(e["time"])) for e in data["events"]])
