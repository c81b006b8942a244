"""Publish a report on GitHub: job summary, annotations, the sticky comment, step outputs, exit status.

This is the action's whole behaviour after verification, in the order of the contract. A comment
that cannot be written becomes a warning that says why and what would fix it; it never changes the
verdict. A run that could not verify (or a comment-only run whose report is refused) still writes
its summary and outputs, and turns an earlier comment into a "not verified" one, so no stale green
verdict is left on the pull request. Nothing here prints: the caller writes `Published.lines` to
standard output.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checker.errors import Error
from checker.findings import Severity
from checker.github import refusals
from checker.github.annotations import Annotation, Selection, inert, select
from checker.github.api import ApiError, Client
from checker.github.comment import PROVENANCE, Outcome, Sticky
from checker.github.commit import checked_sha, verified_commit
from checker.github.config import Config
from checker.github.event import EVENTS, Event, Target, as_number, find_targets, head_sha, load_event
from checker.github.files import append_summary, write_outputs
from checker.github.refusals import FORKS
from checker.render.escape import text
from checker.render.links import Links
from checker.render.markdown import SUMMARY_LIMIT, TITLE, render
from checker.reports.model import Report

SUMMARY_RESERVE = 16 * 1024  # room for what is appended after the report (comment problems)
EXIT_USAGE = 2
BASE_CHECKED = "the base branch was checked, not this pull request's files"


@dataclass
class Published:
    code: int
    status: str
    failed: int
    lines: list[str] = field(default_factory=list)  # workflow commands and log lines, for stdout
    outcomes: list[Outcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    attestation: str = ""  # the attestation written (attest: true), for the step's output


def verdict(report: Report, fail_on: str) -> tuple[str, int]:
    """(status, failed bundles): a bundle fails on an error, or on a warning under fail-on: warning."""
    failed = 0
    for bundle in report.bundles:
        if bundle.status(report.strict) == "fail" or (fail_on == "warning" and bundle.count(Severity.WARNING)):
            failed += 1
    return ("fail" if failed else "pass"), failed


def publish(
    config: Config,
    report: Report,
    report_path: str,
    client: Client | None,
    notes: list[str] | None = None,
    attestation: str = "",
) -> Published:
    status, failed = verdict(report, config.fail_level)
    code = 1 if failed and config.fail_level != "never" else 0
    result = Published(code, status, failed, attestation=attestation)
    event = _event(config, result)
    context = report.context
    refused = _refusal(config, event, context)
    if refused:
        return not_verified(config, refused, client, report_path)
    uses_api = config.mode != "verify-only" and config.comment != "never"
    selection = Selection()
    if config.mode != "comment-only":  # the verify-only run already annotated the fork's files
        selection = select(report, config.workspace, reserve={"warning": 2} if uses_api else None)
    caveat = _base_warning(config, event, result)
    notes = [*(notes or []), *caveat]
    trailer = provenance(config, event, context)
    _summary(config, report, [*notes, selection.note() or "", trailer], bool(caveat))
    result.lines.extend(a.command() for a in selection.chosen)
    url = _comment(config, report, status, client, result, event, [*notes, trailer], bool(caveat)) if uses_api else ""
    _finish(config, report_path, result, url)
    return result


def not_verified(config: Config, why: str, client: Client | None, report_path: str = "") -> Published:
    """Nothing was verified: say so in the summary, the outputs and (if there is one) the comment."""
    result = Published(EXIT_USAGE, "fail", 0)
    body = f"## ⚠️ {TITLE}: not verified\n\n{text(why, 2000)}\n\nNo bundle was verified by this run, so there is no verdict: the step's log says more.\n"  # noqa: E501
    event = _event(config, result)
    trailer = provenance(config, event, {})
    if config.step_summary is not None:
        append_summary(config.step_summary, body + "\n" + trailer + "\n")
    result.lines.append(Annotation("error", f"Nothing was verified: {why}", title=TITLE).command())
    url = ""
    if (
        config.mode not in ("verify-only", "plan")
        and config.comment != "never"
        and client is not None
        and config.repository
    ):
        url = _stale_comment(config, client, event, body + "\n" + trailer + "\n", result)
    _finish(config, report_path, result, url)
    return result


def _stale_comment(config: Config, client: Client, event: Event, body: str, result: Published) -> str:
    """An earlier comment (a green verdict, say) no longer applies: update it, never create one."""
    try:
        targets = find_targets(client, config.owner_repo, event, checked_sha(config, event), config.pr_number)
        sticky = _sticky(config, client)
        url = ""
        for target in targets:
            outcome = sticky.sync(target, body, create=False)
            result.lines.append(_describe(target, outcome))
            url = outcome.url if outcome.action != "skipped" and outcome.url else url
        return url
    except ApiError as exc:
        result.problems.append(advice(exc))
    except Error as exc:
        result.problems.append(f"The comment was not updated: {exc}.")
    return ""


def _event(config: Config, result: Published) -> Event:
    try:
        return load_event(config.event_name, config.event_path)
    except Error as exc:
        result.problems.append(f"The event could not be read: {exc}.")
        return Event(config.event_name or "", {})


def _summary(config: Config, report: Report, notes: list[str], base_checked: bool = False) -> None:
    if config.step_summary is None:
        return
    notes = [n for n in notes if n]
    limit = SUMMARY_LIMIT - SUMMARY_RESERVE
    markdown = render(
        report, limit=limit, notes=notes, limit_name="GitHub's 1 MiB job-summary limit", links=links(report)
    )
    append_summary(config.step_summary, _headlined(markdown) if base_checked else markdown)


def _headlined(markdown: str) -> str:
    """The rendering with a headline that says first that the pull request's own files were not checked:
    the verdict (✅ or ❌) is about the base branch, so it moves below, without its mark."""
    first, _, rest = markdown.partition("\n")
    verdict = first.partition(f"{TITLE}: ")[2] or first.removeprefix("## ")
    return f"## ⚠️ {TITLE}: {BASE_CHECKED}\n\nOn the base branch's files: {verdict}\n{rest}"


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
            "attestation": result.attestation,
        }
        write_outputs(config.output, outputs)


# ----- where the report came from


def provenance(config: Config, event: Event, context: Mapping[str, Any]) -> str:
    """The footer line naming the run and the commit that produced the report, with links.

    In comment-only mode both come from the workflow_run event (GitHub's, trusted), not the report.
    """
    repo = config.repository or ""
    base = f"{config.server_url}/{repo}"
    run_id, commit = config.run_id, _verified(config, event, context)
    if config.mode == "comment-only" and event.kind.pulls == "run":
        run = event.payload.get("workflow_run")
        run = run if isinstance(run, Mapping) else {}
        run_id = str(run.get("id")) if isinstance(run.get("id"), int) else None
    parts = []
    if run_id and run_id.isdigit() and repo:
        parts.append(f"[run {run_id}]({base}/actions/runs/{run_id})")
    if commit and repo:
        parts.append(f"commit [`{commit[:12]}`]({base}/commit/{commit})")
    if not parts:
        return ""
    posted = ""
    if config.mode == "comment-only" and config.run_id != run_id and config.run_id and config.run_id.isdigit() and repo:
        posted = f", posted by [run {config.run_id}]({base}/actions/runs/{config.run_id})"
    return f"{PROVENANCE}{' at '.join(parts)}{posted}.</sub>"


def _verified(config: Config, event: Event, context: Mapping[str, Any]) -> str | None:
    if config.mode == "comment-only":
        found = head_sha(event, None)
    else:
        recorded = context.get("head_sha")
        found = recorded if isinstance(recorded, str) else head_sha(event, config.sha)
    return found if found and all(c in "0123456789abcdef" for c in found) else None


def _base_warning(config: Config, event: Event, result: Published) -> list[str]:
    """pull_request_target checks out the base branch: the pull request's own files were not verified."""
    if event.kind.checkout != "base" or config.mode == "comment-only":
        return []
    checked, head = verified_commit(config, event), head_sha(event, None)
    if checked and head and checked == head:
        return []
    message = (
        f"pull_request_target checks out the base branch: this run verified commit {str(checked)[:12]}, "
        f"not the pull request's head {str(head)[:12]}. The comment is labelled with the commit verified."
    )
    result.lines.append(Annotation("warning", message, title="Not the pull request's files").command())
    return [f"> [!WARNING]\n> {text(message, 400)}"]


def _refusal(config: Config, event: Event, context: Mapping[str, Any]) -> str:
    """Why an untrusted report (comment-only mode) is not posted, or empty when it may be."""
    if config.mode != "comment-only":
        return ""
    if event.kind.pulls != "run" and not event.kind.same_run:
        same = ", ".join(kind.name for kind in EVENTS.values() if kind.same_run)
        return (
            "comment-only mode runs on a workflow_run event, or in a later job of the run that made the reports "
            f"({same}), not on {event.name or 'none'}: see {FORKS}."
        )
    if not context:
        return "The report has no context (which pull request and commit it is about), so it was not posted."
    if event.kind.same_run and str(context.get("run_id")) != str(config.run_id):
        return "The report was made by another run than this one, so it was not posted."
    recorded, expected = context.get("head_sha"), head_sha(event, None)
    if not isinstance(recorded, str) or recorded != expected:
        return "The report names another commit than the run that made it, so it was not posted."
    repo = context.get("repository")
    if repo is not None and repo != config.repository:
        return "The report names another repository than this one, so it was not posted."
    return ""


# ----- the comment


def _comment(
    config: Config,
    report: Report,
    status: str,
    client: Client | None,
    result: Published,
    event: Event,
    notes: list[str],
    base_checked: bool = False,
) -> str:
    """Write the sticky comment on every pull request of this run; returns the last comment's URL."""
    if client is None:
        result.problems.append(
            "No token: set the github-token input (the default, github.token, needs `permissions: "
            "pull-requests: write`), or use comment: never."
        )
        return ""
    try:
        return _comment_targets(config, report, status, client, result, event, notes, base_checked)
    except ApiError as exc:
        result.problems.append(advice(exc))
    except Error as exc:  # an unreadable event file, say: still only a comment that was not written
        result.problems.append(f"The comment was not written: {exc}. The verdict is unchanged.")
    return ""


def _comment_targets(
    config: Config,
    report: Report,
    status: str,
    client: Client,
    result: Published,
    event: Event,
    notes: list[str],
    base_checked: bool,
) -> str:
    targets = find_targets(client, config.owner_repo, event, checked_sha(config, event), config.pr_number)
    if not targets:
        result.lines.append(f"No pull request to comment on for this {event.name or 'run'} event.")
        return ""
    if config.mode == "comment-only":
        named = as_number(report.context.get("pull_request"))
        if named is not None and named not in {t.number for t in targets}:
            result.problems.append(
                f"The report names pull request #{named}, not one of this run's ({_numbers(targets)}), "
                "so it was not posted."
            )
            return ""
    sticky = _sticky(config, client)
    markdown = render(report, notes=[n for n in notes if n], links=links(report))
    markdown = _headlined(markdown) if base_checked else markdown
    passing = status == "pass"
    create = (config.comment == "always" or not passing) and not (passing and config.hide_when_passing)
    url = ""
    for target in targets:
        outcome = sticky.sync(target, markdown, create=create)
        if config.hide_when_passing and outcome.action in ("updated", "unchanged", "created"):
            sticky.hide(outcome, hidden=passing)
        result.outcomes.append(outcome)
        result.lines.append(_describe(target, outcome))
        url = outcome.url or url
    return url


def _sticky(config: Config, client: Client) -> Sticky:
    return Sticky(client, config.owner_repo, config.sticky_key, config.run, config.comment_mode, config.graphql)


def _numbers(targets: list[Target]) -> str:
    return ", ".join(f"#{t.number}" for t in targets)


def links(report: Report) -> Links | None:
    """Links into the repository at the commit the report is about (a pull request's head, not the merge)."""
    head = report.context.get("head_sha")
    return Links.from_env(os.environ, sha=head if isinstance(head, str) else None)


def _describe(target: Target, outcome: Outcome) -> str:
    where = f"pull request #{target.number}"
    why = f": {outcome.why}" if outcome.why else ""
    url = f" ({outcome.url})" if outcome.url else ""
    return inert(f"Comment on {where}: {outcome.action}{url}{why}")  # printed after the fence: never a command


def advice(exc: ApiError) -> str:
    """Why the comment was not written, and what would fix it, from GitHub's answer (status, message, headers)."""
    return refusals.advice(exc.status, exc.github_message, exc.sso, str(exc))
