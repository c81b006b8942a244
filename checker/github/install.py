"""The action's install step: the checker in its own virtual environment, every package pinned by hash.

The action runs this file with the Python of its setup-python step, in isolated mode (`python -I`),
before the checker is installed, so it uses the standard library only and imports nothing of the
checker. Isolated mode keeps the working directory (the workspace, which a pull request controls)
off `sys.path`, and every Python started here is isolated too and runs from a folder under
RUNNER_TEMP: a `pip/`, `venv/`, `ensurepip/` or `sitecustomize.py` in the workspace is never
imported.

Steps: make the venv (unless a cached one for the same lock is there), install the lock with
`--require-hashes` (wheels only, the build backend included), then the checker itself with no
dependencies, no index and no build isolation (the backend just installed builds it). A bundle whose
preprocessing names torchvision gets torch and torchvision on demand: they are large and not in the
lock, and a failure to install them is a warning.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

STAMP = ".onnx-release-checker-lock"  # the lock's digest, written once the environment is complete
ON_DEMAND = ("torch", "torchvision")
MAX_MANIFEST_BYTES = 1 << 20


def venv_python(venv: Path, os_name: str = os.name) -> Path:
    """The venv's interpreter: Scripts\\python.exe on Windows, bin/python elsewhere."""
    return venv / "Scripts" / "python.exe" if os_name == "nt" else venv / "bin" / "python"


def lock_digest(lock: Path, project: Path) -> str:
    """What the cache key and the stamp name: the lock and the project's own build description."""
    digest = hashlib.sha256(lock.read_bytes())
    for name in ("pyproject.toml", "checker/__init__.py"):
        path = project / name
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def pip_commands(python: Path, lock: Path, project: Path) -> list[list[str]]:
    """The two installs: the lock by hash, then the project alone, built by the locked backend."""
    pip = [str(python), "-I", "-m", "pip", "--disable-pip-version-check", "--no-input"]
    return [
        [*pip, "install", "--quiet", "--require-hashes", "--only-binary=:all:", "--no-deps", "-r", str(lock)],
        [*pip, "install", "--quiet", "--no-deps", "--no-index", "--no-build-isolation", str(project)],
    ]


def needs_torch(bundles: str, workspace: Path) -> bool:
    """Whether any manifest the bundles input can reach names torchvision (read as text, bounded)."""
    for word in _words(bundles):
        named = Path(word) if Path(word).is_absolute() else workspace / word
        # A path that exists is that path, brackets and all; a pattern matches under the escaped workspace.
        pattern = word if Path(word).is_absolute() else str(Path(glob.escape(str(workspace))) / word)
        literal = named.exists() or not glob.has_magic(word)
        for match in [str(named)] if literal else glob.glob(pattern, recursive=True)[:1000]:  # noqa: PTH207
            path = Path(match)
            manifests = [path] if path.is_file() else [path / n for n in ("bundle.yaml", "bundle.yml", "bundle.json")]
            for manifest in manifests:
                if _names_torchvision(manifest):
                    return True
    return False


def _words(bundles: str) -> list[str]:
    """The bundles input split as the checker splits it (quotes keep a space); unsplittable, by whitespace."""
    try:
        return shlex.split(bundles)
    except ValueError:
        return bundles.split()


def _names_torchvision(manifest: Path) -> bool:
    try:
        with manifest.open("rb") as handle:
            return b"torchvision" in handle.read(MAX_MANIFEST_BYTES)
    except OSError:
        return False


def install(venv: Path, lock: Path, project: Path, bundles: str, workspace: Path) -> Path:
    python = venv_python(venv)
    digest = lock_digest(lock, project)
    stamp = venv / STAMP
    if python.is_file() and stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == digest:
        print(f"The checker's environment for this lock is cached at {venv}.")
    else:
        _run([sys.executable, "-I", "-m", "venv", "--clear", str(venv)])
        for command in pip_commands(python, lock, project):
            _run(command)
        stamp.write_text(digest + "\n", encoding="utf-8")
    if bundles and needs_torch(bundles, workspace):
        _torch(python)
    return python


def _torch(python: Path) -> None:
    command = [str(python), "-I", "-m", "pip", "install", "--quiet", "--only-binary=:all:", *ON_DEMAND]
    if subprocess.run(command, check=False, env=clean_environment(dict(os.environ))).returncode != 0:
        print(
            "::warning title=torchvision not installed::A bundle's preprocessing names torchvision, and "
            "torch and torchvision could not be installed: that bundle's preprocessing check cannot run."
        )


def clean_environment(env: dict[str, str]) -> dict[str, str]:
    """The environment for every Python started here: no PYTHON* variable that could add a path.

    pip runs the build backend in a Python of its own, which does not inherit `-I`: PYTHONSAFEPATH
    and PYTHONNOUSERSITE give it the same protection.
    """
    kept = {k: v for k, v in env.items() if not k.upper().startswith("PYTHON")}
    return {**kept, "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1"}


def _run(command: Sequence[str]) -> None:
    done = subprocess.run(list(command), check=False, env=clean_environment(dict(os.environ)))
    if done.returncode != 0:
        raise SystemExit(f"install step failed ({done.returncode}): {' '.join(command[:6])} ...")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("command", choices=("key", "install"))
    parser.add_argument("--project", type=Path, required=True, help="the action's folder (GITHUB_ACTION_PATH)")
    parser.add_argument("--venv", type=Path, help="where the environment goes (under RUNNER_TEMP)")
    parser.add_argument("--lock", type=Path, help="the hashed lock (default: action/requirements.lock)")
    args = parser.parse_args(argv)
    project = args.project.resolve()
    lock = (args.lock or project / "action" / "requirements.lock").resolve()
    # Run from a folder of our own, never the workspace: nothing there is on a path or read.
    temp = Path(os.environ.get("RUNNER_TEMP") or (args.venv.parent if args.venv else project))
    os.chdir(temp)
    if args.command == "key":
        _output("key", f"py{platform.python_version()}-{lock_digest(lock, project)[:32]}")
        return 0
    if args.venv is None:
        parser.error("install needs --venv")
    workspace = Path(os.environ.get("GITHUB_WORKSPACE") or temp)
    python = install(args.venv.resolve(), lock, project, os.environ.get("INPUT_BUNDLES", ""), workspace)
    _output("python", str(python))
    return 0


def _output(name: str, value: str) -> None:
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as out:  # noqa: PTH123
            out.write(f"{name}={value}\n")
    print(f"{name}={value}")


if __name__ == "__main__":
    raise SystemExit(main())
