"""Talking to the worker in a runtime environment: sessions that look, to the comparison, like onnxruntime's own.

The comparison stage opens a session and runs cases through it (compare.session.run_case); a RemoteSession
offers the few methods that needs, and forwards them to the worker process over JSON lines, the tensors in
.npz files of a private temporary folder.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from checker.compare.session import LEAN_BYTES, Runtime, SessionError

WORKER = Path(__file__).with_name("worker.py")
START_TIMEOUT_S = 120.0  # importing onnxruntime the first time after an install can be slow
MARGIN_S = 60.0  # a run's answer may take this long beyond the case's own time bound
_TAIL = 4000


class WorkerError(RuntimeError):
    """The worker could not start, or died, or stopped answering; the message says why."""


@dataclass(frozen=True)
class Arg:
    """What onnxruntime's NodeArg gives: name, type and shape."""

    name: str
    type: str
    shape: list[Any]


class Worker:
    """One worker process in one environment; close() ends it. `command` starts another program that speaks the
    same requests (onnxruntime-node's worker, platforms/js/node.mjs) in place of `python -I worker.py`."""

    def __init__(
        self,
        python: Path,
        label: str,
        case_timeout_s: float,
        launcher: Sequence[str] = (),
        command: Sequence[str] | None = None,
    ) -> None:
        self.label = label
        self.case_timeout_s = case_timeout_s
        self._folder = tempfile.TemporaryDirectory(prefix="checker-runtime-")
        self._count = 0
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR", "LANG", "SYSTEMROOT")}
        env["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS", "1")
        try:
            self._process = subprocess.Popen(
                # launcher: e.g. qemu-x86_64 -cpu MODEL
                list(command) if command is not None else [*launcher, str(python), "-I", str(WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                text=True,
                start_new_session=True,
            )
        except OSError as exc:
            self._folder.cleanup()
            raise WorkerError(f"{label}: the worker could not start: {exc}") from exc
        assert self._process.stdout is not None and self._process.stderr is not None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: list[str] = []
        threading.Thread(target=self._read, args=(self._process.stdout,), daemon=True).start()
        threading.Thread(target=self._drain, args=(self._process.stderr,), daemon=True).start()
        hello = self._receive(START_TIMEOUT_S)
        if not hello.get("ready"):
            self.close()
            raise WorkerError(f"{label}: onnxruntime cannot be imported there: {hello.get('error')}")
        self.version = str(hello.get("version"))
        self.numpy = str(hello.get("numpy"))
        self.providers = [str(p) for p in hello.get("providers") or []]
        self.machine = str(hello.get("machine") or "")
        self.cpu_features = [str(f) for f in hello.get("cpu_features") or []]
        fingerprint = hello.get("fingerprint")  # what a JavaScript worker runs in (platforms/js)
        self.fingerprint = dict(fingerprint) if isinstance(fingerprint, dict) else None

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def _drain(self, stream: IO[str]) -> None:
        for line in stream:
            self._stderr.append(line)
            del self._stderr[:-50]

    def _receive(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise WorkerError(f"{self.label}: the worker gave no answer within {timeout:g} s") from None
        if line is None:
            self._process.wait(timeout=10)
            tail = "".join(self._stderr)[-_TAIL:].strip()
            code = self._process.returncode
            raise WorkerError(f"{self.label}: the worker stopped (exit status {code}){': ' + tail if tail else ''}")
        answer = json.loads(line)
        if not isinstance(answer, dict):
            raise WorkerError(f"{self.label}: the worker answered {line[:200]!r}")
        return answer

    def ask(self, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        stdin = self._process.stdin
        if stdin is None or self._process.poll() is not None:
            raise WorkerError(f"{self.label}: the worker is not running")
        try:
            stdin.write(json.dumps(dict(request)) + "\n")
            stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerError(f"{self.label}: the worker stopped: {exc}") from exc
        return self._receive(timeout)

    def scratch(self, stem: str) -> Path:
        self._count += 1
        return Path(self._folder.name) / f"{stem}-{self._count}.npz"

    def close(self) -> None:
        process = self._process
        if process.poll() is None:
            try:
                assert process.stdin is not None
                process.stdin.write('{"op": "quit"}\n')
                process.stdin.flush()
                process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired, AssertionError):
                process.kill()
                process.wait(timeout=5)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        self._folder.cleanup()


class RemoteSession:
    """A session in the worker, with the methods of onnxruntime.InferenceSession that the comparison uses."""

    def __init__(self, worker: Channel, answer: Mapping[str, Any]) -> None:
        self._worker = worker
        self._id = int(answer["session"])
        self._inputs = [Arg(str(n), str(t), list(s)) for n, t, s in answer["inputs"]]
        self._outputs = [Arg(str(n), str(t), list(s)) for n, t, s in answer["outputs"]]
        self._providers = [str(p) for p in answer["providers"]]

    def get_inputs(self) -> list[Arg]:
        return list(self._inputs)

    def get_outputs(self) -> list[Arg]:
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        return list(self._providers)

    def run(self, wanted: Sequence[str] | None, feed: Mapping[str, Any], options: Any = None) -> list[Any]:
        import numpy as np

        names = list(feed)
        feed_path, out_path = self._worker.scratch("feed"), self._worker.scratch("out")
        # arr_0, arr_1, ... in `names` order; C order, which every worker reads
        np.savez(feed_path, *[np.ascontiguousarray(feed[n]) for n in names])
        try:
            answer = self._worker.ask(
                {
                    "op": "run",
                    "session": self._id,
                    "feed": str(feed_path),
                    "names": names,
                    "out": str(out_path),
                    "timeout": self._worker.case_timeout_s,
                },
                self._worker.case_timeout_s + MARGIN_S,
            )
            if not answer.get("ok"):
                raise RuntimeError(str(answer.get("error")))
            with np.load(out_path, allow_pickle=False) as data:
                values = [data[f"o{i}"] for i in range(len(self._outputs))]
        finally:
            feed_path.unlink(missing_ok=True)
            out_path.unlink(missing_ok=True)
        if wanted is None:
            return values
        index = {o.name: i for i, o in enumerate(self._outputs)}
        return [values[index[n]] for n in wanted]


class Channel(Protocol):
    """What a RemoteSession needs of its worker: a process's (Worker) or a browser page's (platforms/browser)."""

    label: str
    case_timeout_s: float

    def ask(self, request: Mapping[str, Any], timeout: float) -> dict[str, Any]: ...

    def scratch(self, stem: str) -> Path: ...


def remote_opener(worker: Channel) -> Any:
    """open_session's counterpart for the comparison stage: a RemoteSession, or SessionError with the reason."""

    def open_remote(path: Path, runtime: Runtime, weight_bytes: int) -> RemoteSession:
        request = {
            "op": "open",
            "path": str(path),
            "providers": runtime.providers,
            "options": runtime.options,
            "lean": weight_bytes >= LEAN_BYTES,
        }
        try:
            answer = worker.ask(request, START_TIMEOUT_S + MARGIN_S)
        except WorkerError as exc:
            raise SessionError(str(exc)) from exc
        if not answer.get("ok"):
            raise SessionError(str(answer.get("error")))
        return RemoteSession(worker, answer)

    return open_remote
