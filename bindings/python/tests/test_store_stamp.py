"""Cold start, through the binding: a clean close stamps the store as checked
(``contentcards.sqlite-checked``), the next open skips the full check, and a page damaged after
the close is still refused (the stamp no longer matches the file). The same scenario as
``damaged_after_a_clean_close`` in Tests/c/test_misuse.c and ``CheckStampTests`` in Swift."""

from __future__ import annotations

import os
from typing import Any

import pytest

import contentcards as cc


def test_a_page_damaged_after_a_clean_close_is_refused(tmp_path: Any, sample_feed: str) -> None:
    store = str(tmp_path / "store")
    with cc.ContentCards(user_id="u-1", storage_path=store, source={"file": sample_feed}, refresh_tokens=0) as c:
        c.refresh()
    assert os.path.exists(os.path.join(store, "contentcards.sqlite-checked"))
    assert os.path.getsize(os.path.join(store, "contentcards.sqlite-wal")) == 0
    with cc.ContentCards(user_id="u-1", storage_path=store, source={"file": sample_feed}, refresh_tokens=0) as c:
        assert c.count() == 10
    with open(os.path.join(store, "contentcards.sqlite"), "r+b") as f:
        f.seek(-4096, os.SEEK_END)
        f.write(b"\xff" * 4096)
    with pytest.raises(cc.StorageError, match="damaged"):
        cc.ContentCards(user_id="u-1", storage_path=store, source={"file": sample_feed}, refresh_tokens=0)
