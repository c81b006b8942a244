"""What changed between two reports of the same bundles (made by checker.reports.diff; the report holds it as
`changes`): per bundle its verdicts, the pieces whose digest differs, each rule's base and head figure and
edits, the findings new and resolved, and the cases added and removed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checker.reports.parts.values import JsonValue, integer, json_value, mapping, mappings, strings, text

# A rule's state since the base: "added", "removed" or "edited" (a parameter changed); None: the same rule.
RuleState = str | None

PASSES_ONLY = "passes only because"  # a loosening the head's pass rests on: its sentence begins so


@dataclass
class Edit:
    """One parameter of a rule whose value differs, and whether that made the rule easier to pass."""

    param: str
    base: JsonValue
    head: JsonValue
    effect: str  # "loosened", "tightened" or "changed" (a parameter whose direction no one declared)

    def to_dict(self) -> dict[str, Any]:
        return {"param": self.param, "base": self.base, "head": self.head, "effect": self.effect}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Edit:
        return cls(str(data["param"]), json_value(data.get("base")), json_value(data.get("head")), str(data["effect"]))


@dataclass
class RuleChange:
    """One rule of the head (or a removed one of the base), paired with its base by identity: graph, side,
    output, check and slice."""

    graph: str | None
    against: str | None
    output: str | None
    check: str | None
    base: float | None  # the measured figure at the base and at the head (None: not measured, or no such rule)
    head: float | None
    delta: float | None
    crossed: str | None  # "now fails", "now passes" or None
    params: dict[str, JsonValue] = field(default_factory=dict)
    direction: str = "max"  # "min": larger figures are better
    threshold: float | None = None
    base_threshold: float | None = None
    moved: bool | None = None  # by more than its printing shows; None in an older checker's report
    base_passed: bool | None = None
    head_passed: bool | None = None
    tags: list[str] = field(default_factory=list)
    line: int | None = None  # where the rule is written: the head's, or the base's for a removed one
    rule: RuleState = None
    edits: list[Edit] = field(default_factory=list)
    effect: str | None = None  # for an added, removed or edited rule: "loosened", "tightened" or "changed"

    @property
    def name(self) -> str:
        """graph, side, output, check and slice: what names a rule across two reports."""
        side = " (vs baseline)" if self.against == "baseline" else ""
        tags = f" [{', '.join(self.tags)}]" if self.tags else ""
        return f"{self.graph or '?'}{side} {self.output or '?'} {self.check or '?'}{tags}"

    @property
    def changed(self) -> bool:
        """Edited, added or removed, its figure moved by more than its printing shows, or it crossed its
        threshold."""
        moved = self.moved if self.moved is not None else self.delta not in (0, 0.0, None)  # an older checker's
        return bool(self.crossed or self.rule or moved or (self.base is None) != (self.head is None))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "graph": self.graph,
            "against": self.against,
            "output": self.output,
            "check": self.check,
            "params": self.params,
            "direction": self.direction,
            "threshold": self.threshold,
            "base_threshold": self.base_threshold,
            "base": self.base,
            "head": self.head,
            "delta": self.delta,
            **({"moved": self.moved} if self.moved is not None else {}),
            "base_passed": self.base_passed,
            "head_passed": self.head_passed,
            "crossed": self.crossed,
        }
        if self.tags:
            out["tags"] = self.tags
        if self.line is not None:
            out["line"] = self.line
        if self.rule is not None:
            out["rule"] = self.rule
        if self.edits:
            out["edits"] = [e.to_dict() for e in self.edits]
        if self.effect is not None:
            out["effect"] = self.effect
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuleChange:
        moved, was, now = data.get("moved"), data.get("base_passed"), data.get("head_passed")
        return cls(
            graph=text(data.get("graph")),
            against=text(data.get("against")),
            output=text(data.get("output")),
            check=text(data.get("check")),
            base=_number(data.get("base")),
            head=_number(data.get("head")),
            delta=_number(data.get("delta")),
            crossed=text(data.get("crossed")),
            params={str(k): json_value(v) for k, v in mapping(data.get("params")).items()},
            direction="min" if data.get("direction") == "min" else "max",
            threshold=_number(data.get("threshold")),
            base_threshold=_number(data.get("base_threshold")),
            moved=moved if isinstance(moved, bool) else None,
            base_passed=was if isinstance(was, bool) else None,
            head_passed=now if isinstance(now, bool) else None,
            tags=strings(data.get("tags")),
            line=integer(data.get("line")),
            rule=text(data.get("rule")),
            edits=[Edit.from_dict(e) for e in mappings(data.get("edits"))],
            effect=text(data.get("effect")),
        )


def _number(value: object) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass
class FoundChange:
    """A finding new or resolved since the base, as the diff lists it (its details left out)."""

    id: str
    severity: str | None = None
    message: str | None = None
    file: str | None = None
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        for key in ("severity", "message", "file", "line"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FoundChange:
        return cls(
            str(data["id"]),
            text(data.get("severity")),
            text(data.get("message")),
            text(data.get("file")),
            integer(data.get("line")),
        )


@dataclass
class Findings:
    new: list[FoundChange] = field(default_factory=list)
    resolved: list[FoundChange] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"new": [f.to_dict() for f in self.new], "resolved": [f.to_dict() for f in self.resolved]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Findings:
        return cls(
            [FoundChange.from_dict(f) for f in mappings(data.get("new"))],
            [FoundChange.from_dict(f) for f in mappings(data.get("resolved"))],
        )


@dataclass
class Cases:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"added": self.added, "removed": self.removed}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cases:
        return cls(strings(data.get("added")), strings(data.get("removed")))


@dataclass
class Verdicts:
    """The bundle's verdict at the base and at the head (None: no such bundle there)."""

    base: str | None
    head: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "head": self.head}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdicts:
        return cls(text(data.get("base")), text(data.get("head")))


@dataclass
class Compared:
    """What changed in a bundle both reports hold."""

    pieces: list[str] = field(default_factory=list)  # the pieces (and `rules`) whose digest differs
    rules: list[RuleChange] = field(default_factory=list)
    findings: Findings = field(default_factory=Findings)
    cases: Cases = field(default_factory=Cases)
    loosened: list[str] = field(default_factory=list)  # every way the rules got easier to pass, one sentence each

    def to_dict(self) -> dict[str, Any]:
        return {
            "pieces": self.pieces,
            "rules": [r.to_dict() for r in self.rules],
            "findings": self.findings.to_dict(),
            "cases": self.cases.to_dict(),
            "loosened": self.loosened,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Compared:
        return cls(
            strings(data.get("pieces")),
            [RuleChange.from_dict(r) for r in mappings(data.get("rules"))],
            Findings.from_dict(mapping(data.get("findings"))),
            Cases.from_dict(mapping(data.get("cases"))),
            strings(data.get("loosened")),
        )


@dataclass
class BundleChange:
    """One bundle of either report: "new" (only the head has it), "removed" (only the base), "changed" or
    "unchanged"; `compared` says what changed when both have it."""

    path: str
    name: str | None
    state: str
    status: Verdicts
    compared: Compared | None = None

    @property
    def changed_rules(self) -> list[RuleChange]:
        return [r for r in self.compared.rules if r.changed] if self.compared else []

    @property
    def loosened(self) -> list[str]:
        return self.compared.loosened if self.compared else []

    @property
    def passes_by_loosening(self) -> list[str]:
        """The loosenings without which the head would fail ("passes only because ..."): no green for these."""
        return [said for said in self.loosened if said.startswith(PASSES_ONLY)]

    def to_dict(self) -> dict[str, Any]:
        out = {"path": self.path, "name": self.name, "state": self.state, "status": self.status.to_dict()}
        return {**out, **(self.compared.to_dict() if self.compared is not None else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BundleChange:
        compared = any(k in data for k in ("pieces", "rules", "findings", "cases", "loosened"))
        return cls(
            path=str(data["path"]),
            name=text(data.get("name")),
            state=str(data["state"]),
            status=Verdicts.from_dict(mapping(data.get("status"))),
            compared=Compared.from_dict(data) if compared else None,
        )


@dataclass
class Base:
    """The base report the head is compared with."""

    checker_version: str | None = None
    status: str | None = None
    created_at: str | None = None
    commit: str | None = None  # the base's head commit, when the GitHub action recorded one

    def to_dict(self) -> dict[str, Any]:
        return {
            "checker_version": self.checker_version,
            "status": self.status,
            "created_at": self.created_at,
            "commit": self.commit,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Base:
        return cls(*(text(data.get(k)) for k in ("checker_version", "status", "created_at", "commit")))


@dataclass
class Changes:
    """The head report against a base: one entry per bundle of either, the head's order first."""

    base: Base
    bundles: list[BundleChange] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base.to_dict(), "bundles": [b.to_dict() for b in self.bundles]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Changes:
        return cls(
            Base.from_dict(mapping(data.get("base"))),
            [BundleChange.from_dict(b) for b in mappings(data.get("bundles"))],
        )

    def by_path(self) -> dict[str, BundleChange]:
        return {b.path: b for b in self.bundles}
