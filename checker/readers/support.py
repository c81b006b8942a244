"""The measured onnxruntime -> newest IR and opset table, shipped as package data."""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

PATCHES_TRIED = 40  # a specifier may start inside a minor line (>=1.17.3): any patch of it counts


@dataclass(frozen=True)
class Release:
    minor: str  # "1.17"
    max_ir: int
    max_opset: int
    max_ml_opset: int | None
    source: str

    @property
    def version(self) -> Version:
        return Version(self.minor)

    def loads(self, ir: int, opset: int | None, ml_opset: int | None) -> bool:
        if ir > self.max_ir or (opset is not None and opset > self.max_opset):
            return False
        return ml_opset is None or self.max_ml_opset is None or ml_opset <= self.max_ml_opset


@functools.cache
def releases() -> tuple[Release, ...]:
    """Oldest first."""
    text = resources.files("checker").joinpath("data/onnxruntime-support.csv").read_text(encoding="utf-8")
    rows = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    out = [
        Release(
            r["onnxruntime"],
            int(r["max_ir"]),
            int(r["max_opset"]),
            int(r["max_ml_opset"]) if r["max_ml_opset"] else None,
            r["source"],
        )
        for r in rows
    ]
    return tuple(sorted(out, key=lambda r: r.version))


def admitted(spec: SpecifierSet) -> list[Release]:
    """The table's releases of which some patch release satisfies the specifier, oldest first."""
    return [
        r
        for r in releases()
        if any(spec.contains(f"{r.minor}.{p}", prereleases=False) for p in _patches_to_try(spec, r.version))
    ]


def _patches_to_try(spec: SpecifierSet, minor: Version) -> list[int]:
    """The patches of `minor` (below PATCHES_TRIED) at which the specifier's answer can change: the patches
    it names and their neighbours, and 0. The patches it admits form runs that begin and end there, so trying
    these answers as trying all forty would, at a tenth of the cost."""
    patches = {0}
    for clause in spec:
        try:
            named = Version(clause.version.removesuffix(".*"))
        except InvalidVersion:
            continue
        if named.release[:2] == minor.release[:2]:
            patch = named.release[2] if len(named.release) > 2 else 0  # 1.17 is 1.17.0
            patches.update((patch - 1, patch, patch + 1))
    return sorted(p for p in patches if 0 <= p < PATCHES_TRIED)


def oldest_loading(ir: int, opset: int | None, ml_opset: int | None) -> Release | None:
    return next((r for r in releases() if r.loads(ir, opset, ml_opset)), None)
