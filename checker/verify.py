"""`checker verify`: open each bundle, run the stages in order, collect every finding into one report."""

from __future__ import annotations

import dataclasses
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from checker import __version__
from checker import findings as F
from checker.bundle.layout import MANIFEST_NAMES
from checker.bundle.opening import is_archive, open_bundle
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
from checker.checks.runtime import runtime_stage
from checker.checks.signature import signature_stage
from checker.checks.tokenizer import tokenizer_stage
from checker.checks.validation import validation_stage
from checker.context import Context, Options
from checker.errors import Error
from checker.findings import Finding
from checker.manifest.canonical import manifest_digest
from checker.manifest.load import load_manifest
from checker.manifest.pieces import piece_digests
from checker.readers.environment import environment
from checker.reports.model import BundleReport, Report

Stage = Callable[[Context], Iterable[Finding]]


def fidelity_stage(ctx: Context) -> Iterable[Finding]:
    """The fidelity stage (checks/fidelity.py), imported only for a bundle with raw inputs to rebuild: the
    preprocessing it loads costs a small bundle a good part of its run."""
    if not any(case.raw for case in ctx.cases or []):
        return ()
    from checker.checks.fidelity import fidelity_stage as stage

    return stage(ctx)


def runtimes_stage(ctx: Context) -> Iterable[Finding]:
    """The runtimes stage (checks/runtimes.py), imported only when --runtime asks for one: its environments
    and worker processes are nothing a plain run needs to load."""
    if not ctx.options.runtimes:
        return ()
    from checker.checks.runtimes import runtimes_stage as stage

    return stage(ctx)


def platforms_stage(ctx: Context) -> Iterable[Finding]:
    """The platforms stage (checks/platforms.py), imported only when --platform asks for one."""
    if not ctx.options.platforms:
        return ()
    from checker.checks.platforms import platforms_stage as stage

    return stage(ctx)


def optlevels_stage(ctx: Context) -> Iterable[Finding]:
    """The optimization-levels stage (checks/optlevels.py), imported only when levels are declared or asked for."""
    if not ctx.options.opt_levels and not (ctx.data.get("runtime") or {}).get("optimization_levels"):
        return ()
    from checker.checks.optlevels import optlevels_stage as stage

    return stage(ctx)


def placement_stage(ctx: Context) -> Iterable[Finding]:
    """The placement stage (checks/placement.py) and the NNAPI/CoreML usability check (checks/usability.py),
    imported only when the manifest or --providers declares an execution provider."""
    if not ctx.options.providers and not (ctx.data.get("runtime") or {}).get("execution_providers"):
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
    compare_stage,
    rerun_stage,
    gain_stage,
    placement_stage,
    runtimes_stage,
    platforms_stage,
    optlevels_stage,
    validation_stage,
)


# Memory a worker needs besides its bundle's files (interpreter, libraries, a session's own), and the peak a
# bundle's files cost at most while verified (benchmarks/bench_memory.py measures 1.09x the weights).
WORKER_BASE_BYTES = 300 << 20
PEAK_PER_BYTE = 1.3


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

    threads = max(1, (os.cpu_count() or 1) // workers)
    # Workers draw no progress bar (several would overwrite each other) and share the cores between them.
    worker_options = dataclasses.replace(options, progress=False, jobs=1, intra_op_threads=threads, sharing=workers)
    context = multiprocessing.get_context(_start_method())
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        bundles = list(pool.map(verify_bundle, paths, [worker_options] * len(paths)))
        # This process never loaded onnx or onnxruntime: asking the installed distributions would cost it a
        # tenth of a second that a worker, which has them loaded, does not spend.
        return bundles, pool.submit(environment).result()


def _start_method() -> str:
    """Fork where it is safe and quiet: a forked worker starts with the libraries this process has loaded (not
    onnxruntime, which only a stage loads), where a fresh interpreter would import them all again. Python 3.12
    warns when a process with threads (the BLAS's) forks, and other systems' libraries may not survive it."""
    import threading

    alone = threading.active_count() == 1  # a thread of ours could hold a lock the forked copy never frees
    if sys.platform.startswith("linux") and sys.version_info < (3, 12) and alone and "onnxruntime" not in sys.modules:
        return "fork"
    return "spawn"


def pool_size(paths: list[Path], jobs: int) -> int:
    """Workers to run: at most `jobs` and one per bundle, and no more than the memory holds when each
    verifies the largest bundle at once."""
    wanted = min(jobs, len(paths))
    if wanted <= 1:
        return 1
    available = available_memory()
    if available is None:
        return wanted
    largest = max(bundle_bytes(p) for p in paths)
    return max(1, min(wanted, int(available // (WORKER_BASE_BYTES + PEAK_PER_BYTE * largest))))


def bundle_bytes(path: Path) -> int:
    """The size of a bundle's files (graphs, weights and cases alike: an upper bound on the weights), or of
    its archive. Links are not followed."""
    folder = path.parent if path.is_file() and not is_archive(path) else path
    if folder.is_file():
        return folder.stat().st_size
    total, folders = 0, [os.fspath(folder)]
    while folders:  # on strings and scandir's entries: sizing twenty bundles must not cost a tenth of a second
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                else:
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total


def available_memory() -> int | None:
    """Memory available to new processes (MemAvailable counts the page cache the kernel can drop)."""
    try:
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def verify_bundle(path: Path, options: Options) -> BundleReport:
    """The bundle's report. A bug in a stage does not lose the report: it ends with an `internal.error`
    finding naming the stage, after the findings of the stages that ran (the CLI then exits 3)."""
    run = _Run(path=str(path))
    try:
        _verify(path, options, run)
        run.stage = "report"
        return run.report()
    except Error:
        raise  # a usage error (not a bundle at all): exit 2, as before
    except Exception as exc:  # a bug: reported in the report, not only in a traceback
        run.findings.append(internal_error(run.stage, exc))
        run.finished = False
        return run.report()


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
        report = BundleReport(path=self.path, manifest_file=self.manifest_file, findings=superseded(self.findings))
        ctx = self.ctx
        if ctx is None:
            return report
        release = ctx.data.get("release")
        release = release if isinstance(release, dict) else {}
        report.name, report.version = _text(release.get("name")), _text(release.get("version"))
        report.manifest_digest = manifest_digest(ctx.data)
        # What the stages that ran left (a later stage's bug does not lose it).
        report.pieces = dict(ctx.pieces)
        report.comparisons = list(ctx.comparisons)
        report.digest = ctx.digest
        if not self.finished:
            return report
        report.piece_digests = piece_digests(ctx.data, ctx.root, ctx.digests)
        report.validation = ctx.validation
        report.runtimes = list(ctx.runtime_sets)
        report.gains = list(ctx.gains)
        report.placement = list(ctx.placement)
        report.usability = list(ctx.usability)
        shard = ctx.options.shard
        if shard is not None:
            report.shard = {"index": shard.index, "count": shard.count, "cases": list(ctx.case_order or [])}
        report.not_run = list(ctx.not_run)
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


def _verify(path: Path, options: Options, run: _Run) -> None:
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
        run.ctx = Context(opened.root, manifest, options)
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
