"""`checker verify --jobs`: bundles verified side by side give the report they give one after another."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from bundlekit import EXAMPLE

from checker.report import BundleReport
from checker.verify import PEAK_PER_BYTE, WORKER_BASE_BYTES, bundle_bytes, bundles_at_once, in_order

Cli = Callable[..., tuple[int, str, str]]
TIMING = {"duration_s", "created_at"}  # the report's fields that tell time


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
    assert cli("verify", *paths, "--jobs", "2")[1] == text_serial


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_must_be_a_positive_count(cli: Cli, jobs: str) -> None:
    code, _, err = cli("verify", EXAMPLE, "--jobs", jobs)
    assert code == 2 and "jobs" in err


def test_bundles_at_once_are_bounded_by_workers_and_memory(tmp_path: Path) -> None:
    paths = _bundles(tmp_path)
    size = bundle_bytes(paths[0])
    assert size == sum(f.stat().st_size for f in EXAMPLE.rglob("*") if f.is_file())
    # A bundle whose files take more than the available memory, divided among workers, gets fewer at once.
    big = tmp_path / "big"
    big.mkdir()
    with (big / "weights.bin").open("wb") as out:
        out.truncate(int(_available() / PEAK_PER_BYTE / 2))  # sparse: no disk is used
    assert bundles_at_once([*paths, big], 8) == 1
    room = _available() - 3 * WORKER_BASE_BYTES
    assert bundles_at_once(paths, 3) == (3 if room > 3 * PEAK_PER_BYTE * size else 1)


def test_in_order_keeps_the_order_and_the_bound(tmp_path: Path) -> None:
    """Real threads stand in for the workers. The first path finishes only once the last has: the others must
    pass it through the second place, while the bound of two holds (each lingers for a third to join it)."""
    paths = [tmp_path / f"b{i}" for i in range(7)]
    last_done, crowded = threading.Event(), threading.Event()
    running, most, asked = [0], [0], [0]
    lock = threading.Lock()

    def verify(path: Path) -> BundleReport:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            if running[0] > 2:
                crowded.set()
        if path == paths[0]:
            assert last_done.wait(timeout=30), "the bundles behind the first one were held back"
        else:
            crowded.wait(timeout=0.1)
        with lock:
            running[0] -= 1
        if path == paths[-1]:
            last_done.set()
        return BundleReport(path=str(path))

    def at_once() -> int:
        asked[0] += 1
        return 2

    with ThreadPoolExecutor(4) as pool:

        def submit(path: Path) -> Future[BundleReport]:
            return pool.submit(verify, path)

        reports = in_order(submit, paths, at_once)
    assert [r.path for r in reports] == [str(p) for p in paths]
    assert most[0] == 2
    assert asked[0] == 1


def test_in_order_goes_on_when_everything_submitted_is_done(tmp_path: Path) -> None:
    """Futures already done when submitted: each wait finds all of them finished, and the rest still follow."""
    paths = [tmp_path / f"b{i}" for i in range(7)]

    def submit(path: Path) -> Future[BundleReport]:
        future: Future[BundleReport] = Future()
        future.set_result(BundleReport(path=str(path)))
        return future

    for limit in (1, 2, 3, 7, 9):
        assert [r.path for r in in_order(submit, paths, lambda limit=limit: limit)] == [str(p) for p in paths]
    assert [r.path for r in in_order(submit, paths[:1], lambda: 2)] == [str(paths[0])]


def _available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
