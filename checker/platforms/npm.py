"""onnxruntime's JavaScript packages from the npm registry: which release the manifest admits, and a cached install.

`runtime.web` (onnxruntime-web) and `runtime.node` (onnxruntime-node) are PEP 440 specifiers, `runtime.version`
when absent (the JavaScript packages share onnxruntime's version numbers). The release judged is the newest
admitted one already in the cache, else the newest admitted one the registry lists (`npm view`), installed
once with `npm install --ignore-scripts` into its own folder under the user cache and reused by every later
run, offline included. No install script runs: onnxruntime-node's fetches GPU libraries from outside the
registries, and the CPU binaries it needs ship inside the package.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from checker.errors import Error
from checker.manifest.model.runtime import Runtime as Declared
from checker.runtimes.envs import cache_root

WEB = "onnxruntime-web"
NODE = "onnxruntime-node"
FIELDS = {WEB: "web", NODE: "node"}  # the package -> its specifier's key in `runtime`
READY = "checker-npm.json"  # written last: a folder without it is unfinished and installed again
INSTALL_TIMEOUT_S = 1800.0
VIEW_TIMEOUT_S = 120.0
MAX_VIEW_BYTES = 4 << 20  # `npm view PACKAGE versions --json`: a few thousand versions


class NpmError(Error):
    """A JavaScript package that is not there and cannot be installed; the message says why."""


def root() -> Path:
    return cache_root().parent / "npm"


def folder(package: str, version: str) -> Path:
    """The install folder of package==version (its node_modules holds the package)."""
    return root() / f"{package}-{version}"


def modules(package: str, version: str) -> Path:
    return folder(package, version) / "node_modules"


def admitted(runtime: Declared | None, package: str) -> str:
    """The specifier the manifest gives the package: its own field, else onnxruntime's `runtime.version`."""
    if runtime is None:
        return ""
    own: str | None = getattr(runtime, FIELDS[package])
    return own if own is not None and own.strip() else runtime.version or ""


def _versions(texts: list[str]) -> list[Version]:
    out = []
    for text in texts:
        try:
            version = Version(text)
        except InvalidVersion:
            continue  # npm's nightly builds (1.31.0-dev.2026...) are no PEP 440 version
        if not version.is_prerelease and not version.is_devrelease:
            out.append(version)
    return out


def cached_versions(package: str) -> list[Version]:
    base = root()
    prefix = f"{package}-"
    found = [p.name[len(prefix) :] for p in base.glob(f"{prefix}*")] if base.is_dir() else []
    return [v for v in _versions(found) if (folder(package, str(v)) / READY).is_file()]


def npm() -> str | None:
    return shutil.which("npm")


def registry_versions(package: str) -> list[Version]:
    """Every release the npm registry lists for the package."""
    tool = npm()
    if tool is None:
        raise NpmError(f"{package} is not in the cache and npm is not installed (apt-get install npm)")
    try:
        done = subprocess.run(
            [tool, "view", package, "versions", "--json"], capture_output=True, timeout=VIEW_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NpmError(f"the npm registry could not be asked for {package}'s releases: {exc}") from None
    text = done.stdout[:MAX_VIEW_BYTES].decode("utf-8", "replace")
    try:
        listed = json.loads(text) if done.returncode == 0 else None
    except json.JSONDecodeError:
        listed = None
    if not isinstance(listed, list):
        tail = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no answer"])[-1]
        raise NpmError(f"the npm registry lists no release of {package}: {tail[:300]}")
    return _versions([str(v) for v in listed])


def choose(package: str, specifier: str, offline: bool) -> str:
    """The release to judge: the newest admitted one in the cache, else the newest admitted one on the registry."""
    try:
        spec = SpecifierSet(specifier)
    except InvalidSpecifier:
        raise NpmError(f"'{specifier}' is not a version specifier for {package}") from None
    cached = sorted(v for v in cached_versions(package) if v in spec)
    if cached:
        return str(cached[-1])
    if offline:
        raise NpmError(f"no release of {package} admitted by '{specifier}' is in the cache ({root()}), and --offline "
                       "allows no download: run once online")  # fmt: skip
    listed = sorted(v for v in registry_versions(package) if v in spec)
    if not listed:
        raise NpmError(f"the npm registry has no release of {package} admitted by '{specifier}'")
    return str(listed[-1])


def ensure(package: str, version: str, offline: bool) -> Path:
    """The node_modules folder holding package==version, installed first when it is not in the cache yet."""
    target = folder(package, version)
    if (target / READY).is_file():
        return target / "node_modules"
    if offline:
        raise NpmError(f"{package} {version} is not in the cache ({target}) and --offline allows no download")
    tool = npm()
    if tool is None:
        raise NpmError(f"installing {package} needs npm (Debian and Ubuntu: apt-get install npm)")
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        (building / "package.json").write_text(json.dumps({"name": "checker-runtime", "private": True}) + "\n")
        command = [tool, "install", "--prefix", str(building), "--ignore-scripts", "--no-audit", "--no-fund",
                   "--no-package-lock", "--omit=dev", "--loglevel=error", f"{package}@{version}"]  # fmt: skip
        _run(command, package, version)
        if not (building / "node_modules" / package / "package.json").is_file():
            raise NpmError(f"{package} {version} could not be installed: npm left no package")
        (building / READY).write_text(json.dumps({"package": package, "version": version}) + "\n", encoding="utf-8")
        try:
            building.rename(target)
        except OSError:
            if not (target / READY).is_file():  # not another run's finished copy: an unfinished leftover
                shutil.rmtree(target, ignore_errors=True)
                building.rename(target)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target / "node_modules"


def _run(command: list[str], package: str, version: str) -> None:
    env = dict(os.environ, npm_config_update_notifier="false")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NpmError(f"{package} {version} could not be installed: {exc}") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or done.stdout).strip().splitlines() if ln.strip()]
        raise NpmError(f"{package} {version} could not be installed: {' / '.join(lines[-3:])[-1500:]}")
