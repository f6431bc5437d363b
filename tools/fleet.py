#!/usr/bin/env python3
"""A fleet of simulated devices against the reference server through an outage: is there a thundering herd when the service comes back?

    python3 tools/fleet.py [--clients 2000] [--processes 4] [--time-scale 1] [--svg docs/fleet.svg]

What it does, on 127.0.0.1 only:

1. starts the reference server (examples/server/cc_server.py);
2. starts --processes worker processes that open --clients controllers between them (the
   Python bindings, in-memory stores, the host transport: a Python function doing the HTTP with
   urllib), each configured as an application would for a service with millions of devices:
   refresh on open, a periodic refresh every --period seconds with 20 % jitter, retries with
   exponential backoff and full jitter (base 1 s, capped at --retry-max), the rate limit on.
   Devices open spread over the first period (they do not all start at the same second);
3. after the warm-up and --before seconds of steady state, the server answers every request
   503 for --outage seconds (a service that is down; --retry-after adds a Retry-After), then
   recovers; the run ends --after seconds later and every controller is closed;
4. counts the requests the server received, per second, and prints the rate before, during and
   after the outage and the peak after recovery relative to the steady rate (the goal: at most
   2x, no herd); writes the plot (an SVG, no plotting package) and the figures (JSON).

--time-scale N runs N times faster: every duration of the run and of the clients' configuration
is divided by N, and rates are reported per simulated second, so the figures compare across
scales. Bounded in time: the run lasts (period + before + outage + after) / N seconds plus the
start-up, and the workers are killed if they outlive it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "server"))


# -- the worker: a share of the fleet in one process ---------------------------------------------

def make_transport(base: str):
    """The host transport: the application's own HTTP (urllib), answering the library with the
    status, the body, Retry-After and the ETag."""
    import contentcards as cc

    def transport(request: "cc.TransportRequest") -> "cc.TransportResponse":
        http = urllib.request.Request(base + request.url, data=request.body,
                                      headers=request.header_dict, method="POST")
        try:
            with urllib.request.urlopen(http, timeout=request.timeout) as answer:
                return cc.TransportResponse(answer.status, answer.read(),
                                            etag=answer.headers.get("ETag"))
        except urllib.error.HTTPError as exc:
            retry = exc.headers.get("Retry-After")
            return cc.TransportResponse(exc.code, exc.read(),
                                        retry_after=float(retry) if retry else None,
                                        etag=exc.headers.get("ETag"))
    return transport


def worker(args: argparse.Namespace) -> int:
    import contentcards as cc
    import logging
    logging.getLogger("contentcards").setLevel(logging.CRITICAL)  # 503s are the point here

    scale = args.time_scale
    transport = make_transport(args.server)
    controllers = []
    start = args.start_at
    # Devices open spread over the warm-up (one period), in the order of their number.
    for i in range(args.clients):
        index = args.first + i
        open_at = start + (index / args.total) * args.period / scale
        delay = open_at - time.time()
        if delay > 0:
            time.sleep(delay)
        c = cc.ContentCards(
            user_id=f"device-{index}", source={"callback": True},
            refresh_tokens=5, refresh_interval_seconds=args.period / scale,
            refresh_on_open_after_seconds=0,
            refresh_period_seconds=args.period / scale, refresh_period_jitter=0.2,
            retry_base_seconds=1 / scale, retry_max_seconds=args.retry_max / scale,
            timeout_seconds=max(2 / scale, 0.5))
        c.set_transport(transport)
        controllers.append(c)
    delay = args.end_at - time.time()
    if delay > 0:
        time.sleep(delay)
    for c in controllers:
        c.close()
    return 0


# -- the driver ----------------------------------------------------------------------------------

def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def moving_average(values: list[float], width: int) -> list[float]:
    out = []
    for i in range(len(values)):
        window = values[max(0, i - width + 1): i + 1]
        out.append(mean(window))
    return out


def figures(rates: list[float], warmup: float, before: float, outage: float,
            after: float) -> dict[str, float]:
    """Rates per simulated second; `rates[i]` covers second i of the run."""
    t_outage, t_recover = warmup + before, warmup + before + outage
    steady = mean(rates[int(warmup): int(t_outage)])
    during = mean(rates[int(t_outage): int(t_recover)])
    after_rates = rates[int(t_recover): int(t_recover + after)]
    late = mean(after_rates[len(after_rates) // 2:])
    smooth = moving_average(rates, 5)[int(t_recover): int(t_recover + after)]
    peak_1s = max(after_rates) if after_rates else 0.0
    peak_5s = max(smooth) if smooth else 0.0
    return {
        "steady_rate": round(steady, 1),
        "outage_rate": round(during, 1),
        "after_rate": round(late, 1),
        "peak_after_recovery_1s": round(peak_1s, 1),
        "peak_after_recovery_5s": round(peak_5s, 1),
        "peak_ratio_1s": round(peak_1s / steady, 2) if steady else 0.0,
        "peak_ratio_5s": round(peak_5s / steady, 2) if steady else 0.0,
    }


def svg(rates: list[float], warmup: float, before: float, outage: float, steady: float,
        title: str) -> str:
    """A line chart of requests per second, the outage shaded, the steady rate and 2x marked."""
    width, height, left, right, top, bottom = 900, 380, 60, 20, 40, 45
    plot_w, plot_h = width - left - right, height - top - bottom
    n = max(len(rates), 1)
    ymax = max(max(rates, default=1.0), 2.2 * steady, 1.0)
    step = 10 ** max(0, len(str(int(ymax))) - 1)
    while ymax / step > 8:
        step *= 2
    ymax = (int(ymax / step) + 1) * step

    def x(t: float) -> float:
        return left + plot_w * t / n

    def y(v: float) -> float:
        return top + plot_h * (1 - v / ymax)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left}" y="22" font-size="14" font-weight="bold">{title}</text>']
    t0, t1 = warmup + before, warmup + before + outage
    parts.append(f'<rect x="{x(t0):.1f}" y="{top}" width="{x(t1) - x(t0):.1f}" height="{plot_h}" '
                 'fill="#f4cccc"/>')
    parts.append(f'<text x="{(x(t0) + x(t1)) / 2:.1f}" y="{top + 14}" text-anchor="middle" '
                 'fill="#990000">outage (503)</text>')
    parts.append(f'<rect x="{left}" y="{top}" width="{x(warmup) - left:.1f}" height="{plot_h}" '
                 'fill="#eeeeee"/>')
    parts.append(f'<text x="{(left + x(warmup)) / 2:.1f}" y="{top + 14}" text-anchor="middle" '
                 'fill="#666666">devices opening</text>')
    for v in range(0, int(ymax) + 1, int(step)):
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                     'stroke="#dddddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v}</text>')
    tick = 30 if n > 120 else 10
    for t in range(0, n + 1, tick):
        parts.append(f'<text x="{x(t):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{t}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle">'
                 'seconds (simulated)</text>')
    parts.append(f'<text x="14" y="{top + plot_h / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {top + plot_h / 2})">sync requests per second</text>')
    for level, label, colour in ((steady, "steady", "#38761d"), (2 * steady, "2x steady", "#cc0000")):
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(level):.1f}" y2="{y(level):.1f}" '
                     f'stroke="{colour}" stroke-dasharray="6 4"/>')
        parts.append(f'<text x="{left + plot_w - 4}" y="{y(level) - 4:.1f}" text-anchor="end" '
                     f'fill="{colour}">{label} ({level:.0f}/s)</text>')
    raw = " ".join(f"{x(i + 0.5):.1f},{y(v):.1f}" for i, v in enumerate(rates))
    parts.append(f'<polyline points="{raw}" fill="none" stroke="#9fc5e8" stroke-width="1"/>')
    smooth = " ".join(f"{x(i + 0.5):.1f},{y(v):.1f}" for i, v in enumerate(moving_average(rates, 5)))
    parts.append(f'<polyline points="{smooth}" fill="none" stroke="#0b5394" stroke-width="2"/>')
    parts.append(f'<text x="{left + 6}" y="{top + plot_h - 8}" fill="#0b5394">each second (light), '
                 '5-second mean (dark)</text>')
    parts.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
                 'stroke="#333333"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def drive(args: argparse.Namespace) -> int:
    from reference_server import ReferenceServer

    scale = args.time_scale
    warmup, before, outage, after = args.period, args.before, args.outage, args.after
    total = warmup + before + outage + after
    bucket = 1.0 / scale                      # one simulated second, in real seconds
    # Retry-After is whole seconds on the wire (the library reads delay-seconds as digits):
    # the simulated value in real seconds, rounded, at least 1.
    retry_after = None if args.retry_after is None else max(1, round(args.retry_after / scale))
    with ReferenceServer(extra_args=("--quiet",)) as server:
        start_at = time.time() + 3.0          # time for the workers to load the library
        end_at = start_at + total / scale
        share = [args.clients // args.processes + (1 if i < args.clients % args.processes else 0)
                 for i in range(args.processes)]
        workers, first = [], 0
        for count in share:
            command = [sys.executable, os.path.abspath(__file__), "--worker", "--server", server.url,
                       "--first", str(first), "--clients", str(count), "--total", str(args.clients),
                       "--start-at", repr(start_at), "--end-at", repr(end_at),
                       "--period", str(args.period), "--retry-max", str(args.retry_max),
                       "--time-scale", str(scale)]
            workers.append(subprocess.Popen(command))
            first += count
        print(f"fleet: {args.clients} devices in {args.processes} processes against {server.url}; "
              f"{total:.0f} simulated seconds at x{scale:g} ({total / scale:.0f} s)", flush=True)
        # The outage, switched on the server at its simulated times.
        for event, at in (("outage", warmup + before), ("recovery", warmup + before + outage)):
            time.sleep(max(0.0, start_at + at / scale - time.time()))
            if event == "outage":
                server.transfer(outage=True, outage_retry_after=retry_after)
            else:
                server.transfer(outage=False)
            print(f"fleet: t={at:.0f}s {'outage starts' if event == 'outage' else 'the service is back'}",
                  flush=True)
        time.sleep(max(0.0, end_at - time.time()))
        # Requests per simulated second, from the server's arrival times (not from polling,
        # which a busy server would delay and bunch up).
        arrivals = server.admin("GET", "/_admin/arrivals")["sync"]
        counts = [0] * int(total)
        for t in arrivals:
            i = int((t - start_at) / bucket)
            if 0 <= i < len(counts):
                counts[i] += 1
        failed = 0
        for w in workers:
            try:
                failed += w.wait(timeout=30 + args.clients / 200) != 0
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
                failed += 1
    if failed:
        print(f"fleet: {failed} worker process(es) failed or outlived the run", file=sys.stderr)
        return 2
    rates = [float(c) for c in counts]   # one bucket is one simulated second
    result = figures(rates, warmup, before, outage, after)
    result.update({"clients": args.clients, "processes": args.processes, "time_scale": scale,
                   "period_seconds": args.period, "retry_max_seconds": args.retry_max,
                   "outage_seconds": outage, "retry_after": args.retry_after,
                   "rates_per_second": [round(r, 1) for r in rates]})
    print()
    print(f"  devices                          {args.clients}")
    print(f"  steady rate before the outage    {result['steady_rate']:8.1f} requests/s")
    print(f"  rate during the outage           {result['outage_rate']:8.1f} requests/s")
    print(f"  rate after (second half)         {result['after_rate']:8.1f} requests/s")
    print(f"  peak after recovery, 1 s         {result['peak_after_recovery_1s']:8.1f} requests/s"
          f"  = {result['peak_ratio_1s']:.2f}x steady")
    print(f"  peak after recovery, 5 s mean    {result['peak_after_recovery_5s']:8.1f} requests/s"
          f"  = {result['peak_ratio_5s']:.2f}x steady")
    verdict = "no herd" if result["peak_ratio_1s"] <= 2 else "HERD: over 2x"
    print(f"  goal: peak <= 2x steady          {verdict}")
    if args.svg:
        title = (f"{args.clients} devices, {outage:.0f} s outage: sync requests per second "
                 f"(peak after recovery {result['peak_ratio_1s']:.2f}x steady)")
        with open(args.svg, "w", encoding="utf-8") as f:
            f.write(svg(rates, warmup, before, outage, result["steady_rate"], title))
        print(f"  plot                             {args.svg}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        print(f"  figures                          {args.json}")
    return 0 if result["peak_ratio_1s"] <= 2 else 1


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="A fleet of devices against the reference server through an outage.")
    p.add_argument("--clients", type=int, default=2000)
    p.add_argument("--processes", type=int, default=4)
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="run N times faster (durations and the clients' configuration divided by N)")
    p.add_argument("--period", type=float, default=30.0, help="periodic refresh, simulated seconds")
    p.add_argument("--retry-max", type=float, default=60.0, help="backoff cap, simulated seconds")
    p.add_argument("--before", type=float, default=60.0)
    p.add_argument("--outage", type=float, default=60.0)
    p.add_argument("--after", type=float, default=120.0)
    p.add_argument("--retry-after", type=float, default=None,
                   help="Retry-After seconds the server sends during the outage (default: none)")
    p.add_argument("--svg", default=None, help="write the plot here")
    p.add_argument("--json", default=None, help="write the figures here")
    # The worker's own arguments.
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--server", help=argparse.SUPPRESS)
    p.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--total", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--start-at", type=float, default=0, help=argparse.SUPPRESS)
    p.add_argument("--end-at", type=float, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.clients < 1 or args.processes < 1 or args.time_scale <= 0:
        p.error("--clients and --processes must be at least 1, --time-scale above 0")
    args.processes = min(args.processes, args.clients)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return worker(args) if args.worker else drive(args)


if __name__ == "__main__":
    sys.exit(main())
