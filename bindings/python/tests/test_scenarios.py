"""The one-API scenario through the Python API: Tests/scenarios/one_api.scenario run
step by step with ContentCards' methods; the transcript must equal one_api.expected, which the
C runner (Tests/c/test_scenarios.c) and the Swift runner (ScenarioTests.swift) match too. So
Swift, C and Python give the same results, error codes, messages and JSON bytes for every
operation (Tests/scenarios/README.md)."""

from __future__ import annotations

import json
import os
import re
import tempfile
from typing import Any

import contentcards as cc
from conftest import REPO

SCENARIOS = os.path.join(REPO, "Tests", "scenarios")


def _mask(text: str, keys: tuple[str, ...]) -> str:
    """The value of each "key": (a string or a number, not null) replaced by "*"."""
    for key in keys:
        text = re.sub(r'("%s":)("(?:[^"\\]|\\.)*"|-?[0-9][^,}\]]*)' % re.escape(key), r'\1"*"',
                      text)
    return text


def _top_value(text: str, key: str) -> tuple[int, int] | None:
    """Where the value of ``key`` at the top level of the JSON object ``text`` starts and
    ends, or None (keys inside nested objects and arrays are not top-level ones)."""
    def string_end(start: int) -> int:  # the index after the string starting at `start`
        j = start + 1
        while j < len(text) and text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        return min(j + 1, len(text))

    depth, i = 0, 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            end = string_end(i)
            if depth == 1 and text[end:end + 1] == ":" and text[i + 1:end - 1] == key:
                j, d = end + 1, 0
                while j < len(text):
                    if text[j] == '"':
                        j = string_end(j)
                        continue
                    if text[j] in "{[":
                        d += 1
                    elif text[j] in "}]":
                        if d == 0:
                            break
                        d -= 1
                    elif text[j] == "," and d == 0:
                        break
                    j += 1
                return end + 1, j
            i = end
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        i += 1
    return None


def _mask_export(text: str) -> str:
    """The export document (export_user) with the top-level "exported_at", and "id" and
    "time" of each pending event (inside the top-level "pending_events" only: the cards have
    ids too) written "*" (Tests/scenarios/README.md)."""
    at, events = _top_value(text, "exported_at"), _top_value(text, "pending_events")
    if at is None or events is None or at[1] > events[0]:
        return text
    return (text[:at[0]] + ("null" if text[at[0]:at[1]] == "null" else '"*"')
            + text[at[1]:events[0]] + _mask(text[events[0]:events[1]], ("id", "time"))
            + text[events[1]:])


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _filter(arg: str) -> list[str] | None:
    return json.loads(arg) if arg else None


def _run_step(state: dict[str, Any], op: str, arg: str, tmp: str) -> str | None:
    """One step: the result as JSON text, or None for a step with no result."""
    c: cc.ContentCards = state.get("c")  # type: ignore[assignment]
    if op == "open":
        # The configuration's text as given, as in C and Swift (ContentCards takes JSON text).
        state["c"] = cc.ContentCards(arg.replace("@REPO", REPO).replace("@TMP", tmp))
        state["closed"] = False
        return None
    if op == "refresh":
        return _dumps(c.refresh().to_json())
    if op == "apply":
        return _dumps(c.apply(arg).to_json())
    if op == "cards":
        return _dumps([card.to_json() for card in c.cards(_filter(arg))])
    if op == "card":
        return _dumps(c.card(arg).to_json())
    if op == "counts":
        return _dumps(c.counts(_filter(arg)).to_json())
    if op == "log":
        action, _, card_id = arg.partition(" ")
        log = {"impression": c.log_impression, "click": c.log_click,
               "dismissal": c.log_dismissal}
        result = c.log_feed_displayed() if action == "feed_displayed" else log[action](card_id)
        return _dumps(result.to_json())
    if op == "pending_events":
        return _mask(_dumps(c.list_pending_events().to_json()), ("id",))
    if op == "flush_events":
        return _dumps(c.flush_events().to_json())
    if op == "change_user":
        c.change_user(arg)
        return None
    if op == "user":
        return _dumps(c.user_id)
    if op in ("mark_read", "mark_unread"):
        result = c.mark_read(arg) if op == "mark_read" else c.mark_unread(arg)
        return _dumps({"changed": result.state_changed})
    if op == "mark_all_read":
        return _dumps({"marked": c.mark_all_read(_filter(arg))})
    if op == "diagnostics":
        # The stable fields only (Tests/scenarios/README.md).
        d = c.diagnostics()
        return _dumps({"userId": d.user_id, "closed": d.closed, "storedCards": d.stored_cards,
                       "counts": d.counts.to_json(), "pendingEvents": d.pending_events,
                       "lastSuccessfulRefreshAt":
                           None if d.last_successful_refresh_at is None else "*"})
    if op == "export_user":
        return _mask_export(_dumps(c.export_user(arg or None).to_json()))
    if op == "forget_user":
        # USER|- flush|discard ("-": the current user); the configuration's timeout.
        user, _, pending = arg.partition(" ")
        return _dumps(c.forget_user(None if user == "-" else user, pending=pending).to_json())
    if op == "close":
        c.close()
        state["closed"] = True
        return None
    raise AssertionError(f"unknown step {op!r}")


def transcript() -> str:
    lines = []
    state: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, \
            open(os.path.join(SCENARIOS, "one_api.scenario"), encoding="utf-8") as f:
        try:
            for line in f.read().split("\n"):
                if not line or line.startswith("#"):
                    continue
                op, _, arg = line.partition(" ")
                lines.append(f"> {line}")
                try:
                    result = _run_step(state, op, arg, tmp)
                except cc.ContentCardsError as exc:
                    # A step on a closed controller: Python says CC_E_CLOSED, C
                    # CC_E_INVALID_HANDLE (docs/API.md); each runner writes its own code so.
                    if state.get("closed") and isinstance(exc, cc.ClosedError):
                        lines.append("= error (closed)")
                    else:
                        message = exc.message.replace(tmp, "@TMP")
                        lines.append(f"= error {exc.name} ({exc.code}): {message}")
                    continue
                text = "= ok" if result is None else "= ok " + _mask(result, ("eventId", "time"))
                lines.append(text)
        finally:
            if "c" in state:
                state["c"].close()
    return "\n".join(lines) + "\n"


def test_the_python_transcript_is_the_expected_one() -> None:
    with open(os.path.join(SCENARIOS, "one_api.expected"), encoding="utf-8") as f:
        expected = f.read()
    got = transcript()
    assert got.splitlines() == expected.splitlines()
    assert got == expected
