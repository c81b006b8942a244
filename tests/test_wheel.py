"""End to end from a built wheel: the schemas and the support table reach the installed package."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from bundlekit import EXAMPLE, REPO, build_wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(work / "dist")
    env_dir = work / "venv"
    # A clean environment with the wheel and its own dependencies, at the versions CI tests with: nothing leaks
    # in from the environment the tests run in (a venv sees only the base interpreter's packages, not ours).
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*install, "-c", str(REPO / "constraints.txt"), f"{wheel}[all]"], check=True)
    return env_dir


@pytest.mark.slow
@pytest.mark.xdist_group("wheel")
def test_installed_wheel_verifies_the_example(installed: Path, tmp_path: Path) -> None:
    python = installed / "bin" / "python"
    where = subprocess.run(
        [python, "-c", "import checker, checker.manifest.schema as s; print(checker.__file__); print(s.schema_dir())"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    module, schemas = where.stdout.split()
    assert str(installed) in module and str(installed) in schemas
    result = subprocess.run(
        [installed / "bin" / "checker", "verify", EXAMPLE, "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["bundles"][0]["name"] == "mobilenet-tiny" and report["status"] == "pass"
    assert "Traceback" not in result.stderr
    schema = subprocess.run(
        [installed / "bin" / "checker", "schema", "report"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert json.loads(schema.stdout)["title"].startswith("checker verify report")


@pytest.mark.slow
@pytest.mark.xdist_group("wheel")
def test_help_and_version_import_neither_onnx_nor_onnxruntime(installed: Path, tmp_path: Path) -> None:
    code = (
        "import sys\nfrom checker.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('onnx', 'onnxruntime') if m in sys.modules]\n"
        "sys.stderr.write('IMPORTED:' + ','.join(bad) + '.')\n"
    )
    for args in (["--version"], ["--help"], ["verify", "--help"]):
        result = subprocess.run(
            [installed / "bin" / "python", "-c", code, *args], cwd=tmp_path, capture_output=True, text=True
        )
        assert "IMPORTED:." in result.stderr, (args, result.stderr)
