"""How much one rendering shows (Detail and the LEVELS it steps down through), what it left out (Cuts),
and the View the sections draw with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from checker.render.links import Links
from checker.reports.model import BundleReport
from checker.reports.parts.changes import BundleChange


@dataclass(frozen=True)
class Detail:
    """How much to show. Each step of LEVELS gives up something less important than the next."""

    charts: bool = True
    cases: bool = True
    info: bool = True
    passing_rules: bool = True
    warnings: int | None = None  # at most this many listed per bundle; None lists all
    errors: int | None = None
    message_chars: int = 600
    full_bundles: int | None = None  # bundles shown in full; the rest get their verdict line only


_FULL = Detail()
# First whole kinds of detail go, least important first; then as many findings and bundles as fit.
LEVELS = (
    _FULL,
    replace(_FULL, charts=False),
    replace(_FULL, charts=False, cases=False),
    replace(_FULL, charts=False, cases=False, info=False),
    replace(_FULL, charts=False, cases=False, info=False, passing_rules=False),
)
_LEAN = LEVELS[-1]
CAPS: tuple[tuple[str, Callable[[int], Detail]], ...] = (
    ("warnings", lambda n: replace(_LEAN, warnings=n, message_chars=300)),
    ("errors", lambda n: replace(_LEAN, warnings=0, errors=n, message_chars=200)),
    ("bundles", lambda n: replace(_LEAN, warnings=0, errors=5, message_chars=120, full_bundles=n)),
)


@dataclass
class Cuts:
    """What one rendering left out, to say so at its end."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, what: str, n: int = 1) -> None:
        if n > 0:
            self.counts[what] = self.counts.get(what, 0) + n

    def note(self, limit_name: str) -> str | None:
        if not self.counts:
            return None
        parts = ", ".join(f"{n} {what}" for what, n in self.counts.items())
        return f"> [!NOTE]\n> Shortened to fit {limit_name}: left out {parts}. The JSON report has them all."


@dataclass
class View:
    """What one rendering shows, and how: the detail level, what it left out, links, the changes by bundle."""

    detail: Detail
    cuts: Cuts
    links: Links | None
    changes: dict[str, BundleChange]  # by bundle path
    strict: bool = False  # warnings count as failures (--strict, `fail-on: warning`)
    statuses: dict[int, str] = field(default_factory=dict)  # each bundle's verdict, worked out once

    def status(self, bundle: BundleReport) -> str:
        """The bundle's verdict in this report ("pass" or "fail")."""
        if id(bundle) not in self.statuses:
            self.statuses[id(bundle)] = bundle.status(self.strict)
        return self.statuses[id(bundle)]

    def change(self, bundle: BundleReport) -> BundleChange | None:
        """What changed in the bundle since the base report, when there is one."""
        return self.changes.get(bundle.path)
