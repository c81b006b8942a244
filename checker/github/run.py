"""The pieces of `checker github run` that are not HTTP: which bundles, which verify options, which context.

The action's `bundles` and `args` inputs are split here, in Python, never by a shell: a value such as
`x; touch /tmp/x` is a path (that does not exist), not a command.
"""

from __future__ import annotations

import glob
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.bundle.layout import MANIFEST_NAMES, find_manifest
from checker.bundle.opening import is_archive
from checker.context import Options
from checker.errors import UsageError
from checker.github.commit import verified_commit
from checker.github.config import Config
from checker.github.event import Event, pull_number
from checker.render.escape import text
from checker.reports.model import Report
from checker.runtimes.envs import RuntimeSpecError, parse_spec
from checker.verifyargs import parse_verify_args
from checker.verifyargs import verify_options as options_from_args

if TYPE_CHECKING:
    from checker.reports.model import Report
    from checker.store.run import Outcome

# Options of `checker verify` the action sets itself.
RESERVED = ("--format", "--output", "-o")
HELP = ("-h", "--help")


@dataclass
class Resolved:
    """The bundles a `bundles` input names, each once, and what it matched that is not a bundle."""

    paths: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)

    def note(self) -> str:
        """Trusted Markdown for the summary; the paths are code spans of escaped text."""
        if not self.skipped:
            return ""
        lines = [f"> [!NOTE]\n> Not bundles, so not verified ({len(self.skipped)}):"]
        lines += [f"> - {text(path, 200)}: {why}" for path, why in self.skipped[:50]]
        if len(self.skipped) > 50:
            lines.append(f"> - and {len(self.skipped) - 50} more")
        return "\n".join(lines)


def resolve_bundles(spec: str) -> Resolved:
    """Paths and globs, separated by spaces or newlines (quotes keep a space inside a path).

    A path that is not a bundle (a README beside the bundle folders) is skipped and listed; a bundle
    named twice (as its folder and as its manifest) is verified once. Only when nothing at all is a
    bundle is it a usage error.
    """
    resolved, seen = Resolved(), set()
    words = _split(spec, "bundles")
    for word in words:
        pattern = is_pattern(word)
        # glob.glob, not Path.glob: a pattern may be absolute.
        matches = sorted(glob.glob(word, recursive=True)) if pattern else [word]  # noqa: PTH207
        if not matches:
            resolved.skipped.append((word, "matches nothing"))
        for match in matches:
            identity, why = _identity(Path(match), named=not pattern)
            if identity is None:
                resolved.skipped.append((match, why))
            elif identity not in seen:
                seen.add(identity)
                resolved.paths.append(match)
    if not resolved.paths:
        if not words:
            raise UsageError("no bundles: the bundles input is empty")
        shown = "; ".join(f"{path}: {why}" for path, why in resolved.skipped[:5])
        raise UsageError(f"no bundle found in the bundles input ({shown})")
    return resolved


def is_pattern(word: str) -> bool:
    """Whether a word of the bundles input is a glob: one that exists as a path is that path, so a folder
    named `classifier [int8]` is not read as a character class."""
    return glob.has_magic(word) and not Path(word).exists()


def bundle_paths(spec: str) -> list[str]:
    return resolve_bundles(spec).paths


def _identity(path: Path, named: bool) -> tuple[str | None, str]:
    """The manifest (or archive) a path stands for, so a bundle named twice is one; or None and why not."""
    if not path.exists():
        return None, "no such path"
    if path.is_dir():
        manifest = find_manifest(path)
        if manifest is None:
            return None, f"a folder without a manifest ({', '.join(MANIFEST_NAMES)})"
        return str(manifest.resolve()), ""
    if path.is_file() and (path.name in MANIFEST_NAMES or is_archive(path)):
        return str(path.resolve()), ""
    if path.is_file() and named and path.suffix in (".yaml", ".yml", ".json"):
        return str(path.resolve()), ""  # a manifest under another name, named on purpose
    return None, "not a bundle folder, manifest or archive"


def verify_options(config: Config) -> Options:
    """The `checker verify` options the args input gives, parsed by verify's own parser; ours win."""
    extra = _split(config.args, "args")
    for word in extra:
        option = word.split("=", 1)[0]
        if option in RESERVED:
            raise UsageError(f"args may not set {option}: the action writes the JSON report itself")
        if option in HELP:
            raise UsageError(f"args may not ask for {option}: it would verify nothing")
    try:
        args = parse_verify_args([*extra, "--", "bundle"])
    except SystemExit:  # argparse's own exits (an abbreviation of --help): never a green step
        raise UsageError("args: not a set of checker verify options") from None
    options = options_from_args(args)
    options.strict = options.strict or config.fail_level == "warning"
    if config.reuse:  # the verdict store: the options of --reuse, which args may not give besides
        if options.reuse is not None:
            raise UsageError("args may not give --reuse when the reuse input is set")
        # Parsed with every option beside it, so that --reuse refuses what it refuses on the command line
        # (--run-validation, --shard, --device-outputs, a runtime named by no version).
        runtimes = [f"--runtime={spec}" for spec in config.runtimes.split()]
        store_args = [*extra, *runtimes, "--reuse", config.reuse, "--trusted-key", config.trusted_key, "--", "bundle"]
        store = options_from_args(parse_verify_args(store_args))
        options.reuse, options.reuse_trust = store.reuse, store.reuse_trust
    for spec in config.runtimes.split():
        options.runtimes.append(_runtime_spec(spec))
    return options


def context(config: Config, event: Event) -> dict[str, Any]:
    """What the report records about this run, for a later comment-only run to check."""
    found: dict[str, Any] = {
        "repository": config.repository,
        "event": event.name or None,
        "head_sha": verified_commit(config, event),
        "pull_request": pull_number(event) or config.pr_number,
        "run_id": config.run_id,
        "bundle_set": config.bundles,
    }
    return {k: v for k, v in found.items() if v is not None}


def attest(config: Config, report: Report, options: Options, outcomes: Sequence[Outcome] | None) -> str:
    """With `attest: true`, the report's verdict written as a signed attestation (as `checker verify --attest`
    writes it, a reused bundle's as stored; with the reuse input, each bundle that ran added to the store),
    signed with the attest-key input held in memory only; returns the path written, else ""."""
    if not config.attest or config.attest_key is None:
        return ""
    # The attestation code needs cryptography: loaded only when the action attests.
    from checker.signing.dsse import EnvelopeSigner
    from checker.store.filing import attest as attest_report

    signer = EnvelopeSigner(config.attest_key.reveal().encode("utf-8"))
    attest_report(report, options, signer, Path(config.attestation), outcomes)
    return config.attestation


def _split(value: str, name: str) -> list[str]:
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise UsageError(f"cannot split the {name} input: {exc}") from None


def _runtime_spec(spec: str) -> str:
    """A SPEC of the runtimes input, refused as a usage error (as --runtime is) when it names no release."""
    try:
        parse_spec(spec)
    except RuntimeSpecError as exc:
        raise UsageError(f"runtimes: {exc}") from None
    return spec
