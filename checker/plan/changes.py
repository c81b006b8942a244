"""What changed since a commit, by content, as git knows it: every file whose content differs between REF and the
working tree (added, edited or removed, tracked or not yet), and a file's content at REF.

git runs as a subprocess with no shell, a deadline and a bound on what it may print: a change set larger than
MAX_GIT_BYTES is not read to its end (`Changes.complete` is then false, and the planner runs every bundle).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from checker.errors import UsageError

MAX_GIT_BYTES = 16 << 20  # some 200,000 changed paths
MAX_SHOWN_BYTES = 16 << 20  # a manifest read at REF (the manifest's own bound)
GIT_TIMEOUT_S = 120.0
CHUNK = 1 << 16


class GitError(UsageError):
    """git is missing, the folder is no repository, or REF names no commit."""


@dataclass
class Changes:
    """The files that differ from REF, as absolute paths (both as git names them and as they resolve)."""

    ref: str
    top: Path  # the repository's folder (real path)
    paths: set[str] = field(default_factory=set)
    complete: bool = True  # false when git printed more than MAX_GIT_BYTES

    def touches(self, *names: Path) -> bool:
        """Whether a file, named as its bundle names it (its folder resolved) or by its real path, is among the
        changed files."""
        return not self.complete or any(str(name) in self.paths for name in names)

    def at_ref(self, path: Path) -> bytes | None:
        """The file's content at REF, or None when it did not exist there (or lies outside the repository)."""
        try:
            rel = Path(os.path.realpath(path)).relative_to(self.top).as_posix()
        except ValueError:
            return None
        out, complete, code = _git(self.top, ["show", f"{self.ref}:{rel}"], MAX_SHOWN_BYTES, check=False)
        return out if code == 0 and complete else None


def changed_since(ref: str, cwd: Path) -> Changes:
    """The files whose content differs between REF and the working tree of the repository holding `cwd`."""
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n"):
        raise GitError(f"--changed-since {ref!r}: not a commit (a name, a sha or REF~N)")
    top_out, _, _ = _git(cwd, ["rev-parse", "--show-toplevel"], 1 << 16)
    top = Path(os.path.realpath(os.fsdecode(top_out).strip()))
    _, _, code = _git(top, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], 1 << 16,
                      check=False)  # fmt: skip
    if code != 0:
        raise GitError(f"--changed-since {ref}: no such commit in {top} (fetch it: a shallow clone may lack it)")
    changes = Changes(ref, top)
    for args in (
        ["diff", "--name-only", "-z", "--no-renames", ref, "--"],
        ["ls-files", "--others", "-z", "--exclude-standard"],
    ):
        out, complete, _ = _git(top, args, MAX_GIT_BYTES)
        changes.complete = changes.complete and complete
        for name in out.split(b"\0"):
            if name:
                path = top / os.fsdecode(name)  # as git names it (a link is a file of its own to git)
                changes.paths.add(str(path))
                changes.paths.add(os.path.realpath(path))
    return changes


def _git(cwd: Path, args: list[str], limit: int, check: bool = True) -> tuple[bytes, bool, int]:
    """(what git printed, up to `limit` bytes; whether that was all of it; its exit status). A git that runs past
    GIT_TIMEOUT_S is killed."""
    import tempfile
    import threading

    with tempfile.TemporaryFile() as errors:
        try:
            process = subprocess.Popen(
                ["git", "-c", "core.quotePath=false", *args],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,  # a file, not a pipe: git never blocks on what it says while its output is read
                env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"},
            )
        except OSError as exc:
            raise GitError(f"git cannot be run ({exc.strerror or exc}): --changed-since needs git") from None
        assert process.stdout is not None
        watchdog = threading.Timer(GIT_TIMEOUT_S, process.kill)
        watchdog.start()
        kept, complete = bytearray(), True
        try:
            with process.stdout:
                while chunk := os.read(process.stdout.fileno(), CHUNK):
                    kept += chunk
                    if len(kept) > limit:
                        complete = False
                        del kept[limit:]
                        process.kill()
                        break
            code = process.wait()
        finally:
            watchdog.cancel()
        if check and complete and code != 0:
            errors.seek(0)
            said = errors.read(CHUNK).decode("utf-8", "replace").strip().splitlines()
            why = said[-1] if said else ("killed at its deadline" if code < 0 else f"exit status {code}")
            raise GitError(f"git {args[0]} failed in {cwd}: {why}")
    return bytes(kept), complete, code
