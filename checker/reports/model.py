"""The report: what every check found, per bundle. Renderers read it; nothing here runs a check.

Each part is written as JSON-shaped data by `to_dict` and read back as itself by `from_dict` (from a report file
checked against schemas/report.schema.json, whose shape it trusts): `X.from_dict(x.to_dict()) == x`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from checker.findings import PIECES, Finding, Severity, printable_text
from checker.reports.parts.answers import AnswerChange, CaseAnswers
from checker.reports.parts.changes import Changes
from checker.reports.parts.engines import Adapter as Adapter
from checker.reports.parts.engines import Fingerprint as Fingerprint
from checker.reports.parts.gains import Gain
from checker.reports.parts.judged import Diagnosis, TaskStatistics
from checker.reports.parts.placement import Placement, PlatformRecord, Usability
from checker.reports.parts.reused import Reused
from checker.reports.parts.runs import JudgedShard, Validation
from checker.reports.parts.settings import DeclaredSetting, declared_settings
from checker.reports.parts.values import (
    JsonValue,
    each_string,
    figure,
    figures,
    json_value,
    mappings,
    number,
    printable_tree,
)
from checker.reports.parts.values import json_figures as json_figures  # the JSON form's figures, read from here too

NOT_CHECKED = "not checked"  # a piece no check reached: neither present nor missing


def _tallies(raw: Any) -> dict[str, list[int]] | None:
    if not isinstance(raw, Mapping):
        return None
    return {str(name): [int(n) for n in counts] for name, counts in raw.items()}


@dataclass
class RuleResult:
    """One rule judged over every case of one graph."""

    output: str
    check: str
    params: dict[str, JsonValue]  # as the manifest writes them, defaults filled in
    passed: bool
    pass_rate: float
    min_pass_rate: float
    worst_case: str | None
    measured: float | None
    threshold: float | None
    would_pass_at: float | None
    # Which way the threshold points: "max" means smaller measured figures are better.
    direction: str = "max"
    cases: dict[str, float | None] = field(default_factory=dict)
    note: str | None = None
    line: int | None = None
    # Per case, why it has no figure or failed beside it; and whether any case compared an element.
    # With `cases` they let shard reports be joined into the whole set's result (reports.merge).
    case_notes: dict[str, str] = field(default_factory=dict)
    compared: bool = True
    # A variant's rule in a shard: its per-case figures at the export and transform boundaries, so that the
    # merged rule can say which boundary broke it.
    boundaries: dict[str, dict[str, float | None]] | None = None
    tags: list[str] = field(default_factory=list)  # the slice judged: cases with any of these tags (none: all)
    statistics: TaskStatistics | None = None  # a task rule's counts and confidence interval (compare.task)
    # A task rule's counts per case ([items, hits, other_hits, lost, gained]), so that shards merge exactly.
    tallies: dict[str, list[int]] | None = None
    answer: str | None = None  # a rule on an answer (docs/answers.md): the answer's name (`output` repeats it)

    def to_dict(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "check": self.check,
            "params": self.params,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "min_pass_rate": self.min_pass_rate,
            "worst_case": self.worst_case,
            "measured": self.measured,
            "threshold": self.threshold,
            "would_pass_at": self.would_pass_at,
            "direction": self.direction,
            "cases": self.cases,
            **({"note": self.note} if self.note else {}),
            **({"line": self.line} if self.line is not None else {}),
            **({"case_notes": self.case_notes} if self.case_notes else {}),
            **({} if self.compared else {"compared": False}),
            **({"boundaries": self.boundaries} if self.boundaries is not None else {}),
            **({"tags": self.tags} if self.tags else {}),
            **({"statistics": self.statistics.to_dict()} if self.statistics is not None else {}),
            **({"tallies": self.tallies} if self.tallies is not None else {}),
            **({"answer": self.answer} if self.answer is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuleResult:
        line = data.get("line")
        boundaries = data.get("boundaries")
        return cls(
            output=str(data["output"]),
            check=str(data["check"]),
            params={str(k): json_value(v) for k, v in data["params"].items()},
            passed=bool(data["passed"]),
            pass_rate=float(figure(data["pass_rate"]) or 0.0),
            min_pass_rate=float(data.get("min_pass_rate", 1.0)),
            worst_case=data.get("worst_case"),
            measured=figure(data.get("measured")),
            threshold=figure(data.get("threshold")),
            would_pass_at=figure(data.get("would_pass_at")),
            direction=str(data.get("direction", "max")),
            cases=figures(data.get("cases")),
            note=data.get("note"),
            line=line if isinstance(line, int) else None,
            case_notes=dict(data.get("case_notes") or {}),
            compared=bool(data.get("compared", True)),
            boundaries=None if boundaries is None else {str(k): figures(v) for k, v in boundaries.items()},
            tags=[str(t) for t in data.get("tags") or []],
            statistics=TaskStatistics.from_dict(stats)
            if isinstance(stats := data.get("statistics"), Mapping)
            else None,
            tallies=_tallies(data.get("tallies")),
            answer=str(answer) if (answer := data.get("answer")) is not None else None,
        )


@dataclass
class Comparison:
    """One graph judged against one set of expected outputs."""

    graph: str  # "baseline" or a variant's name
    against: str  # "reference" or "baseline"
    rules: list[RuleResult] = field(default_factory=list)
    skipped: str | None = None  # why it was not judged; None when it was
    diagnosis: Diagnosis | None = None  # where a failed variant leaves the baseline (compare.divergence)
    # Cases judged here whose files have comparison.case errors: a judgement resting on them is no pass.
    case_errors: list[str] = field(default_factory=list)
    changes: list[AnswerChange] = field(default_factory=list)  # answers that changed under this graph (bounded)

    @property
    def status(self) -> str:
        if self.skipped is not None:
            return "not_assessed"
        return "pass" if all(r.passed for r in self.rules) and not self.case_errors else "fail"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "graph": self.graph,
            "against": self.against,
            "status": self.status,
            "rules": [r.to_dict() for r in self.rules],
        }
        if self.skipped is not None:
            out["skipped"] = self.skipped
        if self.case_errors:
            out["case_errors"] = self.case_errors
        if self.diagnosis is not None:
            out["diagnosis"] = self.diagnosis.to_dict()
        if self.changes:
            out["changes"] = [c.to_dict() for c in self.changes]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        diagnosis = data.get("diagnosis")
        return cls(
            graph=str(data["graph"]),
            against=str(data["against"]),
            rules=[RuleResult.from_dict(r) for r in mappings(data.get("rules"))],
            skipped=data.get("skipped"),
            diagnosis=Diagnosis.from_dict(diagnosis) if isinstance(diagnosis, Mapping) else None,
            case_errors=[str(c) for c in data.get("case_errors") or []],
            changes=[AnswerChange.from_dict(c) for c in mappings(data.get("changes"))],
        )


@dataclass(frozen=True)
class NotRun:
    """A check that could not run here (a library missing, a step this checker cannot reproduce): shown in the
    verdict, failed by --strict, refused by `checker pack`."""

    check: str  # what did not run, as a reader names it: "image fidelity"
    reason: str  # why, with the remedy where there is one: "needs Pillow ([image])"

    def to_dict(self) -> dict[str, str]:
        return {"check": self.check, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NotRun:
        return cls(check=str(data["check"]), reason=str(data["reason"]))


def not_run_line(not_run: Sequence[NotRun]) -> str:
    """'1 check not run: image fidelity: needs Pillow ([image])', as the renderers word it; empty when all ran."""
    if not not_run:
        return ""
    noun = "check" if len(not_run) == 1 else "checks"
    shown = "; ".join(f"{n.check}: {n.reason}" for n in not_run[:3])
    more = f"; and {len(not_run) - 3} more" if len(not_run) > 3 else ""
    return f"{len(not_run)} {noun} not run: {shown}{more}"


@dataclass
class RuntimeSet:
    """The comparison repeated in one runtime environment (a package version and an execution provider)."""

    runtime: str  # its label, e.g. "onnxruntime 1.17.0 CPU"
    package: str
    version: str
    provider: str
    comparisons: list[Comparison] = field(default_factory=list)
    error: str | None = None  # why nothing could be judged there (install or load), or None
    # With --platform: the CPU class, how it ran (native or emulated) and the CPU features the worker saw.
    platform: PlatformRecord | None = None
    optimization_level: str | None = None  # with --opt-levels / runtime.optimization_levels: the level judged
    fingerprint: Fingerprint | None = None  # an engine's or device's platform: what it ran in

    @property
    def status(self) -> str:
        if self.error is not None:
            return "fail"
        if any(c.status != "pass" for c in self.comparisons):  # a graph it could not load or judge fails it
            return "fail"
        return "pass" if self.comparisons else "not_assessed"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "runtime": self.runtime,
            "package": self.package,
            "version": self.version,
            "provider": self.provider,
            "status": self.status,
            "comparisons": [c.to_dict() for c in self.comparisons],
        }
        if self.error is not None:
            out["error"] = self.error
        if self.platform is not None:
            out["platform"] = self.platform.to_dict()
        if self.optimization_level is not None:
            out["optimization_level"] = self.optimization_level
        if self.fingerprint is not None:
            out["fingerprint"] = self.fingerprint.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuntimeSet:
        return cls(
            runtime=str(data["runtime"]),
            package=str(data.get("package", "")),
            version=str(data.get("version", "")),
            provider=str(data.get("provider", "")),
            comparisons=[Comparison.from_dict(c) for c in mappings(data.get("comparisons"))],
            error=data.get("error"),
            platform=PlatformRecord.from_dict(platform)
            if isinstance(platform := data.get("platform"), Mapping)
            else None,
            optimization_level=data.get("optimization_level"),
            fingerprint=Fingerprint.from_dict(fp) if isinstance(fp := data.get("fingerprint"), Mapping) else None,
        )


def for_runtime(label: str, finding: Finding) -> Finding:
    """A finding of a comparison run in another runtime: its message and details name that runtime."""
    return Finding(
        finding.id, finding.severity, f"[{label}] {finding.message}", finding.file, finding.line,
        {**finding.details, "runtime": label},
    )  # fmt: skip


@dataclass
class BundleReport:
    """Everything `checker verify` concluded about one bundle."""

    path: str
    manifest_file: str | None = None
    name: str | None = None
    version: str | None = None
    digest: str | None = None
    manifest_digest: str | None = None  # the manifest judged (canonical data, release.digest left out)
    manifest_sha256: str | None = None  # the manifest's text as judged (manifest.load.text_digest)
    # What the verdict rests on besides the digest: the list, release.digest, the files nobody names
    # (checks/folder.py); an attestation records it, and a verdict store reuses a verdict only for the same.
    folder: dict[str, Any] | None = None
    pieces: dict[str, bool] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    validation: Validation | None = None  # the validation command's run (--run-validation)
    not_run: list[NotRun] = field(default_factory=list)
    piece_digests: dict[str, str] = field(default_factory=dict)  # piece -> digest, to tell what changed
    runtimes: list[RuntimeSet] = field(default_factory=list)
    gains: list[Gain] = field(default_factory=list)  # each variant's size and speed (checks.gain)
    placement: list[Placement] = field(default_factory=list)  # each provider's nodes (checks.placement)
    usability: list[Usability] = field(default_factory=list)  # NNAPI/CoreML offline coverage (checks.usability)
    shard: JudgedShard | None = None  # with --shard K/N: which, and every case name of the whole set
    merged_from: int | None = None  # how many reports `checker report merge` joined into this one
    # A verdict read from a verdict store instead of judged here (checker.store): the stored attestation's
    # entry, date, signer, result and figures. None when the bundle was judged in this run.
    reused: Reused | None = None
    duration_s: float | None = None  # how long its verification took here (`checker plan` balances by it)
    answers: list[CaseAnswers] = field(default_factory=list)  # each case's decoded reference answers (bounded)
    settings: list[DeclaredSetting] = field(default_factory=list)  # what weakens a check beside the rules

    def add(self, findings: Iterable[Finding]) -> None:
        self.findings.extend(findings)

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity is severity)

    def status(self, strict: bool = False) -> str:
        if self.count(Severity.ERROR) or (strict and (self.count(Severity.WARNING) or self.not_run)):
            return "fail"
        return "pass"

    def piece_states(self) -> dict[str, str]:
        """Each of the seven pieces, "present", "missing", or "not checked" when no check reached it (a manifest
        that did not parse), in the contract's order (as the report writes it)."""
        return {p: NOT_CHECKED if p not in self.pieces else "present" if self.pieces[p] else "missing" for p in PIECES}

    def to_dict(self, strict: bool = False) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "path": self.path,
            "manifest": self.manifest_file,
            "status": self.status(strict),
            "digest": self.digest,
            "pieces": self.piece_states(),
            "findings": [f.to_dict() for f in self.findings],
            "comparisons": [c.to_dict() for c in self.comparisons],
            "not_run": [n.to_dict() for n in self.not_run],
            **({"validation": self.validation.to_dict()} if self.validation is not None else {}),
            **({"manifest_digest": self.manifest_digest} if self.manifest_digest else {}),
            **({"manifest_sha256": self.manifest_sha256} if self.manifest_sha256 else {}),
            **({"folder": dict(self.folder)} if self.folder is not None else {}),
            **({"piece_digests": dict(self.piece_digests)} if self.piece_digests else {}),
            **({"runtimes": [r.to_dict() for r in self.runtimes]} if self.runtimes else {}),
            **({"gains": [g.to_dict() for g in self.gains]} if self.gains else {}),
            **({"placement": [p.to_dict() for p in self.placement]} if self.placement else {}),
            **({"usability": [u.to_dict() for u in self.usability]} if self.usability else {}),
            **({"shard": self.shard.to_dict()} if self.shard is not None else {}),
            **({"merged_from": self.merged_from} if self.merged_from is not None else {}),
            **({"reused": self.reused.to_dict()} if self.reused is not None else {}),
            **({"duration_s": self.duration_s} if self.duration_s is not None else {}),
            **({"answers": [a.to_dict() for a in self.answers]} if self.answers else {}),
            **({"settings": [s.to_dict() for s in self.settings]} if self.settings else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BundleReport:
        """The bundle as `checker verify` reported it (its status is worked out again from its findings)."""
        pieces = data.get("pieces") or {}
        validation, shard = data.get("validation"), data.get("shard")
        return cls(
            path=str(data["path"]),
            manifest_file=data.get("manifest"),
            name=data.get("name"),
            version=data.get("version"),
            digest=data.get("digest"),
            manifest_digest=data.get("manifest_digest"),
            manifest_sha256=data.get("manifest_sha256"),
            folder=dict(folder) if isinstance(folder := data.get("folder"), Mapping) else None,
            pieces={p: pieces[p] == "present" for p in PIECES if pieces.get(p) in ("present", "missing")},
            findings=[Finding.from_dict(f) for f in mappings(data.get("findings"))],
            comparisons=[Comparison.from_dict(c) for c in mappings(data.get("comparisons"))],
            validation=Validation.from_dict(validation) if isinstance(validation, Mapping) else None,
            not_run=[NotRun.from_dict(n) for n in mappings(data.get("not_run"))],
            piece_digests={str(k): str(v) for k, v in (data.get("piece_digests") or {}).items()},
            runtimes=[RuntimeSet.from_dict(r) for r in mappings(data.get("runtimes"))],
            shard=JudgedShard.from_dict(shard) if isinstance(shard, Mapping) else None,
            merged_from=data.get("merged_from"),
            settings=declared_settings(data.get("settings")),
            gains=[Gain.from_dict(g) for g in mappings(data.get("gains"))],
            placement=[Placement.from_dict(p) for p in mappings(data.get("placement"))],
            usability=[Usability.from_dict(u) for u in mappings(data.get("usability"))],
            reused=Reused.from_dict(reused) if isinstance(reused := data.get("reused"), Mapping) else None,
            duration_s=number(data.get("duration_s")),
            answers=[CaseAnswers.from_dict(a) for a in mappings(data.get("answers"))],
        )


@dataclass
class Report:
    """The verdict on every bundle of one run."""

    checker_version: str
    bundles: list[BundleReport] = field(default_factory=list)
    strict: bool = False
    environment: dict[str, str] = field(default_factory=dict)
    # Free context for renderers (the GitHub code records the pull request and head commit here).
    context: dict[str, Any] = field(default_factory=dict)
    # When the checks ran; None for a report joined from others (`checker report merge`), which ran none itself.
    created_at: str | None = field(default_factory=lambda: datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    changes: Changes | None = None  # against a base report (checker.reports.diff)

    @property
    def status(self) -> str:
        return "fail" if any(b.status(self.strict) == "fail" for b in self.bundles) else "pass"

    @property
    def failed(self) -> int:
        return sum(1 for b in self.bundles if b.status(self.strict) == "fail")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "report_version": 1,
            "checker_version": self.checker_version,
            "status": self.status,
            "strict": self.strict,
            **({"created_at": self.created_at} if self.created_at is not None else {}),
            "environment": self.environment,
            "bundles": [b.to_dict(self.strict) for b in self.bundles],
        }
        if self.context:
            out["context"] = self.context
        if self.changes is not None:
            out["changes"] = self.changes.to_dict()
        return dict(printable_tree(out))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        """A report read back as itself, as `checker verify` made it (its status is worked out again)."""
        changes = data.get("changes")
        return cls(
            checker_version=str(data["checker_version"]),
            bundles=[BundleReport.from_dict(b) for b in mappings(data.get("bundles"))],
            strict=bool(data.get("strict", False)),
            environment={str(k): str(v) for k, v in (data.get("environment") or {}).items()},
            context=dict(data.get("context") or {}),
            created_at=data.get("created_at"),
            changes=Changes.from_dict(changes) if isinstance(changes, Mapping) else None,
        )

    def printable(self) -> Report:
        """The report with every string as a renderer can write it, as `to_dict` writes it: a lone surrogate
        (from a file name that is not UTF-8) becomes `\\udXXX` (printable_tree)."""
        return each_string(self, writable)


def writable(text: str) -> str:
    """`text` as UTF-8 can encode it (printable_text), the very string when it is already so (most are)."""
    return text if text.isascii() else printable_text(text)
