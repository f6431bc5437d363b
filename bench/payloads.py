"""The input of `make bench`'s pipeline rows and its baselines: a generated sync response of n
cards (`generate`), and the pure-Python and orjson pipelines the library is measured against,
with the ids of what each kept (`ids_of`), by which every row's output is checked.

    python3 -c 'import sys; sys.path[:0] = ["bench"]; import payloads; print(payloads.generate(10))'
"""
from __future__ import annotations

import json
import random
from typing import Any

FILTER = ["home_tile", "coupon_code"]
FILTER_JSON = json.dumps(FILTER)
CLASS_TYPES = (["home_tile"] * 25 + ["coupon_code"] * 15 + ["message_full_page"] * 15
               + ["message_webview"] * 10 + ["ad_banner"] * 15 + [""] * 20)
WORDS = ("fresh roast espresso bundle grinder sale weekend holiday offer members only free "
         "shipping new arrivals café crème brûlée limited edition gift card reward points").split()


def generate(n: int, seed: int = 7) -> str:
    """A sync response of n realistic cards (about 420 bytes each), every one valid and visible,
    so the library's output and the baselines' must hold the same cards."""
    rnd = random.Random(seed)
    cards = []
    for i in range(n):
        kind = rnd.choices(["captioned_image", "short_news", "banner_image", "control"], [40, 30, 20, 10])[0]
        class_type = rnd.choice(CLASS_TYPES)
        card: dict[str, Any] = {"id": f"card-{i:06d}", "tp": kind, "ca": 1763000000 + rnd.randrange(800000),
                                "ea": -1, "p": rnd.random() < 0.05, "db": rnd.random() < 0.7,
                                "v": False, "cl": False, "t": False, "uw": rnd.random() < 0.2}
        extras: dict[str, Any] = {}
        if class_type:
            extras["class_type"] = class_type
        for k in range(rnd.randrange(2, 5)):
            extras[f"key_{k}"] = " ".join(rnd.choices(WORDS, k=rnd.randrange(1, 4)))
        if class_type == "coupon_code":
            extras["discount_percentage"] = str(rnd.choice([10, 15, 20, 25]))
        card["e"] = extras
        if kind != "control":
            card["u"] = f"https://shop.example.com/p/{i}?utm_source=cards"
            card["dm"] = "shop.example.com"
        if kind in ("captioned_image", "banner_image"):
            card["i"] = f"https://cdn.example.com/img/{i}.png"
            card["ar"] = rnd.choice([1.0, 1.5, 1.777])
        if kind in ("captioned_image", "short_news"):
            card["tt"] = " ".join(rnd.choices(WORDS, k=4)).capitalize()
            card["ds"] = " ".join(rnd.choices(WORDS, k=rnd.randrange(8, 20))).capitalize() + "."
        cards.append(card)
    return json.dumps({"cards": cards, "full_sync": True, "last_full_sync_at": 1763800000,
                       "last_card_updated_at": 1763800000}, ensure_ascii=False)


def baseline_python(payload: str) -> str:
    data = json.loads(payload)
    wanted = set(FILTER)
    kept = [c for c in data["cards"] if str(c.get("e", {}).get("class_type", "")).strip().lower() in wanted]
    return json.dumps(kept)


def baseline_orjson(payload: str) -> bytes:
    import orjson
    data = orjson.loads(payload)
    wanted = set(FILTER)
    kept = [c for c in data["cards"] if str(c.get("e", {}).get("class_type", "")).strip().lower() in wanted]
    return orjson.dumps(kept)


def simdjson_parser() -> tuple[Any, str] | None:
    """The decode stage's baseline (bench row 7): a pysimdjson parser, reused from parse to
    parse as simdjson's own benchmarks reuse theirs, and pysimdjson's version; None when it is
    not installed (`make bench` installs it into the bench's venv)."""
    try:
        import simdjson  # type: ignore[import-not-found]
    except ImportError:
        return None
    import importlib.metadata
    return simdjson.Parser(), importlib.metadata.version("pysimdjson")


def simdjson_parse_ms(parser: Any, data: bytes, runs: int = 11) -> float:
    """The median of `runs` parses of `data`, in milliseconds: the parse alone (the document
    built, its UTF-8 and structure validated, and not read further)."""
    import statistics
    import time
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        doc = parser.parse(data)
        times.append((time.perf_counter() - start) * 1000)
        del doc
    return statistics.median(times)


def ids_of(output: str | bytes) -> list[str]:
    return sorted(c["id"] for c in json.loads(output))
