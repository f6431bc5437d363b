"""The JSON Schemas of the wire format (docs/schema/) against what really goes over the wire.

- The schemas are valid draft 2020-12 schemas and name the keys of docs/WIRE.md's tables.
- The library's real requests (captured by a host transport that forwards them to the reference
  server on 127.0.0.1) match the sync request and event batch schemas, with exactly their keys;
  the reference server's real answers (full and incremental syncs, tombstones, another user)
  match the sync response schema.
- The card schema and the library agree: on the sample feed's cards and on variants of them
  (each missing or mistyped field), a card the schema accepts is one the library merges, and a
  card it refuses is one the library leaves out. (The schema says what a server sends, so it
  is stricter than the library in two places the variants leave alone: a field the card's kind
  does not use, such as a classic card's "ar", and the content fields of a tombstone, are not
  read by the library at all.)
"""

from __future__ import annotations

import copy
import json
import os
import re
import urllib.error
import urllib.request
from typing import Any

import jsonschema
import pytest

from contentcards import ContentCards, TransportRequest, TransportResponse
from conftest import REPO, SAMPLE_FEED
from reference_server import ReferenceServer

SCHEMA_DIR = os.path.join(REPO, "docs", "schema")
WIRE = os.path.join(REPO, "docs/WIRE.md")
EVENT_TYPES = {"impression", "control_impression", "click", "dismissal", "feed_displayed", "read",
               "unread"}


def schema(name: str) -> dict[str, Any]:
    with open(os.path.join(SCHEMA_DIR, f"{name}.schema.json"), encoding="utf-8") as f:
        loaded: dict[str, Any] = json.load(f)
    return loaded


def validator(name: str, definition: str | None = None) -> jsonschema.Draft202012Validator:
    """A validator of a schema, or of one of its $defs."""
    document = schema(name)
    if definition is not None:
        document = {"$schema": document["$schema"], "$defs": document["$defs"],
                    "$ref": f"#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(document)


def errors(v: jsonschema.Draft202012Validator, instance: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(instance)]


def wire_table_keys(heading: str) -> list[str]:
    """The keys in the first column of the table under a heading of docs/WIRE.md (up to the
    next heading)."""
    with open(WIRE, encoding="utf-8") as f:
        text = f.read()
    start = text.index(f"\n{heading}\n")
    end = re.compile(r"\n#+ ").search(text, start + 1)
    body = text[start:end.start() if end else len(text)]
    # A table's rows, not its header (the line before |---|).
    return re.findall(r"^\| `([a-z_]+)` \|.*\n(?!\|---)", body, flags=re.MULTILINE)


def sample_cards() -> list[Any]:
    with open(SAMPLE_FEED, encoding="utf-8") as f:
        cards: list[Any] = json.load(f)["cards"]
    return cards


def left_out(cards: list[Any]) -> set[int]:
    """The indices of the cards the library leaves out of a payload of them."""
    with ContentCards(user_id="u", refresh_tokens=0) as cc:
        return {item.index for item in cc.apply(cards).left_out}


# -- the schemas themselves -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sync-request", "sync-response", "event-batch"])
def test_is_a_valid_2020_12_schema(name: str) -> None:
    document = schema(name)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(document)


def test_the_schemas_name_the_keys_of_docs_wire() -> None:
    request = schema("sync-request")
    assert list(request["properties"]) == wire_table_keys("## Sync request")
    assert set(request["required"]) == set(request["properties"])
    response = schema("sync-response")
    assert list(response["anyOf"][0]["properties"]) == wire_table_keys("## Sync response")
    card = response["$defs"]["card"]
    assert list(card["properties"]) == wire_table_keys("## Cards on the wire")
    assert card["else"]["properties"]["tp"]["enum"] == wire_table_keys("### Card types")
    event = schema("event-batch")["$defs"]["event"]
    assert list(event["properties"]) == wire_table_keys("## Events")
    assert set(event["properties"]["type"]["enum"]) == EVENT_TYPES
    with open(WIRE, encoding="utf-8") as f:
        types = re.search(r"^\| `type` \| string \| (.*) \|$", f.read(), flags=re.MULTILINE)
    assert types is not None and set(re.findall(r"`([a-z_]+)`", types.group(1))) == EVENT_TYPES


# -- the library's requests and the reference server's answers --------------------------------


class Recorder:
    """A host transport that sends each request to the reference server and keeps both sides."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.exchanges: list[tuple[str, bytes, int, bytes]] = []

    def __call__(self, request: TransportRequest) -> TransportResponse:
        headers = request.header_dict
        http = urllib.request.Request(self.url + request.url, data=request.body, method="POST",
                                      headers=headers)
        try:
            with urllib.request.urlopen(http, timeout=request.timeout) as answer:
                status, body, etag = answer.status, answer.read(), answer.headers.get("ETag")
        except urllib.error.HTTPError as exc:
            status, body, etag = exc.code, exc.read(), exc.headers.get("ETag")
        self.exchanges.append((request.kind, request.body, status, body))
        return TransportResponse(status, body, None, etag)

    def of(self, kind: str) -> list[tuple[bytes, int, bytes]]:
        return [(sent, status, got) for k, sent, status, got in self.exchanges if k == kind]


def test_requests_and_answers_match_the_schemas(tmp_path: Any) -> None:
    # The server's feed: the sample feed's cards that the library accepts (the sample also holds
    # malformed cards on purpose, which the server hands out as they are).
    cards = sample_cards()
    bad = left_out(cards)
    assert bad, "the sample feed has no malformed card any more: pick the good ones another way"
    feed = os.path.join(os.fspath(tmp_path), "feed.json")
    with open(feed, "w", encoding="utf-8") as f:
        json.dump({"cards": [c for i, c in enumerate(cards) if i not in bad]}, f)

    with ReferenceServer(feed) as server:
        recorder = Recorder(server.url)
        with ContentCards(user_id="u-schema", device_id="device-1", refresh_tokens=0,
                          source={"callback": True}, events={"callback": True},
                          event_flush_interval_seconds=0) as cc:
            cc.set_transport(recorder)
            cc.refresh(10)                                      # a full sync
            cc.log_impression("tile-1")
            cc.log_impression("coupon-control")                 # a control impression
            cc.log_click("tile-1")
            cc.log_dismissal("tile-1")
            cc.log_feed_displayed()
            cc.mark_read("msg-1")
            cc.mark_unread("msg-1")
            assert cc.flush_events(10).delivered == 7
            changed = dict(next(c for c in cards if c.get("id") == "msg-2"), tt="Changed")
            server.set_cards("u-schema", [changed])
            server.remove("u-schema", ["tile-3"])
            cc.refresh(10)                                      # incremental, with a tombstone
            cc.refresh(10)                                      # nothing changed: 304
            cc.change_user("u-other")
            cc.refresh(10)                                      # another user's full sync

    request, response, batch = (validator("sync-request"), validator("sync-response"),
                                validator("event-batch"))
    syncs = recorder.of("sync")
    assert len(syncs) == 4
    answers = []
    for sent, status, got in syncs:
        body = json.loads(sent)
        assert errors(request, body) == [], body
        assert set(body) == set(schema("sync-request")["properties"]), body
        assert status in (200, 304), (status, got)
        if status == 200:
            answer = json.loads(got)
            assert errors(response, answer) == [], answer
            answers.append(answer)
    assert [a["full_sync"] for a in answers] == [True, False, True]
    assert any(c.get("r") is True for c in answers[1]["cards"]), "no tombstone was checked"
    assert {c["id"] for c in answers[1]["cards"]} >= {"msg-2", "tile-3"}
    assert [json.loads(sent)["user_id"] for sent, _, _ in syncs] == ["u-schema"] * 3 + ["u-other"]

    seen: set[str] = set()
    batches = recorder.of("events")
    assert batches
    keys = set(schema("event-batch")["$defs"]["event"]["properties"])
    for sent, status, _ in batches:
        body = json.loads(sent)
        assert errors(batch, body) == [], body
        assert status == 200
        for event in body["events"]:
            assert set(event) == keys, event
            seen.add(event["type"])
    assert seen == EVENT_TYPES


# -- the card schema and the library agree ----------------------------------------------------


def card_variants() -> list[tuple[str, Any]]:
    """(what, card): the sample feed's cards and variants of a valid card of each kind."""
    cards = sample_cards()
    by_type = {c.get("tp"): c for c in cards if isinstance(c, dict) and c.get("id")}
    captioned, banner = by_type["captioned_image"], by_type["banner_image"]
    classic = by_type.get("short_news") or by_type["text_announcement"]
    out: list[tuple[str, Any]] = [(f"sample card {i}", c) for i, c in enumerate(cards)]

    def variant(base: dict[str, Any], what: str, **changes: Any) -> None:
        card = copy.deepcopy(base)
        for key, value in changes.items():
            if value is DROP:
                card.pop(key, None)
            else:
                card[key] = value
        out.append((f"{base['tp']} {what}", card))

    for base in (captioned, banner, classic):
        variant(base, "as it is")
        variant(base, "without id", id=DROP)
        variant(base, "with id null", id=None)
        variant(base, "with an empty id", id="")
        variant(base, "with a numeric id", id=5)
        variant(base, "with a NUL in its id", id="a\u0000b")
        variant(base, "without ca", ca=DROP)
        variant(base, "with ca 1.7e9", ca=1.7e9)
        variant(base, "with a fractional ca", ca=1.5)
        variant(base, "with ca as text", ca="1700000000")
        variant(base, "with ea null", ea=None)
        variant(base, "with a fractional ea", ea=2.5)
        variant(base, "without tp", tp=DROP)
        variant(base, "with tp null", tp=None)
        variant(base, "with an unknown tp", tp="carousel")
        variant(base, "with a numeric tp", tp=3)
        variant(base, "with v as text", v="yes")
        variant(base, "with v as 1", v=1)
        variant(base, "with v null", v=None)
        variant(base, "with rd true", rd=True)
        variant(base, "with rd as text", rd="true")
        variant(base, "with e null", e=None)
        variant(base, "with e an array", e=["x"])
        variant(base, "with numbers in e", e={"class_type": "home_tile", "n": 1.5, "b": True})
        variant(base, "with an empty u", u="")
        variant(base, "with a numeric u", u=7)
        variant(base, "with a numeric dm", dm=1)
        variant(base, "with an unknown key", zz={"any": "thing"})
        variant(base, "as a tombstone", r=True)
        variant(base, "as a bare tombstone",
                **{k: DROP for k in base if k not in ("id", "ca", "r")}, r=True)
        variant(base, "as a tombstone with a boolean as text", r=True, p="no")
    for base in (captioned, banner):   # a classic card has no aspect ratio: its "ar" is not read
        variant(base, "with ar as text", ar="1.5")
        variant(base, "with ar 2", ar=2)
    variant(captioned, "without tt", tt=DROP)
    variant(captioned, "with an empty ds", ds="")
    variant(captioned, "with tt null", tt=None)
    variant(banner, "without i", i=DROP)
    variant(banner, "with an empty i", i="")
    variant(classic, "without ds", ds=DROP)
    variant(classic, "without i", i=DROP)
    variant(classic, "as a text_announcement without i", tp="text_announcement", i=DROP)
    out += [("a control card", {"id": "ctl", "tp": "control", "ca": 1}),
            ("a number", 5), ("a string", "card"), ("null", None), ("an array", [])]
    return out


DROP = object()


def test_the_card_schema_and_the_library_agree() -> None:
    variants = card_variants()
    cards = []
    for index, (_, card) in enumerate(variants):
        if isinstance(card, dict) and isinstance(card.get("id"), str) and card["id"]:
            card = dict(card, id=f"{card['id']}-{index}")   # one payload: no repeated id
        cards.append(card)
    refused_by_library = left_out(cards)
    card = validator("sync-response", "card")
    disagreements = []
    for index, (what, item) in enumerate(variants):
        problems = errors(card, cards[index])
        if bool(problems) != (index in refused_by_library):
            side = "schema refuses, library merges" if problems else "schema accepts, library leaves out"
            disagreements.append(f"{what}: {side} {problems}")
    assert disagreements == []
    assert len(refused_by_library) > 20 and len(variants) - len(refused_by_library) > 20
