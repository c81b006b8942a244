"""Publish a report on GitHub: job summary, annotations, the sticky comment, step outputs, exit status.

This is the action's whole behaviour after verification, in the order of the contract. A comment
that cannot be written becomes a warning that says why and what would fix it; it never changes the
verdict. Nothing here prints: the caller writes `Published.lines` to standard output.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checker.errors import Error
from checker.github.annotations import Annotation, Selection, select
from checker.github.api import ApiError, Client
from checker.github.comment import Outcome, Sticky
from checker.github.config import Config
from checker.github.event import Event, Target, find_targets, head_sha, load_event
from checker.github.files import append_summary, write_outputs
from checker.render.links import Links
from checker.render.markdown import SUMMARY_LIMIT, render

SUMMARY_RESERVE = 16 * 1024  # room for what is appended after the report (comment problems)
FORKS = "docs/action.md#pull-requests-from-forks"


@dataclass
class Published:
    code: int
    status: str
    failed: int
    lines: list[str] = field(default_factory=list)  # workflow commands and log lines, for stdout
    outcomes: list[Outcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def verdict(report: Mapping[str, Any], fail_on: str) -> tuple[str, int]:
    """(status, failed bundles): a bundle fails on an error, or on a warning under fail-on: warning."""
    failed = 0
    for bundle in _dicts(report.get("bundles")):
        severities = {f.get("severity") for f in _dicts(bundle.get("findings"))}
        if (
            bundle.get("status") == "fail"
            or "error" in severities
            or (fail_on == "warning" and "warning" in severities)
        ):
            failed += 1
    if not _dicts(report.get("bundles")) and report.get("status") == "fail":
        failed = 1
    return ("fail" if failed else "pass"), failed


def publish(config: Config, report: Mapping[str, Any], report_path: str, client: Client | None) -> Published:
    status, failed = verdict(report, config.fail_on)
    code = 1 if failed and config.fail_on != "never" else 0
    result = Published(code, status, failed)
    uses_api = config.mode != "verify-only" and config.comment != "never"
    selection = Selection()
    if config.mode != "comment-only":  # the verify-only run already annotated the fork's files
        selection = select(report, config.workspace, reserve={"warning": 1} if uses_api else None)
    _summary(config, report, selection)
    result.lines.extend(a.command() for a in selection.chosen)
    url = _comment(config, report, status, client, result) if uses_api else ""
    _finish(config, report_path, result, url)
    return result


def _summary(config: Config, report: Mapping[str, Any], selection: Selection) -> None:
    if config.step_summary is None:
        return
    notes = [n for n in (selection.note(),) if n]
    limit = SUMMARY_LIMIT - SUMMARY_RESERVE
    text = render(report, limit=limit, notes=notes, limit_name="GitHub's 1 MiB job-summary limit", links=links(report))
    append_summary(config.step_summary, text)


def _finish(config: Config, report_path: str, result: Published, url: str) -> None:
    for problem in result.problems:
        result.lines.append(Annotation("warning", problem, title="Pull-request comment not written").command())
    if result.problems and config.step_summary is not None:
        append_summary(config.step_summary, "\n".join(f"> [!WARNING]\n> {p}\n" for p in result.problems))
    if config.output is not None:
        outputs = {
            "status": result.status,
            "report": report_path,
            "failed": str(result.failed),
            "comment-url": url,
        }
        write_outputs(config.output, outputs)


# ----- the comment


def _comment(config: Config, report: Mapping[str, Any], status: str, client: Client | None, result: Published) -> str:
    """Write the sticky comment on every pull request of this run; returns the last comment's URL."""
    if client is None:
        result.problems.append(
            "No token: set the github-token input (the default, github.token, needs `permissions: "
            "pull-requests: write`), or use comment: never."
        )
        return ""
    try:
        return _comment_targets(config, report, status, client, result)
    except ApiError as exc:
        result.problems.append(advice(exc))
    except Error as exc:  # an unreadable event file, say: still only a comment that was not written
        result.problems.append(f"The comment was not written: {exc}. The verdict is unchanged.")
    return ""


def _comment_targets(config: Config, report: Mapping[str, Any], status: str, client: Client, result: Published) -> str:
    event = load_event(config.event_name, config.event_path)
    found = report.get("context")
    context: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    mismatch = _context_mismatch(config, event, context)
    if mismatch:
        result.problems.append(mismatch)
        return ""
    hint = context.get("pull_request") if config.mode == "comment-only" else None
    targets = find_targets(client, config.owner_repo, event, config.sha, hint)
    if not targets:
        result.lines.append(f"No pull request to comment on for this {event.name or 'run'} event.")
        return ""
    bundle_set = _bundle_set(config, context)
    sticky = Sticky(client, config.owner_repo, bundle_set, config.run)
    markdown = render(report, links=links(report))
    url = ""
    for target in targets:
        outcome = sticky.sync(target, markdown, create=config.comment == "always" or status == "fail")
        result.outcomes.append(outcome)
        result.lines.append(_describe(target, outcome))
        url = outcome.url or url
    return url


def _context_mismatch(config: Config, event: Event, context: Mapping[str, Any]) -> str:
    """An untrusted report must be about the commit of the run that triggered this one."""
    if config.mode != "comment-only":
        return ""
    if event.name != "workflow_run":
        return f"comment-only mode runs on a workflow_run event, not {event.name or 'none'}: see {FORKS}."
    recorded, expected = context.get("head_sha"), head_sha(event, None)
    if recorded is not None and recorded != expected:
        return "The report names another commit than the run that made it; it was not posted."
    return ""


def _bundle_set(config: Config, context: Mapping[str, Any]) -> str:
    """The set the marker names: in comment-only mode, the one the verifying run recorded."""
    recorded = context.get("bundle_set")
    if config.mode == "comment-only" and isinstance(recorded, str) and recorded.strip():
        return recorded[:4096]
    return config.bundles


def links(report: Mapping[str, Any]) -> Links | None:
    """Links into the repository at the commit the report is about (a pull request's head, not the merge)."""
    found = report.get("context")
    head = found.get("head_sha") if isinstance(found, Mapping) else None
    return Links.from_env(os.environ, sha=head if isinstance(head, str) else None)


def _describe(target: Target, outcome: Outcome) -> str:
    where = f"pull request #{target.number}"
    why = f": {outcome.why}" if outcome.why else ""
    url = f" ({outcome.url})" if outcome.url else ""
    return f"Comment on {where}: {outcome.action}{url}{why}"


def advice(exc: ApiError) -> str:
    """Why the comment was not written, and what would fix it."""
    if exc.read_only:
        return (
            f"The comment was not written: the token is read-only here ({exc}). A pull request from a fork "
            "gets a read-only token: run this action there with mode: verify-only and post the report from a "
            f"workflow_run workflow with mode: comment-only (see {FORKS}); otherwise grant the job "
            "permissions: pull-requests: write. The verdict is unchanged."
        )
    if exc.status == 401:
        return f"The comment was not written: the token was refused ({exc}). Check the github-token input."
    if exc.status in (403, 404):
        return (
            f"The comment was not written ({exc}): the token lacks a permission. Grant the job "
            "permissions: pull-requests: write (and contents: read). The verdict is unchanged."
        )
    if exc.status is None or exc.status >= 500:
        return f"The comment was not written: the GitHub API is not answering ({exc}). The verdict is unchanged."
    return f"The comment was not written ({exc}). The verdict is unchanged."


def _dicts(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []
