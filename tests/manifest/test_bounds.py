"""Bounds that never refuse a real release: a manifest of 10,000 cases passes, in bounded memory, with the
file-descriptor limit at 1024. (How long it takes is measured by benchmarks/bench_many_cases.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from bundlekit import linear_forward, linear_model, manifest, write_bundle

from checker.manifest.load import MAX_MANIFEST_BYTES
from checker.manifest.yamltree import MAX_NODES, parse_text

CASES = 10_000
FD_LIMIT = 1024
MAX_RSS_MIB = 1024


def many_cases(root: Path, count: int) -> Path:
    model = linear_model()
    root = write_bundle(root, model, manifest(), n_cases=1)
    data = yaml.safe_load((root / "bundle.yaml").read_text())
    rng = np.random.default_rng(0)
    cases = []
    for i in range(count):
        x = rng.standard_normal((1, 4)).astype(np.float32)
        np.save(root / f"cases/x{i}.npy", x)
        np.save(root / f"cases/y{i}.npy", linear_forward(model, x))
        tags = ["edge"] if i == 0 else ["ordinary"]
        cases.append(
            {
                "name": f"case-{i:05d}",
                "tags": tags,
                "inputs": {"x": f"cases/x{i}.npy"},
                "expected": {"y": f"cases/y{i}.npy"},
            }
        )
    data["comparison"]["cases"] = cases
    (root / "bundle.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return root


@pytest.mark.slow
def test_a_release_of_ten_thousand_cases_passes(tmp_path: Path) -> None:
    root = many_cases(tmp_path / "b", CASES)
    assert (root / "bundle.yaml").stat().st_size > 1 << 20  # over the old 1 MiB bound
    code, out, err, peak_mib = _run_measured([sys.executable, "-m", "checker", "verify", str(root), "--format", "json"])
    assert code == 0, err[-2000:]
    bundle = json.loads(out)["bundles"][0]
    assert bundle["status"] == "pass" and len(bundle["comparisons"][0]["rules"][0]["cases"]) == CASES
    assert peak_mib < MAX_RSS_MIB


# Runs the command with the file-descriptor limit and writes its peak memory (KiB) to argv[1]. A small process
# of its own, since a child forked from this test process would count this process's pages in its peak (Linux
# keeps the high-water mark across exec), and RUSAGE_CHILDREN here would include every earlier test's children.
LAUNCHER = """
import resource, subprocess, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]), hard))
code = subprocess.run(sys.argv[4:], timeout=float(sys.argv[3]), check=False).returncode
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


def _run_measured(command: list[str], timeout: float = 1800) -> tuple[int, str, str, float]:
    """The exit code, output and peak memory (MiB) of this one command; a hang past `timeout` fails."""
    with tempfile.TemporaryDirectory() as tmp:
        peak = Path(tmp) / "peak"
        args = [sys.executable, "-c", LAUNCHER, str(peak), str(FD_LIMIT), str(timeout), *command]
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        if not peak.exists():
            pytest.fail(f"{command} did not finish within {timeout} s: {done.stderr[-2000:]}")
        return done.returncode, done.stdout, done.stderr, int(peak.read_text()) / 1024


def test_the_node_count_bounds_what_the_size_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    """16 MiB of one-character nodes would be millions of them: the node count refuses such a manifest early."""
    import checker.manifest.yamltree as yamltree

    assert MAX_MANIFEST_BYTES == 16 << 20 and MAX_NODES <= MAX_MANIFEST_BYTES // 8
    monkeypatch.setattr(yamltree, "MAX_NODES", 1000)
    tree, found = parse_text("x: [" + ",".join(["1"] * 1200) + "]\n", "bundle.yaml")
    assert tree is None and "more than 1000 YAML nodes" in found[0].message
