"""`checker verify`: open each bundle, run the stages in order, collect every finding into one report."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from pathlib import Path

from checker import __version__
from checker import findings as F
from checker.bundle import open_bundle
from checker.context import Context, Options
from checker.environment import environment
from checker.findings import Finding
from checker.manifest import MANIFEST_NAMES, load_manifest
from checker.report import BundleReport, Report

Stage = Callable[[Context], Iterable[Finding]]

# The order of the contract: completeness (and the manifest's references to itself), paths and digests,
# the graph, labels, runtime, the cases, the comparison inputs (range, fidelity), the comparison
# (baseline, then variants), the validation command.
STAGES = (
    "checker.checks.completeness:completeness_stage",
    "checker.checks.references:references_stage",
    "checker.checks.files:files_stage",
    "checker.checks.graph:graph_stage",
    "checker.checks.labels:labels_stage",
    "checker.checks.runtime:runtime_stage",
    "checker.checks.cases:cases_stage",
    "checker.checks.ranges:range_stage",
    "checker.checks.fidelity:fidelity_stage",
    "checker.compare.judge:compare_stage",
    "checker.checks.validation:validation_stage",
)


def load_stage(ref: str) -> Stage | None:
    module, _, name = ref.partition(":")
    try:
        stage: Stage = getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return None  # a stage this build does not ship
        raise
    return stage


def verify_paths(paths: list[str], options: Options) -> Report:
    report = Report(checker_version=__version__, strict=options.strict, environment=environment())
    for path in paths:
        report.bundles.append(verify_bundle(Path(path), options))
    return report


def verify_bundle(path: Path, options: Options) -> BundleReport:
    with open_bundle(path) as opened:
        report = BundleReport(path=opened.display)
        report.add(opened.findings)
        if opened.manifest_path is None:
            if not opened.findings:
                report.add([F.error(F.FILE_MISSING, f"{path}: no manifest ({', '.join(MANIFEST_NAMES)}) found")])
            return report
        report.manifest_file = opened.manifest_path.name
        manifest, found = load_manifest(opened.manifest_path)
        report.add(found)
        if manifest is None:
            return report
        ctx = Context(opened.root, manifest, options)
        _run(ctx, report, schema_ok=not found)
        return report


def _run(ctx: Context, report: BundleReport, schema_ok: bool) -> None:
    release = ctx.data.get("release")
    release = release if isinstance(release, dict) else {}
    report.name, report.version = _text(release.get("name")), _text(release.get("version"))
    for ref in STAGES:
        stage = load_stage(ref)
        if stage is None:
            continue
        report.add(_dedupe(report.findings, stage(ctx)))
        report.pieces = dict(ctx.pieces)
        if not schema_ok:
            report.add(
                [
                    F.info(
                        F.STAGE_SKIPPED,
                        "the later checks did not run: the manifest does not match the "
                        "schema (see the manifest.schema findings)",
                        ctx.manifest.file,
                    )
                ]
            )
            return
    report.digest = ctx.extra.get("digest")
    report.comparisons = list(ctx.extra.get("comparisons", []))
    report.validation = ctx.extra.get("validation")
    if not report.comparisons and not any(f.id == F.COMPARISON_NOT_RUN for f in report.findings):
        report.add(
            [
                F.error(
                    F.COMPARISON_NOT_RUN,
                    "the comparison was not run, so the release has not shown that it reproduces its reference outputs",
                )
            ]
        )


def _dedupe(existing: list[Finding], new: Iterable[Finding]) -> list[Finding]:
    """Two stages may observe the same fact (a missing provider); report it once."""
    seen = {(f.id, f.message) for f in existing}
    out = []
    for finding in new:
        if (finding.id, finding.message) not in seen:
            seen.add((finding.id, finding.message))
            out.append(finding)
    return out


def _text(value: object) -> str | None:
    return None if value is None else str(value)
