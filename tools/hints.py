#!/usr/bin/env python3
"""Hints against polling, measured: how soon a card added on the server is visible, and what
it costs the server in sync requests.

    python3 tools/hints.py [--clients 100] [--changes 300] [--rate 10] [--period 30] [--json FILE]

On 127.0.0.1 only: starts the reference server (empty feed), opens --clients controllers of
the Python bindings, each for its own user, each subscribed, then adds --changes cards on the
server at --rate a second, each for a user drawn at random, and records for each change the
time from the admin call that made it to the subscriber's update that shows it. Three runs:

1. hints: ``"source": {"url": BASE, "hints": True}`` and a periodic refresh of --period s
   (which the stream, while it is up, makes unnecessary: skipped);
2. polling at --period s (20 % jitter), the configuration docs/SYNC.md's fleet uses;
3. polling at 1 s, to show what polling costs when it is asked for freshness.

Prints, for each: visible-after p50 / p99 / max (ms), sync requests a second at the server
(the run's requests over its length), and changes not seen by the end. Bounded in time: each
run lasts --changes / --rate s plus a drain of max(2, the polling period) seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "server"))
EMPTY_FEED = os.path.join(ROOT, "Tests", "c", "empty_feed.json")


def admin(base: str, method: str, path: str, body: object | None = None) -> object:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"null")


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def run(base: str, mode: str, args: argparse.Namespace) -> dict[str, object]:
    import contentcards as cc

    admin(base, "POST", "/_admin/reset", {})
    seen: dict[str, float] = {}
    lock = threading.Lock()
    controllers = []
    period = 1.0 if mode == "poll-1s" else args.period
    for i in range(args.clients):
        user = f"{mode}-u{i}"
        source: dict[str, object] = {"url": base}
        if mode == "hints":
            source["hints"] = True
        c = cc.ContentCards({"userId": user, "source": source, "refreshTokens": 0, "timeoutSeconds": 10,
                             "refreshPeriodSeconds": period, "refreshPeriodJitter": 0.2})

        def on_update(update: object, c: object = c) -> None:
            now = time.monotonic()
            if getattr(update, "reason", None) != "refresh" or not getattr(update, "ok", False):
                return
            for card in c.cards():
                with lock:
                    seen.setdefault(card.id, now)

        c.subscribe(on_update)
        controllers.append((user, c))
    if mode == "hints":   # every stream up before the changes start
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and admin(base, "GET", "/_admin/streams")["open"] < args.clients:
            time.sleep(0.05)
    time.sleep(0.5)
    start_requests = len(admin(base, "GET", "/_admin/arrivals")["sync"])
    started = time.monotonic()
    made: dict[str, float] = {}
    rng = random.Random(7)
    for n in range(args.changes):
        user, _ = controllers[rng.randrange(len(controllers))]
        card_id = f"{user}-change-{n}"
        due = started + n / args.rate
        time.sleep(max(0.0, due - time.monotonic()))
        made[card_id] = time.monotonic()
        admin(base, "POST", "/_admin/cards",
              {"user_id": user, "cards": [{"id": card_id, "tp": "short_news", "ca": 1763799999 + n, "ds": "x"}]})
    drain = max(2.0, period * 1.3)
    time.sleep(drain)
    length = time.monotonic() - started
    requests = len(admin(base, "GET", "/_admin/arrivals")["sync"]) - start_requests
    for _, c in controllers:
        c.close()
    with lock:
        delays = [(seen[k] - t) * 1000 for k, t in made.items() if k in seen]
    return {
        "mode": mode, "clients": args.clients, "changes": len(made), "seconds": round(length, 1),
        "visible_p50_ms": round(percentile(delays, 50), 1), "visible_p99_ms": round(percentile(delays, 99), 1),
        "visible_max_ms": round(max(delays) if delays else float("nan"), 1),
        "not_seen": len(made) - len(delays), "sync_requests_per_second": round(requests / length, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--changes", type=int, default=300)
    parser.add_argument("--rate", type=float, default=10.0, help="changes a second")
    parser.add_argument("--period", type=float, default=30.0, help="the polling period, seconds")
    parser.add_argument("--modes", default="hints,poll,poll-1s")
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args(argv)
    from reference_server import ReferenceServer

    results = []
    with ReferenceServer(EMPTY_FEED) as server:
        for mode in args.modes.split(","):
            results.append(run(server.url, mode, args))
            print(json.dumps(results[-1]), flush=True)
    print(f"\n| mode | visible p50 | p99 | max | not seen | sync requests/s ({args.clients} devices) |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['mode']} | {r['visible_p50_ms']} ms | {r['visible_p99_ms']} ms | {r['visible_max_ms']} ms "
              f"| {r['not_seen']} | {r['sync_requests_per_second']} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
