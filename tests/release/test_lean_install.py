"""The device install: the wheel without its optional extras (Pillow, tokenizers, requests) still verifies."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from bundlekit import EXAMPLE, build_wheel

OPTIONAL = ("PIL", "tokenizers", "requests")


@pytest.fixture(scope="module")
def lean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding the built wheel and its core dependencies only (from the index)."""
    work = tmp_path_factory.mktemp("lean")
    wheel = build_wheel(work / "dist")
    env_dir = work / "venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(env_dir)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install", "-q", str(wheel)],
        check=True,
    )
    return env_dir


def _run(env_dir: Path, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([env_dir / "bin" / "checker", *map(str, args)], cwd=cwd, capture_output=True, text=True)


@pytest.mark.slow
def test_the_optional_extras_are_absent(lean: Path, tmp_path: Path) -> None:
    probe = f"import importlib.util as u; print(','.join(m for m in {OPTIONAL!r} if u.find_spec(m)))"
    found = subprocess.run(
        [lean / "bin" / "python", "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == ""


@pytest.mark.slow
def test_verify_on_the_device_judges_the_graph_and_says_what_it_could_not_check(lean: Path, tmp_path: Path) -> None:
    result = _run(lean, "verify", EXAMPLE, "--format", "json", cwd=tmp_path)
    # Without the image extra the photos are not rebuilt (a warning), and everything else still passes.
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    bundle = json.loads(result.stdout)["bundles"][0]
    not_rebuilt = [f for f in bundle["findings"] if f["id"] == "inputs.not_rebuilt"]
    assert not_rebuilt and "Pillow" in not_rebuilt[0]["message"] and "[image]" in not_rebuilt[0]["message"]
    assert bundle["not_run"] == [{"check": "image fidelity", "reason": "needs Pillow ([image])"}]
    assert bundle["comparisons"] and bundle["comparisons"][0]["status"] == "pass"
    assert bundle["pieces"]["graph"] == "present"
    version = _run(lean, "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("checker ")


@pytest.mark.slow
def test_a_raw_image_case_on_the_device_is_a_clear_error(lean: Path, tmp_path: Path) -> None:
    import shutil

    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLE, bundle)
    case = bundle / "cases" / "dusk"
    result = _run(
        lean,
        "case",
        "add",
        bundle,
        "--name",
        "raw-only",
        "--raw",
        f"pixel_values={case / 'photo.png'}",
        "--expected",
        f"logits={case / 'logits.npy'}",
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "Pillow is not installed" in result.stderr
    assert not (bundle / "cases" / "raw-only").exists()
