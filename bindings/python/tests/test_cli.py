"""The contentcards command-line tool, run as real processes (docs/CLI.md).

The tool is one program, the C program CMake builds (build/bin/contentcards, or
$CONTENTCARDS_CLI). The package's entry points run it: ``python -m contentcards`` and the
``contentcards`` console script (the installed one when the package is installed, else the
same call of ``contentcards.cli:run``). Every test runs through each of the three, with real
files, stores and the reference server on 127.0.0.1, and the three must give the same bytes,
exit status included."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import unicodedata
from typing import Any

import pytest

import contentcards
from conftest import BINDING, REPO, SAMPLE_FEED, TEST_INSTALLED
from reference_server import ReferenceServer

PROGRAM = os.environ.get("CONTENTCARDS_CLI") or os.path.join(REPO, "build", "bin", "contentcards")
#: The console script: the installed one beside this Python, else what such a script does.
INSTALLED_SCRIPT = shutil.which("contentcards", path=os.path.dirname(sys.executable))
SCRIPT = [INSTALLED_SCRIPT] if TEST_INSTALLED and INSTALLED_SCRIPT else \
    [sys.executable, "-c", "import sys; from contentcards.cli import run; sys.exit(run())"]
ENTRY_POINTS = {"program": [PROGRAM], "module": [sys.executable, "-m", "contentcards"],
                "script": SCRIPT}


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    if not TEST_INSTALLED:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [BINDING, env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def _need_program() -> None:
    if not os.access(PROGRAM, os.X_OK):
        pytest.skip(f"{PROGRAM} not built (make cmake)")


@pytest.fixture(params=list(ENTRY_POINTS))
def tool(request: pytest.FixtureRequest) -> str:
    _need_program()
    return str(request.param)


class Run:
    def __init__(self, result: subprocess.CompletedProcess[bytes]) -> None:
        self.code = result.returncode
        self.raw_out = result.stdout or b""
        self.raw_err = result.stderr or b""
        self.out = self.raw_out.decode("utf-8")
        self.err = self.raw_err.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.out)

    def key(self) -> tuple[int, bytes, bytes]:
        return self.code, self.raw_out, self.raw_err


def run(tool: str, *args: str | bytes, timeout: float = 60, stdout: Any = subprocess.PIPE) -> Run:
    return Run(subprocess.run([*ENTRY_POINTS[tool], *args], stdout=stdout, stderr=subprocess.PIPE,
                              timeout=timeout, env=_env()))


def run_all(*args: str | bytes, stdout: Any = subprocess.PIPE) -> Run:
    """The command through every entry point: the same bytes out and err, the same status."""
    _need_program()
    results = {name: run(name, *args, stdout=stdout) for name in ENTRY_POINTS}
    first = results["program"]
    for name, result in results.items():
        assert result.key() == first.key(), (name, args, result.key(), first.key())
    return first


@pytest.fixture
def store(tmp_path: os.PathLike[str]) -> str:
    return os.path.join(os.fspath(tmp_path), "store")


def fill(store: str, user: str, source: str) -> None:
    """Refreshes `user` of `store` from `source` (once: through the program)."""
    _need_program()
    r = run("program", "refresh", "--store", store, "--user", user, "--source", source)
    assert r.code == 0, r.err


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


def test_user_export_and_forget(tool: str, store: str, server: ReferenceServer) -> None:
    r = run(tool, "refresh", "--store", store, "--user", "u-1", "--source", server.url, "--api-key", "k")
    assert r.code == 0, r.err
    with contentcards.ContentCards(user_id="u-1", storage_path=store) as c:
        first = c.cards()[0].id
        c.log_impression(first)
    exported = run(tool, "user", "export", "--store", store, "--user", "u-1").json()
    assert exported["user_id"] == "u-1" and exported["format"] == 1
    assert len(exported["cards"]) > 0 and [e["type"] for e in exported["pending_events"]] == ["impression"]
    # Pending events and nowhere to deliver them: nothing removed.
    r = run(tool, "user", "forget", "--store", store, "--user", "u-1")
    assert r.code == 1 and r.err.startswith("contentcards: CC_E_NO_SOURCE: ")
    assert len(run(tool, "user", "export", "--store", store, "--user", "u-1").json()["cards"]) > 0
    r = run(tool, "user", "forget", "--store", store, "--user", "u-1", "--events-url", server.url)
    assert r.code == 0, r.err
    assert r.out.startswith("forgot user u-1: ") and ", 1 events delivered, 0 discarded, 0 images" in r.out
    assert run(tool, "user", "export", "--store", store, "--user", "u-1").json()["cards"] == []
    receipt = run(tool, "--json", "user", "forget", "--store", store, "--user", "u-1", "discard").json()
    assert receipt["cards"] == 0 and receipt["wal_truncated"] is True
    assert run(tool, "user", "forget", "--store", store, "extra").code == 2
    assert run(tool, "user", "export", "--store", store, "discard").code == 2


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


# -- one number grammar (docs/CLI.md, "Numbers") ----------------------------------------------

#: Refused by every numeric option: not plain ASCII decimal.
NOT_DECIMAL = ["", " 5", "5 ", "+1", "-1", "0x10", "1_0", "1e3", "٣", "²", "５", "inf", "nan",
               "Infinity", "1,5", "..5", "5.5.5"]


@pytest.mark.parametrize("value", NOT_DECIMAL + ["0.5", ".5", "5.", "99999999999999999999"])
def test_limit_is_a_whole_decimal_number(value: str) -> None:
    r = run_all("events", "list", "--store", "x", "--limit", value)
    assert (r.code, r.out) == (2, ""), (value, r.err)
    assert r.err.startswith("contentcards: --limit ") and "Try 'contentcards --help'." in r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize("value", NOT_DECIMAL + [".5", "5.", "0", "0.0", "31536001", "1e999"])
def test_timeout_is_a_finite_decimal_number(value: str) -> None:
    r = run_all("refresh", "--source", SAMPLE_FEED, "--timeout", value)
    assert (r.code, r.out) == (2, ""), (value, r.err)
    assert r.err.startswith("contentcards: --timeout ") and "Try 'contentcards --help'." in r.err


def test_numbers_accepted(store: str) -> None:
    for value in ("2", "0.5", "007", "31536000", "2.000"):
        r = run_all("--json", "refresh", "--source", SAMPLE_FEED, "--timeout", value)
        assert r.code == 0, (value, r.err)
    fill(store, "u", SAMPLE_FEED)
    with contentcards.ContentCards(user_id="u", storage_path=store) as c:
        c.log_feed_displayed()
        c.log_feed_displayed()
    for value, shown in (("0", 2), ("1", 1), ("001", 1), ("9223372036854775807", 2)):
        r = run_all("--json", "events", "list", "--store", store, "--limit", value)
        assert r.code == 0 and len(r.json()["events"]) == shown, (value, r.err)
    r = run_all("events", "list", "--store", store, "--limit", "9223372036854775808")
    assert r.code == 2 and "--limit is at most 9223372036854775807" in r.err


# -- arguments that are not UTF-8 --------------------------------------------------------------

def test_arguments_that_are_not_utf8_are_usage_errors(store: str) -> None:
    for args, message in [
            ((b"validate", SAMPLE_FEED, b"--user", b"caf\xe9"),
             "the value of --user is not valid UTF-8: 'caf\\xe9'"),
            ((b"counts", b"--store=" + os.fsencode(store) + b"\xff"),
             "the value of --store is not valid UTF-8: "),
            ((b"\xff\xfe",), "argument '\\xff\\xfe' is not valid UTF-8"),
            ((b"validate", b"/tmp/\xc0\xaf.json"), "argument '/tmp/\\xc0\\xaf.json' is not valid UTF-8"),
            ((b"feed", b"--store", b"s", b"--class-type", b"\xed\xa0\x80"),  # a surrogate
             "the value of --class-type is not valid UTF-8: '\\xed\\xa0\\x80'")]:
        r = run_all(*args)
        assert (r.code, r.out) == (2, ""), (args, r.err)
        assert r.err.startswith(f"contentcards: {message}"), r.err
        assert r.err.endswith("Try 'contentcards --help'.\n")
    assert not os.path.exists(store)


# -- stdout: a full disk, a closed pipe --------------------------------------------------------

@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_output_to_a_full_disk_fails() -> None:
    for args in (["validate", SAMPLE_FEED], ["--json", "validate", SAMPLE_FEED], ["--help"],
                 ["--version"]):
        with open("/dev/full", "wb") as full:
            r = run_all(*args, stdout=full)
        assert r.code == 1, (args, r.err)
        assert r.err == "contentcards: cannot write the output: No space left on device\n"
    # A failed command keeps its status and says both.
    with open("/dev/full", "wb") as full:
        r = run_all("--json", "validate", "/nonexistent/x.json", stdout=full)
    assert r.code == 1
    assert r.err.startswith("contentcards: CC_E_SOURCE_FILE: ")
    assert r.err.endswith("contentcards: cannot write the output: No space left on device\n")


def test_no_stdout_at_all() -> None:
    """stdout closed (`contentcards --version >&-`): a write error like any other, exit 1."""
    _need_program()
    results = set()
    for name, command in ENTRY_POINTS.items():
        result = subprocess.run(["bash", "-c", 'exec "$@" >&-', "-", *command, "--version"],
                                capture_output=True, timeout=60, env=_env())
        results.add((result.returncode, result.stderr))
    assert results == {(1, b"contentcards: cannot write the output: Bad file descriptor\n")}


def closed_pipe(*args: str) -> Run:
    """The command with its stdout a pipe nobody reads any more (`... | head -1` once head has
    gone), through every entry point."""
    read, write = os.pipe()
    os.close(read)
    try:
        return run_all(*args, stdout=write)
    finally:
        os.close(write)


def test_a_closed_pipe_ends_the_output_quietly(store: str) -> None:
    fill(store, "u", SAMPLE_FEED)
    for args in (["validate", SAMPLE_FEED], ["feed", "--store", store, "--user", "u"],
                 ["--json", "feed", "--store", store, "--user", "u"], ["--help"]):
        r = closed_pipe(*args)
        assert (r.code, r.raw_err) == (141, b""), (args, r.code, r.err)
    # A command that failed keeps its status and message.
    r = closed_pipe("--json", "validate", "/nonexistent/x.json")
    assert r.code == 1 and r.err.startswith("contentcards: CC_E_SOURCE_FILE: ")
    assert "Traceback" not in r.err and "Broken pipe" not in r.err


def test_head_of_a_long_feed(tmp_path: os.PathLike[str], store: str) -> None:
    """A shell pipeline into `head -1`: the first line, and no message of the tool."""
    cards = [{"id": f"card-{i:05d}", "tp": "short_news", "ds": "x" * 200, "ca": 1700000000 + i}
             for i in range(2000)]
    payload = os.path.join(os.fspath(tmp_path), "many.json")
    with open(payload, "w") as f:
        json.dump({"cards": cards}, f)
    fill(store, "u", payload)
    _need_program()
    for name, command in ENTRY_POINTS.items():
        line = " ".join(f"'{part}'" for part in command)
        result = subprocess.run(["bash", "-c", f'set -o pipefail; {line} feed --store "$1" --user u '
                                 '| head -1; echo "status ${PIPESTATUS[0]}"', "-", store],
                                capture_output=True, timeout=60, env=_env())
        out = result.stdout.decode()
        assert out.startswith("ID  "), (name, out)
        assert out.splitlines()[-1] in ("status 141", "status 0"), (name, out)
        assert result.stderr == b"", (name, result.stderr)


# -- text for people: columns, titles, control characters --------------------------------------

def cells(text: str) -> int:
    """Terminal cells, as the tool counts them (tools/unicode_width.py)."""
    total = 0
    for ch in text:
        if unicodedata.category(ch) in ("Mn", "Me") or \
                (unicodedata.category(ch) == "Cf" and ch != "\u00ad"):
            continue
        total += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return total


def write_payload(path: str, cards: list[dict[str, Any]]) -> str:
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"cards": cards}, f)
    return path


WIDE = [  # ids, class types and titles of 1 and 2 cells a character, and a combining accent
    {"id": "café", "tp": "short_news", "tt": "Crème brûlée", "ds": "d", "ca": 1700000003,
     "e": {"class_type": "café"}},
    {"id": "cafe\u0301-2", "tp": "short_news", "tt": "t", "ds": "d", "ca": 1700000002,
     "e": {"class_type": "日本"}},
    {"id": "日本語のカード", "tp": "short_news", "tt": "日本", "ds": "d", "ca": 1700000001,
     "e": {"class_type": "ascii"}},
    {"id": "plain", "tp": "short_news", "tt": "t", "ds": "d", "ca": 1700000000,
     "e": {"class_type": "ascii"}},
]


def test_columns_are_padded_by_terminal_cells(tmp_path: os.PathLike[str], store: str) -> None:
    payload = write_payload(os.path.join(os.fspath(tmp_path), "wide.json"), WIDE)
    fill(store, "u", payload)
    r = run_all("feed", "--store", store, "--user", "u")
    assert r.code == 0, r.err
    rows = r.out.splitlines()[:5]
    assert rows[0] == "ID" + " " * 23 + "CLASS TYPE" + " " * 7 + "TYPE" + " " * 13 + "STATE    TITLE"
    for row in rows[1:]:
        # ID in 24 cells and a space, CLASS TYPE in 16 and a space, TYPE ...: each column starts
        # at the same cell on every line.
        starts = []
        position = 0
        previous = " "
        for ch in row:
            if ch != " " and previous == " ":
                starts.append(position)
            position += cells(ch)
            previous = ch
        assert starts[:4] == [0, 25, 42, 59], (row, starts)
    assert rows[1].split()[0] == "café" and rows[3].split()[:2] == ["日本語のカード", "ascii"]
    # The events listing too.
    with contentcards.ContentCards(user_id="日本", storage_path=store) as c:
        c.log_feed_displayed()
    with contentcards.ContentCards(user_id="u", storage_path=store) as c:
        c.log_impression("café")
    lines = run_all("events", "list", "--store", store).out.splitlines()
    user_start = [cells(line[:line.index(user)]) for line, user in zip(lines, ("日本", " u "))]
    assert user_start == [62, 61], lines  # (the second: the space before "u")


def test_title_column_rule(tmp_path: os.PathLike[str], store: str) -> None:
    """TITLE: the title; missing or empty, the description; without either, nothing (the line
    ends after STATE, no trailing space)."""
    payload = write_payload(os.path.join(os.fspath(tmp_path), "titles.json"), [
        {"id": "titled", "tp": "short_news", "tt": "The title", "ds": "its description",
         "ca": 1700000004},
        {"id": "empty-title", "tp": "short_news", "tt": "", "ds": "the description",
         "ca": 1700000003},
        {"id": "no-title", "tp": "short_news", "ds": "a description", "ca": 1700000002},
        {"id": "banner", "tp": "banner_image", "i": "https://example.com/b.png",
         "ca": 1700000001},
        {"id": "banner-empty", "tp": "banner_image", "i": "https://example.com/b.png", "tt": "",
         "ds": "", "ca": 1700000000}])
    fill(store, "u", payload)
    rows = run_all("feed", "--store", store, "--user", "u").out.splitlines()[1:6]
    assert [row.split(None, 4)[4] if len(row.split()) > 4 else None for row in rows] == [
        "The title", "the description", "a description", None, None]
    for row in rows:
        assert row == row.rstrip(), repr(row)
    assert rows[3].split() == ["banner", "(none)", "banner", "unviewed"]


CONTROL = "\x1b[31m\x07\x1b]0;pwned\x07\x9b\x7f\u2028\t\n\r"
ESCAPED = "\\u001b[31m\\u0007\\u001b]0;pwned\\u0007\\u009b\\u007f\\u2028\\u0009\\u000a\\u000d"


def assert_safe(text: str) -> None:
    bad = [ch for ch in text if (ord(ch) < 0x20 and ch != "\n") or 0x7F <= ord(ch) <= 0x9F
           or ch in "\u2028\u2029"]
    assert not bad, (bad, text)


def test_control_characters_are_escaped_for_people(tmp_path: os.PathLike[str], store: str) -> None:
    card_id = "id" + CONTROL
    payload = write_payload(os.path.join(os.fspath(tmp_path), "control.json"), [
        {"id": card_id, "tp": "short_news", "tt": "title" + CONTROL, "ds": "d", "ca": 1700000001,
         "e": {"class_type": "ct" + CONTROL + "x"}},
        {"id": "bad" + CONTROL, "tp": "hologram", "ca": 1700000000}])
    r = run_all("validate", payload)
    assert r.code == 0
    assert_safe(r.out)
    assert f"left out: card 1 bad{ESCAPED}: unknown type" in r.out
    r = run_all("refresh", "--source", payload)  # in memory: the same each time
    assert r.code == 0
    assert_safe(r.out)
    assert f"left out: card 1 bad{ESCAPED}: unknown type" in r.out
    fill(store, "u", payload)
    feed = run_all("feed", "--store", store, "--user", "u")
    assert_safe(feed.out)
    row = feed.out.splitlines()[1]
    assert row.startswith(f"id{ESCAPED} ") and row.endswith(f" title{ESCAPED}")
    assert f"  ct{ESCAPED}x: total 1, unviewed 1" in feed.out
    counts = run_all("counts", "--store", store, "--user", "u")
    assert_safe(counts.out)
    assert f"  ct{ESCAPED}x: total 1, unviewed 1" in counts.out
    with contentcards.ContentCards(user_id="u" + CONTROL, storage_path=store) as c:
        c.log_feed_displayed()
    with contentcards.ContentCards(user_id="u", storage_path=store) as c:
        c.log_impression(card_id)
    events = run_all("events", "list", "--store", store)
    assert_safe(events.out)
    assert f" u{ESCAPED} " in events.out and f" id{ESCAPED} " in events.out
    # --json stays the exact JSON of the library: the same strings back.
    doc = run_all("--json", "feed", "--store", store, "--user", "u").json()
    assert doc["cards"][0]["id"] == card_id and doc["cards"][0]["title"] == "title" + CONTROL
    assert list(doc["byClassType"]) == ["ct" + CONTROL + "x"]
    listed = run_all("--json", "events", "list", "--store", store).json()
    assert {e["userId"] for e in listed["events"]} == {"u", "u" + CONTROL}
    assert [item["id"] for item in run_all("--json", "validate", payload).json()["leftOut"]] == [
        "bad" + CONTROL]
    # The command line's own text in a message too.
    r = run_all("\x1b[2J")
    assert (r.code, r.err.splitlines()[0]) == (2, "contentcards: unknown command '\\u001b[2J'")


# -- the entry points ---------------------------------------------------------------------------

def test_every_entry_point_prints_the_same(tmp_path: os.PathLike[str], store: str) -> None:
    fill(store, "u-1", SAMPLE_FEED)
    with contentcards.ContentCards(user_id="u-1", storage_path=store) as c:
        c.log_impression("tile-1")
    # Cards whose text the two tools used to show differently: wide and combining characters,
    # an empty title, control characters.
    odd = write_payload(os.path.join(os.fspath(tmp_path), "odd.json"), [
        *WIDE, {"id": "empty-title", "tp": "short_news", "tt": "", "ds": "the description",
                "ca": 1600000000},
        {"id": "id" + CONTROL, "tp": "short_news", "tt": "t" + CONTROL, "ds": "d",
         "ca": 1600000001}])
    fill(store, "u-2", odd)
    for args in (["--help"], ["--version"], [], ["validate", SAMPLE_FEED],
                 ["--json", "validate", SAMPLE_FEED], ["validate", odd],
                 ["feed", "--store", store, "--user", "u-1"],
                 ["--json", "feed", "--store", store, "--user", "u-1", "--class-type", "home_tile"],
                 ["feed", "--store", store, "--user", "u-2"],
                 ["--json", "feed", "--store", store, "--user", "u-2"],
                 ["counts", "--store", store, "--user", "u-2"],
                 ["--json", "counts", "--store", store, "--user", "u-1"],
                 ["events", "list", "--store", store], ["--json", "events", "list", "--store", store],
                 ["validate"], ["feed", "--nope"], ["--json", "validate", "/nonexistent/x.json"],
                 ["--", "feed", "--store"], ["--log-level", "info", "validate", SAMPLE_FEED],
                 ["refresh", "--source", SAMPLE_FEED, "--timeout", "inf"],
                 ["events", "list", "--store", store, "--limit", "²"],
                 ["events", "list", "--store", store, "--limit", "٣"],
                 ["refresh", "--source", SAMPLE_FEED, "--timeout", "1_0"]):
        run_all(*args)
    run_all("validate", SAMPLE_FEED, "--user", b"\xff")


def test_the_entry_points_exec_the_program() -> None:
    """`python -m contentcards` and the script become the program (exec, not a child): its
    signals are its own."""
    _need_program()
    from contentcards import cli

    assert os.path.samefile(cli.program_path(), PROGRAM)
    with socket.socket() as silent:  # takes connections, never answers: a refresh waits
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        for name in ("module", "script"):
            process = subprocess.Popen([*ENTRY_POINTS[name], "refresh", "--source", url,
                                        "--timeout", "60"], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, env=_env())
            try:
                deadline = time.monotonic() + 30
                while os.readlink(f"/proc/{process.pid}/exe") != os.path.realpath(PROGRAM):
                    assert process.poll() is None, process.communicate()
                    assert time.monotonic() < deadline, os.readlink(f"/proc/{process.pid}/exe")
                    time.sleep(0.02)
                process.send_signal(signal.SIGTERM)
                out, err = process.communicate(timeout=30)
                assert (process.returncode, out, err) == (-signal.SIGTERM, b"", b"")
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()


def test_no_program_beside_the_library(tmp_path: os.PathLike[str]) -> None:
    """A library without the program beside it: exit 127 and why, no traceback."""
    _need_program()
    lib = os.path.join(os.fspath(tmp_path), "lib")
    os.makedirs(lib)
    os.symlink(contentcards.library_path(), os.path.join(lib, "libcontentcards.so.1"))
    for name in ("module", "script"):
        result = subprocess.run([*ENTRY_POINTS[name], "--version"], capture_output=True, text=True,
                                timeout=60, env=_env(CONTENTCARDS_LIBRARY=os.path.join(
                                    lib, "libcontentcards.so.1")))
        assert result.returncode == 127 and result.stdout == "", result.stderr
        missing = os.path.join(os.fspath(tmp_path), "bin", "contentcards")
        assert result.stderr == (
            f"contentcards: the contentcards program is not beside the library "
            f"{os.path.join(lib, 'libcontentcards.so.1')}: {missing} does not exist. Install the "
            "package from its wheel, or build the program with the library (make cmake)\n")
