"""The action's install step and its lock: hashed, complete for every runner and Python, and isolated.

The real install step (checker/github/install.py, run as action.yml runs it) builds a venv from a
workspace that plants `pip`, `venv`, `ensurepip` and `sitecustomize` modules: none of them may run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from checker.github.install import lock_digest, pip_commands, venv_python

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "action" / "requirements.lock"
SOURCE = ROOT / "action" / "requirements.in"
INSTALL = ROOT / "checker" / "github" / "install.py"
# (sys_platform, platform_machine, platform_system, os_name) of each runner the action supports
RUNNERS = {
    "ubuntu-latest": ("linux", "x86_64", "Linux", "posix"),
    "ubuntu-24.04-arm": ("linux", "aarch64", "Linux", "posix"),
    "windows-latest": ("win32", "AMD64", "Windows", "nt"),
    "macos-latest": ("darwin", "arm64", "Darwin", "posix"),
    "macos-13": ("darwin", "x86_64", "Darwin", "posix"),
}
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
BUILD_BACKEND = {"hatchling", "packaging", "pathspec", "pluggy", "trove-classifiers", "tomli"}


def entries(text: str) -> list[tuple[Requirement, list[str], str]]:
    """(requirement, hashes, block text) of each pinned package in a lock."""
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2] if text.startswith("#") else text)
    found = []
    for block in blocks:
        first = block.split(" \\", 1)[0].strip()
        if first and not first.startswith("#"):
            found.append((Requirement(first), re.findall(r"--hash=sha256:([0-9a-f]{64})", block), block))
    return found


def environment(runner: str, python: str) -> dict[str, str]:
    platform, machine, system, os_name = RUNNERS[runner]
    return {
        "sys_platform": platform,
        "platform_machine": machine,
        "platform_system": system,
        "os_name": os_name,
        "python_version": python,
        "python_full_version": python + ".0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }


def test_every_locked_package_is_pinned_and_hashed() -> None:
    found = entries(LOCK.read_text(encoding="utf-8"))
    assert len(found) > 30
    for requirement, hashes, _ in found:
        pins = list(requirement.specifier)
        assert len(pins) == 1 and pins[0].operator == "==", requirement
        assert hashes, f"{requirement.name} has no hash"
    assert BUILD_BACKEND - {"tomli"} <= {canonicalize_name(r.name) for r, _, _ in found}


@pytest.mark.parametrize("runner", sorted(RUNNERS))
@pytest.mark.parametrize("python", PYTHONS)
def test_each_runner_and_python_gets_one_version_of_every_requirement(runner: str, python: str) -> None:
    """What pip installs there: exactly one pin of everything requirements.in asks for, and of its backend."""
    env = environment(runner, python)
    chosen: dict[str, list[str]] = {}
    for requirement, _, _ in entries(LOCK.read_text(encoding="utf-8")):
        if requirement.marker is None or requirement.marker.evaluate(env):
            chosen.setdefault(canonicalize_name(requirement.name), []).append(str(requirement.specifier))
    assert all(len(v) == 1 for v in chosen.values()), {k: v for k, v in chosen.items() if len(v) > 1}
    for line in SOURCE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            wanted = Requirement(line)
            if wanted.marker is None or wanted.marker.evaluate(env):
                name = canonicalize_name(wanted.name)
                assert name in chosen, f"{name} is not locked for {runner} Python {python}"
                assert wanted.specifier.contains(chosen[name][0].removeprefix("=="), prereleases=True)


def test_the_lock_answers_the_projects_dependencies() -> None:
    """Every runtime dependency of the project is in requirements.in (so in the lock) with the same range.

    A stale lock for requirements.in itself fails offline above; CI also recompiles it
    (`scripts/action_lock.py check`), which fails when the .in changed and the lock did not.
    """
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M)
    assert block
    wanted = {canonicalize_name(Requirement(d).name) for d in re.findall(r'"([^"]+)"', block.group(1))}
    source = {
        canonicalize_name(Requirement(line).name)
        for line in SOURCE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert wanted <= source
    assert {"pillow", "tokenizers", "requests", "opencv-python-headless", "soundfile", "soxr"} <= source


def test_windows_paths_are_chosen_by_the_install_step() -> None:
    assert venv_python(Path("venv"), "nt") == Path("venv") / "Scripts" / "python.exe"
    assert venv_python(Path("venv"), "posix") == Path("venv") / "bin" / "python"
    commands = pip_commands(Path("venv") / "Scripts" / "python.exe", LOCK, ROOT)
    assert all(c[0].endswith("python.exe") and c[1:4] == ["-I", "-m", "pip"] for c in commands)
    assert "--require-hashes" in commands[0] and "--only-binary=:all:" in commands[0]
    assert {"--no-deps", "--no-index", "--no-build-isolation"} <= set(commands[1])


def _trimmed_lock(path: Path) -> Path:
    """The lock's own entries for the build backend: enough to build and install the checker alone."""
    blocks = [b for r, _, b in entries(LOCK.read_text(encoding="utf-8")) if canonicalize_name(r.name) in BUILD_BACKEND]
    path.write_text("\n".join(blocks) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_the_install_step_ignores_a_hostile_workspace_and_is_cached(tmp_path: Path) -> None:
    workspace, temp, ran = tmp_path / "workspace", tmp_path / "runner-temp", tmp_path / "ran"
    workspace.mkdir()
    temp.mkdir()
    plant = f"open({str(ran)!r}, 'a').write(__name__ + '\\n')\n"
    for package in ("pip", "venv", "ensurepip", "checker", "hatchling"):
        (workspace / package).mkdir()
        for name in ("__init__.py", "__main__.py"):
            (workspace / package / name).write_text(plant, encoding="utf-8")
    for module in ("sitecustomize", "usercustomize"):
        (workspace / f"{module}.py").write_text(plant, encoding="utf-8")
    lock, venv, output = _trimmed_lock(tmp_path / "lock.txt"), temp / "onnx-release-checker", tmp_path / "out"
    env = {**os.environ, "RUNNER_TEMP": str(temp), "GITHUB_WORKSPACE": str(workspace), "GITHUB_OUTPUT": str(output)}
    env["PYTHONPATH"] = str(workspace)  # even this is ignored by isolated mode
    argv = [sys.executable, "-I", str(INSTALL), "install", "--project", str(ROOT), "--venv", str(venv)]
    argv += ["--lock", str(lock)]
    for _ in range(2):  # the second run finds the environment for this lock in place (a cache hit)
        done = subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    assert not ran.exists(), ran.read_text(encoding="utf-8")
    assert "cached" in done.stdout
    python = venv_python(venv)
    assert f"python={python}" in output.read_text(encoding="utf-8")
    where = subprocess.run(
        [str(python), "-I", "-c", "import checker, hatchling; print(checker.__file__)"],
        cwd=workspace, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert where.stdout.strip().startswith(str(venv))
    assert (venv / ".onnx-release-checker-lock").read_text(encoding="utf-8").strip() == lock_digest(lock, ROOT)


def test_torch_is_installed_only_for_a_bundle_that_names_torchvision(tmp_path: Path) -> None:
    from checker.github.install import needs_torch

    (tmp_path / "models" / "vision").mkdir(parents=True)
    (tmp_path / "models" / "plain").mkdir(parents=True)
    (tmp_path / "models" / "plain" / "bundle.yaml").write_text("preprocessing: {kind: image}\n", encoding="utf-8")
    assert not needs_torch("models/*", tmp_path)
    (tmp_path / "models" / "vision" / "bundle.yaml").write_text(
        "preprocessing: {library: torchvision}\n", encoding="utf-8"
    )
    assert needs_torch("models/*", tmp_path)
    assert not needs_torch("models/plain", tmp_path)


def test_torch_is_found_for_a_bracketed_folder_and_under_a_bracketed_workspace(tmp_path: Path) -> None:
    from checker.github.install import needs_torch

    workspace = tmp_path / "work [1]"  # a glob pattern joined to it must not read its brackets as a class
    (workspace / "models" / "vision [fp16]").mkdir(parents=True)
    (workspace / "models" / "vision [fp16]" / "bundle.yaml").write_text("library: torchvision\n", encoding="utf-8")
    assert needs_torch('"models/vision [fp16]"', workspace)
    assert needs_torch("models/*", workspace)
    assert not needs_torch("models/vision", workspace)


def test_every_python_the_action_starts_is_isolated_and_runs_outside_the_workspace() -> None:
    from ruamel.yaml import YAML

    action = YAML(typ="safe").load((ROOT / "action.yml").read_text(encoding="utf-8"))
    runs = [s for s in action["runs"]["steps"] if "run" in s]
    assert len(runs) == 3
    for step in runs:
        assert re.search(r'"\$(PYTHON|CHECKER_PYTHON)" -I ', step["run"]), step["run"]
    for step in runs[:2]:  # the verify step runs in the workspace, where the bundles are; -I keeps it off sys.path
        assert step["working-directory"] == "${{ runner.temp }}"
    assert "${{ steps.install.outputs.python }}" in runs[2]["env"].values()
    caches = [s for s in action["runs"]["steps"] if s.get("uses", "").startswith("actions/cache/")]
    store = caches.pop()  # the verdict store: restored only, never saved by the action (docs/action.md)
    assert store["uses"].startswith("actions/cache/restore@") and store["with"]["path"] == "${{ inputs.reuse }}"
    assert store["if"] == "inputs.reuse != '' && " + caches[0]["if"]
    assert [s["uses"].split("@")[0] for s in caches] == ["actions/cache/restore", "actions/cache/save"]
    assert caches[0]["with"] == caches[1]["with"]  # saved right after the install, under the key restored
    assert "runner.os" in caches[0]["with"]["key"] and "steps.key.outputs.key" in caches[0]["with"]["key"]
    # Saved on a miss, and neither restored nor saved where the release gate or pull_request_target runs.
    assert caches[1]["if"] == "steps.cache.outputs.cache-hit != 'true' && " + caches[0]["if"]
    assert "refs/tags/" in caches[0]["if"] and "'release'" in caches[0]["if"]
