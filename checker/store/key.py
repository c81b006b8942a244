"""The key a verdict is filed under: everything the verdict depends on, and nothing else.

A verdict depends on the bundle (its digest covers every named file and every manifest field), on the checker
that judged it, on the onnxruntime build that ran the graphs, on the CPU class that build ran on (onnxruntime
picks its int8 kernels by the instruction set it finds), and on every option that can change a verdict
(`VERDICT_OPTIONS`). Two runs with the same key reach the same verdict, so the second may reuse the first's.
Options that only change how fast or where from (`--jobs`, `--offline`) are not in it (`OTHER_OPTIONS`): a test
holds the two lists to every field of `Options`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker import __version__
from checker.context import Options, Trust
from checker.manifest.canonical import canonical_json
from checker.readers.digest import sha256_file

KEY_VERSION = 1

# The Options fields that can change a verdict, and those that cannot (tests/store/test_key.py holds the two
# to every field of Options, so a new option is classed on purpose).
VERDICT_OPTIONS = (
    "strict",
    "run_validation",
    "run_comparison",
    "providers",
    "case_timeout_s",
    "shard",
    "runtimes",
    "trust",
    "attestation",
    "attestation_trust",
    "rerun_attested",
    "platforms",
    "opt_levels",
    "gain_budget_s",
)
OTHER_OPTIONS = (
    "progress",  # a progress bar
    "jobs",  # bundles side by side: the same reports either way
    "intra_op_threads",  # set from the cores and --jobs, not asked for; a manifest's own setting is in its digest
    "offline",  # where a runtime environment comes from, not which release it is (--runtime names it)
    "find_links",
    "sharing",
    "reuse",  # the store itself, and whom its entries must be signed by
    "reuse_trust",
    "reproductions",  # where a disagreement's reproduction folder is written
    "fix_budget_s",  # how far a failing variant's fix is measured: what its fix says, never a verdict
    "device_outputs",  # refused with --reuse: a device's outputs are judged as sent, which no key names
)
_ASSIGNMENT = re.compile(r"^([A-Za-z_]+)\s*=\s*['\"]([^'\"]*)['\"]\s*$", re.MULTILINE)
MAX_INFO_BYTES = 64 << 10


@dataclass(frozen=True)
class Machine:
    """What of the machine that judges a verdict depends on: the checker's version, the onnxruntime build that
    runs the graphs, and this CPU's class (`platforms.features`)."""

    checker: str
    onnxruntime: Mapping[str, str]
    cpu_class: str

    @classmethod
    def here(cls) -> Machine:
        # NumPy's view of the CPU, as the platforms stage reads it: the class must be named the same way.
        from checker.platforms.features import this_machine

        return cls(__version__, onnxruntime_build(), this_machine()[0])


def onnxruntime_build() -> dict[str, str]:
    """The onnxruntime build installed here, read from its files without importing it (a reused verdict must
    not cost onnxruntime's start-up): its package name (onnxruntime, onnxruntime-openvino, ...), version, CUDA
    version when it has one, and the wheel's tag."""
    try:
        spec = importlib.util.find_spec("onnxruntime")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return {"package": "not installed"}
    folder = Path(next(iter(spec.submodule_search_locations)))
    try:
        text = (folder / "capi" / "build_and_package_info.py").read_text(encoding="utf-8")[:MAX_INFO_BYTES]
    except (OSError, UnicodeDecodeError):
        text = ""
    info = dict(_ASSIGNMENT.findall(text))
    package = info.get("package_name") or "onnxruntime"
    found = {"package": package, "version": info.get("__version__") or _installed(package)}
    if info.get("cuda_version"):
        found["cuda"] = info["cuda_version"]
    tag = _wheel_tag(package, folder.parent)
    if tag:
        found["build"] = tag
    return found


def _installed(package: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


def _wheel_tag(package: str, site: Path) -> str:
    # The distribution's folder beside the package, as an installer names it (the name normalised, then a
    # version); importlib.metadata, which looks through every folder of the path, costs a look-up's start-up
    # tens of milliseconds, and answers only where that folder is not there.
    prefix = re.sub(r"[-_.]+", "_", package).lower() + "-"
    try:
        names = [e.path for e in os.scandir(site) if e.name.lower().startswith(prefix)]
        found = [n for n in names if n.endswith(".dist-info")]
    except OSError:
        found = []
    try:
        if len(found) == 1:
            text = Path(found[0], "WHEEL").read_text(encoding="utf-8")[:MAX_INFO_BYTES]
        else:
            from importlib import metadata

            text = metadata.distribution(package).read_text("WHEEL") or ""
    except (ImportError, OSError, UnicodeDecodeError):
        return ""
    tags = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]
    return " ".join(sorted(tags))


def verdict_options(options: Options) -> dict[str, Any]:
    """The options that can change a verdict, as plain data (a file given as an option by its content)."""
    out: dict[str, Any] = {}
    for name in VERDICT_OPTIONS:
        value = getattr(options, name)
        if name == "shard" and value is not None:
            value = f"{value.index}/{value.count}"
        elif isinstance(value, Trust):
            value = _trust(value)
        elif isinstance(value, Path):
            value = _content(value)
        elif isinstance(value, list):
            value = list(value)
        out[name] = value
    return out


def _trust(trust: Trust) -> dict[str, Any]:
    return {
        "key": _content(trust.key) if trust.key is not None else None,
        "certificates": [_content(c) for c in trust.certificates],
        "identity": trust.identity,
        "issuer": trust.issuer,
    }


def _content(path: Path) -> str:
    try:
        return "sha256:" + sha256_file(path)
    except OSError:
        return f"unreadable:{path.name}"


@dataclass(frozen=True)
class Keys:
    """Every key of one run: what a key holds besides the bundle's digest, worked out once (the files an option
    names are hashed once, not once for each bundle of a zoo)."""

    machine: Machine
    options: Mapping[str, Any]

    @classmethod
    def of(cls, machine: Machine, options: Options) -> Keys:
        return cls(machine, verdict_options(options))

    def parts(self, digest: str) -> dict[str, Any]:
        """Everything the verdict on the bundle of `digest` depends on."""
        return {
            "key_version": KEY_VERSION,
            "digest": digest,
            "checker": self.machine.checker,
            "onnxruntime": dict(self.machine.onnxruntime),
            "cpu_class": self.machine.cpu_class,
            "options": dict(self.options),
        }


def key_parts(digest: str, machine: Machine, options: Options) -> dict[str, Any]:
    """Everything the verdict on the bundle of `digest` depends on."""
    return Keys.of(machine, options).parts(digest)


def key_of(parts: Mapping[str, Any]) -> str:
    """The key's name: the SHA-256 of its parts as canonical JSON."""
    return hashlib.sha256(canonical_json(parts).encode("utf-8")).hexdigest()


def differences(mine: Mapping[str, Any], other: Mapping[str, Any]) -> list[str]:
    """What differs between two keys' parts, in words: `options.strict: false -> true`."""
    out = []
    for name in sorted(set(mine) | set(other)):
        a, b = other.get(name), mine.get(name)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += [f"{name}.{d}" for d in differences(b, a)]
        elif a != b:
            out.append(f"{name}: {canonical_json(a)} -> {canonical_json(b)}")
    return out
