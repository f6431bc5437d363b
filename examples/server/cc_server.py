#!/usr/bin/env python3
"""Reference Content Cards server (Python standard library only).

This is the server the project's tests and demo talk to. It implements the wire format of
``docs/WIRE.md`` (sync, events, per-user tokens, the hint stream), plus an admin API that lets a
test change cards, read the events it received and inject faults. Beside it: ``cc_common.py``
(errors, JSON, responses), ``cc_transfer.py`` (compression, validators), ``cc_auth.py`` (tokens)
and ``cc_stream.py`` (the hint stream).

Usage::

    python3 examples/server/cc_server.py --feed examples/data/sample_feed.json [--port 0]

On start it prints exactly one line, ``listening on http://HOST:PORT``, to stdout. SIGTERM or
SIGINT stop it cleanly (exit status 0). It only ever binds a loopback address.

Client endpoints (``X-Api-Key`` is checked when ``--api-key`` is given; with ``--secret S``, or a
secret set through ``/_admin/secret``, also ``Authorization: Bearer <token>``, whose user must be
the request's: else ``401`` with ``WWW-Authenticate: Bearer error="invalid_token", ...`` and
``{"error": "invalid_token", "reason": R}``, R one of missing, malformed, signature, expired,
user; see ``cc_auth.py``):

* ``POST /content_cards/sync`` -- the user's cards, full or incremental (see ``ServerState.sync``).
* ``POST /events`` -- stores events, dropping ids it already has; a new event sets the user's
  copy of its card (``v``, ``cl``, ``d``, ``rd``), which the next sync of every device of that
  user carries (docs/WIRE.md, "Events": per-user state). With a secret, every event's
  ``user_id`` must be the token's user (a batch that mixes users is refused).
* ``GET /content_cards/stream?user_id=U`` -- the hint stream (``text/event-stream``): a
  ``retry: 1000`` line, then one ``hint`` event per change of U's cards (``/_admin/cards``,
  ``/_admin/remove``, ``/_admin/force_full``) or ``/_admin/hint``, and a ``: keepalive`` comment
  after ``--stream-keepalive`` seconds (default 15) without a write; ``Last-Event-ID`` lower
  than U's newest hint gets that hint at once (see ``cc_stream.py``).

Admin endpoints (JSON in and out, never protected by the API key):

* ``GET  /_admin/events``      -- ``{"events": [...], "batches": N, "accepted_batches": N, "duplicates": N}``
* ``GET  /_admin/requests``    -- ``{"requests": [...]}`` (client requests received, oldest first)
* ``GET  /_admin/faults``      -- ``{"faults": [...]}`` (pending faults)
* ``GET  /_admin/cards?user_id=U`` -- the server's view of U's cards
* ``POST /_admin/cards``       -- ``{"user_id": U, "cards": [...]}`` upserts cards for U
* ``POST /_admin/remove``      -- ``{"user_id": U, "ids": [...]}`` removes cards (tombstones)
* ``POST /_admin/force_full``  -- ``{"user_id": U}`` makes U's next sync a full sync
* ``POST /_admin/fault``       -- queues a fault (see ``Fault``)
* ``POST /_admin/reset``       -- clears faults (stream faults too), events, counters (token
  checks, streams opened), request log; restores the feed, the transfer options and the
  keepalive. It keeps the secret and the open streams.
* ``GET  /_admin/images``      -- ``{"served": N, "paths": [...]}`` (image requests answered)
* ``GET  /_admin/transfer``    -- the transfer options and the bytes on the wire per endpoint
* ``POST /_admin/transfer``    -- sets transfer options (see ``TransferOptions``)
* ``GET  /_admin/arrivals``    -- ``{"sync": [unix seconds, ...]}``: when each sync request came
* ``POST /_admin/secret``      -- ``{"secret": S}`` sets the token secret; ``{"secret": null}``
  turns the token checks off -> ``{"enabled": bool}``
* ``POST /_admin/token``       -- ``{"user_id": U, "ttl": SECONDS}`` (ttl default 3600, may be
  negative) -> ``{"token": T, "exp": E}`` signed with the current secret (409 without one)
* ``GET  /_admin/auth``        -- ``{"enabled": bool, "accepted": N, "rejected": [{"path", "reason",
  "user_id", "sub"}, ...]}``: the token checks since the last reset
* ``POST /_admin/hint``        -- ``{"user_id": U}`` sends U's streams a hint -> ``{"user_id", "id"}``
* ``POST /_admin/stream_fault`` -- ``{"mode": M, "times": 1, ...}`` for the next stream
  connections: ``endless_line`` (``rate``), ``flood`` (``count``), ``silent``,
  ``silent_accept``, ``close_after`` (``count``; or ``{"close_after": N}``), ``status``
  (``status``, ``retry_after``; or ``{"status": 503}``); see ``StreamFault``
* ``GET  /_admin/streams``     -- ``{"open": N, "opened": N, "by_user": {U: n}, "keepalive": K,
  "last_id": N, "faults": [...]}``
* ``POST /_admin/streams``     -- ``{"keepalive": SECONDS}`` for every stream, open ones included
* ``GET  /healthz``            -- ``ok``

Images, for the image cache's tests (never protected by the API key):

* ``GET /images/NAME?size=N&status=S`` -- N bytes (default 1000, at most 16 MiB) that depend
  only on NAME, as ``image/png``; ``status`` other than 200 answers that status instead.

Transfers (docs/WIRE.md, "Compression", "Conditional sync"): a sync response goes gzip-compressed
when the request accepts gzip, carries an ``ETag``, and is ``304 Not Modified`` when the
request's ``If-None-Match`` names the user's current cards; ``/events`` takes gzip- or
deflate-compressed batches (``Content-Encoding``), bounded after decompression.
"""

from __future__ import annotations

import argparse
import copy
import hmac
import ipaddress
import json
import os
import select
import signal
import socket
import socketserver
import sqlite3
import sys
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

# The modules beside this script (its folder is on sys.path when it runs as a script).
from cc_common import (EVENTS_PATH, MAX_BODY_BYTES, SYNC_PATH, HttpError, Json, Response,
                       error_message, error_response, is_number, json_response, parse_json,
                       require_object, require_string)
from cc_transfer import (CountingReader, CountingWriter, TransferOptions, WireCounters,
                         accepts_gzip, decode_request_body, gzip_bomb, gzip_response,
                         outage_response, sync_validator, validator_matches)
from cc_auth import ADMIN_ROUTES as TOKEN_ROUTES, TokenCheck, log_fields
from cc_stream import (ADMIN_ROUTES as STREAM_ROUTES, DEFAULT_KEEPALIVE_SECONDS, STREAM_PATH,
                       HintHub)

IMAGES_PATH = "/images/"
CLIENT_PATHS = (SYNC_PATH, EVENTS_PATH)
EVENT_TYPES = frozenset({"impression", "control_impression", "click", "dismissal", "feed_displayed",
                         "read", "unread"})
# What an event does to the user's copy of its card on the server (wire key, value): the state
# a sync sends back, so another device of the same user sees it (docs/WIRE.md, "Events").
EVENT_STATE = {"impression": ("v", True), "control_impression": ("v", True),
               "click": ("cl", True), "dismissal": ("d", True),
               "read": ("rd", True), "unread": ("rd", False)}
FAULT_BODIES = frozenset({"truncated", "invalid", "wrong_user", "gzip_bomb", "bad_gzip"})
INVALID_BODY = b'{"cards": [nope'
WRONG_USER = "someone-else"
HANG_LIMIT_SECONDS = 60.0
MAX_LOGGED_REQUESTS = 10_000


# --------------------------------------------------------------------------------------------
# The feed file
# --------------------------------------------------------------------------------------------

class FeedError(ValueError):
    """The feed file cannot be used."""


@dataclass(frozen=True)
class Feed:
    """The cards every user starts with: per user, with ``"*"`` as the fallback."""

    per_user: dict[str, list[Json]]
    fallback: list[Json]

    @classmethod
    def load(cls, path: str) -> "Feed":
        try:
            with open(path, "rb") as f:
                doc = json.loads(f.read().decode("utf-8"))
        except (OSError, ValueError) as exc:
            raise FeedError(f"cannot read feed {path}: {exc}") from None
        return cls.from_document(doc)

    @classmethod
    def from_document(cls, doc: Json) -> "Feed":
        """Accepts a sync envelope, a bare array of cards, or ``{"users": {...}}``."""
        if isinstance(doc, list):
            return cls(per_user={}, fallback=doc)
        if isinstance(doc, dict) and isinstance(doc.get("users"), dict):
            users: dict[str, list[Json]] = {}
            for user_id, cards in doc["users"].items():
                users[user_id] = cls._cards_of(cards, f"users[{user_id!r}]")
            fallback = users.pop("*", [])
            return cls(per_user=users, fallback=fallback)
        if isinstance(doc, dict) and "cards" in doc:
            return cls(per_user={}, fallback=cls._cards_of(doc["cards"], "cards"))
        raise FeedError('feed must be a sync envelope {"cards": [...]}, an array of cards, '
                        'or {"users": {"user-id": [...], "*": [...]}}')

    @staticmethod
    def _cards_of(value: Json, where: str) -> list[Json]:
        if isinstance(value, dict) and isinstance(value.get("cards"), list):
            value = value["cards"]  # a user may also be given a whole envelope
        if not isinstance(value, list):
            raise FeedError(f"{where} must be an array of cards")
        return value

    def cards_for(self, user_id: str) -> list[Json]:
        """A private deep copy of the user's starting cards."""
        return copy.deepcopy(self.per_user.get(user_id, self.fallback))

    def max_created(self) -> int:
        """The latest ``ca`` of any card in the feed (0 if none), to start the change clock."""
        cards = [c for cards in self.per_user.values() for c in cards] + list(self.fallback)
        return max((created_of(c) for c in cards), default=0)


def created_of(card: Json) -> int:
    """A card's ``ca`` as an int, or 0 when it has none (malformed cards are served as-is)."""
    if isinstance(card, dict) and is_number(card.get("ca")):
        return int(card["ca"])
    return 0


def id_of(card: Json) -> str | None:
    """A card's ``id`` when it is a non-empty string."""
    value = card.get("id") if isinstance(card, dict) else None
    return value if isinstance(value, str) and value else None


# --------------------------------------------------------------------------------------------
# Per-user cards
# --------------------------------------------------------------------------------------------

@dataclass
class CardEntry:
    """One card as the server holds it: the wire JSON, when it last changed, and removal."""

    card: Json
    updated: int
    removed: bool = False

    def wire(self) -> Json:
        """What a sync sends: the card, or for a removed card a tombstone that still parses."""
        if not self.removed:
            return self.card
        tombstone = {k: self.card[k] for k in ("id", "tp", "ca") if k in self.card}
        tombstone["r"] = True
        return tombstone


class UserCards:
    """A user's cards in feed order, keyed by id.

    Cards from the feed with no usable id (or a repeated id) are kept under a private key, so
    malformed cards reach the client verbatim; they cannot be changed through the admin API.
    """

    def __init__(self, cards: list[Json]) -> None:
        self.entries: OrderedDict[str, CardEntry] = OrderedDict()
        for index, card in enumerate(cards):
            key = id_of(card)
            if key is None or key in self.entries:
                key = f"\x00unkeyed-{index}"
            self.entries[key] = CardEntry(card=card, updated=created_of(card))
        self.force_full = False

    def max_updated(self) -> int:
        return max((e.updated for e in self.entries.values()), default=0)

    def upsert(self, card: dict[str, Json], updated: int) -> None:
        card_id = id_of(card)
        assert card_id is not None
        entry = self.entries.get(card_id)
        if entry is None:
            self.entries[card_id] = CardEntry(card=card, updated=updated)
        else:
            entry.card, entry.updated, entry.removed = card, updated, False

    def remove(self, card_id: str, updated: int) -> bool:
        entry = self.entries.get(card_id)
        if entry is None:
            return False
        entry.removed, entry.updated = True, updated
        return True


# --------------------------------------------------------------------------------------------
# Faults
# --------------------------------------------------------------------------------------------

@dataclass
class Fault:
    """A misbehaviour applied to the next ``times`` client requests to ``path``.

    ``path`` is ``/content_cards/sync`` (default), ``/events`` or ``*`` (either of them; admin
    endpoints are never faulted). Effects, combinable where it makes sense:

    * ``delay``: seconds to wait before doing anything else;
    * ``status`` (+ optional ``retry_after``): answer that status with a small JSON body, without
      processing the request;
    * ``hang``: read the request and never answer (until the client goes, shutdown, or 60 s);
    * ``body``: ``truncated`` (full Content-Length, half the bytes, then close), ``invalid``
      (200 with a broken JSON body), ``wrong_user`` (sync response for another user),
      ``gzip_bomb`` (200, ``Content-Encoding: gzip``, 256 KiB that inflate to 256 MiB) or
      ``bad_gzip`` (200, ``Content-Encoding: gzip``, bytes that are not gzip);
    * ``drip``: send the response body one byte every ``drip`` seconds.

    With ``body`` and ``drip`` the request is processed normally (events are stored).
    """

    path: str = SYNC_PATH
    times: int = 1
    delay: float = 0.0
    status: int | None = None
    retry_after: float | None = None
    hang: bool = False
    body: str | None = None
    drip: float | None = None

    KEYS = ("path", "times", "delay", "status", "retry_after", "hang", "body", "drip")

    @classmethod
    def from_json(cls, doc: Json) -> "Fault":
        """Validates an admin request body; raises ``HttpError(400)`` saying what is wrong."""
        doc = require_object(doc, "fault")
        unknown = sorted(set(doc) - set(cls.KEYS))
        if unknown:
            raise HttpError(400, f"unknown fault keys: {', '.join(unknown)}")
        fault = cls()
        fault.path = doc.get("path", SYNC_PATH)
        if fault.path not in (*CLIENT_PATHS, "*"):
            raise HttpError(400, f"'path' must be one of {', '.join((*CLIENT_PATHS, '*'))}")
        fault.times = cls._number(doc, "times", 1, integer=True, minimum=1)
        fault.delay = cls._number(doc, "delay", 0.0, minimum=0)
        fault.retry_after = cls._number(doc, "retry_after", None, minimum=0)
        fault.drip = cls._number(doc, "drip", None, minimum=0)
        status = cls._number(doc, "status", None, integer=True, minimum=200)
        if status is not None and status > 599:
            raise HttpError(400, "'status' must be an HTTP status between 200 and 599")
        fault.status = status
        fault.hang = doc.get("hang", False)
        if not isinstance(fault.hang, bool):
            raise HttpError(400, "'hang' must be a boolean")
        fault.body = doc.get("body")
        if fault.body is not None and fault.body not in FAULT_BODIES:
            raise HttpError(400, f"'body' must be one of {', '.join(sorted(FAULT_BODIES))}")
        fault._check_combination()
        return fault

    @staticmethod
    def _number(doc: dict[str, Json], key: str, default: Any, *, integer: bool = False,
                minimum: float = 0) -> Any:
        if key not in doc:
            return default
        value = doc[key]
        if not is_number(value) or (integer and not isinstance(value, int)) or value < minimum:
            kind = "an integer" if integer else "a number"
            raise HttpError(400, f"'{key}' must be {kind} >= {minimum}")
        return value

    def _check_combination(self) -> None:
        if self.retry_after is not None and self.status is None:
            raise HttpError(400, "'retry_after' needs a 'status'")
        if self.status is not None and self.body is not None:
            raise HttpError(400, "'status' and 'body' cannot be combined")
        if self.hang and (self.status is not None or self.body is not None or self.drip):
            raise HttpError(400, "'hang' can only be combined with 'delay'")
        if not (self.delay or self.status is not None or self.hang or self.body or self.drip):
            raise HttpError(400, "a fault needs one of: status, delay, hang, body, drip")

    def matches(self, path: str) -> bool:
        return self.path == "*" or self.path == path

    def to_json(self, *, with_times: bool = True) -> dict[str, Json]:
        """The fault's settings, leaving out the ones that do nothing."""
        out: dict[str, Json] = {"path": self.path}
        if with_times:
            out["times"] = self.times
        for key in ("delay", "status", "retry_after", "hang", "body", "drip"):
            value = getattr(self, key)
            if value not in (None, False, 0, 0.0):
                out[key] = value
        return out


# --------------------------------------------------------------------------------------------
# Server state: the one mutable object, guarded by one lock
# --------------------------------------------------------------------------------------------

EVENTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id TEXT PRIMARY KEY,
    type TEXT,
    card_id TEXT,
    class_type TEXT,
    user_id TEXT,
    time REAL,
    received_at REAL
)
"""
EVENT_COLUMNS = ("id", "type", "card_id", "class_type", "user_id", "time", "received_at")


class ServerState:
    """Cards per user, stored events, pending faults and the request log.

    Every public method takes ``self.lock``; the HTTP handlers hold no state of their own.
    """

    def __init__(self, feed: Feed, db_path: str, api_key: str | None) -> None:
        self.lock = threading.Lock()
        self.stopping = threading.Event()  # set on shutdown: releases hanging/dripping handlers
        self.feed = feed
        self.api_key = api_key
        self.db = sqlite3.connect(db_path, check_same_thread=False, isolation_level=None)
        self.db.execute(EVENTS_SCHEMA)
        self.clock = feed.max_created()
        self._clear()

    def _clear(self) -> None:
        """Forget everything but the feed (lock held, or during construction)."""
        self.users: dict[str, UserCards] = {}
        self.faults: list[Fault] = []
        self.requests: deque[dict[str, Json]] = deque(maxlen=MAX_LOGGED_REQUESTS)
        self.batches = 0
        self.accepted_batches = 0
        self.duplicates = 0
        self.images_served: list[str] = []

    def close(self) -> None:
        with self.lock:
            self.db.close()

    # -- helpers (lock held) -------------------------------------------------------------

    def _user(self, user_id: str) -> UserCards:
        """The user's cards, created from the feed on first use."""
        cards = self.users.get(user_id)
        if cards is None:
            cards = self.users[user_id] = UserCards(self.feed.cards_for(user_id))
        return cards

    def _tick(self) -> int:
        """A change time: unix seconds, but always later than the previous change."""
        self.clock = max(int(time.time()), self.clock + 1)
        return self.clock

    # -- API key -------------------------------------------------------------------------

    def api_key_ok(self, presented: str | None) -> bool:
        if self.api_key is None:
            return True
        return presented is not None and hmac.compare_digest(
            presented.encode("utf-8"), self.api_key.encode("utf-8"))

    # -- sync ----------------------------------------------------------------------------

    def sync(self, user_id: str, last_full_sync_at: float, last_card_updated_at: float) -> Json:
        """The sync response for a user.

        Full sync when the client never had one (``last_full_sync_at <= 0``) or one was forced
        through ``/_admin/force_full``: every card not removed, and fresh cursors. Otherwise only
        the cards changed after ``last_card_updated_at`` (removed ones as tombstones), with
        ``last_full_sync_at`` -1 (unchanged).
        """
        with self.lock:
            user = self._user(user_id)
            latest = user.max_updated()
            if last_full_sync_at <= 0 or user.force_full:
                user.force_full = False
                cards = [e.wire() for e in user.entries.values() if not e.removed]
                return {"cards": cards, "full_sync": True, "last_full_sync_at": int(time.time()),
                        "last_card_updated_at": latest, "user_id": user_id}
            cards = [e.wire() for e in user.entries.values() if e.updated > last_card_updated_at]
            return {"cards": cards, "full_sync": False, "last_full_sync_at": -1,
                    "last_card_updated_at": latest, "user_id": user_id}

    # -- events --------------------------------------------------------------------------

    def count_batch(self) -> None:
        """Counts one POST /events request, whatever becomes of it."""
        with self.lock:
            self.batches += 1

    def store_events(self, events: list[dict[str, Json]]) -> tuple[int, int]:
        """Stores events, dropping ids already stored; returns (accepted, duplicates)."""
        received_at = time.time()
        accepted = 0
        with self.lock:
            with self.db:  # one transaction per batch
                self.db.execute("BEGIN")
                for event in events:
                    cursor = self.db.execute(
                        "INSERT OR IGNORE INTO events (id, type, card_id, class_type, user_id,"
                        " time, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (event["id"], event["type"], event.get("card_id"),
                         event.get("class_type"), event["user_id"], float(event["time"]),
                         received_at))
                    accepted += cursor.rowcount
                    if cursor.rowcount:
                        self._apply_event_state(event)
            duplicates = len(events) - accepted
            self.duplicates += duplicates
            self.accepted_batches += 1
        return accepted, duplicates

    def _apply_event_state(self, event: dict[str, Json]) -> None:
        """Records what a new event says about its card in the user's server copy (lock held).

        The card is marked changed, so the next incremental sync of any device of the user
        carries it. Events for cards the server does not have (or removed) change nothing."""
        change = EVENT_STATE.get(event["type"])
        card_id = event.get("card_id")
        if change is None or not isinstance(card_id, str):
            return
        entry = self._user(event["user_id"]).entries.get(card_id)
        if entry is None or entry.removed or not isinstance(entry.card, dict):
            return
        key, value = change
        if entry.card.get(key, False) == value:
            return
        entry.card = dict(entry.card)  # the feed's copy is shared with admin reports
        entry.card[key] = value
        entry.updated = self._tick()

    def events_report(self) -> Json:
        with self.lock:
            rows = self.db.execute(
                f"SELECT {', '.join(EVENT_COLUMNS)} FROM events ORDER BY rowid").fetchall()
            return {"events": [dict(zip(EVENT_COLUMNS, row)) for row in rows],
                    "batches": self.batches, "accepted_batches": self.accepted_batches,
                    "duplicates": self.duplicates}

    # -- admin: cards --------------------------------------------------------------------

    def upsert_cards(self, user_id: str, cards: list[dict[str, Json]]) -> Json:
        with self.lock:
            user = self._user(user_id)
            for card in cards:
                user.upsert(copy.deepcopy(card), self._tick())
            return {"user_id": user_id, "upserted": [id_of(c) for c in cards],
                    "last_card_updated_at": user.max_updated()}

    def remove_cards(self, user_id: str, ids: list[str]) -> Json:
        with self.lock:
            user = self._user(user_id)
            removed = [i for i in ids if user.remove(i, self._tick())]
            unknown = [i for i in ids if i not in removed]
            return {"user_id": user_id, "removed": removed, "unknown": unknown,
                    "last_card_updated_at": user.max_updated()}

    def force_full(self, user_id: str) -> Json:
        with self.lock:
            self._user(user_id).force_full = True
            return {"user_id": user_id, "force_full": True}

    def cards_report(self, user_id: str) -> Json:
        with self.lock:
            user = self._user(user_id)
            return {"user_id": user_id, "force_full": user.force_full,
                    "last_card_updated_at": user.max_updated(),
                    "cards": [{"card": copy.deepcopy(e.card), "updated": e.updated,
                               "removed": e.removed} for e in user.entries.values()]}

    # -- admin: faults -------------------------------------------------------------------

    def add_fault(self, fault: Fault) -> None:
        with self.lock:
            self.faults.append(fault)

    def take_fault(self, path: str) -> Fault | None:
        """The first pending fault for ``path``, used up once; None when there is none."""
        with self.lock:
            for fault in self.faults:
                if fault.matches(path):
                    fault.times -= 1
                    if fault.times <= 0:
                        self.faults.remove(fault)
                    return fault
            return None

    def faults_report(self) -> Json:
        with self.lock:
            return {"faults": [f.to_json() for f in self.faults]}

    # -- request log ---------------------------------------------------------------------

    def log_request(self, method: str, path: str, api_key_present: bool) -> dict[str, Json]:
        entry: dict[str, Json] = {"time": time.time(), "method": method, "path": path,
                                  "user_id": None, "api_key_present": api_key_present,
                                  "fault": None, "status": None, "error": None}
        with self.lock:
            self.requests.append(entry)
        return entry

    def note(self, entry: dict[str, Json], **values: Json) -> None:
        """Fills in fields of a request log entry (the user id, fault, status, error)."""
        with self.lock:
            entry.update(values)

    def requests_report(self) -> Json:
        with self.lock:
            return {"requests": [dict(e) for e in self.requests]}

    # -- reset ---------------------------------------------------------------------------

    def reset(self) -> Json:
        """Clears faults, events, counters and the request log, and restores the feed.

        The change clock keeps going forward, so later admin changes still look new.
        """
        with self.lock:
            self._clear()
            self.db.execute("DELETE FROM events")
        return {"reset": True}


# --------------------------------------------------------------------------------------------
# Validation of client bodies
# --------------------------------------------------------------------------------------------

def parse_sync_request(doc: Json) -> tuple[str, float, float]:
    """(user_id, last_full_sync_at, last_card_updated_at); missing cursors count as 0."""
    doc = require_object(doc, "sync request")
    user_id = require_string(doc, "user_id", default="")
    if "device_id" in doc and not isinstance(doc["device_id"], (str, type(None))):
        raise HttpError(400, "'device_id' must be a string")
    cursors = []
    for key in ("last_full_sync_at", "last_card_updated_at"):
        value = doc.get(key)
        if value is None:
            value = 0
        if not is_number(value):
            raise HttpError(400, f"'{key}' must be a number")
        cursors.append(float(value))
    return user_id, cursors[0], cursors[1]


def parse_events_request(doc: Json) -> list[dict[str, Json]]:
    """The events of a batch, each checked against docs/WIRE.md, "Events"."""
    doc = require_object(doc, "events request")
    events = doc.get("events")
    if not isinstance(events, list):
        raise HttpError(400, "'events' must be an array")
    for index, event in enumerate(events):
        check_event(event, f"events[{index}]")
    return events


def check_event(event: Json, where: str) -> None:
    if not isinstance(event, dict):
        raise HttpError(400, f"{where} must be a JSON object")
    if not isinstance(event.get("id"), str) or not event["id"]:
        raise HttpError(400, f"{where}.id must be a non-empty string")
    if event.get("type") not in EVENT_TYPES:
        raise HttpError(400, f"{where}.type must be one of {', '.join(sorted(EVENT_TYPES))}")
    card_id = event.get("card_id")
    if event["type"] == "feed_displayed":
        if card_id is not None and not isinstance(card_id, str):
            raise HttpError(400, f"{where}.card_id must be a string or null")
    elif not isinstance(card_id, str) or not card_id:
        raise HttpError(400, f"{where}.card_id must be a non-empty string")
    if not isinstance(event.get("class_type"), (str, type(None))):
        raise HttpError(400, f"{where}.class_type must be a string or null")
    if not isinstance(event.get("user_id"), str):
        raise HttpError(400, f"{where}.user_id must be a string")
    if not is_number(event.get("time")):
        raise HttpError(400, f"{where}.time must be a number")


def parse_card_list(doc: dict[str, Json]) -> list[dict[str, Json]]:
    cards = doc.get("cards")
    if not isinstance(cards, list):
        raise HttpError(400, "'cards' must be an array")
    for index, card in enumerate(cards):
        if id_of(card) is None:
            raise HttpError(400, f"cards[{index}] must be an object with a non-empty string 'id'")
    return cards


def parse_id_list(doc: dict[str, Json]) -> list[str]:
    ids = doc.get("ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise HttpError(400, "'ids' must be an array of strings")
    return ids


# --------------------------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------------------------



def apply_body_fault(fault: Fault, response: Response) -> Response:
    """Rewrites a normal response for the ``invalid``, ``wrong_user``, ``gzip_bomb`` and
    ``bad_gzip`` faults."""
    if fault.body == "invalid":
        return Response(200, INVALID_BODY)
    if fault.body == "gzip_bomb":
        return Response(200, gzip_bomb(), headers={"Content-Encoding": "gzip"})
    if fault.body == "bad_gzip":
        return Response(200, b"this is not gzip" * 8, headers={"Content-Encoding": "gzip"})
    if fault.body == "wrong_user" and response.status == 200:
        value = json.loads(response.body)
        if isinstance(value, dict) and "user_id" in value:
            value["user_id"] = WRONG_USER
            return json_response(200, value, response.headers)
    return response


def status_fault_response(fault: Fault) -> Response:
    headers = {}
    if fault.retry_after is not None:
        value = fault.retry_after
        headers["Retry-After"] = str(int(value)) if float(value).is_integer() else str(value)
    return json_response(fault.status or 500, {"error": "injected fault", "status": fault.status},
                         headers)


def current_validator(state: "ServerState", user_id: str) -> tuple[str, bool]:
    """The user's validator now, and whether the next sync must be a full one."""
    with state.lock:
        user = state._user(user_id)
        return sync_validator(user_id, user.max_updated(), len(user.entries)), user.force_full


class CardServer(ThreadingHTTPServer):
    """The HTTP server: one thread per connection, sharing one ``ServerState``."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], state: ServerState, quiet: bool,
                 secret: str | None = None,
                 keepalive: float = DEFAULT_KEEPALIVE_SECONDS) -> None:
        self.state = state
        self.quiet = quiet
        self.transfer = TransferOptions()
        self.wire = WireCounters()
        self.tokens = TokenCheck(secret)   # per-user tokens (cc_auth.py)
        self.hints = HintHub(keepalive)    # the hint stream (cc_stream.py)
        super().__init__(address, RequestHandler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would look the host name up (getfqdn), which can be slow.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class CardServer6(CardServer):
    address_family = socket.AF_INET6


Route = Callable[["RequestHandler", bytes], Response]


class RequestHandler(BaseHTTPRequestHandler):
    """Routes requests: client endpoints go through faults and the API key, admin ones do not."""

    server: CardServer
    protocol_version = "HTTP/1.1"  # keep-alive, Expect: 100-continue
    allow_not_modified = True      # per request: False while a body fault is applied
    server_version = "cc_server/1"
    timeout = 300  # idle keep-alive connections do not hold a thread forever

    # -- entry points --------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        self.rfile = CountingReader(self.rfile)
        self.wfile = CountingWriter(self.wfile)

    def handle_one_request(self) -> None:
        """One request; its bytes in and out count for its client endpoint (docs/PERFORMANCE.md)."""
        before = (self.rfile.count, self.wfile.count)
        self.path = ""
        super().handle_one_request()
        path = urlsplit(self.path).path if self.path else ""
        if path in CLIENT_PATHS:
            self.server.wire.add(path, self.rfile.count - before[0], self.wfile.count - before[1])

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        if not self.server.quiet:
            sys.stderr.write(f"cc_server: {self.address_string()} {format % args}\n")

    @property
    def state(self) -> ServerState:
        return self.server.state

    def _dispatch(self, method: str) -> None:
        path = urlsplit(self.path).path
        try:
            if path in CLIENT_PATHS:
                self._serve_client(method, path)
                return
            if path == STREAM_PATH:
                self._serve_stream(method)
                return
            if path.startswith(IMAGES_PATH) and method == "GET":
                self._send(self._image(path))
                return
            raw = self._read_body()
            route = ADMIN_ROUTES.get((method, path))
            if route is None:
                known = any(p == path for (_, p) in ADMIN_ROUTES)
                raise HttpError(405 if known else 404,
                                f"{method} not allowed on {path}" if known else f"no route {path}")
            self._send(route(self, raw))
        except HttpError as exc:
            self._send(error_response(exc.status, exc.message))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # -- client endpoints ----------------------------------------------------------------

    def _serve_client(self, method: str, path: str) -> None:
        """Sync and events: log the request, apply a pending fault, answer."""
        self.server.wire.arrived(path)
        entry = self.state.log_request(method, path, "X-Api-Key" in self.headers)
        self.state.note(entry, **log_fields(self.headers.get("Authorization")))
        if path == EVENTS_PATH and method == "POST":
            self.state.count_batch()
        fault: Fault | None = None
        try:
            raw = self._read_body()
        except HttpError as exc:
            response = error_response(exc.status, exc.message)
        else:
            self.state.note(entry, user_id=peek_user_id(raw))
            fault = self.state.take_fault(path)
            if fault is not None:
                self.state.note(entry, fault=fault.to_json(with_times=False))
                if fault.delay and self.state.stopping.wait(fault.delay):
                    self.close_connection = True  # shutting down
                    return
                if fault.hang:
                    self._hang()
                    return
            if fault is not None and fault.status is not None:
                response = status_fault_response(fault)
            elif self.server.transfer.outage:
                response = outage_response(self.server.transfer)
            else:
                # A fault that works on the body (truncated, drip, ...) needs one: no 304 then.
                self.allow_not_modified = fault is None or (fault.body is None and not fault.drip)
                response = self._client_response(method, path, raw)
                if fault is not None:
                    response = apply_body_fault(fault, response)
        response = self._encode_response(path, response, entry)
        self.state.note(entry, status=response.status, error=error_message(response))
        self._send(response, truncate=fault is not None and fault.body == "truncated",
                   drip=fault.drip if fault is not None else None)

    def _client_response(self, method: str, path: str, raw: bytes) -> Response:
        """The normal answer to a sync or events request (errors included)."""
        try:
            if method != "POST":
                raise HttpError(405, f"{path} takes POST")
            if not self.state.api_key_ok(self.headers.get("X-Api-Key")):
                raise HttpError(401, "missing or wrong API key (X-Api-Key)")
            tokens = self.server.tokens  # the token, then (below) its user against the body's
            sub, refused = tokens.admit(path, self.headers.get("Authorization"),
                                        peek_user_id(raw) if tokens.enabled else None)
            if refused is not None:
                return refused
            if path == SYNC_PATH:
                doc = parse_json(raw)
                refused = tokens.match(path, sub, [parse_sync_request(doc)[0]])
                return refused if refused is not None else self._conditional_sync(doc)
            doc = parse_json(decode_request_body(raw, self.headers.get("Content-Encoding"),
                                                 self.server.transfer))
            events = parse_events_request(doc)
            refused = tokens.match(path, sub, [event["user_id"] for event in events])
            if refused is not None:
                return refused
            accepted, duplicates = self.state.store_events(events)
            return json_response(200, {"accepted": accepted, "duplicates": duplicates})
        except HttpError as exc:
            return error_response(exc.status, exc.message)

    def _serve_stream(self, method: str) -> None:
        """GET /content_cards/stream: the API key and the token as for sync, then the stream
        (cc_stream.py); the request log notes it like a sync."""
        user_id = parse_qs(urlsplit(self.path).query).get("user_id", [""])[0]
        entry = self.state.log_request(method, STREAM_PATH, "X-Api-Key" in self.headers)
        self.state.note(entry, user_id=user_id, **log_fields(self.headers.get("Authorization")))
        self.close_connection = True
        refused: Response | None = None
        if method != "GET":
            refused = error_response(405, f"{STREAM_PATH} takes GET")
        elif not self.state.api_key_ok(self.headers.get("X-Api-Key")):
            refused = error_response(401, "missing or wrong API key (X-Api-Key)")
        else:
            tokens = self.server.tokens
            sub, refused = tokens.admit(STREAM_PATH, self.headers.get("Authorization"), user_id)
            refused = refused or tokens.match(STREAM_PATH, sub, [user_id])
        if refused is not None:
            self.state.note(entry, status=refused.status, error=error_message(refused))
            self._send(refused)
            return
        outage = outage_response(self.server.transfer) if self.server.transfer.outage else None
        self.server.hints.serve(self, user_id, self.headers.get("Last-Event-ID"), outage,
                                lambda **values: self.state.note(entry, **values))

    # -- transfers: validators and compression --------------------------------

    def _conditional_sync(self, doc: Json) -> Response:
        """A sync answered 304 when If-None-Match names the user's current cards, else with
        the cards and their ETag. The validator is taken before the cards: a change in between
        makes it older than the answer (one more sync later), never newer (a missed change)."""
        user_id, last_full_sync_at, last_card_updated_at = parse_sync_request(doc)
        if not self.server.transfer.etag:
            return json_response(200, self.state.sync(user_id, last_full_sync_at, last_card_updated_at))
        validator, full_pending = current_validator(self.state, user_id)
        if (self.allow_not_modified and last_full_sync_at > 0 and not full_pending
                and validator_matches(self.headers.get("If-None-Match"), validator)):
            return Response(304, b"", headers={"ETag": validator})
        response = json_response(200, self.state.sync(user_id, last_full_sync_at, last_card_updated_at))
        response.headers["ETag"] = validator
        return response

    def _encode_response(self, path: str, response: Response, entry: dict[str, Json]) -> Response:
        """Gzips a sync response for a client that accepts it; notes what was negotiated."""
        accept = self.headers.get("Accept-Encoding")
        if (path == SYNC_PATH and response.status == 200 and self.server.transfer.compress
                and accepts_gzip(accept)):
            response = gzip_response(response)
        self.state.note(entry, accept_encoding=accept,
                        content_encoding=self.headers.get("Content-Encoding"),
                        if_none_match=self.headers.get("If-None-Match"),
                        response_encoding=response.headers.get("Content-Encoding"),
                        body_bytes=len(response.body))
        return response

    # -- reading -------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        """The request body, from Content-Length or chunked encoding, bounded in size."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            return b""
        try:
            length = int(length_header)
        except ValueError:
            self.close_connection = True
            raise HttpError(400, "bad Content-Length") from None
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            raise HttpError(413, f"body larger than {MAX_BODY_BYTES} bytes")
        return self.rfile.read(length)

    def _read_chunked(self) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(65537)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                self.close_connection = True
                raise HttpError(400, "bad chunked encoding") from None
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            total += size
            if total > MAX_BODY_BYTES:
                self.close_connection = True
                raise HttpError(413, f"body larger than {MAX_BODY_BYTES} bytes")
            chunks.append(self.rfile.read(size))
            self.rfile.readline()  # the CRLF after the chunk

    # -- writing -------------------------------------------------------------------------

    def _send(self, response: Response, *, truncate: bool = False,
              drip: float | None = None) -> None:
        """Sends a response; ``truncate`` sends half the body, ``drip`` one byte at a time."""
        closing = truncate or bool(drip) or self.close_connection
        self.send_response(response.status)
        if response.status != 304:  # a 304 has no body, and says nothing of one
            self.send_header("Content-Type", response.content_type)
            self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers.items():
            self.send_header(name, value)
        if closing:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        body = response.body[: len(response.body) // 2] if truncate else response.body
        try:
            if drip:
                for i in range(len(body)):
                    self.wfile.write(body[i:i + 1])
                    if self.state.stopping.wait(drip):
                        break
            else:
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away; nothing more to do

    def _hang(self) -> None:
        """Never answers: waits until the client closes, the server stops, or 60 s pass."""
        self.close_connection = True
        sock = self.connection
        deadline = time.monotonic() + HANG_LIMIT_SECONDS
        while not self.state.stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            readable, _, _ = select.select([sock], [], [], min(0.2, remaining))
            if not readable:
                continue
            try:
                if not sock.recv(1, socket.MSG_PEEK):
                    return  # the client closed the connection
            except OSError:
                return
            self.state.stopping.wait(0.2)  # the client sent more; do not spin on it

    # -- admin endpoints -----------------------------------------------------------------

    def admin_events(self, raw: bytes) -> Response:
        return json_response(200, self.state.events_report())

    def admin_requests(self, raw: bytes) -> Response:
        return json_response(200, self.state.requests_report())

    def admin_faults(self, raw: bytes) -> Response:
        return json_response(200, self.state.faults_report())

    def admin_get_cards(self, raw: bytes) -> Response:
        query = parse_qs(urlsplit(self.path).query)
        user_id = query.get("user_id", [""])[0]
        return json_response(200, self.state.cards_report(user_id))

    def admin_set_cards(self, raw: bytes) -> Response:
        doc = require_object(parse_json(raw), "body")
        user_id = require_string(doc, "user_id")
        response = json_response(200, self.state.upsert_cards(user_id, parse_card_list(doc)))
        if doc["cards"]:
            self.server.hints.publish(user_id)
        return response

    def admin_remove(self, raw: bytes) -> Response:
        doc = require_object(parse_json(raw), "body")
        user_id = require_string(doc, "user_id")
        result = self.state.remove_cards(user_id, parse_id_list(doc))
        if result["removed"]:
            self.server.hints.publish(user_id)
        return json_response(200, result)

    def admin_force_full(self, raw: bytes) -> Response:
        doc = require_object(parse_json(raw), "body")
        response = json_response(200, self.state.force_full(require_string(doc, "user_id")))
        self.server.hints.publish(doc["user_id"])
        return response

    def admin_add_fault(self, raw: bytes) -> Response:
        fault = Fault.from_json(parse_json(raw) if raw.strip() else {})
        self.state.add_fault(fault)
        return json_response(200, {"fault": fault.to_json()})

    def admin_reset(self, raw: bytes) -> Response:
        self.server.transfer = TransferOptions()
        self.server.wire.clear()
        self.server.tokens.clear()
        self.server.hints.reset()
        return json_response(200, self.state.reset())

    def _image(self, path: str) -> Response:
        """GET /images/NAME: deterministic bytes of the asked size, or the asked status."""
        query = parse_qs(urlsplit(self.path).query)
        try:
            size = int(query.get("size", ["1000"])[0])
            status = int(query.get("status", ["200"])[0])
        except ValueError:
            raise HttpError(400, "'size' and 'status' must be integers") from None
        if not 0 <= size <= MAX_BODY_BYTES or not 200 <= status <= 599:
            raise HttpError(400, f"'size' must be 0..{MAX_BODY_BYTES}, 'status' 200..599")
        with self.state.lock:
            self.state.images_served.append(path)
        if status != 200:
            return error_response(status, f"image {path} answered {status} as asked")
        seed = path.encode("utf-8")
        body = (b"\x89PNG\r\n\x1a\n" + seed * (size // max(len(seed), 1) + 1))[:size]
        return Response(200, body, content_type="image/png")

    def admin_images(self, raw: bytes) -> Response:
        with self.state.lock:
            return json_response(200, {"served": len(self.state.images_served),
                                       "paths": list(self.state.images_served)})

    def admin_get_transfer(self, raw: bytes) -> Response:
        return json_response(200, {"options": self.server.transfer.__dict__,
                                   "wire": self.server.wire.report()})

    def admin_arrivals(self, raw: bytes) -> Response:
        return json_response(200, self.server.wire.arrivals_report())

    def admin_set_transfer(self, raw: bytes) -> Response:
        self.server.transfer.update(parse_json(raw) if raw.strip() else {})
        return json_response(200, {"options": self.server.transfer.__dict__})

    def healthz(self, raw: bytes) -> Response:
        return Response(200, b"ok", content_type="text/plain; charset=utf-8")


ADMIN_ROUTES: dict[tuple[str, str], Route] = {
    ("GET", "/_admin/events"): RequestHandler.admin_events,
    ("GET", "/_admin/requests"): RequestHandler.admin_requests,
    ("GET", "/_admin/faults"): RequestHandler.admin_faults,
    ("GET", "/_admin/cards"): RequestHandler.admin_get_cards,
    ("POST", "/_admin/cards"): RequestHandler.admin_set_cards,
    ("POST", "/_admin/remove"): RequestHandler.admin_remove,
    ("POST", "/_admin/force_full"): RequestHandler.admin_force_full,
    ("POST", "/_admin/fault"): RequestHandler.admin_add_fault,
    ("POST", "/_admin/reset"): RequestHandler.admin_reset,
    ("GET", "/_admin/images"): RequestHandler.admin_images,
    ("GET", "/_admin/transfer"): RequestHandler.admin_get_transfer,
    ("POST", "/_admin/transfer"): RequestHandler.admin_set_transfer,
    ("GET", "/_admin/arrivals"): RequestHandler.admin_arrivals,
    ("GET", "/healthz"): RequestHandler.healthz,
    **TOKEN_ROUTES,   # /_admin/secret, /_admin/token, /_admin/auth (cc_auth.py)
    **STREAM_ROUTES,  # /_admin/hint, /_admin/stream_fault, /_admin/streams (cc_stream.py)
}


def peek_user_id(raw: bytes) -> str | None:
    """The top-level ``user_id`` of a JSON body, for the request log; None if there is none."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except ValueError:
        return None
    value = doc.get("user_id") if isinstance(doc, dict) else None
    return value if isinstance(value, str) else None


# --------------------------------------------------------------------------------------------
# Start-up
# --------------------------------------------------------------------------------------------

def check_loopback(host: str) -> None:
    """Raises ValueError unless ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(f"refusing to bind {host!r}: only loopback addresses "
                         "(127.0.0.0/8, ::1, localhost) are allowed")


def make_server(host: str, port: int, state: ServerState, quiet: bool,
                secret: str | None = None,
                keepalive: float = DEFAULT_KEEPALIVE_SECONDS) -> CardServer:
    server_class = CardServer6 if ":" in host else CardServer
    return server_class((host, port), state, quiet, secret, keepalive)


def server_url(server: CardServer) -> str:
    host, port = str(server.server_address[0]), server.server_address[1]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def write_port_file(path: str, port: int) -> None:
    """Writes the port atomically, so a reader never sees a partial file."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(f"{port}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Reference Content Cards server.")
    parser.add_argument("--feed", required=True,
                        help="cards every user starts with: a sync envelope, an array of cards, "
                             'or {"users": {"u-1": [...], "*": [...]}}')
    parser.add_argument("--host", default="127.0.0.1", help="loopback address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default)")
    parser.add_argument("--db", default=":memory:",
                        help="SQLite file for received events (default: in memory)")
    parser.add_argument("--api-key", default=None,
                        help="require this X-Api-Key on /content_cards/sync and /events")
    parser.add_argument("--secret", default=None,
                        help="require Authorization: Bearer <token> signed with this secret on "
                             "sync, events and the stream (cc_auth.py)")
    parser.add_argument("--stream-keepalive", type=float, default=DEFAULT_KEEPALIVE_SECONDS,
                        help="seconds without a write before a stream sends a keepalive "
                             f"comment (default {DEFAULT_KEEPALIVE_SECONDS:g})")
    parser.add_argument("--port-file", default=None, help="write the port number to this file")
    parser.add_argument("--quiet", action="store_true", help="do not log requests to stderr")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        check_loopback(args.host)
        if args.secret == "":
            raise ValueError("--secret must not be empty")
        if args.stream_keepalive <= 0:
            raise ValueError("--stream-keepalive must be more than 0 seconds")
        feed = Feed.load(args.feed)
        state = ServerState(feed, args.db, args.api_key)
        server = make_server(args.host, args.port, state, args.quiet, args.secret,
                             args.stream_keepalive)
    except (ValueError, OSError, sqlite3.Error) as exc:
        print(f"cc_server: {exc}", file=sys.stderr)
        return 2

    # Block the stop signals in every thread and wait for them here with sigwait: no Python
    # signal handler runs in the middle of other code, so shutting down cannot deadlock.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    thread = threading.Thread(target=server.serve_forever, name="cc-server", daemon=True)
    thread.start()
    if args.port_file:
        write_port_file(args.port_file, server.server_address[1])
    print(f"listening on {server_url(server)}", flush=True)

    signal.sigwait(stop_signals)
    state.stopping.set()
    server.hints.close()  # ends the open streams: their sockets are shut down
    server.shutdown()
    server.server_close()
    state.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

