"""The pieces of `checker github run` that are not HTTP: which bundles, which verify options, which context.

The action's `bundles` and `args` inputs are split here, in Python, never by a shell: a value such as
`x; touch /tmp/x` is a path (that does not exist), not a command.
"""

from __future__ import annotations

import glob
import shlex
from pathlib import Path
from typing import Any

from checker.errors import UsageError
from checker.github.config import Config
from checker.github.event import Event, head_sha, pull_number

# Options of `checker verify` the action sets itself.
RESERVED = ("--format", "--output", "-o")


def bundle_paths(spec: str) -> list[str]:
    """Paths and globs, separated by spaces or newlines (quotes keep a space inside a path)."""
    words = _split(spec, "bundles")
    paths: list[str] = []
    for word in words:
        # glob.glob, not Path.glob: a pattern may be absolute.
        matches = sorted(glob.glob(word, recursive=True)) if glob.has_magic(word) else [word]  # noqa: PTH207
        if not matches:
            raise UsageError(f"no bundle matches {word!r}")
        paths.extend(m for m in matches if m not in paths)
    if not paths:
        raise UsageError("no bundles: the bundles input is empty")
    return paths


def verify_argv(config: Config, report_path: Path) -> list[str]:
    """`checker verify` arguments: the user's options, ours (which win), then `--` and the bundles."""
    extra = _split(config.args, "args")
    for word in extra:
        if word.split("=", 1)[0] in RESERVED:
            raise UsageError(f"args may not set {word.split('=', 1)[0]}: the action writes the JSON report itself")
    ours = ["--format", "json", "--output", str(report_path), "--no-progress"]
    ours += [arg for spec in config.runtimes.split() for arg in ("--runtime", spec)]
    if config.fail_on == "warning":
        ours.append("--strict")
    return ["verify", *extra, *ours, "--", *bundle_paths(config.bundles)]


def context(config: Config, event: Event) -> dict[str, Any]:
    """What the report records about this run, for a later comment-only run to check."""
    found: dict[str, Any] = {
        "repository": config.repository,
        "event": event.name or None,
        "head_sha": head_sha(event, config.sha),
        "pull_request": pull_number(event),
        "run_id": config.run_id,
        "bundle_set": config.bundles,
    }
    return {k: v for k, v in found.items() if v is not None}


def _split(value: str, name: str) -> list[str]:
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise UsageError(f"cannot split the {name} input: {exc}") from None
