"""The store's folder: only entry names are read or removed, never through a link, and old entries are pruned
by the documented rule (age first, then the least recently used beyond the bounds)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from checker.errors import UsageError
from checker.store.entries import MAX_AGE_DAYS, Store

DAY = 86_400.0


def name(n: int) -> tuple[str, str]:
    return f"{n:064x}", f"{n + 1000:064x}"


def put(store: Store, n: int, used: float, size: int = 10) -> Path:
    digest, key = name(n)
    path = store.add(digest, key, "x" * size)
    os.utime(path, (used, used))
    return path


def test_prune_drops_old_entries_then_the_least_recently_used(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "store")
    now = 1_000 * DAY
    for n in range(6):
        put(store, n, now - n * DAY)
    put(store, 9, now - (MAX_AGE_DAYS + 1) * DAY)  # not written or reused for longer than the rule keeps
    (tmp_path / "store" / "README").write_text("not an entry: never removed")
    reopened = Store.open(tmp_path / "store")
    assert reopened.size()[0] == 7
    gone = reopened.prune(now, max_entries=4)
    assert sorted(gone) == sorted(reopened.name(*name(n)) for n in (9, 5, 4))
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == sorted(
        [reopened.name(*name(n)) for n in range(4)] + ["README"]
    )
    assert reopened.prune(now, max_bytes=25) and Store.open(tmp_path / "store").size() == (2, 20)


def test_a_link_in_the_store_is_removed_itself_never_what_it_points_to(tmp_path: Path) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text("kept")
    folder = tmp_path / "store"
    folder.mkdir()
    digest, key = name(1)
    (folder / f"{digest}.{key}.intoto.jsonl").symlink_to(outside)
    os.utime(folder / f"{digest}.{key}.intoto.jsonl", (0, 0), follow_symlinks=False)
    store = Store.open(folder)
    assert store.prune(now=MAX_AGE_DAYS * 10 * DAY) == [f"{digest}.{key}.intoto.jsonl"]
    assert outside.read_text() == "kept"


def test_a_store_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageError):
        Store.open(tmp_path / "f")
    assert Store.open(tmp_path / "absent").size() == (0, 0)  # made when a run first adds to it


def test_adding_an_entry_never_writes_through_a_link_in_the_store(tmp_path: Path) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text("kept")
    folder = tmp_path / "store"
    folder.mkdir()
    digest, key = name(2)
    entry = folder / f"{digest}.{key}.intoto.jsonl"
    entry.symlink_to(outside)  # a link of the entry's own name: replaced, not followed
    for pid in range(1, 5):  # and links where a temporary file of a guessable name would go
        (folder / f".{entry.name}.{pid}.tmp").symlink_to(outside)
    Store.open(folder).add(digest, key, "{}\n")
    assert outside.read_text() == "kept"
    assert not entry.is_symlink() and entry.read_text() == "{}\n"
