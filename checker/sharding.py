"""Splitting a comparison set across jobs: a case belongs to shard K of N by a hash of its name.

The hash is SHA-256 of the UTF-8 name, so every job (and every Python, platform and run) draws the same
split without talking to the others; shard reports are joined back by `checker report merge`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_SPEC = re.compile(r"^\s*(\d{1,6})\s*/\s*(\d{1,6})\s*$")


class ShardError(ValueError):
    """A --shard value that is not K/N with 1 <= K <= N."""


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def holds(self, name: str) -> bool:
        return shard_of(name, self.count) == self.index

    def label(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(name: str, count: int) -> int:
    """The 1-based shard of a case name among `count` shards."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def parse_shard(text: str) -> Shard:
    match = _SPEC.match(text)
    if not match:
        raise ShardError(f"'{text}' is not K/N (e.g. 2/4)")
    index, count = int(match.group(1)), int(match.group(2))
    if not 1 <= index <= count:
        raise ShardError(f"'{text}': K must lie between 1 and N")
    return Shard(index, count)
