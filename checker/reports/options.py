"""How a command is asked to write a report (--format, --output, --strict, --no-color), and the checks of its
arguments made before the work, not after it. Argument parsing only: `checker verify`, `checker report` and
the GitHub action's `args` share it, and the command line imports it at start-up.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from checker.errors import UsageError


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
