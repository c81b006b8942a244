"""The worker, run for real: a separate `python -I` process with NumPy and onnxruntime only."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from bundlekit import linear_model

from checker.compare.session import CPU, Runtime, SessionError, run_case
from checker.runtimes.remote import WORKER, Worker, WorkerError, remote_opener


def test_the_worker_imports_nothing_of_the_checker() -> None:
    tree = ast.parse(WORKER.read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    stdlib = {"__future__", "ctypes", "json", "platform", "sys", "threading", "traceback", "typing"}
    assert imported <= stdlib | {"numpy", "onnxruntime"}


def test_a_remote_session_gives_what_a_local_one_gives(tmp_path: Path) -> None:
    model = linear_model(seed=3)
    path = tmp_path / "m.onnx"
    import onnx

    onnx.save(model, str(path))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    worker = Worker(Path(sys.executable), "here", 60.0)
    try:
        assert worker.version == ort.__version__ and CPU in worker.providers
        session = remote_opener(worker)(path, Runtime([CPU], {"intra_op_num_threads": 1}), 0)
        assert [i.name for i in session.get_inputs()] == ["x"] and session.get_providers() == [CPU]
        remote = run_case(session, {"x": x})  # type: ignore[arg-type]
        local = run_case(ort.InferenceSession(str(path), providers=[CPU]), {"x": x})
        np.testing.assert_array_equal(remote["y"], local["y"])
        with pytest.raises(RuntimeError, match=r"double|float"):  # a wrong feed: the worker's onnxruntime says why
            session.run(None, {"x": x.astype(np.float64)})
        (tmp_path / "bad.onnx").write_bytes(b"not a graph")
        with pytest.raises(SessionError, match=r"bad\.onnx|INVALID_PROTOBUF|Protobuf"):
            remote_opener(worker)(tmp_path / "bad.onnx", Runtime([CPU], {}), 0)
    finally:
        worker.close()


def test_an_environment_without_onnxruntime_says_so(tmp_path: Path) -> None:
    import venv

    venv.create(tmp_path / "bare", with_pip=False)
    with pytest.raises(WorkerError, match="onnxruntime cannot be imported there"):
        Worker(tmp_path / "bare" / "bin" / "python", "bare", 10.0)
