"""The command line: parse, wire, run, return an exit status. Nothing below it exits or prints a verdict."""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import os
import sys
import threading
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from checker import __version__
from checker.errors import Error, UsageError

if TYPE_CHECKING:
    from checker.context import Options
    from checker.findings import Finding
    from checker.report import Report

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

# Modules that add subcommands; each exposes register(subparsers) and imports nothing heavy at import time.
# The commands other packages register, by the module that registers them: a run imports only the module of
# the command it runs (all of them for the overall help, or for a name that is none of these).
COMMAND_MODULES = {
    "preprocess": "checker.preprocess.command",
    "diagnose": "checker.diagnose.command",
    "init": "checker.release.command",
    "case": "checker.release.command",
    "pack": "checker.release.command",
    "github": "checker.github.command",
}
BUILT_IN = ("verify", "lock", "schema", "report")


def version_text() -> str:
    from checker.readers.environment import environment

    env = environment()
    deps = ", ".join(f"{k} {env[k]}" for k in ("onnx", "onnxruntime", "numpy", "python"))
    return f"checker {__version__} ({deps}; {env['machine']})"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit; we return through main instead
        command = self.prog.removeprefix("checker").strip()  # main prefixes "checker: "
        raise UsageError(f"{command}: {message}" if command else message)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`'s command; without argv, for every command."""
    parser = _Parser(
        prog="checker",
        description="Check that an ONNX model release bundle is complete and reproduces its reference outputs.",
    )
    parser.add_argument("--version", action="store_true", help="print the versions a verdict depends on")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    _add_verify(sub)
    _add_lock(sub)
    _add_schema(sub)
    _add_report(sub)
    for name in _modules_for(argv):
        try:
            importlib.import_module(name).register(sub)
        except ModuleNotFoundError as exc:
            if not (exc.name and name.startswith(exc.name)):
                raise
    return parser


def _modules_for(argv: Sequence[str] | None) -> list[str]:
    command = next((arg for arg in argv or () if not arg.startswith("-")), None)
    if argv is not None and command in BUILT_IN:
        return []
    if argv is not None and command in COMMAND_MODULES:
        return [COMMAND_MODULES[command]]
    return list(dict.fromkeys(COMMAND_MODULES.values()))


def add_report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format",
        choices=("text", "json", "markdown", "junit"),
        default=None,
        help="report format (default: text, or what the --output file's suffix names: .json, .md, .xml)",
    )
    p.add_argument(
        "--output",
        "-o",
        type=Path,
        help="write the report to FILE (with a format other than text, the text verdict also prints)",
    )
    p.add_argument("--strict", action="store_true", help="warnings fail the bundle too")
    p.add_argument("--no-color", action="store_true", help="no colour (also: the NO_COLOR variable)")


def _add_verify(sub: Any) -> None:
    p = sub.add_parser("verify", help="verify bundles (folders, manifests or .tar.gz/.zip archives)")
    p.add_argument("paths", nargs="+", metavar="PATH")
    add_report_options(p)
    p.add_argument(
        "--run-validation",
        action="store_true",
        help="run each bundle's validation.command (never without this flag: a manifest is untrusted)",
    )
    p.add_argument(
        "--compare-to",
        type=Path,
        metavar="BASE.json",
        help="a JSON report of the same bundles on the base branch: add what changed since it",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "--case-timeout",
        type=_positive_seconds,
        default=600.0,
        metavar="SECONDS",
        help="stop a graph that runs longer than this on one case (default: 600)",
    )
    p.add_argument(
        "--gain-budget",
        type=_non_negative_seconds,
        default=1.0,
        metavar="SECONDS",
        help="time each variant against the baseline for at most this long (default: 1; 0: no timing)",
    )
    p.add_argument(
        "--jobs",
        "-j",
        type=_positive_int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="verify up to N bundles at once, in worker processes (default: the number of cores; 1: one by one)",
    )
    p.add_argument(
        "--shard",
        type=_shard,
        metavar="K/N",
        help="judge only shard K of N of the cases (split by a hash of each case name); join with `report merge`",
    )
    p.add_argument(
        "--runtime",
        action="append",
        type=_runtime_spec,
        default=[],
        metavar="SPEC",
        dest="runtimes",
        help="also run the comparison in this onnxruntime, in a cached environment of its own: a version "
        "(1.17.3), oldest or newest of those runtime.version admits, or PACKAGE==VERSION; repeatable",
    )
    p.add_argument("--offline", action="store_true", help="runtime environments only from the cache or --find-links")
    p.add_argument(
        "--find-links",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of wheels to install runtime environments from (repeatable)",
    )
    p.set_defaults(func=cmd_verify)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value <= 1024:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of jobs from 1 to 1024")
    return value


def _shard(text: str) -> Any:
    from checker.compare.sharding import ShardError, parse_shard

    try:
        return parse_shard(text)
    except ShardError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_report(sub: Any) -> None:
    p = sub.add_parser("report", help="work on JSON reports")
    rsub = p.add_subparsers(dest="report_command", parser_class=_Parser)
    p.set_defaults(func=lambda args: _usage(p))
    m = rsub.add_parser("merge", help="join the reports of --shard jobs (and of jobs per runtime) into one")
    m.add_argument("reports", nargs="+", type=Path, metavar="REPORT", help="JSON reports of `checker verify`")
    add_report_options(m)
    m.set_defaults(func=cmd_report_merge)
    from checker.changes.command import add_diff

    add_diff(rsub)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def _runtime_spec(text: str) -> str:
    from checker.runtimes.envs import RuntimeSpecError, parse_spec

    try:
        parse_spec(text)
    except RuntimeSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 86_400 * 7:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds above 0")
    return value


def _non_negative_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 3600:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds from 0 to 3600")
    return value


def _add_lock(sub: Any) -> None:
    p = sub.add_parser("lock", help="write every named file's sha256 and release.digest into the manifest")
    p.add_argument("path", metavar="PATH", help="a bundle folder or its manifest")
    p.set_defaults(func=cmd_lock)


def _add_schema(sub: Any) -> None:
    p = sub.add_parser("schema", help="print a JSON Schema shipped with the checker")
    p.add_argument("name", nargs="?", default="manifest", choices=("manifest", "report"))
    p.set_defaults(func=cmd_schema)


def check_paths(paths: Sequence[str]) -> None:
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise UsageError("no such path: " + ", ".join(missing))


def check_output(args: argparse.Namespace) -> None:
    """Refuse an --output that cannot be written before the work, not after it."""
    out: Path | None = args.output
    if out is not None and (out.is_dir() or not out.parent.is_dir()):
        why = "is a folder" if out.is_dir() else f"has no folder {out.parent}"
        raise UsageError(f"--output {out} {why}")


# The format an --output file's suffix names, when --format is not given.
SUFFIX_FORMATS = {".json": "json", ".md": "markdown", ".xml": "junit"}


def report_format(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    return SUFFIX_FORMATS.get(args.output.suffix.lower(), "text") if args.output is not None else "text"


def colour_wanted(args: argparse.Namespace, stream: Any) -> bool:
    # no-color.org: a NO_COLOR that is set and not empty turns colour off.
    return not args.no_color and not os.environ.get("NO_COLOR") and bool(getattr(stream, "isatty", lambda: False)())


def emit_report(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Write the chosen format to --output or stdout; with --output, the text verdict also prints."""
    from checker.render import render

    fmt = report_format(args)
    options: dict[str, Any] = {}
    if fmt == "markdown":  # in a workflow, files, the commit and the run link as in the pull-request comment
        from checker.render.links import Links

        options["links"] = Links.from_env(os.environ)
    if args.output is not None:
        try:
            args.output.write_text(render(fmt, report, **options), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        if fmt != "text":
            sys.stdout.write(render("text", report, colour=colour_wanted(args, sys.stdout)))
        return
    sys.stdout.write(render(fmt, report, colour=colour_wanted(args, sys.stdout) and fmt == "text", **options))


def verify_options(args: argparse.Namespace, progress: bool = False) -> Options:
    """What a parsed `checker verify` command line asks for (the GitHub action parses its `args` with it too)."""
    from checker.context import Options

    return Options(
        strict=args.strict,
        run_validation=args.run_validation,
        progress=progress,
        case_timeout_s=args.case_timeout,
        shard=args.shard,
        runtimes=list(args.runtimes),
        offline=args.offline,
        find_links=list(args.find_links),
        jobs=args.jobs,
        gain_budget_s=args.gain_budget,
    )


def cmd_verify(args: argparse.Namespace) -> int:
    from checker.verify import verify_paths

    check_paths(args.paths)
    check_output(args)
    progress = not args.no_progress and report_format(args) == "text" and sys.stderr.isatty()
    options = verify_options(args, progress)
    from checker.changes.command import read

    base = read(args.compare_to) if args.compare_to is not None else None
    report = verify_paths(args.paths, options)
    if base is not None:
        from checker.changes import diff

        report.changes = diff(base, report.to_dict())
    try:
        emit_report(args, report.to_dict())
    except Exception as exc:  # a renderer's bug: still leave a report, saying what it could not render
        report = unrendered(report, exc)
        emit_report(args, report.to_dict())
    crashed = internal_errors(report)
    if crashed:
        sys.stderr.write("checker: internal error (a bug; please report it with this traceback)\n")
        for finding in crashed:
            sys.stderr.write(str(finding.details.get("traceback", finding.message)))
        return EXIT_INTERNAL
    return EXIT_PASS if report.status == "pass" else EXIT_FAIL


def internal_errors(report: Report) -> list[Finding]:
    from checker.findings import INTERNAL_ERROR

    return [f for b in report.bundles for f in b.findings if f.id == INTERNAL_ERROR]


def unrendered(report: Report, exc: Exception) -> Report:
    """The report cut to what cannot fail to render: each bundle's identity and an internal.error finding."""
    from checker import report as reports
    from checker.verify import internal_error

    out = reports.Report(checker_version=report.checker_version, strict=report.strict, environment=report.environment)
    for bundle in report.bundles:
        out.bundles.append(reports.BundleReport(path=bundle.path, manifest_file=bundle.manifest_file))
        out.bundles[-1].add([internal_error("report", exc)])
    return out


def cmd_report_merge(args: argparse.Namespace) -> int:
    from checker.github.reportfile import read_report
    from checker.report_merge import merge_reports

    check_paths([str(p) for p in args.reports])
    check_output(args)
    merged = merge_reports([read_report(p, untrusted=True) for p in args.reports], strict=args.strict)
    emit_report(args, merged)
    return EXIT_PASS if merged["status"] == "pass" else EXIT_FAIL


def cmd_lock(args: argparse.Namespace) -> int:
    from checker.release.lock import lock
    from checker.render.escape import printable

    check_paths([args.path])
    result = lock(Path(args.path))
    for line in result.messages:
        sys.stdout.write(printable(line) + "\n")
    return EXIT_PASS if result.ok else EXIT_FAIL


def cmd_schema(args: argparse.Namespace) -> int:
    import json

    from checker.manifest.schema import load

    sys.stdout.write(json.dumps(load(args.name), indent=2) + "\n")
    return EXIT_PASS


def main(argv: Sequence[str] | None = None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else argv
        parser = build_parser(argv)
        args = parser.parse_args(argv)
        if args.version:
            sys.stdout.write(version_text() + "\n")
            return EXIT_PASS
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_USAGE
        code: int = args.func(args)
        return code
    except Error as exc:
        from checker.render.escape import printable

        sys.stderr.write(f"checker: {printable(str(exc))}\n")  # it may quote a bundle, which must not drive a terminal
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception:
        sys.stderr.write("checker: internal error (a bug; please report it with this traceback)\n")
        traceback.print_exc()
        return EXIT_INTERNAL


# Allocations between two runs of the young generation's collector (Python's default: 700). A run's first
# tenth of a second imports onnx, onnxruntime, NumPy and the checker, all of it objects that live as long as
# the process, which the default would walk over a hundred times (a twentieth of a small bundle's run).
YOUNG_GC_THRESHOLD = 100_000


def run() -> NoReturn:
    """The `checker` command and `python -m checker`."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GC_THRESHOLD, older, oldest)
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:  # started with the descriptor closed: what it would print goes nowhere
            setattr(sys, name, Path(os.devnull).open("w", encoding="utf-8"))  # noqa: SIM115 (open until the exit)
    exit_now(main())


def exit_now(code: int) -> NoReturn:
    """End the process as a normal exit would, but without freeing every object one by one: tearing down the
    modules of onnx, onnxruntime and NumPy costs a small bundle's run a sixth of its time, for memory the
    system takes back anyway. The exit handlers run and the standard streams are flushed first; while a
    thread that is not a daemon still runs, the normal exit, which waits for it, is taken instead."""
    if any(t is not threading.main_thread() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the descriptor was closed before Python started
                stream.flush()
        except (OSError, ValueError):
            code = 120  # what Python's own exit returns when the output cannot be flushed
    os._exit(code)


if __name__ == "__main__":
    run()
