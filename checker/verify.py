"""`checker verify`: open each bundle, run the stages in order, collect every finding into one report."""

from __future__ import annotations

import dataclasses
import os
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from checker import __version__
from checker import findings as F
from checker.bundle.layout import MANIFEST_NAMES
from checker.bundle.opening import open_bundle
from checker.checks.attestation import attestation_stage, rerun_stage
from checker.checks.cases import cases_stage, shard_stage
from checker.checks.comparison import compare_stage
from checker.checks.completeness import completeness_stage
from checker.checks.files import files_stage
from checker.checks.gain import gain_stage
from checker.checks.graph import graph_stage
from checker.checks.labelorder import label_order_stage
from checker.checks.labels import labels_stage, reference_labels_stage
from checker.checks.ranges import range_stage, superseded
from checker.checks.references import references_stage
from checker.checks.roots import with_roots
from checker.checks.runtime import runtime_stage
from checker.checks.signature import signature_stage, stale_signature_stage
from checker.checks.tokenizer import tokenizer_stage
from checker.checks.validation import validation_stage
from checker.context import Context, Options
from checker.errors import Error
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.canonical import manifest_digest
from checker.manifest.load import load_manifest
from checker.manifest.pieces import piece_digests
from checker.manifest.strength import settings
from checker.readers.environment import environment
from checker.reports.model import BundleReport, Report
from checker.reports.parts.runs import JudgedShard
from checker.reports.parts.settings import DeclaredSetting
from checker.workers import pool_size, start_method, worker_options

Stage = Callable[[Context], Iterable[Finding]]


def fidelity_stage(ctx: Context) -> Iterable[Finding]:
    """The fidelity stage (checks/fidelity.py), imported only for a bundle with raw inputs to rebuild: the
    preprocessing it loads costs a small bundle a good part of its run."""
    if not any(case.raw for case in ctx.rebuilt_cases()):
        return ()
    from checker.checks.fidelity import fidelity_stage as stage

    return stage(ctx)


def envelope_stage(ctx: Context) -> Iterable[Finding]:
    """The envelope stage (checks/envelope.py), imported only for a manifest that declares comparison.envelope."""
    comparison = ctx.spec.comparison
    if comparison is None or not comparison.envelope or not ctx.options.run_comparison:
        return ()
    from checker.checks.envelope import envelope_stage as stage

    return stage(ctx)


def answers_stage(ctx: Context) -> Iterable[Finding]:
    """The answers stage (checks/answers.py), imported only for a bundle that declares answers."""
    if not ctx.spec.answers:
        return ()
    from checker.checks.answers import answers_stage as stage

    return stage(ctx)


def runtimes_stage(ctx: Context) -> Iterable[Finding]:
    """The runtimes stage (checks/runtimes.py), imported only when --runtime asks for one: its environments
    and worker processes are nothing a plain run needs to load."""
    if not ctx.options.runtimes:
        return ()
    from checker.checks.runtimes import runtimes_stage as stage

    return stage(ctx)


def platforms_stage(ctx: Context) -> Iterable[Finding]:
    """The platforms stage (checks/platforms.py), imported only when the manifest declares a platform or
    --platform asks for one: declared platforms are judged by default."""
    if not ctx.options.platforms and not views.platforms(ctx.spec.runtime):
        return ()
    from checker.checks.platforms import platforms_stage as stage

    return stage(ctx)


def devices_stage(ctx: Context) -> Iterable[Finding]:
    """The devices stage (checks/devices.py): a --device-outputs folder judged as a platform, or a declared
    device shown as not run; imported only when there is either."""
    devices = [p for p in views.platforms(ctx.spec.runtime) if p.engine == "device"]
    if not ctx.options.device_outputs and not devices:
        return ()
    from checker.checks.devices import devices_stage as stage

    return stage(ctx)


def optlevels_stage(ctx: Context) -> Iterable[Finding]:
    """The optimization-levels stage (checks/optlevels.py), imported only when levels are declared or asked for."""
    if not ctx.options.opt_levels and not views.optimization_levels(ctx.spec.runtime):
        return ()
    from checker.checks.optlevels import optlevels_stage as stage

    return stage(ctx)


def placement_stage(ctx: Context) -> Iterable[Finding]:
    """The placement stage (checks/placement.py) and the NNAPI/CoreML usability check (checks/usability.py),
    imported only when the manifest or --providers declares an execution provider."""
    if not ctx.options.providers and not views.providers(ctx.spec.runtime):
        return ()
    from checker.checks.placement import placement_stage as stage
    from checker.checks.usability import usability_stage

    return (*stage(ctx), *usability_stage(ctx))


# The order of the contract. Completeness runs on any manifest that parsed; the rest only on one that
# matches the schema: references inside the manifest, paths and digests, the graph, labels, runtime,
# the cases (and the labels of a dynamic axis counted on them, before --shard keeps a share of them),
# the comparison inputs (range, fidelity), the comparison (baseline, then variants), and the validation
# command.
ALWAYS: tuple[Stage, ...] = (completeness_stage, signature_stage)
AFTER_SCHEMA: tuple[Stage, ...] = (
    references_stage,
    files_stage,
    stale_signature_stage,
    attestation_stage,
    graph_stage,
    labels_stage,
    runtime_stage,
    cases_stage,
    reference_labels_stage,
    label_order_stage,
    shard_stage,
    tokenizer_stage,
    range_stage,
    fidelity_stage,
    answers_stage,
    compare_stage,
    envelope_stage,
    rerun_stage,
    gain_stage,
    placement_stage,
    runtimes_stage,
    platforms_stage,
    devices_stage,
    optlevels_stage,
    validation_stage,
)


def verify_paths(paths: list[str], options: Options) -> Report:
    bundles, env = _verify_all([Path(p) for p in paths], options)
    return Report(checker_version=__version__, strict=options.strict, environment=env, bundles=bundles)


def _verify_all(paths: list[Path], options: Options) -> tuple[list[BundleReport], dict[str, str]]:
    """Every bundle's report, in the order given, and the versions they were verified with; bundles run side
    by side in worker processes when `options.jobs` and the memory allow it, with the same reports as one
    after another. The versions are read after the bundles, from the modules they loaded (installed_version),
    by the process that loaded them."""
    workers = pool_size(paths, options.jobs)
    if workers <= 1:
        return [verify_bundle(path, options) for path in paths], environment()
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context(start_method())
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        bundles = list(pool.map(verify_bundle, paths, [worker_options(options, workers)] * len(paths)))
        # This process never loaded onnx or onnxruntime: asking the installed distributions would cost it a
        # tenth of a second that a worker, which has them loaded, does not spend.
        return bundles, pool.submit(environment).result()


def verify_bundle(path: Path, options: Options, hashed: Mapping[str, str] | None = None) -> BundleReport:
    """The bundle's report. A bug in a stage does not lose the report: it ends with an `internal.error`
    finding naming the stage, after the findings of the stages that ran (the CLI then exits 3). `hashed`: the
    bundle's files as a verdict store's look-up hashed them just before, in this process (bundle-relative path
    -> sha256), so that its run reads each for its digest once, and its digest is the one it was looked up by."""
    run = _Run(path=str(path))
    started = time.perf_counter()
    try:
        _verify(path, options, run, hashed or {})
        run.stage = "report"
        report = run.report()
    except Error:
        raise  # a usage error (not a bundle at all): exit 2, as before
    except Exception as exc:  # a bug: reported in the report, not only in a traceback
        run.findings.append(internal_error(run.stage, exc))
        run.finished = False
        report = run.report()
    # What the bundle cost here, for `checker plan` to balance a matrix by; it says nothing about the verdict.
    report.duration_s = round(time.perf_counter() - started, 3)
    return report


@dataclass
class _Run:
    """One bundle's verification as it goes: the stage running now (for an internal error to name), what the
    stages found, and the context they fill. The report is built from it once, when the run ends."""

    path: str
    stage: str = "open"
    manifest_file: str | None = None
    findings: list[Finding] = field(default_factory=list)
    ctx: Context | None = None
    finished: bool = False  # every stage ran: the report holds what only a whole run has

    def report(self) -> BundleReport:
        report = BundleReport(path=self.path, manifest_file=self.manifest_file, findings=_digest_last(self.findings))
        ctx = self.ctx
        if ctx is None:
            return report
        release = ctx.data.get("release")  # as parsed: a manifest the schema refused still names its release
        release = release if isinstance(release, dict) else {}
        report.name, report.version = _text(release.get("name")), _text(release.get("version"))
        report.manifest_digest = manifest_digest(ctx.data)
        report.manifest_sha256 = ctx.manifest.text_sha256
        # What the stages that ran left (a later stage's bug does not lose it).
        report.pieces = dict(ctx.pieces)
        report.comparisons = list(ctx.comparisons)
        report.digest = ctx.digest
        report.folder = ctx.folder
        if not self.finished:
            return report
        report.piece_digests = piece_digests(ctx.data, ctx.root, ctx.digests)
        report.settings = [
            DeclaredSetting(s.key, s.value, s.way, ctx.manifest.line(*s.keys)) for s in settings(ctx.data)
        ]
        report.validation = ctx.validation
        report.runtimes = list(ctx.runtime_sets)
        report.gains = list(ctx.gains)
        report.placement = list(ctx.placement)
        report.usability = list(ctx.usability)
        shard = ctx.options.shard
        if shard is not None:
            report.shard = JudgedShard(shard.index, shard.count, list(ctx.case_order or []))
        report.not_run = list(ctx.not_run)
        if ctx.answers is not None:
            report.answers = list(ctx.answers.shown)
        return report


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


def _verify(path: Path, options: Options, run: _Run, hashed: Mapping[str, str]) -> None:
    with open_bundle(path) as opened:
        run.path = opened.display
        run.findings += opened.findings
        if opened.manifest_path is None:
            if not opened.findings:
                run.findings.append(F.error(F.FILE_MISSING, f"{path}: no manifest ({', '.join(MANIFEST_NAMES)}) found"))
            return
        run.manifest_file = opened.manifest_path.name
        run.stage = "manifest"
        manifest, found = load_manifest(opened.manifest_path)
        run.findings += found
        if manifest is None:
            return
        run.ctx = Context(opened.root, manifest, options, hashed=dict(hashed))
        try:
            _run(run.ctx, run, schema_ok=not found)
        finally:
            run.findings = unrooted(run.findings, opened.root)


def unrooted(findings: list[Finding], root: Path) -> list[Finding]:
    """The findings with this machine's absolute paths taken out of their messages: a library's message
    (onnxruntime's `Load model from /home/runner/work/…/model.onnx failed`) names the file bundle-relative,
    else workspace-relative, else under `~`. The action posts these messages in a public comment."""
    cuts = [(str(root.resolve()) + os.sep, ""), (str(Path.cwd()) + os.sep, ""), (str(Path.home()) + os.sep, "~/")]
    cuts = sorted((c for c in cuts if len(c[0]) > 1), key=lambda c: len(c[0]), reverse=True)

    def clean(text: str) -> str:
        for prefix, put in cuts:
            text = text.replace(prefix, put)
        return text

    return [f if clean(f.message) == f.message else dataclasses.replace(f, message=clean(f.message)) for f in findings]


def _stage_name(stage: Stage) -> str:
    return getattr(stage, "__name__", "stage").removesuffix("_stage")


def _run(ctx: Context, run: _Run, schema_ok: bool) -> None:
    for stage in ALWAYS:
        run.stage = _stage_name(stage)
        run.findings += stage(ctx)
    if not schema_ok:
        run.findings.append(
            F.info(
                F.STAGE_SKIPPED,
                "the later checks did not run: the manifest does not match the "
                "schema (see the manifest.schema findings)",
                ctx.manifest.file,
            )
        )
        return
    for stage in AFTER_SCHEMA:
        run.stage = _stage_name(stage)
        run.findings += stage(ctx)
    if not ctx.comparisons and not any(f.id == F.COMPARISON_NOT_RUN for f in run.findings):
        run.findings.append(
            F.error(
                F.COMPARISON_NOT_RUN,
                "the comparison was not run, so the release has not shown that it reproduces its reference outputs",
            )
        )
    run.finished = True


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _digest_last(findings: list[Finding]) -> list[Finding]:
    """The findings in stage order, but a stale digest after the substantive errors: after an edit, the digest
    says only that something changed since the lock, and listed first it invited `checker lock` ahead of the
    error the edit made."""
    kept = with_roots(superseded(findings))
    return [f for f in kept if f.id != F.DIGEST] + [f for f in kept if f.id == F.DIGEST]
