"""Writes large_feed.json beside this file: the one-API scenario's feed large enough (over
256 KiB) that the library decodes it on two threads (docs/PERFORMANCE.md, "Decode on two
threads"). Deterministic: run it again and the file is the same.

Two thousand cards, with what the two halves must agree on: cards left out in each half (a
number where a card goes, a card without its creation time), an id of the second half
repeating one of the first, accented and escaped text, and two cards of the class type
"rare" (one in each half) for the scenario to print.

    python3 Tests/scenarios/large_feed.py
"""
import json
import os

WORDS = "fresh roast espresso café crème brûlée bundle grinder sale weekend offer members".split()


def card(i: int) -> object:
    if i == 3:
        return 42
    if i == 1501:
        return {"id": f"c{i}", "tp": "short_news", "ds": "no creation time"}
    c = {"id": "c10" if i == 1700 else f"c{i}", "tp": "short_news", "ca": 1763000000 + i, "ea": -1,
         "db": i % 3 == 0, "ds": " ".join(WORDS[(i + k) % len(WORDS)] for k in range(6)) + f" \"{i}\"\n",
         "e": {"class_type": "rare" if i in (7, 1900) else "home_tile", "n": str(i)}}
    if i % 4 == 0:
        c["u"] = f"https://shop.example.com/p/{i}"
    return c


def main() -> None:
    feed = {"cards": [card(i) for i in range(2000)], "full_sync": True, "last_full_sync_at": 1763800000}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "large_feed.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(feed, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
