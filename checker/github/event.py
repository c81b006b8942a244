"""Which pull request a run is about, and which commits, from the event that started it.

One table, `EVENTS`, says for each event the action handles how its pull request is found, which commit it
names and which the checkout holds, its base, and whether a later job of its run may post its reports; every
question asked of an event's name reads it (`tests/github/test_github_event.py` holds it to a payload fixture
per event). `pull_request`, `pull_request_target`, `pull_request_review` and `pull_request_review_comment` name
the pull request (none once closed); `push` of a branch finds the commit's open pull requests (a tag push has
none); `workflow_run` (the privileged half of the fork pattern) gets numbers from the event or from the open
pull requests of the head branch, and accepts one only when its head commit is the run's head commit. A
number in a report (untrusted) never picks a pull request: it is only checked against these. The `pr-number`
input (the workflow's own, so trusted) names one for any other event.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from checker.errors import Error
from checker.github.api import ApiError, Client

MAX_EVENT_BYTES = 32 * 1024 * 1024
NO_COMMIT = "0" * 40


@dataclass(frozen=True)
class Kind:
    """How the action reads one kind of event: every question asked of an event's name is answered here."""

    name: str
    # How the pull request is found: "payload" (the event names it), "commit" (a branch push: the commit's open
    # pull requests), "run" (workflow_run: the run's, held to its head); "" for none of its own, where the
    # workflow's pr-number input may name one.
    pulls: Literal["payload", "commit", "run", ""] = ""
    head: tuple[str, ...] = ()  # the payload's path to the commit the event names; () when it names none
    head_or_sha: bool = True  # GITHUB_SHA stands in for a head the payload lacks (not under workflow_run)
    # What the default checkout holds, and so which commit was verified: "head" (the commit above, else
    # GITHUB_SHA), "base" (the base branch, whatever the pull request holds), "any" (what the workflow chose).
    checkout: Literal["head", "base", "any"] = "head"
    base: tuple[str, ...] = ()  # the payload's path to the base commit (compare-to: base); () when it names none
    same_run: bool = False  # a later job of the same run may post the reports of earlier jobs (comment-only)
    # The action may restore its environment from the cache: not where a poisoned cache would do the most harm,
    # the release gate and pull_request_target (whose cache scope is the base branch's). action.yml's cache
    # steps name these events in their conditions.
    cache: bool = True


_PULL = Kind(
    "pull_request",
    pulls="payload",
    head=("pull_request", "head", "sha"),
    base=("pull_request", "base", "sha"),
    same_run=True,
)
EVENTS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        _PULL,
        replace(_PULL, name="pull_request_target", checkout="base", cache=False),
        replace(_PULL, name="pull_request_review"),
        replace(_PULL, name="pull_request_review_comment"),
        Kind(
            "merge_group",
            head=("merge_group", "head_sha"),
            base=("merge_group", "base_sha"),
            same_run=True,
        ),
        Kind("push", pulls="commit", head=("after",)),
        Kind("workflow_run", pulls="run", head=("workflow_run", "head_sha"), head_or_sha=False),
        Kind("workflow_dispatch", checkout="any"),
        Kind("schedule", checkout="any"),
        Kind("repository_dispatch", checkout="any"),
        Kind("release", cache=False),
    )
}
OTHER = Kind("")  # an event the table does not list: no pull request unless pr-number names one, GITHUB_SHA


@dataclass(frozen=True)
class Event:
    name: str
    payload: Mapping[str, Any]

    @property
    def kind(self) -> Kind:
        return EVENTS.get(self.name, OTHER)


@dataclass(frozen=True)
class Target:
    """A pull request to comment on, and the commit this run checked (None when unknown)."""

    number: int
    head_sha: str | None


def load_event(name: str | None, path: Path | None) -> Event:
    if not name or path is None:
        return Event(name or "", {})
    try:
        if path.stat().st_size > MAX_EVENT_BYTES:
            raise Error(f"the event file {path} is larger than {MAX_EVENT_BYTES} bytes")
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise Error(f"cannot read the event file {path}: {exc}") from None
    return Event(name, payload if isinstance(payload, dict) else {})


def head_sha(event: Event, fallback: str | None) -> str | None:
    """The commit the event names (a pull request's head, not GITHUB_SHA: a merge commit there), else `fallback`
    where the kind lets GITHUB_SHA stand in."""
    kind = event.kind
    named = _str(_get(event.payload, *kind.head)) if kind.head else None
    if named and named != NO_COMMIT:
        return named
    return fallback if kind.head_or_sha else None


def base_commit(event: Event) -> str | None:
    """The base commit the event names (a pull request's base, a merge group's), else None."""
    base = event.kind.base
    return _str(_get(event.payload, *base)) if base else None


def pull_number(event: Event) -> int | None:
    """The pull request the event itself names, without asking the API."""
    if event.kind.pulls == "payload":
        return _number(_get(event.payload, "pull_request", "number") or event.payload.get("number"))
    return None


def find_targets(
    client: Client, repo: tuple[str, str], event: Event, sha: str | None, pr_number: int | None = None
) -> list[Target]:
    """The pull requests to comment on; `pr_number` is the workflow's pr-number input."""
    head, pulls = head_sha(event, sha), event.kind.pulls
    if pulls == "payload":
        number = pull_number(event)
        if number is None or _get(event.payload, "pull_request", "state") == "closed":
            return []
        return [Target(number, head)]
    if pulls == "run":
        return _workflow_run_targets(client, repo, event, head)
    if pr_number is not None:
        return [Target(pr_number, head)] if _head_of(client, repo, pr_number) else []
    if pulls == "commit" and not str(event.payload.get("ref", "")).startswith("refs/tags/"):
        return list(_push_targets(client, repo, head))
    return []  # a tag push, release, schedule, workflow_dispatch: no pull request


def _push_targets(client: Client, repo: tuple[str, str], head: str | None) -> Iterator[Target]:
    if not head:
        return
    path = client.path("/repos/{owner}/{repo}/commits/{sha}/pulls", owner=repo[0], repo=repo[1], sha=head)
    for pull in client.paginate(path):
        if isinstance(pull, Mapping) and pull.get("state") == "open" and _number(pull.get("number")):
            yield Target(int(pull["number"]), head)


def _workflow_run_targets(client: Client, repo: tuple[str, str], event: Event, head: str | None) -> list[Target]:
    if not head:
        return []
    numbers = list(dict.fromkeys(_candidates(client, repo, event)))
    return [Target(n, head) for n in numbers if _head_of(client, repo, n) == head]


def _candidates(client: Client, repo: tuple[str, str], event: Event) -> Iterator[int]:
    run = event.payload.get("workflow_run")
    run = run if isinstance(run, Mapping) else {}
    pulls = run.get("pull_requests")
    for pull in pulls if isinstance(pulls, list) else []:
        if isinstance(pull, Mapping) and (n := _number(pull.get("number"))):
            yield n
    # A fork's run lists no pull requests: look for the open ones of its head branch.
    owner = _str(_get(run, "head_repository", "owner", "login"))
    branch = _str(run.get("head_branch"))
    if owner and branch:
        path = client.path("/repos/{owner}/{repo}/pulls", owner=repo[0], repo=repo[1])
        for pull in client.paginate(path, {"state": "open", "head": f"{owner}:{branch}"}):
            if isinstance(pull, Mapping) and (n := _number(pull.get("number"))):
                yield n


def _head_of(client: Client, repo: tuple[str, str], number: int) -> str | None:
    """The pull request's current head commit, or None when it is closed or absent."""
    path = client.path("/repos/{owner}/{repo}/pulls/{n}", owner=repo[0], repo=repo[1], n=number)
    try:
        pull = client.get(path)
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise
    if not isinstance(pull, Mapping) or pull.get("state") != "open":
        return None
    return _str(_get(pull, "head", "sha"))


def _get(data: Mapping[str, Any], *keys: str) -> Any:
    node: Any = data
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: object) -> int | None:
    """A pull request number from data we do not trust: a positive int, or a string of digits."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 < value < 2**31 else None
    if isinstance(value, str) and value.isdigit() and len(value) < 10:
        return int(value) or None
    return None


def as_number(value: object) -> int | None:
    """A pull request number from an untrusted report, or None."""
    return _number(value)
