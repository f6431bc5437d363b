#!/usr/bin/env python3
"""message_center.py: a message center.

Cards of class type ``message_full_page`` and ``message_webview`` become the app's message
objects (registered ContentCardable classes). Displaying a message logs its impression, a tap
is routed by class type (a full page or a web view) and logs a click, and a message is
dismissed; the unread badge is shown before and after.

    python3 examples/python/message_center.py [--server URL]
"""

from __future__ import annotations

from _common import config, parse_args

import contentcards as cc

MESSAGES = ("message_full_page", "message_webview")


class Message(cc.ContentCardable):
    """What every message has: a title for the inbox row."""

    def __init__(self, title: str) -> None:
        self.title = title

    def open(self) -> str:
        raise NotImplementedError


class FullPageMessage(Message):
    class_types = ("message_full_page",)

    def __init__(self, title: str, header: str, body: str) -> None:
        super().__init__(title)
        self.header, self.body = header, body

    @classmethod
    def from_card(cls, card: cc.Card) -> FullPageMessage | None:
        return cls(card.extras.get("message_title") or card.title or card.id,
                   card.extras.get("message_header", ""), card.card_description or "")

    def open(self) -> str:
        return f'full page "{self.header}": {self.body}'


class WebViewMessage(Message):
    class_types = ("message_webview",)

    def __init__(self, title: str, url: str | None, html: str | None) -> None:
        super().__init__(title)
        self.url, self.html = url, html

    @classmethod
    def from_card(cls, card: cc.Card) -> WebViewMessage | None:
        url = card.extras.get("message_url") or card.url
        html = card.extras.get("html")
        if not url and not html:
            return None  # nothing to show in a web view: declined
        return cls(card.extras.get("message_title") or card.title or card.id, url, html)

    def open(self) -> str:
        if self.url:
            return f"web view {self.url}"
        return f"web view with inline html ({len(self.html or '')} characters)"


def badge(controller: cc.ContentCards) -> str:
    unread = controller.unviewed_count(MESSAGES)
    return f"{unread} unread"


def main() -> int:
    args = parse_args(__doc__.splitlines()[1])
    registry = cc.Registry(FullPageMessage, WebViewMessage)
    with cc.ContentCards(config(args)) as controller:
        controller.refresh()
        messages = [m for m in controller.convert(registry) if isinstance(m, Message)]
        print(f"Inbox badge before: {badge(controller)}\n")

        print("Inbox")
        controller.log_feed_displayed()
        for message in messages:
            kind = message.class_type.replace("message_", "")
            print(f"  {message.card_id:<6}  {kind:<9}  {message.title}")
            message.log_impression()  # displayed: it counts as read
        print(f"\nInbox badge after display: {badge(controller)}\n")

        print("Tapping each message (routed by class type)")
        for message in messages:
            print(f"  {message.card_id:<6} -> {message.open()}")
            result = message.log_click()
            print(f"  {'':<6}    {'click logged' if result else result.reason}")

        first = messages[0]
        result = first.log_dismissal()
        print(f"\nDismissing {first.card_id}: {'dismissed' if result else result.reason}")
        print(f"Inbox: {controller.count(MESSAGES)} messages, badge {badge(controller)}")
        print(f"Events recorded: {controller.pending_events()}")
        if args.server:
            print(f"Events delivered to the server: {controller.flush_events().delivered}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
