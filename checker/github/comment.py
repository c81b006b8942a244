"""The sticky pull-request comment: created once per pull request and bundle set, then kept current.

The comment is found by a hidden marker on its first line that names the bundle set, and only among
comments written by the token's own login, so another tool's or a person's comment is never taken
over. A second hidden line records the commit and run that wrote it: a run whose commit is no longer
the pull request's head, or that is older than the run that wrote the comment for the same commit,
leaves the comment alone. Duplicates (two runs that both found no comment) are removed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checker.github.api import ApiError, Client
from checker.github.event import Target
from checker.render.markdown import FOOTER_MARK

ACTIONS_BOT = "github-actions[bot]"
_RUN_LINE = re.compile(r"<!-- onnx-release-checker:run head=([0-9a-f]{7,64}|-) run=(\d+)\.(\d+) -->")


@dataclass(frozen=True)
class Outcome:
    """What happened to the comment: created, updated, unchanged, skipped (with why), or planned (dry run)."""

    action: str
    url: str | None = None
    why: str = ""


def marker(bundle_set: str) -> str:
    """The first line of our comment: names the bundle set by a digest, so any input is safe in it."""
    normalized = " ".join(sorted(bundle_set.split()))
    digest = hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]
    return f"<!-- onnx-release-checker:sticky set={digest} -->"


def header(bundle_set: str, head_sha: str | None, run: tuple[int, int]) -> str:
    run_line = f"<!-- onnx-release-checker:run head={head_sha or '-'} run={run[0]}.{run[1]} -->"
    return f"{marker(bundle_set)}\n{run_line}\n"


@dataclass
class Sticky:
    """One comment to keep: which pull request, which bundle set, which run."""

    client: Client
    repo: tuple[str, str]
    bundle_set: str
    run: tuple[int, int]
    _login: str | None = field(default=None, init=False)

    def sync(self, target: Target, markdown: str, create: bool) -> Outcome:
        """Bring the comment up to date with `markdown`; `create` False only updates an existing one."""
        current = self._current_head(target.number)
        if target.head_sha and current and current != target.head_sha:
            why = f"the pull request moved on to {current[:12]}; this run checked {target.head_sha[:12]}"
            return Outcome("skipped", why=why + ", so its result is out of date")
        body = header(self.bundle_set, target.head_sha, self.run) + markdown
        ours = self._ours(target.number)
        if not ours:
            if not create:
                return Outcome("skipped", why="no earlier comment to update, and this result needs none")
            return self._create(target.number, body)
        keep = ours[0]
        newer = self._newer_run(keep, target.head_sha)
        outcome = Outcome("skipped", keep.get("html_url"), newer) if newer else self._update(keep, body)
        for duplicate in ours[1:]:
            self._delete(duplicate)
        return outcome

    # ----- reading

    def own_login(self) -> str:
        """The token's login; a workflow's GITHUB_TOKEN may not read /user, and then it is the Actions bot."""
        if self._login is None:
            try:
                user = self.client.get("/user")
                login = user.get("login") if isinstance(user, Mapping) else None
            except ApiError as exc:
                if exc.status not in (401, 403, 404):
                    raise
                login = None
            self._login = str(login) if login else ACTIONS_BOT
        return self._login

    def _current_head(self, number: int) -> str | None:
        pull = self.client.get(self._path("/repos/{owner}/{repo}/pulls/{n}", n=number))
        head = pull.get("head") if isinstance(pull, Mapping) else None
        sha = head.get("sha") if isinstance(head, Mapping) else None
        return sha if isinstance(sha, str) else None

    def _ours(self, number: int) -> list[Mapping[str, Any]]:
        """Our comments for this bundle set, oldest first (every page is read)."""
        login, first_line = self.own_login(), marker(self.bundle_set)
        path = self._path("/repos/{owner}/{repo}/issues/{n}/comments", n=number)
        found = [
            c
            for c in self.client.paginate(path)
            if isinstance(c, Mapping)
            and _login(c) == login
            and isinstance(c.get("body"), str)
            and c["body"].startswith(first_line)
        ]
        return sorted(found, key=lambda c: (str(c.get("created_at", "")), int(c.get("id") or 0)))

    def _newer_run(self, comment: Mapping[str, Any], head_sha: str | None) -> str:
        """Why not to overwrite `comment`: a later run of the same commit wrote it (empty: go ahead)."""
        recorded = _recorded(str(comment.get("body", "")))
        if not recorded or head_sha is None or recorded.group(1) != head_sha:
            return ""
        run = (int(recorded.group(2)), int(recorded.group(3)))
        if run > self.run:
            return f"a later run ({run[0]}, attempt {run[1]}) already wrote the result of this commit"
        return ""

    # ----- writing

    def _create(self, number: int, body: str) -> Outcome:
        path = self._path("/repos/{owner}/{repo}/issues/{n}/comments", n=number)
        created = self.client.write("POST", path, {"body": body})
        if created is None:
            return Outcome("planned")
        url = created.get("html_url") if isinstance(created, Mapping) else None
        return self._settle(number, body, Outcome("created", url))

    def _settle(self, number: int, body: str, outcome: Outcome) -> Outcome:
        """Another run may have created its comment at the same moment: keep the oldest, with our body."""
        ours = self._ours(number)
        if len(ours) < 2:
            return outcome
        keep = ours[0]
        if keep.get("body") != body:
            self.client.write("PATCH", self._comment_path(keep), {"body": body})
        for duplicate in ours[1:]:
            self._delete(duplicate)
        return Outcome("created", keep.get("html_url"), "a concurrent run's duplicate was removed")

    def _update(self, comment: Mapping[str, Any], body: str) -> Outcome:
        url = comment.get("html_url")
        if _visible(str(comment.get("body", ""))) == _visible(body) and _head(comment) == _head_of_body(body):
            return Outcome("unchanged", url)
        self.client.write("PATCH", self._comment_path(comment), {"body": body})
        return Outcome("planned" if self.client.dry_run else "updated", url)

    def _delete(self, comment: Mapping[str, Any]) -> None:
        self.client.write("DELETE", self._comment_path(comment))

    def _comment_path(self, comment: Mapping[str, Any]) -> str:
        return self._path("/repos/{owner}/{repo}/issues/comments/{id}", id=comment.get("id"))

    def _path(self, template: str, **parts: object) -> str:
        return self.client.path(template, owner=self.repo[0], repo=self.repo[1], **parts)


def _login(comment: Mapping[str, Any]) -> str | None:
    user = comment.get("user")
    login = user.get("login") if isinstance(user, Mapping) else None
    return login if isinstance(login, str) else None


def _visible(body: str) -> str:
    """The body without its two hidden header lines and its footer (the run and the time change with every run)."""
    visible = body.split("\n", 2)[2] if body.count("\n") >= 2 else body
    return visible.split(FOOTER_MARK, 1)[0]


def _recorded(body: str) -> re.Match[str] | None:
    """The run line of a comment we wrote: which commit and run it holds."""
    lines = body.split("\n", 2)
    return _RUN_LINE.fullmatch(lines[1]) if len(lines) >= 2 else None


def _head(comment: Mapping[str, Any]) -> str | None:
    return _head_of_body(str(comment.get("body", "")))


def _head_of_body(body: str) -> str | None:
    found = _recorded(body)
    return found.group(1) if found else None
