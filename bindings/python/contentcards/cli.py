"""The ``contentcards`` command-line tool, in Python: ``python -m contentcards ...``.

The same tool as the C program installed with the library (tools/contentcards.c): the same
commands, options, output and exit codes, described in docs/CLI.md. It uses the package's
low level (``_ffi``) so that its ``--json`` output is the library's own bytes, as the C
program's is.

Exit codes: 0 done; 1 the operation failed (the status name and message on stderr, and with
``--json`` an ``{"error": ...}`` object on stdout); 2 a usage error.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable, NoReturn, Sequence, TextIO

from . import _ffi, _logs
from .errors import ContentCardsError

EXIT_FAILED = 1
EXIT_USAGE = 2

USAGE = """\
usage: contentcards [--json] [--log-level LEVEL] COMMAND [OPTIONS]

Commands:
  validate PAYLOAD_FILE [--user U]      parse a payload: the cards accepted and those left out
  feed --store DIR [--user U] [--class-type T]...
                                        the visible feed and its counts by class type
  counts --store DIR [--user U] [--class-type T]...
                                        the badge counts, in total and by class type
  events list --store DIR [--limit N]   the events waiting in the outbox
  events flush --store DIR --events-url URL [--api-key KEY] [--timeout S]
                                        deliver the pending events now
  refresh --source FILE_OR_URL [--store DIR] [--user U] [--api-key KEY] [--timeout S]
                                        refresh from a payload file or a server
  diagnostics [--store DIR] [--user U]  the controller's diagnostics (JSON)

Options:
  --json               machine-readable output (one JSON document on stdout)
  --log-level LEVEL    print the library's log at LEVEL or above on stderr
                       (debug, info, warning, error)
  --version            print the library's version
  -h, --help           print this help

Exit codes: 0 done, 1 the operation failed, 2 usage error. See docs/CLI.md.
"""

VALUE_OPTIONS = ("--store", "--user", "--class-type", "--source", "--events-url", "--api-key",
                 "--timeout", "--limit", "--log-level")
LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


class UsageError(Exception):
    pass


class Options:
    def __init__(self) -> None:
        self.json = False
        self.help = False
        self.version = False
        self.values: dict[str, str] = {}
        self.class_types: list[str] = []
        self.positional: list[str] = []
        self.timeout = 0.0
        self.limit = 0

    def get(self, name: str) -> str | None:
        return self.values.get(name)


def parse(argv: Sequence[str]) -> Options:
    """The same rules as the C program's parser (not argparse's, so both agree exactly)."""
    o = Options()
    args = list(argv)
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--json":
            o.json = True
        elif a in ("-h", "--help"):
            o.help = True
        elif a == "--version":
            o.version = True
        elif a == "--":
            o.positional += args[i:]
            break
        elif a.startswith("-") and len(a) > 1:
            name, eq, value = a.partition("=")
            if name not in VALUE_OPTIONS:
                raise UsageError(f"unknown option '{a}'")
            if not eq:
                if i >= len(args):
                    raise UsageError(f"option {name} needs a value")
                value = args[i]
                i += 1
            if name == "--class-type":
                if len(o.class_types) == 64:
                    raise UsageError(f"{name}: at most 64 class types")
                o.class_types.append(value)
            elif name == "--timeout":
                try:
                    o.timeout = float(value)
                except ValueError:
                    o.timeout = float("nan")
                if not o.timeout > 0 or o.timeout == float("inf"):
                    raise UsageError(f"--timeout needs a number of seconds > 0, not '{value}'")
            elif name == "--limit":
                if not value.isdigit():
                    raise UsageError(f"--limit needs a whole number >= 0, not '{value}'")
                o.limit = int(value)
            else:
                o.values[name] = value
        else:
            o.positional.append(a)
        if len(o.positional) > 3:
            raise UsageError(f"unexpected argument '{o.positional[3]}'")
    return o


def _json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class Failed(Exception):
    def __init__(self, error: ContentCardsError) -> None:
        super().__init__(str(error))
        self.error = error


class Tool:
    def __init__(self, options: Options, out: TextIO, err: TextIO) -> None:
        self.o = options
        self.out = out
        self.err = err

    def say(self, line: str = "") -> None:
        self.out.write(line + "\n")

    # -- the controller ------------------------------------------------------------------------

    def _endpoint(self, where: str) -> dict[str, Any]:
        if where.startswith(("http://", "https://")):
            return {"url": where, "apiKey": self.o.get("--api-key") or ""}
        return {"file": where}

    def open(self, source: str | None = None, events: str | None = None) -> int:
        config: dict[str, Any] = {"userId": self.o.get("--user") or ""}
        if self.o.get("--store") is not None:
            config["storagePath"] = self.o.get("--store")
        if source is not None:
            config["source"] = self._endpoint(source)
        if events is not None:
            config["events"] = self._endpoint(events)
        # One-off runs: no rate limit, no background delivery (flush delivers).
        config["refreshTokens"] = 0
        config["eventFlushIntervalSeconds"] = 0
        if self.o.timeout > 0:
            config["timeoutSeconds"] = self.o.timeout
        return _ffi.controller_open(json.dumps(config, ensure_ascii=False).encode("utf-8"))

    def call(self, function: Callable[..., Any], *args: Any) -> Any:
        try:
            return function(*args)
        except ContentCardsError as e:
            raise Failed(e) from None

    # -- output pieces -------------------------------------------------------------------------

    def left_out(self, summary: dict[str, Any]) -> None:
        for item in summary["leftOut"]:
            card_id = item.get("id")
            self.say(f"left out: card {item['index']}{' ' + card_id if card_id is not None else ''}: "
                     f"{item['reason']}")

    # -- commands ------------------------------------------------------------------------------

    def validate(self) -> int:
        if len(self.o.positional) != 2:
            raise UsageError("validate needs one PAYLOAD_FILE")
        handle = self.call(self.open, self.o.positional[1])
        try:
            text = self.call(_ffi.controller_refresh, handle, 0.0)
        finally:
            _ffi.lib.cc_controller_close(handle)
        summary = json.loads(text)
        if self.o.json:
            # The library's own bytes of the leftOut array, as the C program prints them.
            left = text[text.index('"leftOut":') + len('"leftOut":'):text.rindex(',"counts":')]
            self.say(f'{{"accepted":{summary["added"]},"leftOut":{left}}}')
        else:
            self.say(f"accepted {summary['added']} cards, left out {len(summary['leftOut'])}")
            self.left_out(summary)
        return 0

    def _filter(self) -> bytes | None:
        if not self.o.class_types:
            return None
        return ("[" + ",".join(_json_string(t) for t in self.o.class_types) + "]").encode("utf-8")

    def feed(self, with_cards: bool) -> int:
        if self.o.get("--store") is None:
            raise UsageError("--store DIR is required")
        if len(self.o.positional) != 1:
            raise UsageError(f"unexpected argument '{self.o.positional[1]}'")
        handle = self.call(self.open)
        try:
            filter_json = self._filter()
            text = self.call(_ffi.controller_feed, handle, filter_json)
        finally:
            _ffi.lib.cc_controller_close(handle)
        cards = json.loads(text)
        tallies: dict[str, list[int]] = {}
        total = unviewed = 0
        rows = []
        for card in cards:
            class_type = card.get("classType") or ""
            tally = tallies.setdefault(class_type, [0, 0])
            tally[0] += 1
            total += 1
            if not card["viewed"] and not card["isControl"]:
                tally[1] += 1
                unviewed += 1
            state = ("control" if card["isControl"] else
                     ("pinned" if card["viewed"] else "pinned*") if card["pinned"] else
                     "viewed" if card["viewed"] else "unviewed")
            rows.append(f"{card['id'] or '':<24} {class_type or '(none)':<16} {card['type'] or '':<16} "
                        f"{state:<8} {card.get('title') or card.get('cardDescription') or ''}")
        order = sorted(tallies, key=lambda s: s.encode("utf-8"))
        if self.o.json:
            by_type = ",".join(f'{_json_string(k)}:{{"total":{tallies[k][0]},"unviewed":{tallies[k][1]}}}'
                               for k in order)
            if with_cards:
                self.say(f'{{"cards":{text},"counts":{{"total":{total},"unviewed":{unviewed}}},'
                         f'"byClassType":{{{by_type}}}}}')
            else:
                self.say(f'{{"total":{total},"unviewed":{unviewed},"byClassType":{{{by_type}}}}}')
            return 0
        if with_cards and rows:
            self.say(f"{'ID':<24} {'CLASS TYPE':<16} {'TYPE':<16} {'STATE':<8} TITLE")
            for row in rows:
                self.say(row)
            self.say()
        self.say(f"total {total}, unviewed {unviewed}")
        for k in order:
            self.say(f"  {k or '(none)'}: total {tallies[k][0]}, unviewed {tallies[k][1]}")
        return 0

    def events(self) -> int:
        if len(self.o.positional) < 2:
            raise UsageError("events needs 'list' or 'flush'")
        verb = self.o.positional[1]
        if verb not in ("list", "flush"):
            raise UsageError(f"unknown events command '{verb}' (list, flush)")
        if len(self.o.positional) > 2:
            raise UsageError(f"unexpected argument '{self.o.positional[2]}'")
        if self.o.get("--store") is None:
            raise UsageError("--store DIR is required")
        flush = verb == "flush"
        if flush and self.o.get("--events-url") is None:
            raise UsageError("events flush needs --events-url URL")
        handle = self.call(self.open, None, self.o.get("--events-url") if flush else None)
        try:
            if flush:
                text = self.call(_ffi.controller_flush_events, handle, self.o.timeout)
            else:
                text = self.call(_ffi.controller_pending_events_json, handle, self.o.limit)
        finally:
            _ffi.lib.cc_controller_close(handle)
        if self.o.json:
            self.say(text)
            return 0
        data = json.loads(text)
        if flush:
            self.say(f"delivered {data['delivered']}, dropped {data['dropped']}, pending {data['pending']}")
            return 0
        for e in data["events"]:
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(e["time"])))
            card = e["cardId"] if e["cardId"] is not None else "-"
            self.say(f"{when}  {e['type']:<18} {card:<20} {e['userId'] or chr(34) * 2:<12} {e['id']}")
        self.say(f"{data['pending']} pending ({len(data['events'])} shown), "
                 f"{data['failedAttempts']} failed delivery attempts")
        return 0

    def refresh(self) -> int:
        source = self.o.get("--source")
        if source is None:
            raise UsageError("refresh needs --source FILE_OR_URL")
        if len(self.o.positional) != 1:
            raise UsageError(f"unexpected argument '{self.o.positional[1]}'")
        handle = self.call(self.open, source)
        try:
            text = self.call(_ffi.controller_refresh, handle, self.o.timeout)
        finally:
            _ffi.lib.cc_controller_close(handle)
        if self.o.json:
            self.say(text)
            return 0
        s = json.loads(text)
        self.say(f"added {s['added']}, updated {s['updated']}, removed {s['removed']}, "
                 f"kept newer {s['keptNewer']}")
        self.left_out(s)
        self.say(f"total {s['counts']['total']}, unviewed {s['counts']['unviewed']}")
        return 0

    def diagnostics(self) -> int:
        if len(self.o.positional) != 1:
            raise UsageError(f"unexpected argument '{self.o.positional[1]}'")
        handle = self.call(self.open)
        try:
            self.say(self.call(_ffi.controller_diagnostics, handle))
        finally:
            _ffi.lib.cc_controller_close(handle)
        return 0

    def run(self) -> int:
        command = self.o.positional[0]
        if command == "validate":
            return self.validate()
        if command in ("feed", "counts"):
            return self.feed(command == "feed")
        if command == "events":
            return self.events()
        if command == "refresh":
            return self.refresh()
        if command == "diagnostics":
            return self.diagnostics()
        raise UsageError(f"unknown command '{command}'")


def _stderr_log(userdata: int | None, level: int, message: bytes | None) -> None:
    try:
        name = ("error" if level >= 40 else "warning" if level >= 30 else
                "info" if level >= 20 else "debug")
        sys.stderr.write(f"contentcards: [{name}] {(message or b'').decode('utf-8', 'replace')}\n")
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - nothing may propagate into C
        pass


_STDERR_LOG = _ffi.LOG_FN(_stderr_log)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr

    def usage_error(message: str) -> int:
        err.write(f"contentcards: {message}\nTry 'contentcards --help'.\n")
        return EXIT_USAGE

    try:
        o = parse(sys.argv[1:] if argv is None else argv)
    except UsageError as e:
        return usage_error(str(e))
    if o.help:
        out.write(USAGE)
        return 0
    if o.version:
        out.write(f"contentcards {_ffi.version()}\n")
        return 0
    if not o.positional:
        err.write(USAGE)
        return EXIT_USAGE
    level_name = o.get("--log-level")
    if level_name is not None:
        if level_name not in LEVELS:
            return usage_error(f"--log-level must be debug, info, warning or error, not '{level_name}'")
        _ffi.set_log_handler(_STDERR_LOG, LEVELS[level_name])
    tool = Tool(o, out, err)
    try:
        return tool.run()
    except UsageError as e:
        return usage_error(str(e))
    except Failed as f:
        failure = f.error
        name = _ffi.status_name(failure.code)
        err.write(f"contentcards: {name}: {failure.message}\n")
        if o.json:
            out.write(f'{{"error":{{"code":{failure.code},"name":{_json_string(name)},'
                      f'"message":{_json_string(failure.message)}}}}}\n')
        return EXIT_FAILED
    finally:
        if level_name is not None:
            _logs.reinstall()  # back to the package's routing into logging
        out.flush()


def run() -> NoReturn:
    """The console script's entry point."""
    sys.exit(main())
