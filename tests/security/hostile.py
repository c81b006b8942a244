"""Helpers for the hostile-input tests: edit a copied example bundle's manifest, read a report's findings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from checker.reports.model import BundleReport

Edit = Callable[[dict[str, Any]], None]


def rewrite_manifest(root: Path, edit: Edit) -> None:
    """Apply `edit` to the manifest's data; the digests go, since the files are about to change."""
    data = yaml.safe_load((root / "bundle.yaml").read_text(encoding="utf-8"))
    data["release"].pop("digest", None)
    edit(data)
    (root / "bundle.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def ids(report: BundleReport) -> list[str]:
    return [f.id for f in report.findings]


def messages(report: BundleReport, fid: str) -> list[str]:
    return [f.message for f in report.findings if f.id == fid]
