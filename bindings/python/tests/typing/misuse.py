"""Misuse that mypy --strict must reject: bindings/python/tests/test_typing.py runs mypy on this
file and expects an error on every line whose comment starts with "error", and on no other.
Each of these passed when ContentCards took **options: Any, diagnostics()
returned a dict, and so on. Never run."""

from __future__ import annotations

import contentcards as cc


def misuse(c: cc.ContentCards, card: cc.Card, update: cc.Update) -> None:
    cc.ContentCards(user_idd="u")  # error: a misspelt keyword argument
    cc.ContentCards(storage_path=42)  # error: a path is a str or os.PathLike
    cc.ContentCards(refresh_tokens="5")  # error: a number
    cc.ContentCards(source={"fil": "feed.json"})  # error: an endpoint is file, url or callback
    cc.ContentCards(events={"url": 5})  # error: a url is a str
    c.diagnostics()["userId"]  # error: diagnostics are a typed object
    c.card(42)  # error: a card is a str, a Card or a ContentCardable
    event_id: str = c.log_impression("x").event_id  # error: None when nothing was recorded
    card.title = "new"  # error: cards are immutable
    c.log_click("x").recorded = True  # error: results are immutable
    cc.library_path.upper()  # error: library_path() is a function, like library_version()
    update.reason == cc.UpdateReason.REFRESH or update.reason.upper_case()  # error: an enum
    c.refresh_in_background(timeout="soon")  # error: seconds
    stats: dict[str, object] = c.wait_for_images().to_json()  # every result has to_json()
    c.diagnostics().to_json().user_id  # error: to_json() is the library's JSON, a dict
    str(c.diagnostics().thread_starts_refused + 1) + str(stats)
