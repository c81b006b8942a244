"""`checker github run` (what the action calls) and `checker github comment REPORT` (post a report).

Only argument parsing and wiring live here; importing this module imports neither requests nor onnx (`checker
--help` imports it), so each handler imports its work when it runs.
The token comes from the environment only (INPUT_GITHUB_TOKEN or GITHUB_TOKEN), never from the
command line, where it would show in a process list or a shell history.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.errors import Error, UsageError
from checker.findings import INTERNAL_ERROR
from checker.github.annotations import inert
from checker.github.config import COMMENT, COMMENT_MODES, FAIL_ON, MODES, Config
from checker.terminal import printable

if TYPE_CHECKING:
    from checker.context import Options
    from checker.github.api import Client
    from checker.github.event import Event
    from checker.reports.model import Report
    from checker.store.run import Outcome

EXIT_USAGE = 2
EXIT_INTERNAL = 3


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("github", help="publish a report on GitHub (what the GitHub Action runs)")
    sub = parser.add_subparsers(dest="github_command", parser_class=type(parser))
    parser.set_defaults(func=lambda args: _usage(parser))
    _add_run(sub)
    _add_comment(sub)


def _add_run(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="verify (or read a report), then write the job summary, annotations, comment and step outputs",
        description="The action's one step. Every option defaults to the matching INPUT_* variable.",
    )
    p.add_argument("--mode", choices=MODES, help="verify (default), verify-only or comment-only")
    p.add_argument("--bundles", help="paths or globs of bundles, space or newline separated")
    p.add_argument("--comment", choices=COMMENT, help="when to write the pull-request comment")
    p.add_argument(
        "--fail-on",
        dest="fail_on",
        help=f"what fails the step: {', '.join(FAIL_ON)}, optionally with loosened (a rule looser than the base's)",
    )
    p.add_argument("--report", help="the JSON report to write (verify) or read (comment-only)")
    p.add_argument("--args", help="extra `checker verify` options, e.g. --args='--run-validation'")
    p.add_argument("--pr-number", dest="pr_number", type=int, help="the pull request, for events that name none")
    p.add_argument("--comment-key", dest="comment_key", help="what names the sticky comment")
    p.add_argument("--comment-mode", dest="comment_mode", choices=COMMENT_MODES, help="how a new result replaces it")
    p.add_argument(
        "--hide-when-passing", dest="hide_when_passing", action="store_const", const=True, help="hide it while passing"
    )
    p.add_argument(
        "--compare-to", dest="compare_to", help="a base report's path, or base (verify the pull request's base commit)"
    )
    p.add_argument("--runtimes", help="onnxruntime releases to verify in as well (each a --runtime SPEC)")
    p.add_argument(
        "--attest",
        action="store_const",
        const=True,
        help="also write the verdict as a signed attestation (the key from INPUT_ATTEST_KEY only)",
    )
    p.add_argument("--attestation", help="where --attest writes it (default: checker-attestation.intoto.jsonl)")
    p.add_argument("--dry-run", action="store_true", help="send no write to GitHub; print what would be sent")
    p.set_defaults(func=cmd_run)


def _add_comment(sub: Any) -> None:
    p = sub.add_parser(
        "comment",
        help="create or update the sticky pull-request comment from a JSON report",
        description="The token comes from GITHUB_TOKEN; GITHUB_API_URL selects GitHub Enterprise Server.",
    )
    p.add_argument("report", type=Path, help="a report written by `checker verify --format json`")
    p.add_argument("--repo", help="OWNER/NAME (default: GITHUB_REPOSITORY)")
    p.add_argument("--pr", type=int, help="the pull request number (default: from the GitHub event)")
    p.add_argument("--head-sha", help="the commit the report is about; the comment is skipped if the PR moved on")
    p.add_argument("--bundles", help="the bundle set the comment is for (default: the report's, or bundle.yaml)")
    p.add_argument("--dry-run", action="store_true", help="read from GitHub, but print the writes instead")
    p.set_defaults(func=cmd_comment)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE


# ----- checker github run


def cmd_run(args: argparse.Namespace) -> int:
    from checker.github.publish import not_verified, publish
    from checker.github.reportfile import read_reports

    inputs = ("mode", "bundles", "comment", "fail_on", "report", "args", "compare_to", "runtimes")
    ours = ("pr_number", "comment_key", "comment_mode", "hide_when_passing", "attest", "attestation")
    overrides = {k: getattr(args, k) for k in (*inputs, *ours)}
    try:
        config = Config.from_env(os.environ, dry_run=args.dry_run or None, **overrides)
    except Error as exc:  # a bad input: the summary and outputs still say that nothing was verified
        sys.stderr.write(f"checker: {printable(str(exc))}\n")
        plain = Config.from_env({k: v for k, v in os.environ.items() if not k.startswith("INPUT_")})
        published = not_verified(plain, str(exc), None, "")
        _print(published.lines)
        return published.code
    needs_api = config.mode not in ("verify-only", "plan") and config.comment != "never"
    notes: list[str] = []
    report: Report | None = None
    attestation = ""
    try:
        if config.mode == "plan":  # the matrix of the bundles that must run: no verdict, no comment here
            from checker.github.planning import plan_matrix

            _print(plan_matrix(config))
            return 0
        if config.mode == "comment-only":  # a glob (reports/*.json) joins the matrix jobs' reports into one
            report = read_reports(config.report, untrusted=True)
        else:
            report, skipped, verified = _verify(config)
            notes.append(skipped)
            attestation = _attest(config, report, verified)
    except Error as exc:  # a bad input or report: still a summary, outputs, and no stale verdict left behind
        sys.stderr.write(f"checker: {printable(str(exc))}\n")
        client = _client(config) if needs_api else None
        published = not_verified(config, str(exc), client, "")
    else:
        client = _client(config) if needs_api else None
        published = publish(config, report, config.report, client, notes, attestation)
    _print(published.lines)
    _print_planned(config, client)
    # A bug in a stage still leaves a report (an internal.error finding naming the stage), posted as usual.
    crashed = _crashes(report) if report is not None and config.mode != "comment-only" else []
    if crashed:
        sys.stderr.write("checker: internal error (a bug; please report it with this traceback)\n")
        # After the fence: a crash message that holds a newline and `::` must not act as a workflow command.
        sys.stderr.writelines(inert(trace).rstrip("\n") + "\n" for trace in crashed)
        return EXIT_INTERNAL
    return published.code


def _crashes(report: Report) -> list[str]:
    """The tracebacks of the report's internal.error findings (a bug in a stage)."""
    found = [f for b in report.bundles for f in b.findings if f.id == INTERNAL_ERROR]
    return [str(f.details.get("traceback", f.message)) for f in found]


@dataclass
class _Verified:
    """What the verification ran with, for the attestation: its options, and each bundle's outcome when a
    verdict store was used."""

    options: Options
    outcomes: list[Outcome] | None = None


def _verify(config: Config) -> tuple[Report, str, _Verified]:
    """Verify the bundles with the library, write the JSON report; returns it and the note on skipped paths."""
    from checker.github.event import load_event
    from checker.github.run import context, resolve_bundles, verify_options
    from checker.render import render

    if config.fails_on_loosened and not config.compare_to:
        raise UsageError("fail-on: loosened needs compare-to: a loosened rule is one looser than the base's")
    options = verify_options(config)
    resolved = resolve_bundles(config.bundles)
    for path, why in resolved.skipped:
        _print([f"Skipped {printable(path)}: {why}"])
    event = load_event(config.event_name, config.event_path)
    # The verdict text quotes the manifest: a line in it must not act as a workflow command.
    fence = secrets.token_hex(16) if os.environ.get("GITHUB_ACTIONS") == "true" else None
    _print([f"::stop-commands::{fence}"] if fence else [])
    ran = _Verified(options)
    try:
        if options.reuse is not None:  # the verdict store: bundles with a trusted stored verdict are not run
            from checker.store.run import verify_reusing

            reusing = verify_reusing(resolved.paths, options)
            verified, ran.outcomes = reusing.report, reusing.outcomes
        else:
            from checker.verify import verify_paths

            verified = verify_paths(resolved.paths, options)
        verified.context.update(context(config, event))
        report = verified
        _print([render("text", report)])
    finally:
        _print([f"::{fence}::"] if fence else [])
    if config.compare_to:
        _compare(config, event, report)
    Path(config.report).write_text(render("json", report), encoding="utf-8")
    return report, resolved.note(), ran


def _attest(config: Config, report: Report, verified: _Verified) -> str:
    from checker.github.run import attest

    written = attest(config, report, verified.options, verified.outcomes)
    if written:
        _print([f"Attestation of {len(report.bundles)} bundle(s) written to {printable(written)}"])
    return written


def _compare(config: Config, event: Event, report: Report) -> None:
    """Add what changed since the base; a base that cannot be had is said in the log, never a failure."""
    import shlex

    from checker.github.base import base_report
    from checker.reports.diff import diff, fail_on_loosened

    try:
        base = base_report(config, event, shlex.split(config.bundles), shlex.split(config.args))
    except Error as exc:
        _print([f"::warning title=compare-to::No comparison with the base: {exc}"])
        return
    report.changes = diff(base, report)
    if config.fails_on_loosened:
        fail_on_loosened(report)


# ----- checker github comment


def cmd_comment(args: argparse.Namespace) -> int:
    from checker.github.api import ApiError
    from checker.github.publish import advice
    from checker.reports.files import load_report

    report = load_report(args.report, untrusted=True)
    bundles = args.bundles or report.context.get("bundle_set") or None
    config = Config.from_env(os.environ, repository=args.repo, dry_run=args.dry_run or None, bundles=bundles)
    client = _client(config)
    if client is None:
        raise Error("no token: set GITHUB_TOKEN (or use --dry-run to see the request without one)")
    try:
        lines = _post(config, client, report, args.pr, args.head_sha)
    except ApiError as exc:
        raise Error(advice(exc)) from None
    _print(lines or ["No pull request found: pass --pr N."])
    _print_planned(config, client)
    return 0


def _post(config: Config, client: Client, report: Report, pr: int | None, head: str | None) -> list[str]:
    """Create or update the comment on the given pull request, or on the event's."""
    from checker.github.comment import Sticky
    from checker.github.event import Target, find_targets, load_event
    from checker.github.publish import links
    from checker.render.markdown import render

    if pr is not None:
        targets = [Target(pr, head)]
    else:
        targets = find_targets(client, config.owner_repo, load_event(config.event_name, config.event_path), config.sha)
    sticky = Sticky(client, config.owner_repo, config.sticky_key, config.run, config.comment_mode, config.graphql)
    markdown = render(report, links=links(report))
    return [f"#{t.number}: {_outcome(sticky.sync(t, markdown, create=True))}" for t in targets]


def _outcome(outcome: Any) -> str:
    return " ".join(part for part in (outcome.action, outcome.url or "", outcome.why) if part)


# ----- shared


def _client(config: Config) -> Client | None:
    """A client for the API, or None when there is nothing to authenticate with (and no dry run)."""
    if config.token is None and not config.dry_run:
        return None
    try:
        import requests  # noqa: F401  (an optional extra: say so plainly when it is missing)
    except ImportError:
        raise Error("the GitHub commands need requests: pip install 'onnx-release-checker[github]'") from None
    from checker.github.api import Client, new_session

    return Client.from_config(config, new_session())


def _print_planned(config: Config, client: Client | None) -> None:
    if config.dry_run and client is not None:
        _print([f"Dry run: {len(client.planned)} write(s) not sent."] + [inert(p.describe()) for p in client.planned])


def _print(lines: list[str]) -> None:
    for line in lines:
        sys.stdout.write(line.rstrip("\n") + "\n")
    sys.stdout.flush()
