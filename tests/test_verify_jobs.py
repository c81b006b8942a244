"""`checker verify --jobs`: bundles verified side by side give the report they give one after another."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bundlekit import EXAMPLE

from checker.workers import PEAK_PER_BYTE, WORKER_BASE_BYTES, bundle_bytes, pool_size

Cli = Callable[..., tuple[int, str, str]]
TIMING = {"duration_s", "created_at", "latency"}  # the report's fields that tell time


def _without_timing(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_timing(v) for k, v in node.items() if k not in TIMING}
    if isinstance(node, list):
        return [_without_timing(v) for v in node]
    return node


def _bundles(tmp_path: Path) -> list[Path]:
    """Four bundles that pass, fail in different ways, and one that is no bundle at all."""
    paths = []
    for name in ("good", "no-command", "good-again", "empty"):
        root = tmp_path / name
        shutil.copytree(EXAMPLE, root)
        paths.append(root)
    text = (tmp_path / "no-command" / "bundle.yaml").read_text()
    (tmp_path / "no-command" / "bundle.yaml").write_text(text.replace("  command: checker verify bundle.yaml\n", ""))
    (tmp_path / "empty" / "bundle.yaml").unlink()
    return paths


def test_two_jobs_give_the_same_report_in_the_same_order_as_one(cli: Cli, tmp_path: Path) -> None:
    paths = _bundles(tmp_path)
    serial_code, serial_out, _ = cli("verify", *paths, "--format", "json", "--jobs", "1")
    parallel_code, parallel_out, _ = cli("verify", *paths, "--format", "json", "--jobs", "2")
    serial, parallel = json.loads(serial_out), json.loads(parallel_out)
    assert [b["path"] for b in serial["bundles"]] == [str(p) for p in paths]
    assert [b["status"] for b in serial["bundles"]] == ["pass", "fail", "pass", "fail"]
    assert _without_timing(parallel) == _without_timing(serial)
    assert parallel_code == serial_code == 1
    text_serial = cli("verify", *paths, "--jobs", "1")[1]
    assert _untimed(cli("verify", *paths, "--jobs", "2")[1]) == _untimed(text_serial)


def _untimed(text: str) -> list[str]:
    """The text report without its gain lines: a speed measured twice differs."""
    return [line for line in text.splitlines() if not line.startswith("  gain  ")]


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_must_be_a_positive_count(cli: Cli, jobs: str) -> None:
    code, _, err = cli("verify", EXAMPLE, "--jobs", jobs)
    assert code == 2 and "jobs" in err


def test_the_pool_is_bounded_by_bundles_jobs_and_memory(tmp_path: Path) -> None:
    paths = _bundles(tmp_path)
    assert pool_size(paths, 1) == 1
    assert pool_size(paths[:1], 8) == 1  # one bundle needs no pool
    size = bundle_bytes(paths[0])
    assert size == sum(f.stat().st_size for f in EXAMPLE.rglob("*") if f.is_file())
    # A bundle whose files take more than the available memory, divided among workers, gets fewer workers.
    big = tmp_path / "big"
    big.mkdir()
    with (big / "weights.bin").open("wb") as out:
        out.truncate(int(_available() / PEAK_PER_BYTE / 2))  # sparse: no disk is used
    assert pool_size([*paths, big], 8) <= 2
    assert pool_size(paths, 3) == (3 if _available() > 3 * (WORKER_BASE_BYTES + PEAK_PER_BYTE * size) else 1)


def _available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
