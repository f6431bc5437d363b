#!/usr/bin/env python3
"""supplemental_feed.py: home tiles from two sources, blended.

The app has products of its own (hard-coded here; a local database in a real app) and gets more
tiles as Content Cards of class type ``home_tile``. Both load at the same time; the screen is
built only once BOTH are in (a barrier: ``asyncio.gather``), ordered by price, and the
impressions of the card tiles shown are logged.

    python3 examples/python/supplemental_feed.py [--server URL]
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from _common import config, parse_args

import contentcards as cc


@dataclass
class Tile:
    """What the home screen draws, whichever source it came from."""

    title: str
    price: float
    source: str          # "app" or "card"
    card_id: str = ""    # for a card tile: the id to log with


class HomeTileCard(cc.ContentCardable):
    """A home_tile card as the app's Tile."""

    class_types = ("home_tile",)

    def __init__(self, tile: Tile) -> None:
        self.tile = tile

    @classmethod
    def from_card(cls, card: cc.Card) -> HomeTileCard | None:
        try:
            price = float(card.extras["tile_price"])
        except (KeyError, ValueError):
            return None  # not a usable tile: declined
        title = card.extras.get("tile_title") or card.title or card.id
        return cls(Tile(title, price, "card", card.id))


LOCAL_PRODUCTS = [Tile("Ceramic mug", 12.50, "app"), Tile("House blend, 1 kg", 24.00, "app"),
                  Tile("Cold brew jar", 45.00, "app")]


async def load_local_products() -> list[Tile]:
    await asyncio.sleep(0.2)  # the app's own database or API
    return list(LOCAL_PRODUCTS)


async def load_card_tiles(controller: cc.ContentCards) -> list[Tile]:
    await controller.refresh_async()  # settled by the library's completion: no thread waits
    objects = controller.convert(cc.Registry(HomeTileCard))
    return [obj.tile for obj in objects if isinstance(obj, HomeTileCard)]


async def main() -> int:
    args = parse_args(__doc__.splitlines()[1])
    with cc.ContentCards(config(args)) as controller:
        started = time.monotonic()
        local, cards = await asyncio.gather(load_local_products(), load_card_tiles(controller))
        elapsed = time.monotonic() - started
        blended = sorted(local + cards, key=lambda tile: tile.price)

        print(f"Home screen: {len(local)} products of the app + {len(cards)} tiles from "
              f"Content Cards, by price")
        print(f"(both loaded concurrently; blended after both were in, {elapsed:.2f} s)\n")
        print(f"  {'price':>7}  {'source':<6}  {'title':<24}  card id")
        for tile in blended:
            marker = "card" if tile.source == "card" else "app"
            print(f"  {tile.price:>7.2f}  {marker:<6}  {tile.title:<24}  {tile.card_id or '-'}")
            if tile.card_id:
                controller.log_impression(tile.card_id)  # shown: log it
        controller.log_feed_displayed()
        print(f"\nimpressions logged for {len(cards)} card tiles; "
              f"home_tile badge now {controller.unviewed_count('home_tile')} unread")
        if args.server:
            result = controller.flush_events()
            print(f"events delivered to the server: {result.delivered}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
