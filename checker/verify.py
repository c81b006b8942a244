"""`checker verify`: open each bundle, run the stages in order, collect every finding into one report."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from checker import __version__
from checker import findings as F
from checker.bundle.opening import open_bundle
from checker.checks.cases import cases_stage
from checker.checks.comparison import compare_stage
from checker.checks.completeness import completeness_stage
from checker.checks.fidelity import fidelity_stage
from checker.checks.files import files_stage
from checker.checks.graph import graph_stage
from checker.checks.labels import labels_stage
from checker.checks.ranges import range_stage
from checker.checks.references import references_stage
from checker.checks.runtime import runtime_stage
from checker.checks.runtimes import runtimes_stage
from checker.checks.validation import validation_stage
from checker.context import Context, Options
from checker.errors import Error
from checker.findings import Finding
from checker.manifest.load import MANIFEST_NAMES, load_manifest
from checker.manifest.pieces import piece_digests
from checker.readers.environment import environment
from checker.report import BundleReport, Report

Stage = Callable[[Context], Iterable[Finding]]

# The order of the contract. Completeness runs on any manifest that parsed; the rest only on one that
# matches the schema: references inside the manifest, paths and digests, the graph, labels, runtime,
# the cases, the comparison inputs (range, fidelity), the comparison (baseline, then variants), and
# the validation command.
ALWAYS: tuple[Stage, ...] = (completeness_stage,)
AFTER_SCHEMA: tuple[Stage, ...] = (
    references_stage,
    files_stage,
    graph_stage,
    labels_stage,
    runtime_stage,
    cases_stage,
    range_stage,
    fidelity_stage,
    compare_stage,
    runtimes_stage,
    validation_stage,
)


def verify_paths(paths: list[str], options: Options) -> Report:
    report = Report(checker_version=__version__, strict=options.strict, environment=environment())
    for path in paths:
        report.bundles.append(verify_bundle(Path(path), options))
    return report


def verify_bundle(path: Path, options: Options) -> BundleReport:
    """The bundle's report. A bug in a stage does not lose the report: it ends with an `internal.error`
    finding naming the stage, after the findings of the stages that ran (the CLI then exits 3)."""
    report = BundleReport(path=str(path))
    where = _Where()
    try:
        _verify(path, options, report, where)
    except Error:
        raise  # a usage error (not a bundle at all): exit 2, as before
    except Exception as exc:  # a bug: reported in the report, not only in a traceback
        report.add([internal_error(where.stage, exc)])
    return report


@dataclass
class _Where:
    """The stage running now, for an internal error to name."""

    stage: str = "open"


def internal_error(stage: str, exc: BaseException) -> Finding:
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return F.error(
        F.INTERNAL_ERROR,
        f"internal error in the '{stage}' stage: {type(exc).__name__}: {exc} (a bug in the checker: the later "
        "stages did not run; please report it with the traceback)",
        stage=stage,
        traceback=trace[-MAX_TRACEBACK_CHARS:],
    )


MAX_TRACEBACK_CHARS = 8000


def _verify(path: Path, options: Options, report: BundleReport, where: _Where) -> None:
    with open_bundle(path) as opened:
        report.path = opened.display
        report.add(opened.findings)
        if opened.manifest_path is None:
            if not opened.findings:
                report.add([F.error(F.FILE_MISSING, f"{path}: no manifest ({', '.join(MANIFEST_NAMES)}) found")])
            return
        report.manifest_file = opened.manifest_path.name
        where.stage = "manifest"
        manifest, found = load_manifest(opened.manifest_path)
        report.add(found)
        if manifest is None:
            return
        ctx = Context(opened.root, manifest, options)
        _run(ctx, report, schema_ok=not found, where=where)


def _stage_name(stage: Stage) -> str:
    return getattr(stage, "__name__", "stage").removesuffix("_stage")


def _run(ctx: Context, report: BundleReport, schema_ok: bool, where: _Where) -> None:
    release = ctx.data.get("release")
    release = release if isinstance(release, dict) else {}
    report.name, report.version = _text(release.get("name")), _text(release.get("version"))
    for stage in ALWAYS:
        where.stage = _stage_name(stage)
        report.add(stage(ctx))
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
    for stage in AFTER_SCHEMA:
        where.stage = _stage_name(stage)
        report.add(stage(ctx))
        report.pieces = dict(ctx.pieces)
        report.comparisons = list(ctx.comparisons)  # what a later stage's bug leaves is still reported
        report.digest = ctx.digest
    where.stage = "report"
    report.digest = ctx.digest
    report.piece_digests = piece_digests(ctx.data, ctx.root, ctx.digests)
    report.comparisons = list(ctx.comparisons)
    report.validation = ctx.validation
    report.runtimes = list(ctx.runtime_sets)
    shard = ctx.options.shard
    if shard is not None:
        report.shard = {"index": shard.index, "count": shard.count, "cases": list(ctx.case_order or [])}
    if not report.comparisons and not any(f.id == F.COMPARISON_NOT_RUN for f in report.findings):
        report.add(
            [
                F.error(
                    F.COMPARISON_NOT_RUN,
                    "the comparison was not run, so the release has not shown that it reproduces its reference outputs",
                )
            ]
        )


def _text(value: object) -> str | None:
    return None if value is None else str(value)
