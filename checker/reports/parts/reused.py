"""A verdict read from a verdict store instead of judged in this run (checker.store): the stored attestation's
entry, date, signer, result and the figures it holds, and the one line every renderer words it with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checker.reports.parts.values import mappings, text

# A stored run's runtimes, comparisons and platforms: the few words of each the attestation keeps.
Facts = dict[str, str | None]


def _facts(value: object, keys: tuple[str, ...]) -> list[Facts]:
    return [{k: text(item.get(k)) for k in keys} for item in mappings(value)]


def _counts(value: object) -> dict[str, dict[str, int]]:
    """{severity: {finding id: count}}, only counts that are whole numbers."""
    if not isinstance(value, Mapping):
        return {}
    return {
        str(severity): {str(k): n for k, n in ids.items() if isinstance(n, int) and not isinstance(n, bool) and n >= 0}
        for severity, ids in value.items()
        if isinstance(ids, Mapping)
    }


RUNTIME_KEYS = ("runtime", "platform")
COMPARISON_KEYS = ("graph", "against", "status", "runtime")
PLATFORM_KEYS = ("name", "class", "how")


@dataclass
class Reused:
    """The report's `reused` part of one bundle."""

    entry: str
    key: str
    verified_at: str
    signed_by: str
    result: str  # the attestation's verificationResult: PASSED or FAILED
    checker_version: str = ""
    strict: bool = False
    runtimes: list[Facts] = field(default_factory=list)
    comparisons: list[Facts] = field(default_factory=list)
    platforms: list[Facts] = field(default_factory=list)
    findings: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.result == "PASSED"

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "key": self.key,
            "verified_at": self.verified_at,
            "signed_by": self.signed_by,
            "result": self.result,
            "checker_version": self.checker_version,
            "strict": self.strict,
            "runtimes": [dict(r) for r in self.runtimes],
            "comparisons": [dict(c) for c in self.comparisons],
            "platforms": [dict(p) for p in self.platforms],
            "findings": {s: dict(ids) for s, ids in self.findings.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reused:
        return cls(
            entry=str(data.get("entry") or ""),
            key=str(data.get("key") or ""),
            verified_at=str(data.get("verified_at") or ""),
            signed_by=str(data.get("signed_by") or ""),
            result=str(data.get("result") or ""),
            checker_version=str(data.get("checker_version") or ""),
            strict=data.get("strict") is True,
            runtimes=_facts(data.get("runtimes"), RUNTIME_KEYS),
            comparisons=_facts(data.get("comparisons"), COMPARISON_KEYS),
            platforms=_facts(data.get("platforms"), PLATFORM_KEYS),
            findings=_counts(data.get("findings")),
        )

    def line(self, signer: bool = True) -> str:
        """'reused: verdict of 2026-01-02T03:04:05Z, signed by the key attest.pub (passed; checker 0.2.0, 3
        comparisons passed, 1 warning)', as every renderer words a verdict read from a verdict store."""
        result = "passed" if self.passed else "failed"
        figures = [result, f"checker {self.checker_version}"] if self.checker_version else [result]
        failing = [c for c in self.comparisons if c.get("status") != "pass"]
        if self.comparisons and not failing:
            n = len(self.comparisons)
            figures.append(f"{n} comparison{'s' if n != 1 else ''} passed")
        figures += [f"{c.get('graph')} vs {c.get('against')}: {c.get('status')}" for c in failing[:3]]
        for severity in ("error", "warning"):
            ids = self.findings.get(severity, {})
            total = sum(ids.values())
            if total:
                figures.append(f"{total} {severity}{'s' if total != 1 else ''} ({', '.join(sorted(ids))})")
        platforms = [str(p.get("class")) for p in self.platforms if p.get("class")]
        if platforms:
            figures.append("on " + ", ".join(platforms))
        by = f", signed by {self.signed_by}" if signer else ""
        return f"reused: verdict of {self.verified_at}{by} ({'; '.join(figures)})"


def reused_counts(value: object) -> dict[str, dict[str, int]]:
    """The attestation's finding counts as the report keeps them."""
    return _counts(value)


def reused_facts(value: object, keys: tuple[str, ...]) -> list[Facts]:
    """The attestation's runtimes, comparisons or platforms as the report keeps them."""
    return _facts(value, keys)
