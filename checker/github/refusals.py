"""Why GitHub refused a call, as GitHub states it, and what fixes it: one table of causes.

A cause is recognised by the status GitHub answers with and by GitHub's own words for it (its documented
messages, matched as phrases, never as fragments of words: "locked" is inside "temporarily blocked from content
creation", which is a rate limit), or by a header (X-GitHub-SSO). The first matching cause in the table wins, so
the specific ones come before the general ones. `tests/github/test_github_refusals.py` holds one documented
message per cause, and every status GitHub's REST description lists for the calls that write a comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FORKS = "docs/action.md#pull-requests-from-forks"
_UNCHANGED = "The verdict is unchanged."


@dataclass(frozen=True)
class Cause:
    """One reason GitHub gives: the statuses it comes with, the phrases that name it, and the advice."""

    name: str
    statuses: frozenset[int | None]
    said: re.Pattern[str] | None  # GitHub's words for it; None: the status (or the header) alone says it
    advice: str  # "{exc}" is the call and GitHub's answer
    sso_header: bool = False  # named by the X-GitHub-SSO header


def _phrases(*phrases: str) -> re.Pattern[str]:
    return re.compile("|".join(rf"\b{p}\b" for p in phrases), re.I)


_SECONDARY = _phrases(
    "secondary rate limit",
    "abuse detection mechanism",
    "temporarily blocked from content creation",
)
_PRIMARY = _phrases("API rate limit exceeded", "rate limit exceeded")
_RATE_LIMIT = (
    "The comment was not written: GitHub's {which} was still exhausted after waiting ({exc}). This is a rate "
    "limit, not a permission: run the job again later, or run fewer jobs that call the API at once. " + _UNCHANGED
)

CAUSES: tuple[Cause, ...] = (
    Cause(
        "sso",
        frozenset({401, 403, 404}),
        None,
        "The comment was not written: the token is not authorized for this organization's SAML single sign-on "
        "({exc}). Authorize it for the organization (the token's Configure SSO setting), and again after each "
        "rotation of the token. " + _UNCHANGED,
        sso_header=True,
    ),
    Cause(
        "secondary_rate_limit",
        frozenset({403, 429}),
        _SECONDARY,
        _RATE_LIMIT.replace("{which}", "secondary rate limit"),
    ),
    Cause("rate_limit", frozenset({403, 429}), _PRIMARY, _RATE_LIMIT.replace("{which}", "rate limit")),
    Cause("rate_limit", frozenset({429}), None, _RATE_LIMIT.replace("{which}", "rate limit")),
    Cause(
        "locked",
        frozenset({403}),
        _phrases("issue is locked", "pull request is locked", "conversation is locked", "locked conversation"),
        "The comment was not written: the pull request's conversation is locked ({exc}). Unlock it (or have "
        "someone with write access comment); no permission of the token changes this. " + _UNCHANGED,
    ),
    Cause(
        "archived",
        frozenset({403}),
        _phrases("archived"),
        "The comment was not written: the repository is archived, so it is read-only for everyone ({exc}). "
        "Unarchive it to comment, or use comment: never. " + _UNCHANGED,
    ),
    Cause(
        "ip_allow_list",
        frozenset({403}),
        _phrases("IP allow list"),
        "The comment was not written: the organization's IP allow list does not admit this runner ({exc}). "
        "Add the runner's addresses to the allow list, or run the job on a runner it admits. " + _UNCHANGED,
    ),
    Cause(
        "read_only",
        frozenset({403, 404}),
        _phrases("not accessible by integration", "not accessible by personal access token"),
        "The comment was not written: the token is read-only here ({exc}). A pull request from a fork gets a "
        "read-only token: run this action there with mode: verify-only and post the report from a workflow_run "
        f"workflow with mode: comment-only (see {FORKS}); otherwise grant the job permissions: pull-requests: "
        "write. " + _UNCHANGED,
    ),
    Cause(
        "gone",
        frozenset({410}),
        None,
        "The comment was not written: GitHub says the conversation is gone ({exc}): its issues or pull requests "
        "are disabled, or it was deleted. " + _UNCHANGED,
    ),
    Cause(
        "too_long",
        frozenset({422}),
        _phrases("too long"),
        "The comment was not written: GitHub found its body too long ({exc}). Report this as a bug: the comment "
        "is kept within GitHub's limit. " + _UNCHANGED,
    ),
    Cause(
        "refused",
        frozenset({422}),
        None,
        "The comment was not written: GitHub refused it as invalid, or as spam when the endpoint is called too "
        "often ({exc}). Run the job again later. " + _UNCHANGED,
    ),
    Cause(
        "bad_credentials",
        frozenset({401}),
        None,
        "The comment was not written: the token was refused ({exc}). Check the github-token input.",
    ),
    Cause(
        "no_permission",
        frozenset({403, 404}),
        None,
        "The comment was not written ({exc}): the token lacks a permission. Grant the job permissions: "
        "pull-requests: write (and contents: read). " + _UNCHANGED,
    ),
    Cause(
        "down",
        frozenset({None, 500, 502, 503, 504}),
        None,
        "The comment was not written: the GitHub API is not answering ({exc}). " + _UNCHANGED,
    ),
)
_OTHER = Cause("other", frozenset(), None, "The comment was not written ({exc}). " + _UNCHANGED)


def cause_of(status: int | None, message: str, sso: str = "") -> Cause:
    """The first cause of the table whose status, words or header match GitHub's answer."""
    for cause in CAUSES:
        if status not in cause.statuses:
            continue
        if cause.sso_header:
            if sso:
                return cause
            continue
        if cause.said is None or cause.said.search(message):
            return cause
    if status is not None and status >= 500:
        return next(c for c in CAUSES if c.name == "down")
    return _OTHER


def rate_limited(status: int, message: str) -> bool:
    """A rate limit by GitHub's words (or a 429), whatever headers came with it: worth waiting for."""
    return cause_of(status, message).name in ("secondary_rate_limit", "rate_limit")


def advice(status: int | None, message: str, sso: str, said: str) -> str:
    """Why the comment was not written and what would fix it; `said` is the call and GitHub's answer."""
    return cause_of(status, message, sso).advice.replace("{exc}", said)
