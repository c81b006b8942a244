"""The sticky pull-request comment: created once per pull request and comment key, then kept current.

The comment is found by a hidden marker on its first line that names its key (the comment-key
input, or the workflow, job and step: not the bundles, so editing them keeps the comment), and only
among comments of our own author: the token's login when `GET /user` tells it (a person's token),
else a bot (an Actions or App installation token may not read /user). The login the API returns
when we create or update a comment is learnt at once, so from then on only that author counts, and a
comment we may not edit is someone else's: it is left alone. A second hidden line records the commit
and run that wrote it: a run whose commit is no longer the pull request's head, or that is older than
the run that wrote the comment for the same commit, leaves the comment alone. Duplicates (two runs
that both found no comment) are removed. Bodies are read with LF line ends (GitHub keeps the CRLF of
a body saved from its web editor), and a comment deleted before our edit lands (a 404, whatever the
token) gives way to the next candidate or a new comment.

`comment-mode` says what a new result does to the old comment: `update` edits it in place,
`recreate` posts a new one at the bottom and deletes the old, `minimize-old` posts a new one and
hides the old as outdated (GraphQL `minimizeComment`).
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

_RUN_LINE = re.compile(r"<!-- onnx-release-checker:run head=([0-9a-f]{7,64}|-) run=(\d+)\.(\d+) -->")
PROVENANCE = "<sub>Verified by "  # the footer line naming the run: a re-run alone does not re-send the comment
MINIMIZE = "mutation($id: ID!, $why: ReportedContentClassifiers!) { minimizeComment(input: {subjectId: $id, classifier: $why}) { minimizedComment { isMinimized } } }"  # noqa: E501
UNMINIMIZE = "mutation($id: ID!) { unminimizeComment(input: {subjectId: $id}) { unminimizedComment { isMinimized } } }"


class _NotOurs(Exception):
    """A comment with our marker that the API does not let us edit: another app's."""


class _Gone(Exception):
    """A comment deleted between reading and editing it (by a person, or a concurrent recreate)."""


@dataclass(frozen=True)
class Outcome:
    """What happened to the comment: created, updated, unchanged, skipped (with why), or planned (dry run)."""

    action: str
    url: str | None = None
    why: str = ""
    comment: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)


def marker(key: str) -> str:
    """The first line of our comment: names the comment key by a digest, so any input is safe in it."""
    normalized = " ".join(key.split())
    digest = hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]
    return f"<!-- onnx-release-checker:sticky key={digest} -->"


def retired(key: str) -> str:
    """The first line of an old comment that minimize-old replaced: no longer found as ours."""
    return marker(key).replace(":sticky ", ":outdated ")


def header(key: str, head_sha: str | None, run: tuple[int, int]) -> str:
    run_line = f"<!-- onnx-release-checker:run head={head_sha or '-'} run={run[0]}.{run[1]} -->"
    return f"{marker(key)}\n{run_line}\n"


@dataclass
class Sticky:
    """One comment to keep: which pull request, which key, which run, and how to replace it."""

    client: Client
    repo: tuple[str, str]
    key: str
    run: tuple[int, int]
    mode: str = "update"
    graphql_url: str | None = None
    _login: str | None = field(default=None, init=False)
    _asked: bool = field(default=False, init=False)

    def sync(self, target: Target, markdown: str, create: bool) -> Outcome:
        """Bring the comment up to date with `markdown`; `create` False only updates an existing one."""
        state, current = self._current_head(target.number)
        if state not in (None, "open"):
            return Outcome("skipped", why=f"the pull request is {state}")
        if target.head_sha and current and current != target.head_sha:
            why = f"the pull request moved on to {current[:12]}; this run checked {target.head_sha[:12]}"
            return Outcome("skipped", why=why + ", so its result is out of date")
        body = header(self.key, target.head_sha, self.run) + markdown
        ours = self._ours(target.number)
        outcome, owner = None, None
        while ours and outcome is None:
            keep = ours.pop(0)
            try:
                outcome = self._refresh(target.number, keep, body)
            except _NotOurs:  # another app's comment with our marker: never taken over
                continue
            except _Gone:  # deleted meanwhile: the next candidate, or a new comment
                continue
            owner = self._login or _login(keep)
        if outcome is None:
            if not create:
                return Outcome("skipped", why="no earlier comment to update, and this result needs none")
            return self._create(target.number, body)
        for duplicate in ours:  # a concurrent run's second comment, by the same author
            if _login(duplicate) == owner:
                self._remove_duplicate(duplicate)
        return outcome

    def _remove_duplicate(self, comment: Mapping[str, Any]) -> None:
        try:
            self._delete(comment)
        except ApiError as exc:
            if exc.status not in (403, 404) or self._login is not None:
                raise  # our own comment that we may not delete: a real permission problem

    def _refresh(self, number: int, keep: Mapping[str, Any], body: str) -> Outcome:
        newer = self._newer_run(keep, _head_of_body(body) if _head_of_body(body) != "-" else None)
        if newer:
            return Outcome("skipped", _str(keep.get("html_url")), newer, keep)
        if _unchanged(keep, body):
            return Outcome("unchanged", _str(keep.get("html_url")), comment=keep)
        if self.mode == "update":
            return self._update(keep, body)
        return self._replace(number, keep, body)

    def hide(self, outcome: Outcome, hidden: bool) -> None:
        """Minimize the comment as resolved (a passing result), or show it again."""
        node = outcome.comment.get("node_id") if outcome.comment is not None else None
        if not isinstance(node, str) or outcome.action in ("skipped", "planned"):
            return
        if hidden:
            self._graphql(MINIMIZE, {"id": node, "why": "RESOLVED"})
        else:
            self._graphql(UNMINIMIZE, {"id": node})

    # ----- reading

    def own_login(self) -> str | None:
        """The token's login when known: from `GET /user` (a person's token) or learnt from our own writes.

        An Actions or App installation token gets 403 there; then it stays unknown until we write,
        and meanwhile only a bot's comment can be ours.
        """
        if self._login is None and not self._asked:
            self._asked = True
            try:
                user = self.client.get("/user")
                login = user.get("login") if isinstance(user, Mapping) else None
            except ApiError as exc:
                if exc.status not in (401, 403, 404):
                    raise
                login = None
            self._login = str(login) if isinstance(login, str) and login else None
        return self._login

    def _learn(self, written: object) -> None:
        """The author the API gave the comment we just wrote: from now on only its comments are ours."""
        login = _login(written) if isinstance(written, Mapping) else None
        if login:
            self._login = login

    def _current_head(self, number: int) -> tuple[str | None, str | None]:
        """The pull request's state and head commit."""
        pull = self.client.get(self._path("/repos/{owner}/{repo}/pulls/{n}", n=number))
        if not isinstance(pull, Mapping):
            return None, None
        head = pull.get("head")
        sha = head.get("sha") if isinstance(head, Mapping) else None
        state = pull.get("state")
        return (state if isinstance(state, str) else None), (sha if isinstance(sha, str) else None)

    def _ours(self, number: int) -> list[Mapping[str, Any]]:
        """Our comments for this key, oldest first (every page is read)."""
        login, first_line = self.own_login(), marker(self.key)
        path = self._path("/repos/{owner}/{repo}/issues/{n}/comments", n=number)
        found = [
            c
            for c in self.client.paginate(path)
            if isinstance(c, Mapping)
            and (_login(c) == login if login else _is_bot(c))
            and isinstance(c.get("body"), str)
            and _lf(c["body"]).startswith(first_line + "\n")
        ]
        return sorted(found, key=lambda c: (str(c.get("created_at", "")), _id(c)))

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
        if not isinstance(created, Mapping):
            return Outcome("planned")
        self._learn(created)
        return self._settle(number, body, Outcome("created", _str(created.get("html_url")), comment=created))

    def _settle(self, number: int, body: str, outcome: Outcome) -> Outcome:
        """Another run may have created its comment at the same moment: keep the oldest, with our body."""
        ours = self._ours(number)
        if len(ours) < 2:
            return outcome
        keep = ours[0]
        if _lf(str(keep.get("body", ""))) != body:
            self.client.write("PATCH", self._comment_path(keep), {"body": body})
        for duplicate in ours[1:]:
            self._delete(duplicate)
        return Outcome("created", _str(keep.get("html_url")), "a concurrent run's duplicate was removed", keep)

    def _update(self, comment: Mapping[str, Any], body: str) -> Outcome:
        try:
            updated = self.client.write("PATCH", self._comment_path(comment), {"body": body})
        except ApiError as exc:
            if exc.status == 404:  # whatever the token: GitHub's answer for a comment that no longer exists
                raise _Gone from None
            if exc.status != 403 or self._login is not None:
                raise
            # A bot's comment with our marker that we may not edit is another app's: leave it.
            raise _NotOurs from None
        self._learn(updated)
        return Outcome("planned" if self.client.dry_run else "updated", _str(comment.get("html_url")), comment=comment)

    def _replace(self, number: int, old: Mapping[str, Any], body: str) -> Outcome:
        """recreate: a new comment at the bottom, the old deleted; minimize-old: the old hidden as outdated."""
        path = self._path("/repos/{owner}/{repo}/issues/{n}/comments", n=number)
        created = self.client.write("POST", path, {"body": body})
        if not isinstance(created, Mapping):
            return Outcome("planned")
        self._learn(created)
        if _login(old) != self._login:  # the old one was another app's: it stays as it is
            pass
        elif self.mode == "recreate":
            self._delete(old)
        else:
            text = retired(self.key) + _lf(str(old.get("body", "")))[len(marker(self.key)) :]
            self.client.write("PATCH", self._comment_path(old), {"body": text})
            node = old.get("node_id")
            if isinstance(node, str):
                self._graphql(MINIMIZE, {"id": node, "why": "OUTDATED"})
        return Outcome("created", _str(created.get("html_url")), comment=created)

    def _delete(self, comment: Mapping[str, Any]) -> None:
        try:
            self.client.write("DELETE", self._comment_path(comment))
        except ApiError as exc:
            if exc.status != 404:  # 404: someone deleted it first, which is what was wanted
                raise

    def _graphql(self, query: str, variables: Mapping[str, Any]) -> None:
        if self.graphql_url is None:
            raise ApiError("no GraphQL endpoint to hide a comment with")
        self.client.graphql(self.graphql_url, query, variables)

    def _comment_path(self, comment: Mapping[str, Any]) -> str:
        return self._path("/repos/{owner}/{repo}/issues/comments/{id}", id=comment.get("id"))

    def _path(self, template: str, **parts: object) -> str:
        return self.client.path(template, owner=self.repo[0], repo=self.repo[1], **parts)


def _unchanged(comment: Mapping[str, Any], body: str) -> bool:
    old = _lf(str(comment.get("body", "")))
    return _visible(old) == _visible(_lf(body)) and _head_of_body(old) == _head_of_body(body)


def _lf(text: str) -> str:
    """A body with LF line ends: GitHub keeps the CRLF of a comment saved from its web editor."""
    return text.replace("\r\n", "\n")


def _is_bot(comment: Mapping[str, Any]) -> bool:
    user = comment.get("user")
    kind = user.get("type") if isinstance(user, Mapping) else None
    login = _login(comment) or ""
    return kind == "Bot" or (kind is None and login.endswith("[bot]"))


def _id(comment: Mapping[str, Any]) -> int:
    value = comment.get("id")
    return value if isinstance(value, int) else 0


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _login(comment: Mapping[str, Any]) -> str | None:
    user = comment.get("user")
    login = user.get("login") if isinstance(user, Mapping) else None
    return login if isinstance(login, str) else None


def _visible(body: str) -> str:
    """The body without its hidden header lines, its footer and the line naming the run (they change every run)."""
    visible = body.split("\n", 2)[2] if body.count("\n") >= 2 else body
    visible = visible.split(FOOTER_MARK, 1)[0]
    return "\n".join(line for line in visible.split("\n") if not line.startswith(PROVENANCE))


def _recorded(body: str) -> re.Match[str] | None:
    """The run line of a comment we wrote: which commit and run it holds."""
    lines = _lf(body).split("\n", 2)
    return _RUN_LINE.fullmatch(lines[1]) if len(lines) >= 2 else None


def _head_of_body(body: str) -> str | None:
    found = _recorded(body)
    return found.group(1) if found else None
