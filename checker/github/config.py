"""Everything the GitHub integration reads from its environment, gathered in one place.

The action passes its inputs as `INPUT_*` variables; the runner sets the `GITHUB_*` ones. Command
line options override both. The token is held in a `Secret`, which never shows itself in a repr, a
format string or an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from checker.errors import UsageError

MODES = ("verify", "verify-only", "comment-only", "plan")
COMMENT = ("always", "on-failure", "never")
FAIL_ON = ("error", "warning", "never")  # what fails the step: one of these,
FAIL_ON_ALSO = ("loosened",)  # and, beside error or warning, a rule loosened since the base (compare-to)
COMMENT_MODES = ("update", "recreate", "minimize-old")
DEFAULT_API_URL = "https://api.github.com"


class Secret:
    """A token: `reveal()` is the only way to read it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return "***"

    def __reduce__(self) -> Any:
        raise TypeError("a Secret is not pickled")


@dataclass(frozen=True)
class Config:
    """One run of the action, or one `checker github ...` command."""

    api_url: str = DEFAULT_API_URL
    repository: str | None = None  # owner/name
    event_name: str | None = None
    event_path: Path | None = None
    sha: str | None = None
    run_id: str | None = None
    run_attempt: str | None = None
    workspace: Path | None = None
    step_summary: Path | None = None
    server_url: str = "https://github.com"
    graphql_url: str | None = None
    workflow: str | None = None
    job: str | None = None
    action: str | None = None  # the step's id (GITHUB_ACTION): tells two uses of the action in one job apart
    # The matrix leg (strategy.job-index of strategy.job-total, which action.yml passes in): GITHUB_JOB is the
    # same in every leg, so without it two legs would share one comment and overwrite each other's verdict.
    job_index: int = 0
    job_total: int = 1
    output: Path | None = None
    token: Secret | None = field(default=None, repr=False)
    # The action's inputs.
    mode: str = "verify"
    bundles: str = "bundle.yaml"
    comment: str = "always"
    fail_on: str = "error"
    report: str = "checker-report.json"
    args: str = ""
    pr_number: int | None = None
    comment_key: str = ""
    comment_mode: str = "update"
    hide_when_passing: bool = False
    compare_to: str = ""  # a base report's path, or "base" (verify the pull request's base commit)
    runtimes: str = ""  # --runtime SPECs, space or newline separated
    attest: bool = False  # also write the verdict as a signed attestation (checker verify --attest)
    attest_key: Secret | None = field(default=None, repr=False)  # its PEM key, from a secret; never on disk
    attestation: str = "checker-attestation.intoto.jsonl"  # where the attestation is written
    reuse: str = ""  # a verdict store's folder (checker verify --reuse): restored from the Actions cache
    trusted_key: str = ""  # the public key the store's entries must be signed by (--trusted-key)
    shards: int = 4  # plan: at most this many legs
    changed_since: str = ""  # plan: a commit, or `base` (the pull request's base commit)
    costs: str = ""  # plan: earlier JSON reports (paths or globs) whose durations balance the legs
    dry_run: bool = False
    timeout: float = 15.0

    def __post_init__(self) -> None:
        choices = (("mode", MODES), ("comment", COMMENT), ("comment_mode", COMMENT_MODES))
        for name, allowed in choices:
            value = getattr(self, name)
            if value not in allowed:
                option = name.replace("_", "-")
                raise UsageError(f"{option} must be one of {', '.join(allowed)}, not {value!r}")
        if self.attest and self.attest_key is None:
            raise UsageError("attest: true needs attest-key, the PEM key that signs the attestation (from a secret)")
        if self.attest and self.mode in ("comment-only", "plan"):
            raise UsageError(f"attest needs a verification: {self.mode} verifies nothing")
        if self.reuse and self.compare_to:
            raise UsageError(
                "compare-to with reuse: what changed is measured on rules run here, and a reused verdict runs none"
            )
        if self.reuse and not self.trusted_key:
            raise UsageError("reuse needs trusted-key: the public key the stored verdicts must be signed by")
        if self.mode == "plan" and self.compare_to:
            raise UsageError("compare-to belongs to the jobs that verify, not to plan")
        if not 0 < self.shards <= 256:
            raise UsageError(f"shards must be a number of legs from 1 to 256, not {self.shards}")
        _fail_on_words(self.fail_on)
        if self.repository is not None and self.repository.count("/") != 1:
            raise UsageError(f"the repository must be OWNER/NAME, not {self.repository!r}")

    @property
    def fail_level(self) -> str:
        """error, warning or never: what of the findings fails the step (`loosened` alone keeps error)."""
        return next((w for w in _fail_on_words(self.fail_on) if w in FAIL_ON), "error")

    @property
    def fails_on_loosened(self) -> bool:
        """fail-on names `loosened`: a rule looser than the base's fails its bundle (rules.loosened)."""
        return "loosened" in _fail_on_words(self.fail_on)

    @property
    def owner_repo(self) -> tuple[str, str]:
        if not self.repository:
            raise UsageError("no repository: set GITHUB_REPOSITORY (OWNER/NAME) or pass --repo")
        owner, _, name = self.repository.partition("/")
        return owner, name

    @property
    def sticky_key(self) -> str:
        """What names the sticky comment: the comment-key input, else the workflow, job, step and matrix leg.

        Not the bundles input: editing it keeps the same comment. A job outside a matrix (one leg) keeps
        the key it always had.
        """
        if self.comment_key.strip():
            return self.comment_key.strip()
        parts = [self.workflow, self.job, self.action]
        if self.job_total > 1:
            parts.append(f"leg {self.job_index + 1} of {self.job_total}")
        return "\n".join(part or "" for part in parts)

    @property
    def graphql(self) -> str:
        """GraphQL's endpoint: api.github.com/graphql, or /api/graphql beside a GHES /api/v3."""
        if self.graphql_url:
            return self.graphql_url
        base = self.api_url.rstrip("/")
        return base[: -len("/v3")] + "/graphql" if base.endswith("/api/v3") else base + "/graphql"

    @property
    def run(self) -> tuple[int, int]:
        """(run id, attempt): which of two runs of the same commit is the later one."""
        return _int(self.run_id), _int(self.run_attempt) or 1

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: Any) -> Config:
        """Build from the environment; `overrides` (command line options) win when not None."""
        values: dict[str, Any] = {
            "api_url": (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
            "repository": env.get("GITHUB_REPOSITORY") or None,
            "event_name": env.get("GITHUB_EVENT_NAME") or None,
            "event_path": _path(env.get("GITHUB_EVENT_PATH")),
            "sha": env.get("GITHUB_SHA") or None,
            "run_id": env.get("GITHUB_RUN_ID") or None,
            "run_attempt": env.get("GITHUB_RUN_ATTEMPT") or None,
            "workspace": _path(env.get("GITHUB_WORKSPACE")),
            "step_summary": _path(env.get("GITHUB_STEP_SUMMARY")),
            "server_url": (env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/"),
            "graphql_url": env.get("GITHUB_GRAPHQL_URL") or None,
            "workflow": env.get("GITHUB_WORKFLOW") or None,
            "job": env.get("GITHUB_JOB") or None,
            "action": env.get("GITHUB_ACTION") or None,
            "job_index": _count(env.get("CHECKER_JOB_INDEX"), 0),
            "job_total": _count(env.get("CHECKER_JOB_TOTAL"), 1),
            "output": _path(env.get("GITHUB_OUTPUT")),
            "token": _secret(env.get("INPUT_GITHUB_TOKEN") or env.get("GITHUB_TOKEN")),
            **_inputs(env),
        }
        known = {f.name for f in fields(cls)}
        values.update({k: v for k, v in overrides.items() if v is not None and k in known})
        return cls(**values)


def _fail_on_words(value: str) -> list[str]:
    """fail-on's words: at most one of error, warning and never, and `loosened` beside error or warning."""
    words = value.replace(",", " ").split()
    allowed = (*FAIL_ON, *FAIL_ON_ALSO)
    levels = [w for w in words if w in FAIL_ON]
    if not words or any(w not in allowed for w in words) or len(levels) > 1 or (levels == ["never"] and len(words) > 1):
        raise UsageError(
            f"fail-on must be one of {', '.join(FAIL_ON)}, optionally with loosened (error loosened, warning "
            f"loosened, or loosened alone), not {value!r}"
        )
    return words


def _inputs(env: Mapping[str, str]) -> dict[str, Any]:
    """The action's inputs (INPUT_<NAME>, as the runner names them); unset or empty keeps the default."""
    names = {"mode": "MODE", "bundles": "BUNDLES", "comment": "COMMENT", "fail_on": "FAIL_ON",
             "report": "REPORT", "args": "ARGS", "comment_key": "COMMENT_KEY",
             "comment_mode": "COMMENT_MODE", "compare_to": "COMPARE_TO", "runtimes": "RUNTIMES",
             "attestation": "ATTESTATION", "reuse": "REUSE", "trusted_key": "TRUSTED_KEY",
             "changed_since": "CHANGED_SINCE", "costs": "COSTS"}  # fmt: skip
    values: dict[str, Any] = {}
    for key, name in names.items():
        raw = env.get(f"INPUT_{name}")
        if raw is not None and raw.strip():
            values[key] = raw.strip() if key not in ("bundles", "args") else raw
    shards = (env.get("INPUT_SHARDS") or "").strip()
    if shards:
        if not shards.isdigit() or len(shards) > 4:
            raise UsageError(f"shards must be a number of legs from 1 to 256, not {shards!r}")
        values["shards"] = int(shards)
    number = (env.get("INPUT_PR_NUMBER") or "").strip()
    if number:
        if not number.isdigit() or not 0 < int(number) < 2**31:
            raise UsageError(f"pr-number must be a pull request number, not {number!r}")
        values["pr_number"] = int(number)
    hide = (env.get("INPUT_HIDE_WHEN_PASSING") or "").strip().lower()
    if hide:
        if hide not in ("true", "false"):
            raise UsageError(f"hide-when-passing must be true or false, not {hide!r}")
        values["hide_when_passing"] = hide == "true"
    attest = (env.get("INPUT_ATTEST") or "").strip().lower()
    if attest:
        if attest not in ("true", "false"):
            raise UsageError(f"attest must be true or false, not {attest!r}")
        values["attest"] = attest == "true"
    key = env.get("INPUT_ATTEST_KEY") or ""
    if key.strip():
        values["attest_key"] = Secret(key.strip() + "\n")  # a PEM block ends in a newline
    timeout = env.get("CHECKER_GITHUB_TIMEOUT")
    if timeout:
        try:
            values["timeout"] = float(timeout)
        except ValueError:
            raise UsageError(f"CHECKER_GITHUB_TIMEOUT must be a number of seconds, not {timeout!r}") from None
    return values


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _secret(value: str | None) -> Secret | None:
    return Secret(value.strip()) if value and value.strip() else None


def _count(value: str | None, default: int) -> int:
    """strategy.job-index or job-total as the runner passes it; anything else is the default."""
    text = (value or "").strip()
    return int(text) if text.isdigit() and len(text) < 7 else default


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0
