"""The versions a verdict depends on: in `checker --version` and in the JSON report."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from releasekit import Cli

import checker


def _expected() -> dict[str, str]:
    return {
        "checker": checker.__version__,
        "onnx": metadata.version("onnx"),
        "onnxruntime": metadata.version("onnxruntime"),
        "numpy": metadata.version("numpy"),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def test_version_names_every_version_and_the_cpu(cli: Cli) -> None:
    code, out, _err = cli("--version")
    assert code == 0
    want = _expected()
    assert out.startswith(f"checker {want['checker']} (")
    for package in ("onnx", "onnxruntime", "numpy", "python"):
        assert f"{package} {want[package]}" in out
    assert out.rstrip().endswith(f"; {want['machine']})")


def test_the_json_report_records_the_environment(example: Path, cli: Cli) -> None:
    _code, out, _err = cli("verify", example, "--format", "json", "--no-progress")
    report = json.loads(out)
    assert report["checker_version"] == checker.__version__
    assert {k: report["environment"].get(k) for k in _expected()} == _expected()


def test_release_commands_start_without_heavy_or_optional_imports(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom checker.cli import main\n"
        "for args in (['init', '--help'], ['case', 'add', '--help'], ['pack', '--help']):\n"
        "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
        "heavy = ('onnx', 'onnxruntime', 'PIL', 'tokenizers', 'requests')\n"
        "print('IMPORTED:' + ','.join(m for m in heavy if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert result.stdout.strip().endswith("IMPORTED:"), result.stdout
