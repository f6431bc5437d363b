"""Relative paths are resolved once, when the controller opens: a process that changes its
working directory afterwards still refreshes from, stores into and delivers events to the
directory it opened in, and leaves nothing in the new one. The same scenario as
``test_relative_paths`` in Tests/c/test_config.c; Swift's
``ConfigurationTests.relativePathsAreResolvedAtOpen`` checks the resolution without a chdir."""

from __future__ import annotations

import os
from typing import Any

import pytest

import contentcards as cc


def test_a_change_of_directory_after_open_moves_nothing(tmp_path: Any, sample_feed: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    # The images point at port 1 of the loopback (refused at once: no network), and their
    # prefetch is waited for.
    with open(sample_feed, encoding="utf-8") as f:
        feed = f.read().replace("https://cdn.example.com/", "http://127.0.0.1:1/")
    (home / "feed.json").write_text(feed, encoding="utf-8")
    monkeypatch.chdir(home)
    with cc.ContentCards(user_id="u-1", refresh_tokens=0, storage_path="store",
                         source={"file": "feed.json"}, events={"file": "events.jsonl"},
                         event_flush_interval_seconds=0, images={}) as c:
        os.chdir(elsewhere)
        c.refresh(10)
        assert c.count() == 10
        assert c.log_feed_displayed().recorded
        c.flush_events(10)
        c.change_user("u-2")
        assert c.diagnostics().storage_path == str(home / "store")
        c.wait_for_images(10)
    assert (home / "events.jsonl").exists()
    assert (home / "store" / "contentcards.sqlite").exists()
    assert list(elsewhere.iterdir()) == []
