"""The worker that runs graphs in another onnxruntime: started as `python -I worker.py` inside that environment.

It imports only the standard library, NumPy and onnxruntime (the checker is not installed there), reads one
JSON request a line on stdin and answers one JSON line on stdout. Tensors travel as .npz files in a folder the
checker owns: inputs are written by the checker, outputs by the worker, both read without pickles. The
checker judges the outputs with its own rules, so every runtime is held to the same rules, figure for figure.
"""

from __future__ import annotations

import json
import platform
import sys
import threading
import traceback
from typing import Any

_LEVELS = {"disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED"}
_MODES = {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}
_QUIET = 3
_MAX_ERROR = 2000


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= _MAX_ERROR else text[:_MAX_ERROR] + "..."


def _options(ort: Any, request: dict[str, Any]) -> Any:
    """The checker's session options (compare.session.session_options), rebuilt for this onnxruntime."""
    options = request.get("options") or {}
    so = ort.SessionOptions()
    so.log_severity_level = _QUIET
    level = options.get("graph_optimization_level", "all")
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _LEVELS.get(level, "ORT_ENABLE_ALL"))
    if options.get("execution_mode") in _MODES:
        so.execution_mode = getattr(ort.ExecutionMode, _MODES[options["execution_mode"]])
    for key in ("intra_op_num_threads", "inter_op_num_threads"):
        if key in options:
            setattr(so, key, int(options[key]))
    if request.get("lean"):
        so.add_session_config_entry("session.disable_prepacking", "1")
    for key, value in (options.get("config_entries") or {}).items():  # e.g. session.x64quantprecision
        so.add_session_config_entry(str(key), str(value))
    return so


def _args(values: Any) -> list[list[Any]]:
    return [[v.name, v.type, [d if isinstance(d, (int, str)) else None for d in (v.shape or [])]] for v in values]


class Worker:
    def __init__(self, ort: Any, np: Any) -> None:
        self.ort, self.np = ort, np
        self.sessions: dict[int, Any] = {}
        self.next_id = 1

    def open(self, request: dict[str, Any]) -> dict[str, Any]:
        ort = self.ort
        try:
            session = ort.InferenceSession(
                request["path"], sess_options=_options(ort, request), providers=list(request["providers"])
            )
        except Exception as exc:  # onnxruntime's errors share no base class beyond Exception
            return {"ok": False, "error": _first_line(exc)}
        sid, self.next_id = self.next_id, self.next_id + 1
        self.sessions[sid] = session
        return {
            "ok": True,
            "session": sid,
            "inputs": _args(session.get_inputs()),
            "outputs": _args(session.get_outputs()),
            "providers": list(session.get_providers()),
        }

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        session = self.sessions[int(request["session"])]
        with self.np.load(request["feed"], allow_pickle=False) as data:
            feed = {name: data[f"arr_{i}"] for i, name in enumerate(request["names"])}
        options = self.ort.RunOptions()
        options.log_severity_level = _QUIET + 1
        timeout = float(request.get("timeout", 600.0))
        timer = threading.Timer(timeout, setattr, (options, "terminate", True))
        timer.daemon = True
        timer.start()
        try:
            values = session.run(None, feed, options)
        except Exception as exc:  # onnxruntime's errors share no base class beyond Exception
            if options.terminate:
                return {"ok": False, "error": f"the graph ran for more than {timeout:g} s on this case and was stopped"}
            return {"ok": False, "error": _first_line(exc)}
        finally:
            timer.cancel()
        self.np.savez(request["out"], **{f"o{i}": self.np.asarray(v) for i, v in enumerate(values)})
        return {"ok": True, "count": len(values)}

    def place(self, request: dict[str, Any]) -> dict[str, Any]:
        """The nodes each provider takes, as onnxruntime records them; with `forbid`, whether the session opens
        with the declared providers alone and the CPU fallback disabled."""
        ort = self.ort
        if not hasattr(ort.InferenceSession, "get_provider_graph_assignment_info"):
            return {"ok": False, "error": f"onnxruntime {ort.__version__} cannot record the placement of nodes"}
        so = _options(ort, request)
        so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        try:
            session = ort.InferenceSession(request["path"], sess_options=so, providers=list(request["providers"]))
            assigned = session.get_provider_graph_assignment_info()
        except Exception as exc:  # onnxruntime's errors share no base class beyond Exception
            return {"ok": False, "error": _first_line(exc)}
        answer: dict[str, Any] = {
            "ok": True,
            "subgraphs": [[g.ep_name, [[n.op_type, n.name] for n in g.get_nodes()]] for g in assigned],
        }
        del session
        if request.get("forbid"):
            alone = [p for p in request["providers"] if p != "CPUExecutionProvider"]
            so = _options(ort, request)
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
            so.log_severity_level = _QUIET + 1  # the refusal is answered, not logged
            try:
                ort.InferenceSession(request["path"], sess_options=so, providers=alone)
                answer["forbid"] = {"opened": True}
            except Exception as exc:  # onnxruntime's errors share no base class beyond Exception
                answer["forbid"] = {"opened": False, "error": _first_line(exc)}
        return answer

    def close(self, request: dict[str, Any]) -> dict[str, Any]:
        self.sessions.pop(int(request["session"]), None)
        return {"ok": True}


def _cpu_features(np: Any) -> list[str]:
    """The CPU features NumPy's dispatch found (CPUID, or the auxiliary vector): an emulated CPU's under qemu."""
    core = getattr(np, "_core", None) or np.core  # NumPy 1 names it core
    found = getattr(core._multiarray_umath, "__cpu_features__", {})
    names = {name for name, present in found.items() if present}
    if platform.machine() == "aarch64":
        import ctypes

        hwcap2 = ctypes.CDLL(None).getauxval(26)  # AT_HWCAP2; NumPy names no I8MM
        if hwcap2 & (1 << 13):
            names.add("I8MM")
    return sorted(names)


def _answer(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> int:
    try:
        import numpy as np
        import onnxruntime as ort
    except Exception as exc:  # an environment that cannot import its runtime says why, and stops
        _answer({"ready": False, "error": f"{type(exc).__name__}: {_first_line(exc)}"})
        return 1
    ort.set_default_logger_severity(_QUIET)
    _answer(
        {
            "ready": True,
            "version": ort.__version__,
            "numpy": np.__version__,
            "providers": list(ort.get_available_providers()),
            "machine": platform.machine(),
            "cpu_features": _cpu_features(np),
        }
    )
    worker = Worker(ort, np)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            op = request.get("op")
            if op == "quit":
                return 0
            handler = {"open": worker.open, "run": worker.run, "close": worker.close, "place": worker.place}.get(op)
            _answer(handler(request) if handler else {"ok": False, "error": f"unknown request {op!r}"})
        except Exception as exc:  # a broken request is answered, never a dead worker
            sys.stderr.write(traceback.format_exc())
            _answer({"ok": False, "error": f"{type(exc).__name__}: {_first_line(exc)}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
