"""The measurements of `make bench`: `Bench` has a method for each row of bench/run.py's table
(the rows are listed there), each returning its figures as a dict; bench/run.py calls them,
prints them and writes them to bench.json. `commit` names what was measured.
"""
from __future__ import annotations

import ctypes
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

from payloads import (FILTER, FILTER_JSON, baseline_orjson, baseline_python, generate, ids_of, simdjson_parse_ms,
                      simdjson_parser)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commit() -> str:
    """The commit measured (short), "+" when the working tree had changes to what is measured
    (changes to bench/ and docs/ alone are not)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":!bench", ":!docs"], cwd=ROOT, check=True, capture_output=True,
                               text=True).stdout.strip()
        return head + ("+" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return ""


class Bench:
    def __init__(self, build: str, quick: bool, svg_dir: str | None = None) -> None:
        self.build = build
        self.svg_dir = svg_dir or (build if quick else os.path.join(ROOT, "docs"))
        self.bench_c = os.path.join(build, "bin", "bench_c")
        self.quick = quick
        self.repeats = 3 if quick else 7
        self.results: dict[str, Any] = {"meta": {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(),
            "quick": quick, "cores": os.cpu_count()}}
        self.tmp = tempfile.mkdtemp(prefix="cc-bench-")
        os.environ.setdefault("CONTENTCARDS_LIBRARY", os.path.join(build, "lib", "libcontentcards.so.1"))

    def c(self, *args: str) -> dict[str, Any]:
        out = subprocess.run([self.bench_c, *args], check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    def payload_file(self, n: int) -> tuple[str, str]:
        path = os.path.join(self.tmp, f"payload-{n}.json")
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8") as f:
                f.write(generate(n))
        with open(path, encoding="utf-8") as f:
            return path, f.read()

    # 10 ------------------------------------------------------------------------------------

    def bandwidth(self) -> dict[str, Any]:
        """Bytes on the wire for three syncs of a 10,000-card user, before and after."""
        from contentcards import ContentCards
        from reference_server import ReferenceServer

        feed, _ = self.payload_file(10_000)
        rows: dict[str, Any] = {}
        with ReferenceServer(feed=feed) as server:
            for mode in ("before", "after"):
                server.reset()
                if mode == "before":
                    server.transfer(compress=False, etag=False)
                user = f"bandwidth-{mode}"

                def wire() -> tuple[int, int]:
                    sync = server.wire().get("/content_cards/sync", {})
                    return sync.get("bytes_in", 0), sync.get("bytes_out", 0)

                row: dict[str, Any] = {}
                with ContentCards(user_id=user, refresh_tokens=0, timeout_seconds=60,
                                  source={"url": server.url}) as c:
                    changed = [{"id": f"card-{i:06d}", "tp": "short_news", "ca": 1763900000 + i,
                                "tt": f"Changed {i}", "ds": "A card changed on the server."}
                               for i in range(10)]
                    for step in ("full_sync", "unchanged", "incremental"):
                        if step == "incremental":
                            server.set_cards(user, changed)
                        up0, down0 = wire()
                        summary = c.refresh(60)
                        up1, down1 = wire()
                        row[step] = {"up": up1 - up0, "down": down1 - down0,
                                     "total": up1 - up0 + down1 - down0,
                                     "not_modified": summary.not_modified,
                                     "cards": summary.added + summary.updated}
                rows[mode] = row
        return rows

    # 1 and 6 -------------------------------------------------------------------------------

    def pipeline(self, n: int, with_python: bool) -> dict[str, Any]:
        """Each implementation once per round, the rounds one after the other, so that every
        row is timed beside its baselines: a shared machine that slows down for a while slows
        every row of that round (timing the rows one block after another made the ratios
        swing by half between runs). Medians of the rounds; `c_vs_orjson` is the median of
        each round's ratio."""
        from contentcards import ContentCards
        path, payload = self.payload_file(n)
        mb = len(payload.encode()) / 1e6
        # At least five rounds: a ratio of two wall-clock times, one sample of each a round, moved
        # by a quarter between three-round runs on this shared machine (0.57x to 0.79x).
        rounds = max(5, self.repeats) if n <= 10_000 else max(3, self.repeats // 2)
        out_c = os.path.join(self.tmp, f"out-{n}.json")

        def bindings_json() -> str:
            with ContentCards(max_payload_bytes=1 << 30) as cc:
                cc.apply(payload)
                return cc.cards_json(FILTER)

        def bindings_objects() -> list[Any]:
            with ContentCards(max_payload_bytes=1 << 30) as cc:
                cc.apply(payload)
                return cc.cards(FILTER)

        def bindings_objects_read() -> list[Any]:
            # The cards read lazily: this row reads a field of every card, so every card is
            # parsed (what drawing the whole feed costs).
            with ContentCards(max_payload_bytes=1 << 30) as cc:
                cc.apply(payload)
                cards = cc.cards(FILTER)
                for card in cards:
                    card.title
                return cards

        def once(fn: Callable[[], Any]) -> tuple[float, Any]:
            start = time.perf_counter()
            result = fn()
            return (time.perf_counter() - start) * 1000, result

        try:
            import orjson  # noqa: F401
            has_orjson = True
        except ImportError:
            has_orjson = False
        times: dict[str, list[float]] = {k: [] for k in ("c", "c_apply", "c_feed", "python", "orjson", "json", "cards", "cards_read")}
        outputs: dict[str, Any] = {}
        for _ in range(rounds):
            # Two passes in one process, the second timed: the first pays the process's first
            # allocations (page faults), which the Python baselines, in a warm process, do not.
            c = self.c("pipeline", path, FILTER_JSON, "2", out_c)
            times["c_apply"].append(c["apply_ms"][-1])
            times["c_feed"].append(c["feed_ms"][-1])
            times["c"].append(c["apply_ms"][-1] + c["feed_ms"][-1])
            ms, outputs["python"] = once(lambda: baseline_python(payload))
            times["python"].append(ms)
            if has_orjson:
                ms, outputs["orjson"] = once(lambda: baseline_orjson(payload))
                times["orjson"].append(ms)
            if with_python:
                ms, outputs["json"] = once(bindings_json)
                times["json"].append(ms)
                ms, outputs["cards"] = once(bindings_objects)
                times["cards"].append(ms)
                ms, outputs["cards_read"] = once(bindings_objects_read)
                times["cards_read"].append(ms)
        with open(out_c, encoding="utf-8") as f:
            expected = ids_of(f.read())

        def median(key: str) -> float | None:
            return round(statistics.median(times[key]), 2) if times[key] else None

        row: dict[str, Any] = {"cards": n, "mb": round(mb, 2), "kept": len(expected), "rounds": rounds,
                               "c_ms": median("c"), "c_apply_ms": median("c_apply"), "c_feed_ms": median("c_feed"),
                               "python_ms": median("python"), "orjson_ms": median("orjson")}
        same = ids_of(outputs["python"]) == expected
        if has_orjson:
            same = same and ids_of(outputs["orjson"]) == expected
            row["c_vs_orjson"] = round(statistics.median(c / o for c, o in zip(times["c"], times["orjson"])), 3)
        if with_python:
            row["py_bindings_json_ms"] = median("json")
            row["py_bindings_cards_ms"] = median("cards")
            row["py_bindings_cards_read_ms"] = median("cards_read")
            same = same and ids_of(outputs["json"]) == expected
            same = same and sorted(card.id for card in outputs["cards"]) == expected
            same = same and outputs["cards_read"] == outputs["cards"]
            if has_orjson:
                row["py_json_vs_orjson"] = round(statistics.median(
                    j / o for j, o in zip(times["json"], times["orjson"])), 3)
                row["py_cards_vs_orjson"] = round(statistics.median(
                    j / o for j, o in zip(times["cards"], times["orjson"])), 3)
                row["py_cards_read_vs_orjson"] = round(statistics.median(
                    j / o for j, o in zip(times["cards_read"], times["orjson"])), 3)
        row["same_output"] = same
        return row

    def scaling(self, sizes: list[int]) -> list[dict[str, Any]]:
        """The C pipeline's cost per card at each size. The sizes are timed in rounds, one run
        of each per round (timed one after another, a size measured in a quiet moment against
        one measured in a busy one made noise look like growth); within a run, small sizes
        make many passes (a 100-card pass is half a millisecond) and the median of all passes
        but the first is that run's figure. The pure-Python baseline runs once per size, for
        comparison and to check the output."""
        per_card: dict[int, list[float]] = {n: [] for n in sizes}
        outputs: dict[int, str] = {}
        for _ in range(3 if self.quick else 5):
            for n in sizes:
                path, _ = self.payload_file(n)
                out = os.path.join(self.tmp, f"scaling-{n}.json")
                passes = max(3, min(41, 200_000 // n))
                c = self.c("pipeline", path, FILTER_JSON, str(passes), out)
                ms = statistics.median(a + f for a, f in zip(c["apply_ms"][1:], c["feed_ms"][1:]))
                per_card[n].append(ms * 1000 / n)
                outputs[n] = out
        rows = []
        for n in sizes:
            _, payload = self.payload_file(n)
            start = time.perf_counter()
            python_out = baseline_python(payload)
            python_ms = (time.perf_counter() - start) * 1000
            with open(outputs[n], encoding="utf-8") as f:
                same = ids_of(f.read()) == ids_of(python_out)
            us = statistics.median(per_card[n])
            rows.append({"cards": n, "c_us_per_card": round(us, 3), "c_ms": round(us * n / 1000, 3),
                         "c_us_per_card_rounds": [round(x, 3) for x in per_card[n]],
                         "python_us_per_card": round(python_ms * 1000 / n, 3), "same_output": same})
        return rows

    # 2 -------------------------------------------------------------------------------------

    def calls(self) -> dict[str, Any]:
        from contentcards import ContentCards
        sample = os.path.join(ROOT, "examples", "data", "sample_feed.json")
        n = 200_000 if self.quick else 1_000_000
        small = self.c("calls", sample, str(n))
        big_path, _ = self.payload_file(10_000)
        big = self.c("calls", big_path, str(2_000))
        libc = ctypes.CDLL(None)
        libc.abs.argtypes, libc.abs.restype = [ctypes.c_int], ctypes.c_int
        loops = 100_000 if self.quick else 300_000

        def per_call(fn: Callable[[], Any]) -> float:
            best = float("inf")
            for _ in range(5):
                start = time.perf_counter()
                for _ in range(loops):
                    fn()
                best = min(best, (time.perf_counter() - start) * 1e9 / loops)
            return best

        with ContentCards(source={"file": sample}) as cc:
            cc.refresh()
            py_count = per_call(cc.unviewed_count)
        floor = per_call(lambda: libc.abs(-3))
        return {"c_count_ns_10_cards": small["count_ns"], "c_count_ns_10k_cards": big["count_ns"],
                "c_abi_version_ns": small["abi_version_ns"], "py_unviewed_count_ns": round(py_count),
                "ctypes_floor_ns": round(floor)}

    # 3 -------------------------------------------------------------------------------------

    def cold(self) -> dict[str, Any]:
        from contentcards import ContentCards
        store = os.path.join(self.tmp, "cold-store")
        _, payload = self.payload_file(1_000)
        with ContentCards(storage_path=store, user_id="bench") as cc:
            cc.apply(payload)
        # The package as a user has it: installed (here in the bench's virtual environment),
        # with the bytecode pip compiled. The source tree on PYTHONPATH measured compiling the
        # package on every run wherever bytecode is not written (PYTHONDONTWRITEBYTECODE).
        python = sys.executable
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

        script = ("import time; t=time.perf_counter(); import contentcards; t1=time.perf_counter(); "
                  f"cc=contentcards.ContentCards(storage_path={store!r}, user_id='bench'); n=len(cc.cards()); "
                  "t2=time.perf_counter(); print(n, (t1-t)*1000, (t2-t1)*1000)")

        # Each process is short: many rounds, and in each round every command runs once, one
        # after the other, so that a slow moment of the machine falls on all of them alike.
        # The processes are started by `proctime` (posix_spawn, as a shell or hyperfine starts
        # them): from this Python process, a hundred megabytes resident by now, subprocess
        # added about a millisecond to every process, as much as the empty one it measured.
        # "c" opens the store as a clean close left it (served by the kept feed, docs/BEHAVIOUR.md);
        # "c_store" first removes the kept feed (its open reads the store, stamped), "c_check" the
        # stamp too (every page checked). Each closes leaving the kept feed for the next "c".
        # "floor" reads the same rows through SQLite alone (bench/sqlite_floor.c): what a store
        # in SQLite costs any library at the least, the limit the "c" row can come near.
        floor = os.path.join(self.build, "bin", "sqlite_floor")
        commands = {"true": ["/bin/true"], "load": [self.bench_c, "load"], "c": [self.bench_c, "cold", store],
                    "floor": [floor, store, "bench"],
                    "c_store": [self.bench_c, "cold-store", store],
                    "c_check": [self.bench_c, "cold-check", store],
                    "py": [python, "-c", script], "bare": [python, "-c", "pass"]}
        rounds = 15 if self.quick else 31
        outdir = tempfile.mkdtemp(prefix="proctime-", dir=self.tmp)
        argv: list[str] = [os.path.join(self.build, "bin", "proctime"), str(rounds), outdir]
        for i, cmd in enumerate(commands.values()):
            argv += ([";"] if i else []) + cmd
        result = subprocess.run(argv, check=True, capture_output=True, text=True, env=env).stdout
        medians = dict(zip(commands, json.loads(result)["median_ms"]))
        lines: dict[str, list[str]] = {}    # each command's output, a line a round
        for i, name in enumerate(commands):
            with open(os.path.join(outdir, f"{i}.out"), encoding="utf-8") as f:
                lines[name] = f.read().splitlines()
        c_ms, true_ms, load_ms, check_ms = (medians[k] for k in ("c", "true", "load", "c_check"))
        floor_cards = json.loads(lines["floor"][0])["cards"]
        py_ms, bare_ms = medians["py"], medians["bare"]
        # The figures a run prints are medians too: one run's alone swung by half.
        inner, store_inner = ([json.loads(line) for line in lines[k]] for k in ("c", "c_store"))
        runs = [line.split() for line in lines["py"]]
        return {"cards": inner[0]["cards"], "c_process_ms": round(c_ms, 1), "true_process_ms": round(true_ms, 2),
                "c_load_only_process_ms": round(load_ms, 1), "c_checked_process_ms": round(check_ms, 1),
                "c_store_process_ms": round(medians["c_store"], 2),
                "c_store_open_ms": round(statistics.median(r["open_ms"] for r in store_inner), 3),
                "sqlite_floor_process_ms": round(medians["floor"], 2), "sqlite_floor_cards": floor_cards,
                "c_open_ms": round(statistics.median(r["open_ms"] for r in inner), 3),
                "c_first_feed_ms": round(statistics.median(r["first_feed_ms"] for r in inner), 3),
                "py_process_ms": round(py_ms, 1), "py_bare_process_ms": round(bare_ms, 1),
                "py_import_ms": round(statistics.median(float(r[1]) for r in runs), 2),
                "py_open_and_feed_ms": round(statistics.median(float(r[2]) for r in runs), 2),
                "py_cards": int(runs[0][0])}

    # 4 and 5 -------------------------------------------------------------------------------

    def logging(self) -> dict[str, Any]:
        """Durable impressions from one thread, then from 4 at once (group commit: calls made
        at the same time share a transaction), each run on a store of its own. Several runs of
        each, interleaved, and the medians: one run of the 4 threads spread from 0.9x to 1.8x
        one thread (how the threads happen to meet the writer); the median is the figure."""
        n = 1000 if self.quick else 3000
        runs = 3 if self.quick else 5
        ones, fours = [], []
        for r in range(runs):
            ones.append(self.c("logging", os.path.join(self.tmp, f"log-store-{r}"), str(n)))
            fours.append(self.c("logging", os.path.join(self.tmp, f"log-store-4-{r}"), str(n * 2), "4"))
        for one, four in zip(ones, fours):
            if one["pending"] != n or four["pending"] != n * 2:
                raise SystemExit(f"logging: {one['pending']} and {four['pending']} events stored for {n} and {n * 2} calls")

        def medians(results: list[dict[str, Any]]) -> dict[str, Any]:
            timed = {k: statistics.median(r[k] for r in results) for k in ("per_second", "p50_us", "p99_us", "max_us")}
            return {**results[0], **timed, "per_second_runs": [r["per_second"] for r in results]}

        one = medians(ones)
        four = medians(fours)
        one["runs"] = runs
        one["threads_4"] = four
        one["threads_4_vs_1"] = round(four["per_second"] / one["per_second"], 2)
        return one

    def memory(self) -> dict[str, Any]:
        path, _ = self.payload_file(10_000)
        m = self.c("memory", path)
        k = self.c("controllers", "1000")
        return {"cards": m["cards"], "mb_per_10k_cards": round((m["rss_after_kb"] - m["rss_before_kb"]) / 1024, 1),
                "controllers": k["n"], "kb_per_controller": round((k["rss_after_kb"] - k["rss_before_kb"]) / k["n"], 1),
                "mb_for_1000_controllers": round((k["rss_after_kb"] - k["rss_before_kb"]) / 1024, 1)}

    # 7 -------------------------------------------------------------------------------------

    def stages(self) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """Row 7: the Swift core's pipeline stages (contentcards-tool), and the decode stage's
        baseline, simdjson's parse of the same bytes (`payloads.simdjson_parse_ms`), in rounds (a
        tool run of three passes, then eleven parses; the ratio the median of the rounds'), and
        decode's CPU time (both threads'). None without the tool; no baseline without pysimdjson."""
        if not os.path.exists(tool := os.path.join(ROOT, ".build-bench", "release", "contentcards-tool")):
            return None
        path, _ = self.payload_file(10_000)
        with open(path, "rb") as f:
            data = f.read()
        baseline = simdjson_parser()
        stages: dict[str, list[float]] = {}
        parses, ratios = [], {"decode_ms": [], "decode_cpu_ms": []}
        for _ in range(max(self.repeats, 7)):   # the quick run's 3 were one slow round from a wrong median
            out = subprocess.run([tool, "stages", path, ",".join(FILTER), "3"], check=True, capture_output=True,
                                 text=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            for k, v in row.items():
                stages.setdefault(k, []).append(v)
            if baseline:
                parses.append(simdjson_parse_ms(baseline[0], data))
                for k, r in ratios.items():
                    r.append(row[k] / parses[-1])
        medians = {k: statistics.median(v) for k, v in stages.items() if k != "decode_cpu_ms"}   # not a stage
        if not baseline:
            return medians, None
        return medians, {"simdjson_parse_ms": round(statistics.median(parses), 3), "mb": round(len(data) / 1e6, 2),
                         "version": baseline[1], "decode_vs_simdjson": round(statistics.median(ratios["decode_ms"]), 2),
                         "decode_cpu_ms": statistics.median(stages["decode_cpu_ms"]), "decode_cpu_vs_simdjson": round(statistics.median(ratios["decode_cpu_ms"]), 2)}

    # 8 -------------------------------------------------------------------------------------

    def percard(self) -> dict[str, Any]:
        rows = {}
        for n in (10, 10_000 if self.quick else 100_000):
            store = tempfile.mkdtemp(prefix=f"percard-{n}-", dir=self.tmp)
            rows[n] = self.c("percard", store, str(n))
        return {str(k): v for k, v in rows.items()}
