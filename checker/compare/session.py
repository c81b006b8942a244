"""onnxruntime sessions as the manifest's runtime section declares them, and running cases through them."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.manifest import views

if TYPE_CHECKING:
    import numpy as np
    import onnx
    import onnxruntime as ort

    from checker.manifest.model.runtime import Runtime as Declared

CPU = "CPUExecutionProvider"
_LEVELS = {"disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED"}
_MODES = {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}
_QUIET = 3
# onnxruntime's tensor type names -> NumPy dtype names, to name a mismatch before onnxruntime does (tersely).
_ORT_TYPES = {
    "float": "float32",
    "double": "float64",
    "float16": "float16",
    "bool": "bool",
    **{f"{s}int{b}": f"{s}int{b}" for s in ("", "u") for b in (8, 16, 32, 64)},
}  # onnxruntime's own log: errors only, so its warnings do not end up in CI logs


LEAN_BYTES = 256 << 20
# One run of one case. A graph is untrusted and a Loop can run for ever; no real model needs this long per case.
CASE_TIMEOUT_S = 600.0
# Bytes per element of the ONNX tensor types (4-bit types round up: an estimate is all this needs).
_ITEMSIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2, 21: 1, 22: 1}


def weight_bytes(model: onnx.ModelProto | None) -> int:
    """The size of a graph's initializers from their headers (external data is not read)."""
    if model is None:
        return 0
    total = 0
    for tensor in model.graph.initializer:
        count = 1
        for d in tensor.dims:
            count *= d
        total += count * _ITEMSIZE.get(tensor.data_type, 4)
    return total


class SessionError(RuntimeError):
    """onnxruntime refused to load a graph; the message is its reason."""


@dataclass
class Runtime:
    """What the manifest's `runtime` section asks for, resolved against this machine."""

    providers: list[str]
    options: dict[str, Any]
    unavailable: list[str] = field(default_factory=list)  # declared, but not in this onnxruntime build


def choose_providers(declared: Sequence[str], available: Sequence[str]) -> tuple[list[str], list[str]]:
    """The declared providers that exist here, in order, with the CPU last as the fallback; and the others."""
    chosen = [p for p in dict.fromkeys(declared) if p in available]
    if CPU not in chosen:
        chosen.append(CPU)
    return chosen, [p for p in declared if p not in available]


def resolve_runtime(
    runtime: Declared | None, override: Sequence[str] | None = None, threads: int | None = None
) -> Runtime:
    """Providers (a command-line override wins over the manifest) and session options; `threads` is the
    intra-op thread count when the manifest sets none (bundles verified side by side share the cores)."""
    import onnxruntime as ort

    declared = list(override) if override else views.providers(runtime)
    chosen, unavailable = choose_providers(declared, ort.get_available_providers())
    options = views.session_options(runtime)
    if threads is not None:
        options.setdefault("intra_op_num_threads", threads)
    return Runtime(chosen, options, unavailable)


def session_options(options: Mapping[str, Any]) -> ort.SessionOptions:
    """onnxruntime.SessionOptions from the manifest's `runtime.session_options` (validated by the schema)."""
    import onnxruntime as ort

    # A session's own severity does not cover what onnxruntime logs while it loads the graph (a
    # CleanUnusedInitializersAndNodeArgs warning): that goes to the default logger, quietened here too.
    ort.set_default_logger_severity(_QUIET)
    so = ort.SessionOptions()
    so.log_severity_level = _QUIET
    level = options.get("graph_optimization_level", "all")
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _LEVELS.get(level, "ORT_ENABLE_ALL"))
    if "execution_mode" in options:
        so.execution_mode = getattr(ort.ExecutionMode, _MODES[options["execution_mode"]])
    for key in THREAD_OPTIONS:
        if key in options:
            setattr(so, key, min(int(options[key]), machine_threads()))
    return so


THREAD_OPTIONS = ("intra_op_num_threads", "inter_op_num_threads")


def machine_threads() -> int:
    """The CPUs this process may run on: a manifest may ask for fewer threads, never for more. Hundreds of
    spinning threads on two cores make a small graph run for many minutes."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity else (os.cpu_count() or 1))


def clamped_threads(options: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """The thread options above what this machine has: option -> (asked, used)."""
    limit = machine_threads()
    out = {}
    for key in THREAD_OPTIONS:
        asked = options.get(key)
        if isinstance(asked, int) and not isinstance(asked, bool) and asked > limit:
            out[key] = (asked, limit)
    return out


def open_session(
    model: Path | bytes, runtime: Runtime, external_folder: Path | None = None, weight_bytes: int = 0
) -> ort.InferenceSession:
    """A session on a graph file (onnxruntime reads external data from beside it) or on serialized bytes.

    With `weight_bytes` at or above LEAN_BYTES the weights are not prepacked: prepacking keeps a second,
    repacked copy of every MatMul/Conv weight, which would double the memory a large graph needs to verify.
    """
    import onnxruntime as ort

    so = session_options(runtime.options)
    if weight_bytes >= LEAN_BYTES:
        so.add_session_config_entry("session.disable_prepacking", "1")
    if external_folder is not None:
        # A graph given as bytes has no folder of its own: its external data lies beside the original file.
        so.add_session_config_entry("session.model_external_initializers_file_folder_path", str(external_folder))
    source = str(model) if isinstance(model, Path) else model
    try:
        return ort.InferenceSession(source, sess_options=so, providers=runtime.providers)
    except Exception as exc:  # onnxruntime's errors share no base class beyond Exception
        raise SessionError(_bounded_text(exc)) from exc


def _bounded_text(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 2000 else text[:2000] + "..."


def missing_providers(session: ort.InferenceSession, runtime: Runtime) -> list[str]:
    """Providers that were available but that the session did not take (a failed initialisation)."""
    taken = set(session.get_providers())
    return [p for p in runtime.providers if p not in taken]


class CaseRunError(RuntimeError):
    """One case could not be run; the message names why."""


class _Watchdog:
    """One thread keeps every run's time bound: a thread started per case costs a small bundle a share of its
    run. A run arms it with its RunOptions and deadline and disarms it when done; a run past its deadline gets
    onnxruntime's terminate flag."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: dict[int, tuple[float, Any]] = {}  # token -> (deadline, RunOptions)
        self._tokens = 0
        self._thread: threading.Thread | None = None
        self._wakes_at: float | None = None  # when the watching thread wakes next; None: only when notified

    def arm(self, options: Any, timeout: float) -> int:
        with self._cond:
            self._tokens += 1
            deadline = time.monotonic() + timeout
            self._armed[self._tokens] = (deadline, options)
            if self._thread is None or not self._thread.is_alive():  # none yet, or this is a forked child
                self._thread = threading.Thread(target=self._watch, name="case-timeout", daemon=True)
                self._thread.start()
            elif self._wakes_at is None or deadline < self._wakes_at:
                # Waking the thread for every case would cost each run a hand-over of the interpreter; it is
                # woken only when this deadline comes before the one it already waits for.
                self._cond.notify()
            return self._tokens

    def disarm(self, token: int) -> None:
        with self._cond:
            self._armed.pop(token, None)

    def _watch(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for token, (deadline, options) in list(self._armed.items()):
                    if deadline <= now:
                        options.terminate = True
                        del self._armed[token]
                soonest = min((deadline for deadline, _ in self._armed.values()), default=None)
                self._wakes_at = soonest
                self._cond.wait(None if soonest is None else soonest - now)


_WATCHDOG = _Watchdog()
if hasattr(os, "register_at_fork"):  # a forked worker starts with a fresh lock and no thread
    os.register_at_fork(after_in_child=lambda: globals().__setitem__("_WATCHDOG", _Watchdog()))


def timed_run(
    session: ort.InferenceSession, wanted: list[str] | None, feed: Mapping[str, Any], timeout: float = CASE_TIMEOUT_S
) -> list[Any]:
    """session.run, stopped after `timeout` seconds through onnxruntime's terminate flag; CaseRunError says why."""
    import onnxruntime as ort

    options = ort.RunOptions()
    options.log_severity_level = _QUIET + 1  # a stopped run is reported here, not in onnxruntime's log
    token = _WATCHDOG.arm(options, timeout)
    try:
        values: list[Any] = session.run(wanted, dict(feed), options)
    except Exception as exc:  # onnxruntime's errors share no base class beyond Exception
        if options.terminate:
            raise CaseRunError(f"the graph ran for more than {timeout:g} s on this case and was stopped") from exc
        raise CaseRunError(_bounded_text(exc)) from exc
    finally:
        _WATCHDOG.disarm(token)
    return values


def run_case(
    session: ort.InferenceSession, inputs: Mapping[str, np.ndarray], timeout: float = CASE_TIMEOUT_S
) -> dict[str, np.ndarray]:
    """Every output of the graph for one case, its inputs fed by name."""
    names = [i.name for i in session.get_inputs()]
    missing = [n for n in names if n not in inputs]
    if missing:
        raise CaseRunError(f"the case has no input {', '.join(repr(n) for n in missing)}")
    for arg in session.get_inputs():
        problem = _feed_problem(arg.name, arg.type, arg.shape, inputs[arg.name])
        if problem:
            raise CaseRunError(problem)
    values = timed_run(session, None, {n: inputs[n] for n in names}, timeout)
    return {o.name: v for o, v in zip(session.get_outputs(), values, strict=True)}


def _feed_problem(name: str, ort_type: str, shape: Sequence[Any], array: np.ndarray) -> str | None:
    want = _ORT_TYPES.get(ort_type.removeprefix("tensor(").removesuffix(")"))
    if want is not None and str(array.dtype) != want:
        return f"input '{name}' is {array.dtype}, but the graph takes {want}"
    if shape and len(shape) != array.ndim:  # [] means a scalar or an unknown rank: onnxruntime judges
        return f"input '{name}' has shape {list(array.shape)}, but the graph takes rank {len(shape)}"
    return None
