"""`checker report merge|diff`: joining the reports of shard and runtime jobs, and what changed between two.

Only argument parsing and wiring live here; the command line imports this module for the `report` command
and `checker verify --compare-to` reaches the same comparison through `checker.reports.diff`. The report
made is written by the command line's `emit` (the renderers sit above this package).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from checker.reports.options import add_report_options, check_output, check_paths

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("report", help="work on JSON reports")
    # The command line's own parser class, which turns argparse's exits into usage errors.
    reports = p.add_subparsers(dest="report_command", parser_class=type(p))
    p.set_defaults(func=lambda args: _usage(p))
    m = reports.add_parser("merge", help="join the reports of --shard jobs (and of jobs per runtime) into one")
    m.add_argument("reports", nargs="+", type=Path, metavar="REPORT", help="JSON reports of `checker verify`")
    add_report_options(m)
    m.set_defaults(func=cmd_merge)
    d = reports.add_parser(
        "diff",
        help="what changed between two reports of the same bundles (the base branch's and this one's)",
        description="Prints HEAD's report with a change section per bundle: changed pieces, each rule's "
        "base and head figure, new and resolved findings, added and removed cases. Exits 1 when HEAD fails.",
    )
    d.add_argument("base", type=Path, metavar="BASE.json")
    d.add_argument("head", type=Path, metavar="HEAD.json")
    d.add_argument(
        "--fail-on-loosened",
        action="store_true",
        help="fail a bundle whose rules are looser than the base's (a rules.loosened error)",
    )
    add_report_options(d)
    d.set_defaults(func=cmd_diff)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def cmd_merge(args: argparse.Namespace) -> int:
    # Loaded here: merging loads the comparison's rules (and NumPy), which `checker --help` must not.
    from checker.reports.files import load_report
    from checker.reports.merge import merge_reports

    check_paths([str(p) for p in args.reports])
    check_output(args)
    reports = [load_report(p, untrusted=True) for p in args.reports]
    merged = merge_reports(reports, strict=args.strict, names=[str(p) for p in args.reports])
    args.emit(args, merged)
    return EXIT_PASS if merged.status == "pass" else EXIT_FAIL


def cmd_diff(args: argparse.Namespace) -> int:
    # Loaded here, as merging is: the schema's validator is nothing `checker --help` needs.
    from checker.reports.diff import diff, fail_on_loosened
    from checker.reports.files import load_report

    check_output(args)
    base, head = load_report(args.base, untrusted=True), load_report(args.head, untrusted=True)
    head.changes = diff(base, head)
    if args.fail_on_loosened:
        fail_on_loosened(head)
    args.emit(args, head)
    return EXIT_FAIL if head.status == "fail" else EXIT_PASS
