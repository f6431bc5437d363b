#!/usr/bin/env python3
"""make bench: every measurement next to its baseline, in the same run, with the outputs checked.

These machines are noisy: each row is the median of repeated runs, and ratios are taken within
the run. Nothing here asserts a speed; it prints numbers (and writes build/bench.json).

    bench/run.py BUILD_DIR [--quick] [--svg-dir DIR]

The figures go to BUILD_DIR/bench.json, and the plots of docs/PERFORMANCE.md (bench/plots.py:
perf-scaling.svg, perf-stages.svg, perf-operations.svg) are drawn from them: into docs/ after a
full run, into BUILD_DIR after a quick one (its figures are not the document's), or into
--svg-dir DIR.

Rows:
  1. the feed pipeline on 10,000 generated cards: decode the server payload, merge into a store,
     filter by class types keeping ~40%, encode as boundary JSON: through the C ABI from C, and
     through the Python bindings; against pure Python (json + a list filter + json.dumps) and
     orjson. Output check: the same card ids in every output.
  2. the cost of one call: a count from C, and from Python next to the ctypes floor.
  3. cold start: load the library and open a controller on 1,000 stored cards, to the first feed
     (processes started with posix_spawn by bench/proctime.c, beside an empty process).
  4. logging: durable impressions per second, and the latency of one call (p50, p99), from one
     thread and from 4 at once.
  5. memory: resident memory per 10,000 stored cards, and per controller for 1,000 of them.
  6. scaling: the pipeline at 100, 1,000, 10,000 and 100,000 cards.
  7. the stages of the pipeline (Swift core), to name the slowest.
  8. per-card operations on a file store of 10 and of 100,000 cards (10,000 with --quick): a
     logged impression, click and dismissal, a card by id, a filtered count, and an incremental
     sync changing 10 cards; each beside its cost at 10 cards.
  9. reads while another thread applies 1,000,000 cards (100,000 with --quick): the latency of
     a count that takes the readers' lock, beside the apply's own time.
 10. bandwidth: bytes on the wire (both directions, headers included, counted by the reference
     server on 127.0.0.1) for a 10,000-card full sync, an unchanged refresh and an incremental
     refresh changing 10 cards: before (identity, no validator: what the server sends a client
     that does not ask for gzip nor send If-None-Match) and after (gzip and ETag), same run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "server"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import plots  # noqa: E402  (bench/plots.py, bench/measure.py: found through the line above)
from measure import Bench  # noqa: E402


def report(bench: Bench) -> None:
    """Measures every row, printing each as it comes, then writes bench.json and the plots."""
    print(f"contentcards bench ({'quick' if bench.quick else 'full'}), medians of {bench.repeats} runs; "
          f"{os.cpu_count()} cores\n")
    p = bench.pipeline(10_000, with_python=True)
    bench.results["pipeline_10k"] = p
    base = p["python_ms"]
    print("1. Feed pipeline, 10,000 cards (%.2f MB in, %d kept): decode, merge, filter, encode" % (p["mb"], p["kept"]))
    rows = [("C ABI from C", p["c_ms"]), ("Python bindings, JSON out", p.get("py_bindings_json_ms")),
            ("Python bindings, Card objects", p.get("py_bindings_cards_ms")),
            ("Python bindings, Card objects, every card read", p.get("py_bindings_cards_read_ms")),
            ("pure Python json (baseline)", p["python_ms"]), ("orjson (baseline)", p["orjson_ms"])]
    for name, ms in rows:
        if ms is None:
            continue
        print(f"   {name:32s} {ms:9.2f} ms  {p['mb'] / (ms / 1000):7.1f} MB/s  {base / ms:5.2f}x pure Python")
    print(f"   C split: apply (decode + merge) {p['c_apply_ms']} ms, feed (filter + encode) {p['c_feed_ms']} ms")
    if p.get("c_vs_orjson") is not None:
        print(f"   against orjson, the median of the {p['rounds']} rounds' ratios: C {p['c_vs_orjson']}x, "
              f"Python JSON out {p.get('py_json_vs_orjson')}x, Python Card objects {p.get('py_cards_vs_orjson')}x "
              f"({p.get('py_cards_read_vs_orjson')}x with every card read)")
    print(f"   same output in every row: {p['same_output']}\n")

    staged = bench.stages()
    if staged:
        st, sj = staged
        bench.results["stages_10k"] = st
        slowest = max(st, key=lambda k: st[k])
        print("7. Stages (Swift core, release): " + ", ".join(f"{k[:-3]} {v:.1f} ms" for k, v in st.items())
              + f"; slowest: {slowest[:-3]}")
        if sj:
            bench.results["simdjson_10k"] = sj
            print(f"   baseline: simdjson (pysimdjson {sj['version']}) parses the same {sj['mb']} MB in "
                  f"{sj['simdjson_parse_ms']:.1f} ms; decode is {sj['decode_vs_simdjson']}x it "
                  "(the median of the rounds' ratios, each round timing both)")
            print(f"   decode's CPU time, its two threads': {sj['decode_cpu_ms']:.1f} ms, "
                  f"{sj['decode_cpu_vs_simdjson']}x simdjson's time on one\n")
        else:
            print("   baseline: simdjson not installed (pip install pysimdjson)\n")

    c = bench.calls()
    bench.results["calls"] = c
    print("2. One call")
    print(f"   C: cc_controller_counts {c['c_count_ns_10_cards']:.1f} ns (10 cards), "
          f"{c['c_count_ns_10k_cards']:.1f} ns (10,000 cards); cc_abi_version {c['c_abi_version_ns']:.1f} ns")
    print(f"   Python: unviewed_count() {c['py_unviewed_count_ns']} ns; ctypes floor (libc abs) {c['ctypes_floor_ns']} ns\n")

    cold = bench.cold()
    bench.results["cold"] = cold
    print(f"3. Cold start, {cold['cards']} stored cards")
    print(f"   C process {cold['c_process_ms']} ms (an empty process: {cold['true_process_ms']} ms, "
          f"{cold['c_process_ms'] / cold['true_process_ms']:.1f}x it; one that only loads the library: "
          f"{cold['c_load_only_process_ms']} ms); "
          f"open {cold['c_open_ms']:.2f} ms, first feed {cold['c_first_feed_ms']:.2f} ms")
    print(f"   limit: the same rows read through SQLite alone (bench/sqlite_floor.c, {cold['sqlite_floor_cards']} cards): "
          f"{cold['sqlite_floor_process_ms']} ms, {cold['sqlite_floor_process_ms'] / cold['true_process_ms']:.1f}x an empty "
          f"process; the C process is {cold['c_process_ms'] / cold['sqlite_floor_process_ms']:.1f}x it")
    print(f"   without the kept feed (the open reads the store through SQLite): {cold['c_store_process_ms']} ms, "
          f"{cold['c_store_process_ms'] / cold['true_process_ms']:.1f}x an empty process, open {cold['c_store_open_ms']:.2f} ms; "
          f"the kept feed's process is {cold['c_process_ms'] / cold['c_store_process_ms']:.2f}x it")
    print(f"   the same after the file changed (no stamp: every page checked): {cold['c_checked_process_ms']} ms")
    print(f"   Python process {cold['py_process_ms']} ms (bare interpreter: {cold['py_bare_process_ms']} ms); "
          f"import {cold['py_import_ms']} ms, open + first feed {cold['py_open_and_feed_ms']} ms\n")

    log = bench.logging()
    bench.results["logging"] = log
    print(f"4. Logging, durable impressions (file store, WAL; medians of {log['runs']} interleaved runs): "
          f"{log['per_second']:.0f}/s; latency p50 {log['p50_us']} us, p99 {log['p99_us']} us, max {log['max_us']} us")
    four = log["threads_4"]
    print(f"   from 4 threads at once (group commit): {four['per_second']:.0f}/s in all, "
          f"{log['threads_4_vs_1']}x one thread; latency p50 {four['p50_us']} us, p99 {four['p99_us']} us")
    print(f"   each run, one thread: {', '.join(f'{x:.0f}' for x in log['per_second_runs'])}; "
          f"4 threads: {', '.join(f'{x:.0f}' for x in four['per_second_runs'])}\n")

    mem = bench.memory()
    bench.results["memory"] = mem
    print(f"5. Memory: {mem['mb_per_10k_cards']} MB resident per {mem['cards']} stored cards; "
          f"{mem['kb_per_controller']} KB per controller ({mem['mb_for_1000_controllers']} MB for 1,000)\n")

    pc = bench.percard()
    bench.results["percard"] = pc
    small, big = pc["10"], pc[max(pc, key=int)]
    print(f"8. Per-card operations, file store, {big['cards']:,} stored cards beside 10 (median us; ratio)")
    for key, name in (("impression_us", "log impression"), ("click_us", "log click"),
                      ("dismissal_us", "log dismissal"), ("card_us", "card by id"),
                      ("counts_us", "count, filtered"), ("sync10_us", "sync changing 10 cards")):
        print(f"   {name:24s} {big[key]:9.1f} us   at 10 cards {small[key]:9.1f} us   "
              f"{big[key] / max(small[key], 1e-9):5.2f}x")
    print()

    n = 100_000 if bench.quick else 1_000_000
    rd = bench.c("readers", str(n))
    bench.results["readers"] = rd
    print(f"9. Reads during an apply of {n:,} cards on another thread ({rd['apply_ms'] / 1000:.1f} s): "
          f"{rd['reads']} counts, p50 {rd['p50_us']} us, p99 {rd['p99_us']} us, max {rd['max_us']} us\n")

    bw = bench.bandwidth()
    bench.results["bandwidth"] = bw
    print("10. Bandwidth: bytes on the wire (up + down, headers included), 10,000 cards")
    for step, name in (("full_sync", "full sync"), ("unchanged", "unchanged refresh"),
                       ("incremental", "incremental, 10 cards")):
        b, a = bw["before"][step], bw["after"][step]
        print(f"   {name:24s} before {b['total']:10,d} B   after {a['total']:10,d} B   "
              f"{b['total'] / max(a['total'], 1):6.1f}x less{'  (304)' if a['not_modified'] else ''}")
    print()

    print("6. Scaling (C ABI from C, per card; pure Python beside it)")
    sizes = [100, 1_000, 10_000] if bench.quick else [100, 1_000, 10_000, 100_000]
    scaling = bench.scaling(sizes)
    for row in scaling:
        n = row["cards"]
        print(f"   {n:7d} cards: C {row['c_us_per_card']:6.2f} us/card ({row['c_ms']:9.2f} ms)   "
              f"pure Python {row['python_us_per_card']:6.2f} us/card   same output: {row['same_output']}")
    costs = [row["c_us_per_card"] for row in scaling]
    print(f"   largest per-card cost over the smallest: {max(costs) / min(costs):.2f}x")
    bench.results["scaling"] = scaling
    out = os.path.join(bench.build, "bench.json")
    with open(out, "w") as f:
        json.dump(bench.results, f, indent=1)
    print(f"\nall figures: {out}")
    for path in plots.write_all(bench.results, bench.svg_dir):
        print(f"plot: {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="make bench: every measurement next to its baseline.")
    parser.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"), help="the CMake build directory")
    parser.add_argument("--quick", action="store_true", help="fewer rounds, smaller sizes (what CI runs)")
    parser.add_argument("--svg-dir", default=None,
                        help="where the plots go (default: docs/ after a full run, the build directory after --quick)")
    options = parser.parse_args()
    bench = Bench(options.build, options.quick, options.svg_dir)
    try:
        report(bench)
    finally:
        # The payloads and stores (a hundred megabytes after a full run) go; the figures are in
        # bench.json. bench/payloads.py's `generate` makes a payload again for a profiler.
        shutil.rmtree(bench.tmp, ignore_errors=True)
