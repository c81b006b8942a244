"""`checker verify`: open each bundle, run the stages in order, collect every finding into one report."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from checker import __version__
from checker import findings as F
from checker.bundle.opening import open_bundle
from checker.checks.cases import cases_stage
from checker.checks.comparison import compare_stage
from checker.checks.completeness import completeness_stage
from checker.checks.files import files_stage
from checker.checks.graph import graph_stage
from checker.checks.labels import labels_stage
from checker.checks.ranges import range_stage
from checker.checks.references import references_stage
from checker.checks.runtime import runtime_stage
from checker.checks.validation import validation_stage
from checker.context import Context, Options
from checker.findings import Finding
from checker.manifest.load import MANIFEST_NAMES, load_manifest
from checker.manifest.pieces import piece_digests
from checker.readers.environment import environment
from checker.report import BundleReport, Report

Stage = Callable[[Context], Iterable[Finding]]


def fidelity_stage(ctx: Context) -> Iterable[Finding]:
    """The fidelity stage (checks/fidelity.py), imported only for a bundle with raw inputs to rebuild: the
    preprocessing it loads costs a small bundle a good part of its run."""
    if not any(case.raw for case in ctx.cases or []):
        return ()
    from checker.checks.fidelity import fidelity_stage as stage

    return stage(ctx)


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
    validation_stage,
)


def verify_paths(paths: list[str], options: Options) -> Report:
    bundles = [verify_bundle(Path(path), options) for path in paths]
    # After the bundles: the versions then come from the modules they loaded (see installed_version).
    return Report(checker_version=__version__, strict=options.strict, environment=environment(), bundles=bundles)


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
    for stage in ALWAYS:
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
        report.add(stage(ctx))
        report.pieces = dict(ctx.pieces)
    report.digest = ctx.digest
    report.piece_digests = piece_digests(ctx.data, ctx.root, ctx.digests)
    report.comparisons = list(ctx.comparisons)
    report.validation = ctx.validation
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
