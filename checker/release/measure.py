"""Measuring a new variant as `checker verify` judges it: the verify stages run on the manifest with the variant
added, its rules set so that every case is measured and none fails, and each rule's per-case figures read back.

The baseline's own rules and the other variants are left out of that run: a variant is judged only when the graph
it derives from passes, and the figures must not depend on thresholds that are not being proposed. With
--platform, the same run repeats on each CPU class asked for (natively, or under qemu), as verify's platforms stage
does: onnxruntime's int8 kernels differ by CPU, so a threshold measured on one may not hold on another.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.checks.cases import cases_stage
from checker.checks.comparison import compare_stage
from checker.checks.files import files_stage
from checker.checks.graph import graph_stage
from checker.context import Case, Context, Options
from checker.errors import Error
from checker.findings import Finding
from checker.manifest import written
from checker.manifest.load import Manifest
from checker.manifest.model.build import build
from checker.manifest.model.root import Spec
from checker.platforms.features import this_machine
from checker.reports.model import Comparison
from checker.reports.parts.placement import PlatformRecord

GROUPS = {"reference": "rules", "baseline": "drift_rules"}
_SHOWN = 6


class MeasureError(Error):
    """The variant cannot be measured on the bundle's cases."""


@dataclass(frozen=True)
class Figure:
    case: str
    value: float
    where: str  # the machine or platform it was measured on


@dataclass
class Measured:
    """Each measuring rule's per-case figures, by (group, index), over every place the run was made."""

    figures: dict[tuple[str, int], list[Figure]] = field(default_factory=dict)
    places: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # what the stages said along the way (warnings too)


@dataclass
class Prepared:
    """The bundle opened as verify opens it, with the new variant as its only one, up to its loaded cases."""

    ctx: Context
    found: list[Finding]

    @property
    def cases(self) -> list[Case]:
        return self.ctx.loaded_cases


def prepare(
    root: Path, data: Mapping[str, Any], file: str, variant: Mapping[str, Any], platforms: list[str]
) -> Prepared:
    """Open the bundle with `variant` in it; MeasureError when its baseline, variant or cases cannot be loaded."""
    provisional = copy.deepcopy(dict(data))
    provisional["comparison"] = {**written.block(provisional, "comparison"), "rules": []}
    # No rules yet (measure sets those it measures by), as the typed manifest needs a variant's rules stated.
    provisional["variants"] = [{**copy.deepcopy(dict(variant)), "derived_from": "baseline", "rules": []}]
    ctx = Context(root, Manifest(provisional, file), Options(platforms=list(platforms), gain_budget_s=0.0))
    found: list[Finding] = []
    for stage in (files_stage, graph_stage, cases_stage):
        found += list(stage(ctx))
    if provisional.get("answers"):  # the declared answers, for drift rules on them (release/proposal.py)
        from checker.checks.answers import answers_stage

        found += list(answers_stage(ctx))
    if ctx.graph is None or not ctx.cases or str(variant["name"]) in ctx.bad_graphs:
        raise MeasureError(_reasons("the variant cannot be measured on the bundle's cases", found))
    return Prepared(ctx, found)


def measure(prepared: Prepared, rules: list[dict[str, Any]], drift_rules: list[dict[str, Any]]) -> Measured:
    """The variant judged by these (measuring) rules on every case, here and on each platform asked for."""
    ctx, found = prepared.ctx, list(prepared.found)
    variant = ctx.data["variants"][0]
    variant["rules"], variant["drift_rules"] = rules, drift_rules
    ctx.spec = build(Spec, ctx.data)  # typed again: the stages that judge the variant read its rules there
    name = str(variant["name"])
    found += list(compare_stage(ctx))
    if ctx.options.platforms:
        from checker.checks.platforms import platforms_stage  # only --platform needs its workers

        found += list(platforms_stage(ctx))
        refused = [f for f in found if f.id == F.PLATFORM_NOT_RUN and f.severity is F.Severity.ERROR]
        if refused:
            raise MeasureError("; ".join(f.message for f in refused))
    measured = Measured(findings=found)
    here, _ = this_machine()
    _collect(measured, name, ctx.comparisons, f"this machine ({here})", found)
    for runtime_set in ctx.runtime_sets:
        where = _platform_words(runtime_set.platform) if runtime_set.platform else runtime_set.runtime
        if runtime_set.error:
            raise MeasureError(f"{where}: nothing could be measured there: {runtime_set.error}")
        _collect(measured, name, runtime_set.comparisons, where, found)
    if ctx.not_run:
        raise MeasureError("; ".join(f"{n.check} was not run: {n.reason}" for n in ctx.not_run))
    return measured


def _platform_words(platform: PlatformRecord) -> str:
    return platform.name + ("" if platform.how in ("", "native") else f" ({platform.how})")


def _collect(
    measured: Measured, name: str, comparisons: Iterable[Comparison], where: str, found: list[Finding]
) -> None:
    measured.places.append(where)
    mine = [c for c in comparisons if c.graph == name]
    for comparison in mine:
        if comparison.skipped is not None:
            raise MeasureError(_reasons(f"{where}: the variant was not judged: {comparison.skipped}", found))
        group = GROUPS[comparison.against]
        for index, result in enumerate(comparison.rules):
            failed = {case: note for case, note in result.case_notes.items() if result.cases.get(case) is None}
            if failed:
                shown = "; ".join(f"case '{c}': {n}" for c, n in list(failed.items())[:3])
                raise MeasureError(f"{where}: the variant's '{result.output}' cannot be measured: {shown}")
            figures = measured.figures.setdefault((group, index), [])
            figures += [Figure(case, float(value), where) for case, value in result.cases.items() if value is not None]


def _reasons(head: str, found: list[Finding]) -> str:
    errors = [f for f in found if f.severity is F.Severity.ERROR and f.id != F.DIGEST]
    shown = "; ".join(f"{f.id}: {f.message}" for f in errors[:_SHOWN])
    return f"{head}: {shown}" if shown else head
