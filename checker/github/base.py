"""The action's `compare-to` input: the base report a pull request's report is compared with.

`compare-to` is a path to a JSON report (say, one the base branch's workflow uploaded as an artifact),
or `base`: then the bundles are verified as they are at the pull request's base commit, checked out
with `git worktree` into a separate folder. What runs there is this checker (the action's own, trusted)
on the target branch's files; nothing of the pull request's code runs, and no validation command runs
at all (it is not needed for the figures). A bundle that does not exist at the base is simply absent
from the base report, and the comparison calls it new.
"""

from __future__ import annotations

import glob
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from checker.errors import Error, UsageError
from checker.github.config import Config
from checker.github.event import EVENTS, Event, base_commit
from checker.reports.files import load_report
from checker.reports.model import Report

GIT_TIMEOUT_S = 300.0
VERIFY_TIMEOUT_S = 6 * 3600.0
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
# `checker verify` options that must not reach the base run: the validation command is never run there.
DROPPED = ("--run-validation",)


def base_report(config: Config, event: Event, bundle_words: list[str], extra_args: list[str]) -> Report:
    """The report to compare with, from a file or from the base commit."""
    if config.compare_to != "base":
        return load_report(Path(config.compare_to), untrusted=True)
    sha = base_sha(event)
    if sha is None:
        named = ", ".join(kind.name for kind in EVENTS.values() if kind.base)
        raise UsageError(f"compare-to: base needs a pull_request event, or another that names its base ({named})")
    repo = config.workspace or Path.cwd()
    with worktree(repo, sha) as tree:
        return verify_at(tree, bundle_words, [a for a in extra_args if a.split("=", 1)[0] not in DROPPED])


def base_sha(event: Event) -> str | None:
    sha = base_commit(event)
    return sha if sha and _SHA.match(sha) else None


@contextmanager
def worktree(repo: Path, sha: str) -> Iterator[Path]:
    """A detached checkout of `sha` beside the workspace, removed afterwards. A shallow clone may lack the
    commit: it is fetched first."""
    fetched(repo, sha)
    with tempfile.TemporaryDirectory(prefix="checker-base-") as parent:
        tree = Path(parent) / "base"
        _git(repo, "worktree", "add", "--detach", str(tree), sha)
        try:
            yield tree
        finally:
            _git(repo, "worktree", "remove", "--force", str(tree), check=False)


def fetched(repo: Path, sha: str) -> None:
    """The commit in the repository: a shallow clone may lack it, and then it is fetched alone."""
    if _git(repo, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode != 0:
        _git(repo, "fetch", "--no-tags", "--depth=1", "origin", sha)


def verify_at(tree: Path, bundle_words: list[str], extra_args: list[str]) -> Report:
    """`checker verify` on the bundles that exist in `tree`, run in `tree` so their paths read as at head."""
    paths = existing(tree, bundle_words)
    if not paths:
        return Report(checker_version="", created_at=None)  # no bundle there: nothing ran, and no checker
    with tempfile.TemporaryDirectory(prefix="checker-base-report-") as out:
        report = Path(out) / "base-report.json"
        # Isolated (-I): the checked-out tree is the working directory, and its own folders stay off sys.path.
        argv = [sys.executable, "-I", "-m", "checker", "verify", *extra_args]
        argv += ["--format", "json", "--output", str(report), "--no-progress", "--", *paths]
        try:
            done = subprocess.run(argv, cwd=tree, capture_output=True, text=True, timeout=VERIFY_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise Error("compare-to: base: verifying the base commit's bundles timed out") from None
        if done.returncode not in (0, 1) or not report.is_file():
            last = (done.stderr.strip().splitlines() or ["no message"])[-1][:300]
            raise Error(f"compare-to: base: verifying the base commit's bundles failed ({last})")
        return load_report(report, untrusted=False)


def existing(tree: Path, words: list[str]) -> list[str]:
    """The bundle paths and globs of the `bundles` input, as they match in `tree` (relative to it)."""
    found: list[str] = []
    for word in words:
        if Path(word).is_absolute() or ".." in Path(word).parts:
            continue
        if glob.has_magic(word) and not (tree / word).exists():  # an existing path is itself, brackets and all
            matches = sorted(glob.glob(word, root_dir=tree, recursive=True))  # noqa: PTH207
        else:
            matches = [word] if (tree / word).exists() else []
        found.extend(m for m in matches if m not in found)
    return found


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Error(f"compare-to: base: git {args[0]} failed: {exc}") from None
    if check and done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1][:300]
        raise Error(f"compare-to: base: git {args[0]} failed: {last}")
    return done
