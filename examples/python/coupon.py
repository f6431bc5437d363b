#!/usr/bin/env python3
"""coupon.py: a coupon at checkout.

A ``coupon_code`` card carries ``discount_percentage`` in its extras and is offered at checkout.
Its control variant (the A/B test's holdout) is never shown, but its impression is logged, so
the experiment can compare the two groups.

    python3 examples/python/coupon.py [--server URL]
"""

from __future__ import annotations

from _common import config, parse_args

import contentcards as cc

CART_TOTAL = 80.00


class Coupon(cc.ContentCardable):
    class_types = ("coupon_code",)

    def __init__(self, percent: float, code: str, control: bool) -> None:
        self.percent, self.code, self.control = percent, code, control

    @classmethod
    def from_card(cls, card: cc.Card) -> Coupon | None:
        if card.is_control:
            return cls(0.0, "", True)
        try:
            percent = float(card.extras["discount_percentage"])
        except (KeyError, ValueError):
            return None  # a coupon without a usable discount: declined
        return cls(percent, card.extras.get("coupon_code", ""), False)


def main() -> int:
    args = parse_args(__doc__.splitlines()[1])
    with cc.ContentCards(config(args)) as controller:
        controller.refresh()
        coupons = [c for c in controller.convert(cc.Registry(Coupon)) if isinstance(c, Coupon)]
        print(f"Checkout: cart total {CART_TOTAL:.2f}")
        total = CART_TOTAL
        for coupon in coupons:
            coupon.log_impression()  # shown, or would have been: both are logged
            if coupon.control:
                print("  a control variant: nothing shown (impression logged for the "
                      "experiment)")
                continue
            discounted = total * (1 - coupon.percent / 100)
            print(f"  {coupon.card_id}: {coupon.percent:g}% off with code {coupon.code} "
                  f"-> {discounted:.2f}")
            result = coupon.log_click()  # the shopper applied it
            print(f"  {'':<{len(coupon.card_id)}}  applied; "
                  f"{'click logged' if result else result.reason}")
            total = discounted
        print(f"To pay: {total:.2f}")
        print(f"Events recorded: {controller.pending_events()} "
              f"(coupon badge: {controller.unviewed_count('coupon_code')} unread)")
        if args.server:
            print(f"Events delivered to the server: {controller.flush_events().delivered}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
