"""`checker report diff BASE.json HEAD.json`: what changed between two reports of the same bundles.

Only argument parsing and wiring live here; `checker verify --compare-to` reaches the same comparison
through `checker.changes.diff`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

EXIT_PASS, EXIT_FAIL = 0, 1


def add_diff(reports: Any) -> None:
    """`diff` under `checker report` (the command line adds `merge` beside it)."""
    from checker.cli import add_report_options

    d = reports.add_parser(
        "diff",
        help="what changed between two reports of the same bundles (the base branch's and this one's)",
        description="Prints HEAD's report with a change section per bundle: changed pieces, each rule's "
        "base and head figure, new and resolved findings, added and removed cases. Exits 1 when HEAD fails.",
    )
    d.add_argument("base", type=Path, metavar="BASE.json")
    d.add_argument("head", type=Path, metavar="HEAD.json")
    add_report_options(d)
    d.set_defaults(func=cmd_diff)


def read(path: Path) -> dict[str, Any]:
    """A JSON report written by `checker verify --format json`: bounded, and checked against the schema."""
    from checker.github.reportfile import read_report

    return read_report(path, untrusted=True)


def cmd_diff(args: argparse.Namespace) -> int:
    from checker.changes import diff
    from checker.cli import check_output, emit_report

    check_output(args)
    base, head = read(args.base), read(args.head)
    head["changes"] = diff(base, head)
    emit_report(args, head)
    return EXIT_FAIL if head.get("status") == "fail" else EXIT_PASS
