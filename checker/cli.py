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
from checker.reports.options import check_output, check_paths, report_format
from checker.verifyargs import UsageParser, add_verify_arguments, verify_options

if TYPE_CHECKING:
    from checker.findings import Finding
    from checker.reports.model import Report

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

# Modules that add subcommands; each exposes register(subparsers) and imports nothing heavy at import time.
# The commands other packages register, by the module that registers them: a run imports only the module of
# the command it runs (all of them for the overall help, or for a name that is none of these).
COMMAND_MODULES = {
    "report": "checker.reports.command",
    "preprocess": "checker.preprocess.command",
    "diagnose": "checker.diagnose.command",
    "init": "checker.release.command",
    "case": "checker.release.command",
    "variant": "checker.release.command",
    "pack": "checker.release.command",
    "github": "checker.github.command",
    "sign": "checker.signing.command",
    "plan": "checker.plan.command",
    "device-kit": "checker.devices.command",
}
BUILT_IN = ("verify", "lock", "schema")


def version_text() -> str:
    from checker.readers.environment import environment

    env = environment()
    deps = ", ".join(f"{k} {env[k]}" for k in ("onnx", "onnxruntime", "numpy", "python"))
    return f"checker {__version__} ({deps}; {env['machine']})"


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`'s command; without argv, for every command."""
    parser = UsageParser(
        prog="checker",
        description="Check that an ONNX model release bundle is complete and reproduces its reference outputs.",
    )
    parser.add_argument("--version", action="store_true", help="print the versions a verdict depends on")
    # How a command writes the report it made: given to the report commands, which sit below the renderers.
    parser.set_defaults(emit=emit_report)
    sub = parser.add_subparsers(dest="command", parser_class=UsageParser)
    _add_verify(sub)
    _add_lock(sub)
    _add_schema(sub)
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


def _add_verify(sub: Any) -> None:
    p = sub.add_parser("verify", help="verify bundles (folders, manifests or .tar.gz/.zip archives)")
    add_verify_arguments(p)
    p.set_defaults(func=cmd_verify)


def _add_lock(sub: Any) -> None:
    p = sub.add_parser("lock", help="write every named file's sha256 and release.digest into the manifest")
    p.add_argument("path", metavar="PATH", help="a bundle folder or its manifest")
    p.set_defaults(func=cmd_lock)


def _add_schema(sub: Any) -> None:
    p = sub.add_parser("schema", help="print a JSON Schema shipped with the checker")
    p.add_argument("name", nargs="?", default="manifest", choices=("manifest", "report"))
    p.set_defaults(func=cmd_schema)


def colour_wanted(args: argparse.Namespace, stream: Any) -> bool:
    # no-color.org: a NO_COLOR that is set and not empty turns colour off.
    return not args.no_color and not os.environ.get("NO_COLOR") and bool(getattr(stream, "isatty", lambda: False)())


def emit_report(args: argparse.Namespace, report: Report) -> None:
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


def cmd_verify(args: argparse.Namespace) -> int:
    check_paths(args.paths)
    check_output(args)
    for folder in args.device_outputs:
        if not folder.is_dir():
            raise UsageError(f"--device-outputs {folder}: no such folder")
    progress = not args.no_progress and report_format(args) == "text" and sys.stderr.isatty()
    options = verify_options(args, progress)
    if args.compare_to is not None and args.reuse is not None:
        raise UsageError(
            "--compare-to with --reuse: what changed since the base is measured on the rules run here, and a reused "
            "verdict runs none; compare in a run without the store"
        )
    if args.fail_on_loosened and args.compare_to is None:
        raise UsageError("--fail-on-loosened needs --compare-to: the loosening is measured against the base report")
    base = None
    if args.compare_to is not None:  # read before the work: a base that is no report stops the run at once
        from checker.reports.files import load_report  # loaded here: a plain run reads no report file

        base = load_report(args.compare_to, untrusted=True)
    outcomes = None
    if options.reuse is not None:  # a verdict store: the bundles with a trusted stored verdict are not run
        from checker.store.run import verify_reusing

        reusing = verify_reusing(args.paths, options)
        report, outcomes = reusing.report, reusing.outcomes
    else:
        from checker.verify import verify_paths

        report = verify_paths(args.paths, options)
    if base is not None:
        from checker.reports.diff import diff, fail_on_loosened

        report.changes = diff(base, report)
        if args.fail_on_loosened:
            fail_on_loosened(report)
    try:
        emit_report(args, report)
    except Exception as exc:  # a renderer's bug: still leave a report, saying what it could not render
        report = unrendered(report, exc)
        emit_report(args, report)
    from checker.signing.options import attest_signer

    signer = attest_signer(args)
    if signer is not None:  # the verdict signed, with the key a verdict store files it under (and filed there)
        from checker.store.filing import attest

        attest(report, options, signer, args.attest, outcomes)
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
    from checker.reports import model as reports
    from checker.verify import internal_error

    out = reports.Report(checker_version=report.checker_version, strict=report.strict, environment=report.environment)
    for bundle in report.bundles:
        out.bundles.append(reports.BundleReport(path=bundle.path, manifest_file=bundle.manifest_file))
        out.bundles[-1].add([internal_error("report", exc)])
    return out


def cmd_lock(args: argparse.Namespace) -> int:
    from checker.release.lock import lock
    from checker.terminal import printable

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
        if list(argv) == ["--version"]:  # no command's parser to build: they import what --version never needs
            sys.stdout.write(version_text() + "\n")
            return EXIT_PASS
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
        from checker.terminal import printable

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
    system takes back anyway. What a normal exit does first is done first, in its order: the threads' own exit
    hooks run and every thread that is not a daemon is waited for (a worker pool's manager thread, while its
    workers exit), then the exit handlers run and the standard streams are flushed."""
    if threading.current_thread() is threading.main_thread():  # another thread would wait for itself
        try:
            threading._shutdown()  # type: ignore[attr-defined]  # what Python's exit calls before the exit handlers
        except BaseException:  # as in Python's exit: said, and the exit goes on with its status
            traceback.print_exc()
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
