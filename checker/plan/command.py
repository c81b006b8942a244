"""`checker plan PATH...`: argument parsing and wiring only. It takes `checker verify`'s options (the legs run
with them, and the verdict store's key is made of them) and its own: --changed-since, --costs, --shards,
--reused-report."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from checker.errors import UsageError
from checker.reports.options import check_output, check_paths, report_format
from checker.terminal import printable
from checker.verifyargs import add_verify_arguments, verify_options

EXIT_PASS = 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "plan",
        help="which bundles must run (what changed, what has no stored verdict), as a GitHub Actions matrix",
        description="Chooses the bundles that must run by content: changed since --changed-since REF (a file they "
        "name or their manifest's data), or without a trusted stored verdict (--reuse STORE); balances them by "
        "their cost in earlier reports (--costs) over at most --shards legs, splitting a bundle that costs more "
        "than a leg into --shard jobs. --format json prints the matrix for fromJSON. Takes checker verify's "
        "options, as the legs will run.",
    )
    add_verify_arguments(p)
    p.add_argument("--changed-since", metavar="REF", help="run only the bundles whose content changed since REF")
    p.add_argument(
        "--costs",
        action="append",
        default=[],
        type=Path,
        metavar="REPORT",
        help="an earlier JSON report whose bundles' duration_s is their cost (repeatable)",
    )
    p.add_argument("--shards", type=_legs, default=1, metavar="N", help="at most N legs (default: 1)")
    p.add_argument(
        "--reused-report",
        type=Path,
        metavar="FILE",
        help="write the reused bundles' report here (JSON), to merge with the legs' reports",
    )
    p.set_defaults(func=cmd_plan)


def _legs(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if not 0 < value <= 256:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of legs from 1 to 256 (GitHub's matrix limit)")
    return value


def cmd_plan(args: argparse.Namespace) -> int:
    from checker.plan.planning import make_plan

    check_paths(args.paths)
    check_output(args)
    fmt = report_format(args)
    if fmt not in ("text", "json"):
        raise UsageError(f"plan --format {fmt}: a plan is text or json (the matrix)")
    if args.attest is not None:
        raise UsageError("plan judges nothing, so it attests nothing: give --attest to the legs")
    options = verify_options(args)
    plan = make_plan(args.paths, options, args.shards, args.changed_since, args.costs)
    if args.reused_report is not None:
        from checker.readers.environment import environment
        from checker.reports.files import write_report

        write_report(args.reused_report, plan.reused_report(options, environment()))
    words = "".join(printable(line) + "\n" for line in plan.summary())
    text = json.dumps(plan.matrix()) + "\n" if fmt == "json" else words
    if args.output is not None:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        if fmt == "json":
            sys.stdout.write(words)
        return EXIT_PASS
    sys.stdout.write(text)
    return EXIT_PASS
