"""Links from a report to the repository it was made in: a finding's file and line, the commit, the run.

They are made only when the runner's variables say where the files are (GITHUB_SERVER_URL, which is the
base URL of a GitHub Enterprise Server too; GITHUB_REPOSITORY; GITHUB_SHA), so `checker verify --format
markdown` in a workflow shows exactly what the pull-request comment shows. A path from a report is
hostile: it is percent-encoded, and a path that leaves the repository (absolute, `..`) or lies inside an
archive gets no link.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from checker.bundle.layout import MANIFEST_NAMES

_SHA = re.compile(r"^[0-9a-f]{7,64}$")
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SERVER = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~/-]*)?$")
_ARCHIVES = (".tar.gz", ".tgz", ".tar", ".zip")


@dataclass(frozen=True)
class Links:
    server: str
    repository: str
    sha: str
    run_id: str | None = None
    run_attempt: str | None = None
    workspace: str | None = None  # the checkout's absolute path: bundle paths under it become relative

    @classmethod
    def from_env(cls, env: Mapping[str, str], sha: str | None = None) -> Links | None:
        """Links when the three variables are set and well formed; `sha` overrides GITHUB_SHA (a pull
        request's head commit rather than the merge commit a pull_request run checks out)."""
        server = (env.get("GITHUB_SERVER_URL") or "").rstrip("/")
        repository = env.get("GITHUB_REPOSITORY") or ""
        commit = sha or env.get("GITHUB_SHA") or ""
        if not (_SERVER.match(server) and _REPOSITORY.match(repository) and _SHA.match(commit)):
            return None
        run_id = env.get("GITHUB_RUN_ID") or None
        attempt = env.get("GITHUB_RUN_ATTEMPT") or None
        return cls(
            server,
            repository,
            commit,
            run_id if run_id and run_id.isdigit() else None,
            attempt if attempt and attempt.isdigit() else None,
            env.get("GITHUB_WORKSPACE") or None,
        )

    def blob(self, path: str, line: int | None = None) -> str:
        anchor = f"#L{line}" if line is not None else ""
        return f"{self.server}/{self.repository}/blob/{self.sha}/{quote(path, safe='/')}{anchor}"

    def commit(self) -> str:
        return f"{self.server}/{self.repository}/commit/{self.sha}"

    def run(self) -> str | None:
        if self.run_id is None:
            return None
        attempt = f"/attempts/{self.run_attempt}" if self.run_attempt and self.run_attempt != "1" else ""
        return f"{self.server}/{self.repository}/actions/runs/{self.run_id}{attempt}"

    def file_path(self, bundle_path: object, file: object) -> str | None:
        """The repository path of `file` (relative to the bundle) in the bundle given as `bundle_path`."""
        return repo_path(bundle_path, file, self.workspace)


def repo_path(bundle_path: object, file: object, workspace: str | None = None) -> str | None:
    """`file`, relative to the bundle given as `bundle_path`, as a path from the repository's root."""
    root = bundle_root(bundle_path, workspace)
    if root is None or not isinstance(file, str) or not file or "\\" in file:
        return None
    joined = posixpath.normpath(posixpath.join(root, file))
    return None if joined.startswith(("../", "/")) or joined == ".." else joined


def bundle_root(bundle_path: object, workspace: str | None = None) -> str | None:
    """The bundle's folder relative to the repository: its path, or its manifest's folder; None for an
    archive or a path outside the repository."""
    if not isinstance(bundle_path, str) or not bundle_path or "\\" in bundle_path:
        return None
    path = bundle_path
    if posixpath.isabs(path):
        if not workspace or not path.startswith(workspace.rstrip("/") + "/"):
            return None
        path = path[len(workspace.rstrip("/")) + 1 :]
    if path.lower().endswith(_ARCHIVES):
        return None
    name = posixpath.basename(path.rstrip("/"))
    if name in MANIFEST_NAMES or name.lower().endswith((".yaml", ".yml", ".json")):
        path = posixpath.dirname(path.rstrip("/")) or "."
    root = posixpath.normpath(path)
    return None if root.startswith("../") or root == ".." else root
