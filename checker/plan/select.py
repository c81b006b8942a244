"""Which bundles must run, chosen by content: a bundle runs when a file it names or its manifest's data changed
since REF (`--changed-since`), or when no trusted verdict of its key is stored (`--reuse`); a file no bundle
names (a README) makes none run, and a file several name (a shared labels file) makes each of them run.

With both, a bundle runs when it changed and has no stored verdict; an unchanged one without a stored verdict
is left out (its base's verdict stands), and a changed one whose new key has a stored verdict (a revert, a
verdict stored by another pull request's trusted run) is reused."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker.bundle.opening import is_archive, open_bundle
from checker.context import Options
from checker.errors import Error
from checker.manifest import written
from checker.manifest.canonical import field_digests
from checker.manifest.load import load_manifest
from checker.manifest.yamltree import parse_marked, plain_data
from checker.plan.changes import Changes
from checker.reports.model import BundleReport
from checker.signing.attest import StatementChecker
from checker.store.entries import Store
from checker.store.identity import named_paths
from checker.store.key import Keys, Machine
from checker.store.lookup import look_up

RUN, REUSED, UNCHANGED = "run", "reused", "unchanged"


@dataclass
class Planned:
    """One bundle's place in the plan: whether it runs, why, and what it is known to cost."""

    path: str
    state: str  # RUN, REUSED or UNCHANGED
    why: str
    cases: int = 1
    cost: float | None = None  # seconds its verification took, from an earlier report or its stored verdict
    report: BundleReport | None = None  # a reused verdict's report


@dataclass
class Lookup:
    """The verdict store and whom it trusts, with what the key needs of this machine."""

    store: Store
    keys: Keys
    checker: StatementChecker


def select(paths: list[str], options: Options, changes: Changes | None, costs: Mapping[str, float]) -> list[Planned]:
    lookup = None
    if options.reuse is not None and options.reuse_trust is not None:
        lookup = Lookup(
            Store.open(options.reuse), Keys.of(Machine.here(), options), StatementChecker(options.reuse_trust)
        )
    return [_one(path, options, changes, lookup, costs) for path in paths]


def _one(
    path: str, options: Options, changes: Changes | None, lookup: Lookup | None, costs: Mapping[str, float]
) -> Planned:
    cost = costs.get(os.path.normpath(path))
    if lookup is not None:
        looked = look_up(Path(path), options, lookup.keys, lookup.store, lookup.checker)
        if looked.report is not None:
            return Planned(
                path, REUSED, "a trusted stored verdict", cost=looked.report.duration_s, report=looked.report
            )
    changed, cases = _changed(Path(path), changes)
    if changed is None:
        return Planned(path, UNCHANGED, f"unchanged since {changes.ref if changes else ''}", cases, cost)
    if lookup is not None:
        changed = f"no trusted stored verdict{'; ' + changed if changes is not None else ''}"
    return Planned(path, RUN, changed, cases, cost)


def _changed(path: Path, changes: Changes | None) -> tuple[str | None, int]:
    """(why the bundle counts as changed, or None when it does not; how many cases it has)."""
    try:
        with open_bundle(path) as opened:
            if opened.manifest_path is None:
                return "no manifest could be read: it runs, and says why", 1
            manifest, _ = load_manifest(opened.manifest_path)
            if manifest is None:
                return "its manifest does not parse: it runs, and says why", 1
            cases = max(1, len(written.cases(manifest.data)))
            if changes is None:
                return "", cases
            if is_archive(path):
                return (f"changed since {changes.ref}" if changes.touches(*_names(path)) else None), cases
            return _changed_files(opened.root, opened.manifest_path, manifest.data, changes), cases
    except (Error, OSError, AttributeError, TypeError):
        return "it cannot be opened: it runs, and says why", 1


def _names(path: Path) -> tuple[Path, Path]:
    """A file as its bundle names it (its folder resolved, its own name kept: a link is a file to git) and
    its real path."""
    return Path(os.path.realpath(path.parent)) / path.name, Path(os.path.realpath(path))


def _changed_files(root: Path, manifest_path: Path, data: dict[str, Any], changes: Changes) -> str | None:
    files = named_paths(data, root)
    if files is None:
        return "a named file is missing or leaves the bundle: it runs, and says why"
    real_root = Path(os.path.realpath(root))
    touched = sorted(rel for rel, real in files.items() if changes.touches(real_root / rel, real))
    if changes.touches(*_names(manifest_path)) and _data_changed(manifest_path, data, changes):
        touched.insert(0, f"{manifest_path.name} (its data)")
    if not touched:
        return None
    shown = ", ".join(touched[:5]) + (f" and {len(touched) - 5} more" if len(touched) > 5 else "")
    return f"changed since {changes.ref}: {shown}"


def _data_changed(manifest_path: Path, data: dict[str, Any], changes: Changes) -> bool:
    """Whether the manifest's data differs from REF's: a comment or a reformatting changes no field."""
    before = changes.at_ref(manifest_path)
    if before is None:
        return True  # new since REF
    try:
        tree, _ = parse_marked(before.decode("utf-8"), manifest_path.name)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return True
    if tree is None:
        return True
    return field_digests(plain_data(tree)) != field_digests(data)
