"""Which commit a run checked: the one its comment and report are labelled with.

A pull request's head, not GITHUB_SHA (a merge commit there); but where the workspace may hold another
commit than the event names (pull_request_target checks out the base branch; a dispatch or schedule run
checks out whatever the workflow asks for), the workspace's own HEAD, read from its files, running nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

from checker.github.config import Config
from checker.github.event import Event, head_sha

_HEX = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REF = re.compile(r"refs/[A-Za-z0-9._/-]{1,200}")


def verified_commit(config: Config, event: Event) -> str | None:
    """The commit whose files were checked.

    Under pull_request_target the default checkout is the base branch, not the pull request's head, and
    a dispatch or schedule run may check out any commit (`Kind.checkout`): the workspace's own HEAD says which
    commit is there (read from the files, running nothing).
    """
    if event.kind.checkout == "head":
        return head_sha(event, config.sha)
    found = _workspace_head(config.workspace)
    return found or config.sha


def checked_sha(config: Config, event: Event) -> str | None:
    """The commit to hold a pull request's head to before commenting: the workspace's for events that name
    none (GITHUB_SHA is the dispatching branch's tip there, and the job may have checked out another commit),
    else GITHUB_SHA (which `head_sha` overrides with the event's own head where it has one)."""
    if event.kind.checkout == "any":
        return verified_commit(config, event)
    return config.sha


def _workspace_head(workspace: Path | None) -> str | None:
    """The commit checked out in the workspace: a detached HEAD, or the branch HEAD names (loose or packed)."""
    if workspace is None:
        return None
    git = workspace / ".git"
    head = _read_small(git / "HEAD")
    if head.startswith("ref: "):
        ref = head.removeprefix("ref: ").strip()
        if not _REF.fullmatch(ref) or ".." in ref:
            return None
        head = _read_small(git / ref) or _packed_ref(git, ref)
    return head if _HEX.fullmatch(head) else None


def _packed_ref(git: Path, ref: str) -> str:
    for line in _read_small(git / "packed-refs", 1 << 20).splitlines():
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha
    return ""


def _read_small(path: Path, limit: int = 200) -> str:
    try:
        with path.open("r", encoding="ascii", errors="replace") as handle:
            return handle.read(limit).strip()
    except OSError:
        return ""
