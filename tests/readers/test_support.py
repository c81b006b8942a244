"""The releases a runtime.version specifier admits: trying only the patches where the answer can change agrees
with trying all forty patches of every release."""

from __future__ import annotations

import random

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from checker.readers.support import PATCHES_TRIED, admitted, releases


def _every_patch(spec: SpecifierSet) -> list[str]:
    return [
        r.minor
        for r in releases()
        if any(spec.contains(f"{r.minor}.{p}", prereleases=False) for p in range(PATCHES_TRIED))
    ]


def test_admitted_agrees_with_trying_every_patch() -> None:
    known = [r.minor for r in releases()]
    # The first, a middle and the last release, and minors outside the table: _patches_to_try treats every
    # minor alike, and admitted() still runs over every release.
    minors = [known[0], known[len(known) // 2], known[-1], "0.9", "1.99", "2"]
    tails = ["", ".0", ".1", ".3", ".39", ".40", ".1.2", "rc1", ".3.post1"]
    clauses = [f"{op}{m}{t}" for m in minors for op in (">=", "<=", ">", "<", "==", "!=", "~=") for t in tails]
    clauses += [f"{op}{m}.*" for m in minors for op in ("==", "!=")]
    rng = random.Random(7)
    specs = clauses + [",".join(rng.sample(clauses, k)) for k in (2, 3) for _ in range(100)]
    checked = 0
    for text in specs:
        try:
            spec = SpecifierSet(text)
        except InvalidSpecifier:
            continue
        checked += 1
        assert [r.minor for r in admitted(spec)] == _every_patch(spec), text
    assert checked > 500
