"""Small words and marks the sections share: numbers, plurals, status marks, code spans, a bundle's title."""

from __future__ import annotations

from typing import TypeGuard

from checker.findings import Severity
from checker.render.escape import text
from checker.reports.model import BundleReport

VERDICTS = {"pass": "passed", "fail": "failed", "not_assessed": "not assessed"}
MARK = {"pass": "✅", "fail": "❌", "not_assessed": "⏭️"}


def _bundle_name(bundle: BundleReport) -> str:
    return text(bundle.name or bundle.path or "(unnamed bundle)", 120)


def bundle_title(bundle: BundleReport) -> str:
    version = f" {text(bundle.version, 80)}" if bundle.version else ""
    return f"{_bundle_name(bundle)}{version}"


def severity_count(bundle: BundleReport, severity: Severity) -> int:
    return bundle.count(severity)


def spaced(part: str, limit: int = 300) -> str:
    """Escaped text that keeps the spaces at its ends (they separate it from the code spans around it)."""
    lead = " " if part[:1].isspace() else ""
    trail = " " if part[-1:].isspace() and part.strip() else ""
    return lead + text(part, limit) + trail


def code(value: str) -> str:
    """Text inside a code span: Markdown and HTML are not read there; keep it one printable line."""
    return "".join(c for c in value if c.isprintable() and c != "`")[:300] or " "


def is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool) or not is_number(value):
        return text(value, 40)
    if isinstance(value, int):
        return str(value)
    return f"{value:.4g}"


def status_mark(status: object) -> str:
    return MARK.get(str(status), "❔")


def plural(n: int, one: str, many: str | None = None) -> str:
    return one if n == 1 else (many or one + "s")


def count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {plural(n, one, many)}"
