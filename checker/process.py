"""Running a command with a deadline: its own process group, output kept to a bounded tail, no shell."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

TAIL_BYTES = 16 << 10  # per stream: enough for the last screen of a failure, small enough for a report
CHUNK = 1 << 14
READER_GRACE_S = 5.0  # after the process group is gone, how long a reader may take to drain its pipe


@dataclass(frozen=True)
class RunResult:
    exit_code: int | None  # None when the command was killed at its deadline
    timed_out: bool
    duration_s: float
    stdout_tail: str
    stderr_tail: str


class _Tail:
    """Reads a pipe to its end, keeping only the last TAIL_BYTES (a command may print without limit)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.kept = bytearray()
        self.dropped = 0
        self.thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self.thread.start()

    def _drain(self, stream: IO[bytes]) -> None:
        with stream:
            while chunk := os.read(stream.fileno(), CHUNK):
                self.kept += chunk
                excess = len(self.kept) - TAIL_BYTES
                if excess > 0:
                    del self.kept[:excess]
                    self.dropped += excess

    def text(self) -> str:
        self.thread.join(READER_GRACE_S)
        body = bytes(self.kept).decode("utf-8", errors="replace")
        return f"[... {self.dropped} earlier bytes omitted]\n{body}" if self.dropped else body


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the command and everything it started; they share the process group it leads."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - the device targets are POSIX
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass


def run_bounded(args: Sequence[str], cwd: Path, timeout_s: float, env: Mapping[str, str]) -> RunResult:
    """Run `args` in `cwd`; raises OSError when it cannot be started."""
    start = time.monotonic()
    process = subprocess.Popen(
        list(args),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stderr is not None
    out, err = _Tail(process.stdout), _Tail(process.stderr)
    timed_out = False
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        _kill_group(process)  # also the background children of a command that has returned
        process.wait()
    duration = round(time.monotonic() - start, 3)
    code = None if timed_out else process.returncode
    return RunResult(code, timed_out, duration, out.text(), err.text())
