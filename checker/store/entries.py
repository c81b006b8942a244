"""A verdict store's folder: one file per verdict, `<digest>.<key>.intoto.jsonl`, holding the signed attestation
`checker verify --attest` wrote for that bundle digest under that key (`store/key.py`).

The folder is untrusted input (restored from a cache or an artifact, or synced from anywhere): only names of
that form are read or removed, never through a link, each file at most MAX_ENTRY_BYTES, and at most
MAX_LISTED names are looked at. What a file says is judged by `store/lookup.py`, never here.

Pruning, after a run adds entries: an entry not written or reused for MAX_AGE_DAYS days goes; then, while the
store holds more than MAX_ENTRIES entries or MAX_STORE_BYTES bytes, the least recently used go first (a reused
entry's time is set to its use, where the folder can be written).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from checker.errors import UsageError

ENTRY = re.compile(r"^([0-9a-f]{64})\.([0-9a-f]{64})\.intoto\.jsonl$")
SUFFIX = ".intoto.jsonl"
MAX_ENTRY_BYTES = 1 << 20  # a statement of a bundle with many runtimes and platforms is a few KiB
MAX_ENTRIES = 20_000
MAX_STORE_BYTES = 256 << 20
MAX_AGE_DAYS = 30
MAX_LISTED = 200_000  # names read from the folder: a folder of millions is not read to its end


class EntryProblem(Exception):
    """An entry that cannot be read as one: a link, not a regular file, too large, unreadable."""


@dataclass
class Entry:
    name: str
    digest: str
    key: str
    size: int
    used: float  # its modification time: when it was written or last reused


@dataclass
class Store:
    """The store's folder and, read once, the entries it holds by digest."""

    folder: Path
    entries: dict[str, dict[str, Entry]] = field(default_factory=dict)  # digest -> key -> entry
    truncated: bool = False  # more names than MAX_LISTED: the rest were not looked at

    @classmethod
    def open(cls, folder: Path) -> Store:
        """The store at `folder`; an absent folder is an empty store (a first run makes it when it adds)."""
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"--reuse {folder}: not a folder (a verdict store is a folder of attestations)")
        store = cls(folder)
        store._list()
        return store

    def _list(self) -> None:
        try:
            scan = os.scandir(self.folder)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise UsageError(f"--reuse {self.folder}: cannot be read ({exc.strerror or exc})") from None
        with scan:
            for count, item in enumerate(scan):
                if count >= MAX_LISTED:
                    self.truncated = True
                    break
                found = ENTRY.match(item.name)
                if found is None:
                    continue  # not an entry: never read, never removed
                try:
                    info = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                entry = Entry(item.name, found.group(1), found.group(2), info.st_size, info.st_mtime)
                self.entries.setdefault(entry.digest, {})[entry.key] = entry

    def name(self, digest: str, key: str) -> str:
        return f"{digest}.{key}{SUFFIX}"

    def find(self, digest: str, key: str) -> Entry | None:
        return self.entries.get(digest, {}).get(key)

    def others(self, digest: str, key: str) -> list[Entry]:
        """Entries of the same digest under other keys, the most recently used first."""
        found = [e for k, e in self.entries.get(digest, {}).items() if k != key]
        return sorted(found, key=lambda e: e.used, reverse=True)

    def read(self, entry: Entry) -> str:
        """The entry's text: a regular file (not a link), at most MAX_ENTRY_BYTES, UTF-8."""
        path = self.folder / entry.name
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise EntryProblem(f"cannot be opened ({exc.strerror or exc}; a link is never followed)") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise EntryProblem("is not a regular file")
            if info.st_size > MAX_ENTRY_BYTES:
                raise EntryProblem(f"is {info.st_size} bytes; an entry is at most {MAX_ENTRY_BYTES}")
            data = os.read(fd, MAX_ENTRY_BYTES + 1)
        except OSError as exc:
            raise EntryProblem(f"cannot be read ({exc.strerror or exc})") from None
        finally:
            os.close(fd)
        if len(data) > MAX_ENTRY_BYTES:
            raise EntryProblem(f"is larger than {MAX_ENTRY_BYTES} bytes")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise EntryProblem("is not UTF-8 text") from None

    def used(self, entry: Entry) -> None:
        """Mark a reused entry as used now, for pruning; a store restored read-only is left as it is."""
        with contextlib.suppress(OSError, NotImplementedError):
            os.utime(self.folder / entry.name, follow_symlinks=False)

    def add(self, digest: str, key: str, text: str) -> Path:
        """Write one entry, atomically (another run reading the store sees the old file or the new, whole)."""
        if len(text.encode("utf-8")) > MAX_ENTRY_BYTES:
            raise UsageError(f"--reuse {self.folder}: an attestation of {digest} is larger than an entry may be")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            target = self.folder / self.name(digest, key)
            # A new file of a new name (O_EXCL): a link planted in the store under a guessable name is never
            # written through.
            fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(text)
                Path(name).replace(target)  # replaces a link of that name, never what it points to
            except BaseException:
                Path(name).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise UsageError(f"--reuse {self.folder}: cannot add an entry ({exc.strerror or exc})") from None
        info = os.lstat(target)
        entry = Entry(target.name, digest, key, info.st_size, info.st_mtime)
        self.entries.setdefault(digest, {})[key] = entry
        return target

    def prune(
        self, now: float | None = None, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_STORE_BYTES
    ) -> list[str]:
        """Remove what the pruning rule (the module's doc) removes; returns the names removed."""
        now = time.time() if now is None else now
        every = sorted((e for keys in self.entries.values() for e in keys.values()), key=lambda e: e.used)
        cutoff = now - MAX_AGE_DAYS * 86_400
        removed = [e for e in every if e.used < cutoff]
        kept = [e for e in every if e.used >= cutoff]
        total = sum(e.size for e in kept)
        while kept and (len(kept) > max_entries or total > max_bytes):
            oldest = kept.pop(0)
            total -= oldest.size
            removed.append(oldest)
        gone = []
        for entry in removed:
            try:
                (self.folder / entry.name).unlink()  # a link is removed itself, never what it points to
            except FileNotFoundError:
                pass
            except OSError:
                continue
            self.entries.get(entry.digest, {}).pop(entry.key, None)
            gone.append(entry.name)
        return gone

    def size(self) -> tuple[int, int]:
        """(entries, bytes) held."""
        every = [e for keys in self.entries.values() for e in keys.values()]
        return len(every), sum(e.size for e in every)
