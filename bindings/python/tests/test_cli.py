"""The contentcards command-line tool, run as a real process: the C program CMake builds
(build/bin/contentcards, or $CONTENTCARDS_CLI) and the package's ``python -m contentcards``,
against the same expectations (docs/CLI.md), with real files, stores and the reference server
on 127.0.0.1. Both must print the same thing for the same command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

import contentcards
from conftest import BINDING, REPO, SAMPLE_FEED, TEST_INSTALLED
from reference_server import ReferenceServer

C_CLI = os.environ.get("CONTENTCARDS_CLI") or os.path.join(REPO, "build", "bin", "contentcards")


def _python_command() -> list[str]:
    return [sys.executable, "-m", "contentcards"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    if not TEST_INSTALLED:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [BINDING, env.get("PYTHONPATH")]))
    return env


IMPLEMENTATIONS = ["c", "python"]


@pytest.fixture(params=IMPLEMENTATIONS)
def tool(request: pytest.FixtureRequest) -> str:
    if request.param == "c" and not os.access(C_CLI, os.X_OK):
        pytest.skip(f"{C_CLI} not built (make cmake)")
    return str(request.param)


class Run:
    def __init__(self, result: subprocess.CompletedProcess[str]) -> None:
        self.code = result.returncode
        self.out = result.stdout
        self.err = result.stderr

    def json(self) -> Any:
        return json.loads(self.out)


def run(tool: str, *args: str, timeout: float = 60) -> Run:
    command = [C_CLI] if tool == "c" else _python_command()
    return Run(subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout,
                              env=_env()))


@pytest.fixture
def store(tmp_path: os.PathLike[str]) -> str:
    return os.path.join(os.fspath(tmp_path), "store")


def test_help_version_and_usage_errors(tool: str) -> None:
    r = run(tool, "--help")
    assert r.code == 0 and r.out.startswith("usage: contentcards") and r.err == ""
    for command in ("validate", "feed", "counts", "events list", "events flush", "refresh",
                    "diagnostics", "--json", "--log-level"):
        assert command in r.out
    r = run(tool, "--version")
    assert (r.code, r.out) == (0, f"contentcards {contentcards.__version__}\n")
    r = run(tool)
    assert r.code == 2 and r.out == "" and r.err.startswith("usage: contentcards")
    for args, message in [(["frobnicate"], "unknown command 'frobnicate'"),
                          (["feed", "--bogus"], "unknown option '--bogus'"),
                          (["feed"], "--store DIR is required"),
                          (["events", "list", "--store", "x", "--limit", "-1"], "--limit needs a whole number"),
                          (["events", "purge", "--store", "x"], "unknown events command 'purge'"),
                          (["events", "flush", "--store", "x"], "events flush needs --events-url"),
                          (["refresh"], "refresh needs --source"),
                          (["validate"], "validate needs one PAYLOAD_FILE"),
                          (["--log-level", "loud", "diagnostics"], "--log-level must be"),
                          (["refresh", "--source"], "option --source needs a value")]:
        r = run(tool, *args)
        assert r.code == 2, (args, r.err)
        assert r.out == ""
        assert f"contentcards: {message}" in r.err and "Try 'contentcards --help'." in r.err


def test_validate(tool: str, tmp_path: os.PathLike[str]) -> None:
    r = run(tool, "validate", SAMPLE_FEED)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "accepted 11 cards, left out 3"
    assert lines[3] == 'left out: card 13 bad-type: unknown type "hologram"'
    doc = run(tool, "--json", "validate", SAMPLE_FEED).json()
    assert doc["accepted"] == 11
    assert [item["index"] for item in doc["leftOut"]] == [11, 12, 13]
    assert doc["leftOut"][1] == {"index": 12, "id": None,
                                 "reason": 'missing required field "id" (a non-empty string)'}
    # Refused: not JSON. Exit 1, the status and message on stderr, the error object with --json.
    bad = os.path.join(os.fspath(tmp_path), "bad.json")
    with open(bad, "w") as f:
        f.write('{"cards": [')
    r = run(tool, "validate", bad)
    assert r.code == 1 and r.out == "" and r.err.startswith("contentcards: CC_E_PARSE: ")
    r = run(tool, "validate", bad, "--json")
    assert r.code == 1
    error = r.json()["error"]
    assert error["code"] == -4 and error["name"] == "CC_E_PARSE" and error["message"]
    r = run(tool, "validate", os.path.join(os.fspath(tmp_path), "missing.json"))
    assert r.code == 1 and "CC_E_SOURCE_FILE" in r.err and "missing.json" in r.err


def test_refresh_from_a_file_then_feed_and_counts(tool: str, store: str) -> None:
    r = run(tool, "refresh", "--store", store, "--user", "u-1", "--source", SAMPLE_FEED)
    assert r.code == 0, r.err
    assert r.out.splitlines()[0] == "added 11, updated 0, removed 0, kept newer 0"
    assert r.out.splitlines()[-1] == "total 10, unviewed 9"
    feed = run(tool, "--json", "feed", "--store", store, "--user", "u-1").json()
    assert [card["id"] for card in feed["cards"]][:2] == ["tile-2", "banner-noclass"]
    assert feed["counts"] == {"total": 10, "unviewed": 9}
    assert feed["byClassType"]["home_tile"] == {"total": 3, "unviewed": 3}
    assert feed["byClassType"]["coupon_code"] == {"total": 2, "unviewed": 1}  # control not unviewed
    assert feed["byClassType"][""] == {"total": 2, "unviewed": 2}
    assert list(feed["byClassType"]) == sorted(feed["byClassType"])
    counts = run(tool, "counts", "--json", "--store", store, "--user", "u-1",
                 "--class-type", "home_tile", "--class-type=coupon_code").json()
    assert counts == {"total": 5, "unviewed": 4, "byClassType": {
        "coupon_code": {"total": 2, "unviewed": 1}, "home_tile": {"total": 3, "unviewed": 3}}}
    text = run(tool, "feed", "--store", store, "--user", "u-1", "--class-type", "home_tile").out
    assert text.splitlines()[1].split()[:4] == ["tile-2", "home_tile", "captioned_image", "pinned*"]
    assert text.endswith("total 3, unviewed 3\n  home_tile: total 3, unviewed 3\n")
    # Another user of the same store has nothing.
    assert run(tool, "--json", "counts", "--store", store, "--user", "u-2").json() == {
        "total": 0, "unviewed": 0, "byClassType": {}}


def test_events_list_and_flush_against_the_server(tool: str, store: str,
                                                  server: ReferenceServer) -> None:
    r = run(tool, "refresh", "--store", store, "--user", "u-1", "--source", server.url,
            "--api-key", "k", "--json")
    assert r.code == 0, r.err
    assert r.json()["added"] > 0
    with contentcards.ContentCards(user_id="u-1", storage_path=store) as c:
        first = c.cards()[0].id
        c.log_impression(first)
        c.log_feed_displayed()
    listed = run(tool, "events", "list", "--store", store, "--json").json()
    assert listed["pending"] == 2 and listed["failedAttempts"] == 0
    assert [(e["type"], e["cardId"], e["userId"]) for e in listed["events"]] == [
        ("impression", first, "u-1"), ("feed_displayed", None, "u-1")]
    assert run(tool, "events", "list", "--store", store, "--limit", "1", "--json").json()[
        "events"][0]["type"] == "impression"
    text = run(tool, "events", "list", "--store", store).out.splitlines()
    assert text[0].split()[1:4] == ["impression", first, "u-1"]
    assert text[-1] == "2 pending (2 shown), 0 failed delivery attempts"
    # An unreachable sink: exit 1, the events stay.
    r = run(tool, "events", "flush", "--store", store, "--events-url", "http://127.0.0.1:1",
            "--timeout", "3")
    assert r.code == 1 and r.err.startswith("contentcards: CC_E_NETWORK: ")
    assert run(tool, "events", "list", "--store", store, "--json").json()["pending"] == 2
    r = run(tool, "events", "flush", "--store", store, "--events-url", server.url)
    assert (r.code, r.out) == (0, "delivered 2, dropped 0, pending 0\n"), r.err
    assert sorted(e["type"] for e in server.events()) == ["feed_displayed", "impression"]
    assert run(tool, "events", "list", "--store", store, "--json").json() == {
        "pending": 0, "failedAttempts": 0, "events": []}


def test_refresh_failures_and_diagnostics(tool: str, store: str, server: ReferenceServer) -> None:
    server.fault(status=503, retry_after=7)
    r = run(tool, "--json", "refresh", "--store", store, "--user", "u-1", "--source", server.url)
    assert r.code == 1 and "CC_E_SERVER" in r.err
    assert r.json()["error"]["name"] == "CC_E_SERVER"
    diagnostics = run(tool, "diagnostics", "--store", store, "--user", "u-1").json()
    assert diagnostics["userId"] == "u-1" and diagnostics["storagePath"] == store
    assert run(tool, "--json", "diagnostics").json()["storagePath"] is None


def test_log_level_prints_the_library_log(tool: str, store: str) -> None:
    r = run(tool, "--log-level", "debug", "refresh", "--store", store, "--user", "u-1",
            "--source", SAMPLE_FEED)
    assert r.code == 0
    assert 'contentcards: [debug] refresh started for user "u-1"' in r.err
    assert 'contentcards: [info] refresh for user "u-1": added 11' in r.err
    assert "contentcards: [warning] card left out of the payload (index 13" in r.err
    r = run(tool, "--log-level", "warning", "refresh", "--store", store, "--user", "u-1",
            "--source", SAMPLE_FEED)
    assert "[info]" not in r.err and "[warning]" in r.err
    assert run(tool, "refresh", "--store", store, "--user", "u-1", "--source", SAMPLE_FEED).err == ""


def test_both_implementations_print_the_same(store: str) -> None:
    if not os.access(C_CLI, os.X_OK):
        pytest.skip(f"{C_CLI} not built (make cmake)")
    assert run("c", "refresh", "--store", store, "--user", "u-1", "--source", SAMPLE_FEED).code == 0
    with contentcards.ContentCards(user_id="u-1", storage_path=store) as c:
        c.log_impression("tile-1")
    for args in (["--help"], ["--version"], ["validate", SAMPLE_FEED], ["--json", "validate", SAMPLE_FEED],
                 ["feed", "--store", store, "--user", "u-1"],
                 ["--json", "feed", "--store", store, "--user", "u-1", "--class-type", "home_tile"],
                 ["counts", "--store", store, "--user", "u-1"],
                 ["--json", "counts", "--store", store, "--user", "u-1"],
                 ["events", "list", "--store", store], ["--json", "events", "list", "--store", store],
                 ["validate"], ["feed", "--nope"], ["--json", "validate", "/nonexistent/x.json"]):
        c_run, py_run = run("c", *args), run("python", *args)
        assert (c_run.code, c_run.out, c_run.err) == (py_run.code, py_run.out, py_run.err), args
