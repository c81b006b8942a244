"""The split of --shard K/N: deterministic, a partition of the cases, and refused when malformed."""

from __future__ import annotations

import pytest

from checker.sharding import Shard, ShardError, parse_shard, shard_of


def test_every_case_lands_in_exactly_one_shard_and_always_the_same() -> None:
    names = [f"case-{i}" for i in range(400)] + ["ünïcode", "a/b/0", ""]
    for count in (1, 2, 3, 7):
        shards = [Shard(k, count) for k in range(1, count + 1)]
        homes = [[s.index for s in shards if s.holds(n)] for n in names]
        assert all(len(h) == 1 for h in homes)
        assert [h[0] for h in homes] == [shard_of(n, count) for n in names]
    sizes = [sum(1 for n in names if Shard(k, 4).holds(n)) for k in range(1, 5)]
    assert min(sizes) > 60, sizes  # a hash spreads them, not a split by position


def test_the_split_does_not_depend_on_the_process() -> None:
    # SHA-256 of the name, not Python's salted hash(): these values hold on every machine and run.
    assert [shard_of(n, 4) for n in ("meadow", "harbour", "forest", "dusk")] == [
        shard_of("meadow", 4),
        shard_of("harbour", 4),
        shard_of("forest", 4),
        shard_of("dusk", 4),
    ]
    import hashlib

    assert shard_of("meadow", 5) == int.from_bytes(hashlib.sha256(b"meadow").digest()[:8], "big") % 5 + 1


@pytest.mark.parametrize("text", ["0/3", "4/3", "1", "a/b", "1/0", "-1/2", "1/2/3"])
def test_malformed_shards_are_refused(text: str) -> None:
    with pytest.raises(ShardError):
        parse_shard(text)


def test_spaces_are_allowed() -> None:
    assert parse_shard(" 2 / 4 ") == Shard(2, 4)
