#!/usr/bin/env python3
"""The plots of docs/PERFORMANCE.md, drawn from the figures of one `make bench` run as SVG by
hand (standard library only, as tools/fleet.py draws docs/fleet.svg).

    python3 bench/plots.py BENCH_JSON [SVG_DIR]

bench/run.py calls `write_all` at the end of every run: a full run writes into docs/, a quick
one into the build directory (beside bench.json), and `--svg-dir DIR` chooses. Run on its own,
this redraws the plots from a bench.json already written (into SVG_DIR, by default the JSON's
folder), without measuring anything again.

perf-scaling.svg     the C pipeline's cost a card at each feed size (each round's figure as a
                     dot, the median as the line), pure Python's beside it, and 1.3 times the
                     smallest size's cost marked
perf-stages.svg      the 10,000-card pipeline: the Swift core's stages (decode, merge + persist,
                     filter + order, encode) and the C program's two calls, as stacked bars,
                     beside the Python bindings' rows and the two baselines (orjson, pure
                     Python), all on one scale
perf-operations.svg  per-operation costs beside their baselines: each per-card operation on
                     a file store of 100,000 cards beside the same on 10 cards; one call from C
                     and from Python beside the call floors; a cold start beside an empty
                     process
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any
from xml.sax.saxutils import escape

WIDTH = 900
FONT = 'font-family="sans-serif" font-size="12"'
# The colours of tools/fleet.py's plot: dark blue for the library, grey for what it is measured
# against.
LIBRARY = "#0b5394"
LIBRARY_LIGHT = "#9fc5e8"
BASELINE = "#999999"
PYTHON = "#b45f06"
STAGE_COLOURS = ("#0b5394", "#3d85c6", "#6fa8dc", "#9fc5e8")


def text_width(text: str, size: float = 12) -> float:
    """About how wide a text is drawn in a sans-serif font (no font metrics here)."""
    return len(text) * size * 0.56


def nice_step(top: float, ticks: int = 6) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving about `ticks` ticks to `top`."""
    if top <= 0:
        return 1.0
    raw = top / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * power >= raw:
            return m * power
    return 10 * power


def number(v: float) -> str:
    """A figure as the documents write it: three significant digits, thousands with commas."""
    if v >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def tick_label(v: float, step: float) -> str:
    """An axis tick: as many decimals as the step has."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step < 1 else 0
    return f"{v:,.{decimals}f}"


class Svg:
    def __init__(self, height: int, title: str, subtitle: str) -> None:
        self.height = height
        self.parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
                      f'viewBox="0 0 {WIDTH} {height}" {FONT}>',
                      f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
                      f'<text x="20" y="24" font-size="15" font-weight="bold">{escape(title)}</text>',
                      f'<text x="20" y="42" fill="#555555">{escape(subtitle)}</text>']

    def add(self, element: str) -> None:
        self.parts.append(element)

    def text(self, x: float, y: float, s: str, anchor: str = "start", fill: str = "#000000",
             extra: str = "") -> None:
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}"{extra}>'
                 f'{escape(s)}</text>')

    def rect(self, x: float, y: float, w: float, h: float, fill: str, extra: str = "") -> None:
        self.add(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{h:.1f}" '
                 f'fill="{fill}"{extra}/>')

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str, extra: str = "") -> None:
        self.add(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}"{extra}/>')

    def render(self) -> str:
        return "\n".join(self.parts + ["</svg>"]) + "\n"


Segment = tuple[float, str, str]
Row = tuple[str, list[Segment], str]


def panel_height(rows: list[Row], legend: bool = False) -> float:
    """What `bar_panel` takes of the height."""
    return 26 + (22 if legend else 0) + len(rows) * 26 + 8 + 44


def bar_panel(svg: Svg, top: float, title: str, unit: str, rows: list[Row], bar: float = 18,
              gap: float = 8, legend: list[tuple[str, str]] | None = None) -> float:
    """Horizontal bars on one linear scale, a row a label; a row's bar is one or more segments
    (value, colour, label drawn inside when it fits), stacked, its total written after it and
    then the row's note (a ratio) in grey. Returns the y below the panel."""
    left = 20 + max(text_width(label) for label, _, _ in rows) + 12
    right = WIDTH - 150
    svg.text(20, top + 14, title, extra=' font-weight="bold"')
    y0 = top + 26
    if legend:
        at_x = left
        for name, colour in legend:
            svg.rect(at_x, y0 + 1, 12, 12, colour)
            svg.text(at_x + 16, y0 + 11, name)
            at_x += 16 + text_width(name) + 18
        y0 += 22
    plot_h = len(rows) * (bar + gap) + gap
    top_value = max(sum(v for v, _, _ in segments) for _, segments, _ in rows)
    step = nice_step(top_value, 6)
    end = math.ceil(top_value / step) * step
    if end < top_value * 1.02:
        end += step

    def x(v: float) -> float:
        return left + (right - left) * v / end

    tick = 0.0
    while tick <= end + step / 2:
        svg.line(x(tick), y0, x(tick), y0 + plot_h, "#e3e3e3")
        svg.text(x(tick), y0 + plot_h + 15, tick_label(tick, step), anchor="middle", fill="#444444")
        tick += step
    svg.text((left + right) / 2, y0 + plot_h + 31, unit, anchor="middle", fill="#444444")
    for i, (label, segments, note) in enumerate(rows):
        y = y0 + gap + i * (bar + gap)
        svg.text(left - 8, y + bar / 2 + 4, label, anchor="end")
        at = 0.0
        for value, colour, inside in segments:
            svg.rect(x(at), y, x(at + value) - x(at), bar, colour)
            if inside and text_width(inside, 11) + 6 < x(at + value) - x(at):
                svg.text((x(at) + x(at + value)) / 2, y + bar / 2 + 4, inside, anchor="middle",
                         fill="white", extra=' font-size="11"')
            at += value
        total = number(at)
        svg.text(x(at) + 5, y + bar / 2 + 4, total, fill="#222222")
        if note:
            svg.text(x(at) + 5 + text_width(total) + 8, y + bar / 2 + 4, note, fill="#777777")
    svg.line(left, y0, left, y0 + plot_h, "#333333")
    return y0 + plot_h + 44


def subtitle(results: dict[str, Any], what: str) -> str:
    meta = results.get("meta", {})
    run = "make bench" + (" --quick" if meta.get("quick") else "")
    when = meta.get("date", "")
    commit = meta.get("commit", "")
    cores = meta.get("cores", "")
    parts = [run, when, f"at {commit}" if commit else "", f"{cores} cores" if cores else ""]
    return f"{what}; " + ", ".join(p for p in parts if p)


# -- perf-scaling.svg ----------------------------------------------------------------------------

def scaling_svg(results: dict[str, Any]) -> str | None:
    rows = results.get("scaling")
    if not rows:
        return None
    sizes = [r["cards"] for r in rows]
    c_cost = [r["c_us_per_card"] for r in rows]
    ratio = c_cost[-1] / c_cost[0]
    svg = Svg(430, f"Cost a card against feed size, C ABI from C: {sizes[-1]:,} cards {ratio:.2f}x "
                   f"the cost of {sizes[0]:,}",
              subtitle(results, "decode + merge + filter + encode, microseconds a card"))
    left, right, top, bottom = 70, WIDTH - 190, 60, 380
    py_cost = [r["python_us_per_card"] for r in rows]
    dots = [(r["cards"], v) for r in rows for v in r.get("c_us_per_card_rounds", [])]
    highest: float = max(max(py_cost), max(v for _, v in dots) if dots else 0, max(c_cost) * 1.3)
    step = nice_step(highest, 6)
    ymax = math.ceil(highest * 1.08 / step) * step
    lo, hi = math.log10(min(sizes)), math.log10(max(sizes))
    span = max(hi - lo, 1e-9)

    def x(n: float) -> float:
        return left + 30 + (right - left - 60) * (math.log10(n) - lo) / span

    def y(v: float) -> float:
        return bottom - (bottom - top) * v / ymax

    tick = 0.0
    while tick <= ymax + step / 2:
        svg.line(left, y(tick), right, y(tick), "#e3e3e3")
        svg.text(left - 6, y(tick) + 4, tick_label(tick, step), anchor="end", fill="#444444")
        tick += step
    for n in sizes:
        svg.line(x(n), bottom, x(n), bottom + 5, "#333333")
        svg.text(x(n), bottom + 19, f"{n:,}", anchor="middle", fill="#444444")
    svg.text((left + right) / 2, bottom + 37, "cards in the feed (logarithmic)", anchor="middle", fill="#444444")
    svg.text(18, (top + bottom) / 2, "µs a card", anchor="middle", fill="#444444",
             extra=f' transform="rotate(-90 18 {(top + bottom) / 2:.1f})"')
    # 1.3x the smallest size's cost: the line the per-card cost is held under.
    limit = c_cost[0] * 1.3
    svg.line(left, y(limit), right, y(limit), "#cc0000", ' stroke-dasharray="6 4"')
    svg.text(left + 8, y(limit) - 6, f"1.3x the {sizes[0]:,}-card cost ({limit:.2f} µs)", fill="#cc0000")
    for n, v in dots:
        svg.add(f'<circle cx="{x(n):.1f}" cy="{y(v):.1f}" r="3" fill="{LIBRARY_LIGHT}"/>')
    series = ((py_cost, BASELINE, "pure Python json", "(baseline, one run)", ' stroke-dasharray="4 3"', -9),
              (c_cost, LIBRARY, "C ABI from C", "(median of the rounds)", "", 18))
    for costs, colour, name, note, dash, label_dy in series:
        points = " ".join(f"{x(n):.1f},{y(v):.1f}" for n, v in zip(sizes, costs))
        svg.add(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for n, v in zip(sizes, costs):
            svg.add(f'<circle cx="{x(n):.1f}" cy="{y(v):.1f}" r="4" fill="{colour}"/>')
            svg.text(x(n), y(v) + label_dy, f"{v:.2f}", anchor="middle", fill=colour)
        svg.text(right + 8, y(costs[-1]) + 0, name, fill=colour)
        svg.text(right + 8, y(costs[-1]) + 14, note, fill=colour)
    svg.text(left + 8, top + 16, "light dots: each round's figure of the C row", fill=LIBRARY)
    svg.rect(left, top, right - left, bottom - top, "none", ' stroke="#333333"')
    return svg.render()


# -- perf-stages.svg -----------------------------------------------------------------------------

def stages_svg(results: dict[str, Any]) -> str | None:
    p = results.get("pipeline_10k")
    if not p:
        return None
    st = results.get("stages_10k")
    rows: list[Row] = []
    legend = None
    orjson = p.get("orjson_ms")

    def vs(ms: float | None, ratio: float | None = None) -> str:
        """The row's ratio to orjson: the median of the rounds' ratios where the run has it."""
        if ratio is not None:
            return f"{ratio:.2f}x orjson"
        return f"{ms / orjson:.2f}x orjson" if ms and orjson else ""

    if st:
        names = (("decode_ms", "decode"), ("merge_persist_ms", "merge + persist"),
                 ("filter_order_ms", "filter + order"), ("encode_ms", "encode"))
        rows.append(("Swift core, by stage", [(st[k], c, n) for (k, n), c in zip(names, STAGE_COLOURS)], ""))
        legend = [(n, c) for (_, n), c in zip(names, STAGE_COLOURS)]
    rows.append(("C ABI from C: apply | feed", [(p["c_apply_ms"], LIBRARY, "apply"),
                                               (p["c_feed_ms"], LIBRARY_LIGHT, "feed")],
                 vs(p["c_ms"], p.get("c_vs_orjson"))))
    for key, ratio, name in (("py_bindings_json_ms", "py_json_vs_orjson", "Python: apply + cards_json"),
                             ("py_bindings_cards_ms", "py_cards_vs_orjson", "Python: apply + cards (Card objects)"),
                             ("py_bindings_cards_read_ms", "py_cards_read_vs_orjson", "Python: the same, every card read")):
        if p.get(key) is not None:
            rows.append((name, [(p[key], PYTHON, "")], vs(p[key], p.get(ratio))))
    if orjson is not None:
        rows.append(("orjson (baseline)", [(orjson, BASELINE, "")], ""))
    rows.append(("pure Python json (baseline)", [(p["python_ms"], BASELINE, "")], vs(p["python_ms"])))
    ratio = p.get("c_vs_orjson")
    title = (f"The 10,000-card pipeline ({p['mb']} MB in, {p['kept']:,} cards out)"
             + (f": C {ratio:.2f}x orjson" if ratio is not None else ""))
    height = int(56 + panel_height(rows, legend is not None) + 36)
    svg = Svg(height, title, subtitle(results, f"milliseconds, medians of {p['rounds']} rounds"))
    below = bar_panel(svg, 56, "Decode the payload, merge it into a store, filter by class type, encode the feed",
                      "ms", rows, legend=legend)
    svg.text(20, below + 4, "The baselines do less: they validate nothing, keep no state, write no store and do "
             "not order the feed.", fill="#555555")
    svg.text(20, below + 20, "The stages are timed by contentcards-tool stages (the Swift core, no C boundary), "
             "the other rows by bench/run.py, one of each a round.", fill="#555555")
    return svg.render()


# -- perf-operations.svg -------------------------------------------------------------------------

def operations_svg(results: dict[str, Any]) -> str | None:
    pc, calls, cold = results.get("percard"), results.get("calls"), results.get("cold")
    if not (pc and calls and cold):
        return None
    small, big = pc["10"], pc[max(pc, key=int)]

    def times(a: float, b: float, what: str) -> str:
        return f"{a / b:.2f}x {what}" if b else ""

    ops: list[Row] = []
    for key, name in (("impression_us", "log impression"), ("click_us", "log click"),
                      ("dismissal_us", "log dismissal"), ("card_us", "card by id"),
                      ("counts_us", "count, filtered"), ("sync10_us", "sync changing 10 cards")):
        ops.append((f"{name}, {big['cards']:,} stored", [(big[key], LIBRARY, "")],
                    times(big[key], small[key], "at 10")))
        ops.append((f"{name}, 10 stored", [(small[key], BASELINE, "")], ""))
    one: list[Row] = [
        ("count from C (lock-free)", [(calls["c_count_ns_10_cards"], LIBRARY, "")],
         times(calls["c_count_ns_10_cards"], calls["c_abi_version_ns"], "the floor")),
        ("cc_abi_version (the call floor)", [(calls["c_abi_version_ns"], BASELINE, "")], ""),
        ("unviewed_count() from Python", [(calls["py_unviewed_count_ns"], PYTHON, "")],
         times(calls["py_unviewed_count_ns"], calls["ctypes_floor_ns"], "the floor")),
        ("ctypes floor (libc abs)", [(calls["ctypes_floor_ns"], BASELINE, "")], "")]
    empty = cold["true_process_ms"]
    start: list[Row] = [
        ("open 1,000 cards, read the feed", [(cold["c_process_ms"], LIBRARY, "")],
         times(cold["c_process_ms"], empty, "empty")),
        ("the same without the kept feed", [(cold["c_store_process_ms"], LIBRARY_LIGHT, "")],
         times(cold["c_store_process_ms"], empty, "empty")),
        ("the same after the file changed", [(cold["c_checked_process_ms"], LIBRARY_LIGHT, "")],
         times(cold["c_checked_process_ms"], empty, "empty")),
        ("load the library only", [(cold["c_load_only_process_ms"], LIBRARY_LIGHT, "")],
         times(cold["c_load_only_process_ms"], empty, "empty")),
        ("an empty process (/bin/true)", [(empty, BASELINE, "")], "")]
    python: list[Row] = [
        ("import, open 1,000 cards, read them", [(cold["py_process_ms"], PYTHON, "")],
         times(cold["py_process_ms"], cold["py_bare_process_ms"], "bare")),
        ("a bare Python interpreter", [(cold["py_bare_process_ms"], BASELINE, "")], "")]
    panels = (
        (f"Per-card operations on a file store: {big['cards']:,} cards stored, beside 10 (grey)",
         "µs, median of 41", ops),
        ("One call, beside the floor of a call (grey)", "ns, best of 5 loops", one),
        ("Cold start of a C process, beside an empty one (grey)", "ms, medians of interleaved rounds", start),
        ("Cold start of a Python process, beside a bare interpreter (grey)",
         f"ms; of it, import contentcards {cold['py_import_ms']:g} ms", python),
    )
    height = int(56 + sum(panel_height(rows) for _, _, rows in panels) + 4)
    svg = Svg(height, "What one operation costs, beside its baseline",
              subtitle(results, "the library blue, Python brown, baselines grey"))
    top = 56.0
    for title, unit, rows in panels:
        top = bar_panel(svg, top, title, unit, rows)
    return svg.render()


PLOTS = (("perf-scaling.svg", scaling_svg), ("perf-stages.svg", stages_svg),
         ("perf-operations.svg", operations_svg))


def write_all(results: dict[str, Any], directory: str) -> list[str]:
    """Writes every plot the results have the figures for; returns their paths."""
    os.makedirs(directory, exist_ok=True)
    written = []
    for name, draw in PLOTS:
        text = draw(results)
        if text is None:
            continue
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        results = json.load(f)
    directory = argv[1] if len(argv) > 1 else os.path.dirname(os.path.abspath(argv[0]))
    for path in write_all(results, directory):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
