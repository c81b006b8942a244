"""Runtime environments: which onnxruntime a --runtime SPEC means, and a cached, isolated install of it.

SPEC is an exact version (`1.17.3`), `oldest` or `newest` of the releases that the manifest's
`runtime.version` admits and that have a wheel for this Python and platform (asked of the package index
through pip, or read from the cache and the wheelhouses when offline), or PACKAGE==VERSION for another build
(`onnxruntime-openvino==1.24.1`). Each is installed once, with the NumPy it needs, into its own environment
under the user cache folder (uv when it is on PATH, else venv and pip), and reused by every later run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import sys_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from checker.errors import Error

DEFAULT_PACKAGE = "onnxruntime"
CACHE_VARIABLE = "CHECKER_CACHE_DIR"
READY = "checker-runtime.json"  # written last: an environment without it is unfinished and rebuilt
INSTALL_TIMEOUT_S = 1800.0
INDEX_TIMEOUT_S = 300.0
_PACKAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# onnxruntime was built against NumPy 1 before 1.19; with NumPy 2 it fails on import.
_NUMPY_2_FROM = Version("1.19")


class RuntimeSpecError(Error):
    """A --runtime SPEC that names no installable onnxruntime; the message says why."""


@dataclass(frozen=True)
class Wanted:
    """A runtime as asked for: the package, and a version or 'oldest' / 'newest'."""

    spec: str
    package: str
    version: str  # an exact version, "oldest" or "newest"


@dataclass(frozen=True)
class Environment:
    package: str
    version: str
    python: Path  # the environment's interpreter
    fresh: bool  # installed by this run

    @property
    def label(self) -> str:
        return f"{self.package} {self.version}"


def parse_spec(spec: str) -> Wanted:
    text = spec.strip()
    package, version = DEFAULT_PACKAGE, text
    if "==" in text:
        package, version = (part.strip() for part in text.split("==", 1))
    if not _PACKAGE.match(package):
        raise RuntimeSpecError(f"--runtime '{spec}': '{package}' is not a package name")
    if version in ("oldest", "newest"):
        return Wanted(spec, canonicalize_name(package), version)
    try:
        Version(version)
    except InvalidVersion:
        raise RuntimeSpecError(
            f"--runtime '{spec}' is not a version, 'oldest', 'newest' or PACKAGE==VERSION (e.g. onnxruntime==1.17.3)"
        ) from None
    return Wanted(spec, canonicalize_name(package), version)


def cache_root() -> Path:
    """The runtime environments' folder: $CHECKER_CACHE_DIR, else the user cache folder of this platform."""
    override = os.environ.get(CACHE_VARIABLE)
    if override:
        return Path(override) / "runtimes"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("onnx-release-checker", appauthor=False)) / "runtimes"


def _interpreter_tag() -> str:
    """Environments are per Python minor and platform: a wheel for one does not run on another."""
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"cp{sys.version_info[0]}{sys.version_info[1]}-{platform}"


def env_folder(package: str, version: str) -> Path:
    return cache_root() / _interpreter_tag() / f"{canonicalize_name(package)}-{version}"


def _env_python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def cached_versions(package: str) -> list[Version]:
    base = cache_root() / _interpreter_tag()
    prefix = f"{canonicalize_name(package)}-"
    found = []
    for folder in base.glob(f"{prefix}*") if base.is_dir() else []:
        if (folder / READY).is_file():
            try:
                found.append(Version(folder.name[len(prefix) :]))
            except InvalidVersion:
                continue
    return found


def wheelhouse_versions(package: str, find_links: list[str]) -> list[Version]:
    """Versions of `package` with a wheel for this Python and platform in the given folders."""
    tags = set(sys_tags())
    found = []
    for folder in find_links:
        for wheel in Path(folder).glob("*.whl") if Path(folder).is_dir() else []:
            try:
                name, version, _, wheel_tags = parse_wheel_filename(wheel.name)
            except InvalidWheelFilename:
                continue
            if name == canonicalize_name(package) and wheel_tags & tags:
                found.append(version)
    return found


def index_versions(package: str, find_links: list[str]) -> list[Version]:
    """Versions with a wheel for this Python and platform, as the package index lists them (pip filters)."""
    command = [sys.executable, "-m", "pip", "index", "versions", package, "--disable-pip-version-check"]
    command += [arg for folder in find_links for arg in ("--find-links", folder)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INDEX_TIMEOUT_S, env=_pip_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeSpecError(f"the package index could not be asked for {package}'s versions: {exc}") from None
    match = re.search(r"Available versions:\s*(.+)", done.stdout)
    if done.returncode != 0 or match is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no answer"]
        raise RuntimeSpecError(f"the package index lists no version of {package} for this Python: {tail[0]}")
    out = []
    for text in match.group(1).split(","):
        try:
            out.append(Version(text.strip()))
        except InvalidVersion:
            continue
    return out


def choose(wanted: Wanted, admitted: str | None, offline: bool, find_links: list[str]) -> str:
    """The exact version a SPEC means."""
    if wanted.version not in ("oldest", "newest"):
        return wanted.version
    try:
        spec = SpecifierSet(admitted or "")
    except InvalidSpecifier:
        raise RuntimeSpecError(f"--runtime {wanted.spec}: runtime.version '{admitted}' is not a specifier") from None
    if offline:
        known = set(cached_versions(wanted.package)) | set(wheelhouse_versions(wanted.package, find_links))
        where = "in the cache or the wheelhouses (--offline)"
    else:
        known = set(index_versions(wanted.package, find_links))
        where = "in the package index with a wheel for this Python and platform"
    fitting = sorted(v for v in known if not v.is_prerelease and v in spec)
    if not fitting:
        raise RuntimeSpecError(
            f"--runtime {wanted.spec}: no release of {wanted.package} admitted by '{admitted or ''}' is {where}"
        )
    return str(fitting[0] if wanted.version == "oldest" else fitting[-1])


def _pip_env() -> dict[str, str]:
    env = dict(os.environ)
    # A constraints file of the checker's own environment (numpy 2, a newer onnxruntime) must not bind the
    # runtime's: an empty one in its place.
    env["PIP_CONSTRAINT"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.pop("PIP_REQUIRE_VIRTUALENV", None)
    return env


def requirements(package: str, version: str) -> list[str]:
    """The runtime and the NumPy it was built for."""
    wanted = [f"{package}=={version}"]
    if Version(version) < _NUMPY_2_FROM:
        wanted.append("numpy<2")
    return wanted


def _install_commands(folder: Path, reqs: list[str], offline: bool, find_links: list[str]) -> list[list[str]]:
    links = [arg for f in find_links for arg in ("--find-links", f)]
    uv = shutil.which("uv")
    python = str(_env_python(folder))
    if uv:
        extra = ["--offline"] if offline else []
        return [
            [uv, "venv", "--quiet", "--python", sys.executable, str(folder)],
            [uv, "pip", "install", "--quiet", "--python", python, *extra, *links, *reqs],
        ]
    index = ["--no-index"] if offline else []
    return [
        [sys.executable, "-m", "venv", "--without-pip", str(folder)],
        [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-input", *index, *links, *reqs],
    ]


def ensure(package: str, version: str, offline: bool, find_links: list[str]) -> Environment:
    """The cached environment of package==version, installed first when it is not there yet."""
    folder = env_folder(package, version)
    if (folder / READY).is_file() and _env_python(folder).exists():
        return Environment(package, version, _env_python(folder), fresh=False)
    if offline and not find_links:
        raise RuntimeSpecError(
            f"{package} {version} is not in the runtime cache ({folder.parent}) and --offline allows no download; "
            "give a wheelhouse with --find-links, or run once online"
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    # Built beside its final place and renamed into it: a run stopped half-way leaves no usable-looking env.
    building = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        shutil.rmtree(building)
        for command in _install_commands(building, requirements(package, version), offline, find_links):
            _run_install(command, package, version)
        (building / READY).write_text(json.dumps({"package": package, "version": version}) + "\n", encoding="utf-8")
        _move_into_place(building, folder)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return Environment(package, version, _env_python(folder), fresh=True)


def _run_install(command: list[str], package: str, version: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=_pip_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeSpecError(f"{package} {version} could not be installed: {exc}") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or done.stdout).strip().splitlines() if ln.strip()]
        raise RuntimeSpecError(f"{package} {version} could not be installed: {' / '.join(lines[-3:])[-1500:]}")


def _move_into_place(building: Path, folder: Path) -> None:
    try:
        building.rename(folder)
    except OSError:
        if not (folder / READY).is_file():  # not another run's finished copy: an unfinished leftover
            shutil.rmtree(folder, ignore_errors=True)
            building.rename(folder)
