#!/usr/bin/env python3
"""demo.py: Content Cards end to end, in a few seconds, on this machine only.

Starts the reference server (examples/server/cc_server.py) on 127.0.0.1, refreshes a user's
cards from it over HTTP, shows the feed by class type and the cards the library left out,
logs an impression, a click and a dismissal while watching the unviewed badge, shows a click the
library refuses, delivers the events and shows what the server received; then a second device
of the same user sees what the first did (the server keeps per-user state from the events), and
read state travels between the two.

    python3 examples/python/demo.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import defaultdict

from _common import REPO

import contentcards as cc

sys.path.insert(0, os.path.join(REPO, "examples", "server"))
from reference_server import ReferenceServer  # noqa: E402

USER = "demo-user"


def heading(number: int, text: str) -> None:
    print(f"\n{number}. {text}")


def badge(controller: cc.ContentCards) -> cc.Counts:
    return controller.counts()


def log_step(controller: cc.ContentCards, what: str, card_id: str,
             action: str) -> None:
    before = badge(controller)
    result = getattr(controller, f"log_{action}")(card_id)
    after = badge(controller)
    outcome = "recorded" if result else "refused"
    print(f"   {what:<11} {card_id:<8} {outcome:<9} "
          f"badge {before.unviewed} -> {after.unviewed} unviewed, "
          f"{before.total} -> {after.total} cards")
    if not result:
        print(f"   {'':<11} why: {result.reason}")


def describe(card: cc.Card) -> str:
    flags = [name for name, on in (("pinned", card.pinned), ("test", card.is_test)) if on]
    text = card.title or card.extras.get("coupon_code") or card.image_alt_text or ""
    return "  ".join(part for part in (text, f"[{', '.join(flags)}]" if flags else "") if part)


def main() -> int:
    started = time.monotonic()
    print(f"Content Cards demo: library {cc.library_version()} (ABI {cc.abi_version()})")
    with ReferenceServer() as server, tempfile.TemporaryDirectory() as storage:
        print(f"reference server: {server.url}")
        config = {"userId": USER, "storagePath": os.path.join(storage, "store"),
                  "source": {"url": server.url, "apiKey": "demo-key"},
                  "events": {"url": server.url}, "eventFlushIntervalSeconds": 0,
                  "refreshTokens": 0}
        tablet_config = dict(config, storagePath=os.path.join(storage, "tablet"), deviceId="tablet")
        with cc.ContentCards(config) as controller, cc.ContentCards(tablet_config) as tablet:
            heading(1, f"Refresh over HTTP for user {USER!r}")
            summary = controller.refresh()
            kind = "full sync" if summary.full_sync else "incremental sync"
            print(f"   {kind}: {summary.added} added, {summary.updated} updated, "
                  f"{summary.removed} removed")
            print(f"   {len(summary.left_out)} cards of the payload left out:")
            for item in summary.left_out:
                print(f"     #{item.index:<3} {item.id or '(no id)':<10} {item.reason}")

            heading(2, "The feed, by class type (feed order within each)")
            groups: dict[str, list[cc.Card]] = defaultdict(list)
            for card in controller.cards():
                groups[card.class_type].append(card)
            for class_type, cards in groups.items():
                print(f"   {class_type or '(no class type)'}")
                for card in cards:
                    if card.is_control:  # an A/B test's holdout: never drawn, impression logged
                        controller.log_impression(card.id)
                        print("     (a control card: not drawn, its impression logged)")
                        continue
                    print(f"     {card.id:<15} {card.type.value:<16} {describe(card)}")
            controller.log_feed_displayed()

            heading(3, "The unviewed badge")
            counts = badge(controller)
            print(f"   {counts.unviewed} unviewed of {counts.total} cards "
                  "(control cards count in the total, never as unviewed)")

            heading(4, "Logging, and the badge after each")
            log_step(controller, "impression", "tile-1", "impression")
            log_step(controller, "click", "tile-1", "click")
            log_step(controller, "dismissal", "tile-3", "dismissal")

            heading(5, "A click the library refuses")
            log_step(controller, "click", "msg-2", "click")

            heading(6, "Deliver the events")
            print(f"   pending: {controller.pending_events()}")
            result = controller.flush_events()
            print(f"   delivered {result.delivered}, dropped {result.dropped}, "
                  f"pending {result.pending}")

            heading(7, "What the server received")
            events = server.events()
            print(f"   {'type':<18} {'card':<14} {'class type':<12} user")
            for event in events:
                print(f"   {event['type']:<18} {event.get('card_id') or '-':<14} "
                      f"{event.get('class_type') or '-':<12} {event['user_id']}")

            heading(8, f"A second device of user {USER!r} (a tablet with its own store)")
            tablet.refresh()
            for card_id in ("tile-1", "tile-3"):
                card = tablet.card(card_id)
                print(f"   on the tablet: {card_id:<7} viewed={card.viewed} clicked={card.clicked} "
                      f"dismissed={card.dismissed}")
            print("   read state, apart from impressions (the phone reads msg-1, delivers; the "
                  "tablet refreshes):")
            before = tablet.unread_count()
            controller.mark_read("msg-1")
            controller.flush_events()
            tablet.refresh()
            print(f"   tablet: msg-1 read={tablet.card('msg-1').read}, "
                  f"read-state badge {before} -> {tablet.unread_count()} unread, "
                  f"impression badge {tablet.unviewed_count()} unviewed")
        print(f"\nserver stopped; done in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
