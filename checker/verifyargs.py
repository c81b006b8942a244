"""The flags of `checker verify` and the Options they make: one parser for the command line and for the GitHub
action's `args` input, so that the action accepts exactly what the command does."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.errors import UsageError
from checker.reports.options import add_report_options
from checker.signing.options import add_verify_options, signing_options

if TYPE_CHECKING:
    from checker.context import Options


class UsageParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit; we return through main instead
        command = self.prog.removeprefix("checker").strip()  # main prefixes "checker: "
        raise UsageError(f"{command}: {message}" if command else message)


def parse_verify_args(words: Sequence[str]) -> argparse.Namespace:
    """`words` as `checker verify WORDS` reads them; a bad flag is a UsageError naming it."""
    parser = UsageParser(prog="checker verify")
    add_verify_arguments(parser)
    return parser.parse_args(words)


def add_verify_arguments(p: argparse.ArgumentParser) -> None:
    """Every flag of `checker verify`, on its parser."""
    p.add_argument("paths", nargs="+", metavar="PATH")
    add_report_options(p)
    add_verify_options(p)
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
    p.add_argument(
        "--fail-on-loosened",
        action="store_true",
        help="with --compare-to: fail a bundle whose rules are looser than the base's (rules.loosened)",
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
        "--fix-budget",
        type=_non_negative_seconds,
        default=20.0,
        metavar="SECONDS",
        help="CPU seconds to measure a failing quantized variant's first fix by re-running its recorded transform "
        "and the settings onnxruntime offers (default: 20; 0: the fix is shown unmeasured)",
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
    p.add_argument(
        "--platform",
        action="append",
        default=[],
        metavar="NAME",
        dest="platforms",
        help="run the comparison on this platform: a CPU class (x86-64-v3, aarch64-dotprod, ...: natively or "
        "under qemu), an engine (browser-wasm, browser-webgpu: onnxruntime-web in headless Chromium; node: "
        "onnxruntime-node), a name from runtime.platforms, target (every declared one: the default) or none; "
        "repeatable",
    )
    p.add_argument(
        "--device-outputs",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        dest="device_outputs",
        help="judge as one more platform the folder a device kit's runner wrote on a device (outputs/, tensors/, "
        "device.json; see `checker device-kit`); repeatable",
    )
    p.add_argument(
        "--reproductions",
        type=Path,
        metavar="DIR",
        help="where a disagreement between platforms writes its reproduction folder (default: the user cache's "
        "reproductions folder)",
    )
    p.add_argument(
        "--opt-levels",
        type=_levels,
        default=[],
        metavar="LEVELS",
        help="also judge at these graph optimization levels, comma-separated (disabled,basic,extended,all); "
        "default: runtime.optimization_levels",
    )
    p.add_argument("--offline", action="store_true", help="runtime environments only from the cache or --find-links")
    p.add_argument(
        "--find-links",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of wheels to install runtime environments from (repeatable)",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value <= 1024:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of jobs from 1 to 1024")
    return value


def _shard(text: str) -> Any:
    from checker.sharding import ShardError, parse_shard  # loaded when a --shard is given, not for --help

    try:
        return parse_shard(text)
    except ShardError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_LEVELS = ("disabled", "basic", "extended", "all")


def _levels(text: str) -> list[str]:
    levels = [part.strip() for part in text.split(",") if part.strip()]
    wrong = [level for level in levels if level not in _LEVELS]
    if wrong or not levels:
        raise argparse.ArgumentTypeError(f"'{text}' is not a list of {', '.join(_LEVELS)}")
    return levels


def _non_negative_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 3600:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds from 0 to 3600")
    return value


def _runtime_spec(text: str) -> str:
    # Loaded when a --runtime is given: the environments' module is nothing `checker --help` needs.
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


def verify_options(args: argparse.Namespace, progress: bool = False) -> Options:
    """What a parsed `checker verify` command line asks for (the GitHub action parses its `args` with it too)."""
    from checker.context import Options  # the Context's module loads the manifest's: not for --help

    return Options(
        strict=args.strict,
        run_validation=args.run_validation,
        progress=progress,
        case_timeout_s=args.case_timeout,
        shard=args.shard,
        runtimes=list(args.runtimes),
        offline=args.offline,
        find_links=list(args.find_links),
        platforms=list(args.platforms),
        device_outputs=list(args.device_outputs),
        reproductions=args.reproductions,
        opt_levels=list(args.opt_levels),
        jobs=args.jobs,
        gain_budget_s=args.gain_budget,
        fix_budget_s=args.fix_budget,
        **signing_options(args),
    )
