"""The per-case time bound: one watchdog thread for every run, an endless graph stopped, a quick one left alone."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from modelkit import endless_loop
from onnx import TensorProto, helper

from checker.compare.session import _WATCHDOG, CaseRunError, timed_run


def _endless(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(endless_loop(path)), providers=["CPUExecutionProvider"])


def _quick(path: Path) -> ort.InferenceSession:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "quick",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _watchdogs() -> int:
    return sum(t.name == "case-timeout" for t in threading.enumerate())


def test_many_runs_share_one_watchdog_thread(tmp_path: Path) -> None:
    session = _quick(tmp_path / "quick.onnx")
    for value in range(200):
        (y,) = timed_run(session, None, {"x": np.array([value - 100], np.float32)}, timeout=5.0)
        assert y[0] == max(value - 100, 0)
    assert _watchdogs() == 1


def test_an_endless_run_is_stopped_and_a_quick_one_beside_it_is_not(tmp_path: Path) -> None:
    endless, quick = _endless(tmp_path / "endless.onnx"), _quick(tmp_path / "quick.onnx")
    x = {"x": np.zeros(1, np.float32)}
    with ThreadPoolExecutor(2) as pool:
        stopped = pool.submit(timed_run, endless, None, x, 0.5)
        # Runs armed and disarmed while the endless one waits for its deadline, each with a longer bound.
        quick_runs = [timed_run(quick, None, x, 30.0) for _ in range(50)]
        start = time.monotonic()
        with pytest.raises(CaseRunError, match=r"ran for more than 0\.5 s on this case and was stopped"):
            stopped.result(timeout=60)
    assert time.monotonic() - start < 30
    assert all(y[0] == 0 for (y,) in quick_runs)
    assert _watchdogs() == 1


def test_a_shorter_bound_after_a_longer_one_still_stops_its_run(tmp_path: Path) -> None:
    """The watchdog thread is woken only for a deadline sooner than the one it sleeps towards: while another
    run's 20 s bound is armed and the thread sleeps towards it, an endless run bounded at half a second must
    still be stopped on time, not at the 20 s wake."""
    endless = _endless(tmp_path / "endless.onnx")
    x = {"x": np.zeros(1, np.float32)}
    token = _WATCHDOG.arm(ort.RunOptions(), 20.0)
    try:
        give_up = time.monotonic() + 10
        while _WATCHDOG._wakes_at is None and time.monotonic() < give_up:  # until it sleeps towards the 20 s
            time.sleep(0.01)
        assert _WATCHDOG._wakes_at is not None
        start = time.monotonic()
        with pytest.raises(CaseRunError, match=r"ran for more than 0\.5 s"):
            timed_run(endless, None, x, 0.5)
        assert time.monotonic() - start < 10
    finally:
        _WATCHDOG.disarm(token)
