"""How the command ends: the status main() returns, every byte written, the exit handlers run, and a thread
still at work waited for, although the interpreter is not torn down (cli.exit_now)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checker.cli import EXIT_PASS, EXIT_USAGE

BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # output waits in its buffer


def python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False, timeout=60, env=BUFFERED
    )


def run_checker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "checker", *args], capture_output=True, text=True, check=False, timeout=120, env=BUFFERED
    )


def test_a_verify_run_keeps_its_status_its_output_and_its_report(example: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.txt"
    # Untimed: two runs would time the variant differently, and this compares their output.
    to_file = run_checker("verify", str(example), "-o", str(out), "--gain-budget", "0")
    to_pipe = run_checker("verify", str(example), "--gain-budget", "0")
    assert to_file.returncode == to_pipe.returncode == EXIT_PASS, to_pipe.stderr
    assert to_pipe.stdout == out.read_text()  # every line reached the pipe, and the file was closed whole
    assert to_pipe.stdout.startswith("PASS: 1 of 1 bundle passes")


def test_a_usage_error_keeps_its_status() -> None:
    done = run_checker("verify", "no/such/bundle")
    assert done.returncode == EXIT_USAGE
    assert "no/such/bundle" in done.stderr


def test_exit_handlers_run(tmp_path: Path) -> None:
    mark = tmp_path / "handler"
    code = (
        "import atexit, sys\nfrom checker.cli import exit_now\n"
        "atexit.register(lambda: open(sys.argv[1], 'w').write('ran'))\nprint('before', end='')\nexit_now(5)"
    )
    done = python(code, str(mark))
    assert (done.returncode, done.stdout) == (5, "before")
    assert mark.read_text() == "ran"


# An object whose finaliser marks a file: run when the interpreter is torn down, never by exit_now.
TORN_DOWN = (
    "class Kept:\n    def __del__(self, open=open, where=sys.argv[1]):\n"  # open: gone from a torn-down interpreter
    "        open(where + '.torn', 'w').write('torn down')\n"
    "kept = Kept()\n"
)


def test_a_working_thread_is_waited_for_and_nothing_torn_down(tmp_path: Path) -> None:
    mark = tmp_path / "thread"
    code = (
        "import sys, threading, time\nfrom checker.cli import exit_now\n" + TORN_DOWN + "def work():\n"
        "    time.sleep(0.3)\n    open(sys.argv[1], 'w').write('finished')\n"
        "threading.Thread(target=work).start()\nexit_now(4)"
    )
    done = python(code, str(mark))
    assert done.returncode == 4, done.stderr
    assert mark.read_text() == "finished"
    assert not (tmp_path / "thread.torn").exists()  # the thread was waited for, and the exit still quick


def test_a_worker_pool_told_to_stop_is_waited_for_and_nothing_torn_down(tmp_path: Path) -> None:
    """As the verdict store leaves its pool: told to stop, not waited for, so its workers exit while the report
    is written; the exit waits for them, then ends as quickly as without a pool."""
    mark = tmp_path / "pool"
    code = (
        "import sys\nfrom concurrent.futures import ProcessPoolExecutor\nfrom checker.cli import exit_now\n"
        + TORN_DOWN
        + "pool = ProcessPoolExecutor(1)\nprint(pool.submit(pow, 2, 5).result(), end='')\n"
        "pool.shutdown(wait=False)\nexit_now(3)"
    )
    done = python(code, str(mark))
    assert (done.returncode, done.stdout) == (3, "32"), done.stderr
    assert not (tmp_path / "pool.torn").exists()


def test_an_error_in_a_thread_exit_hook_is_said_and_the_status_kept() -> None:
    """As Python's own exit: an exit hook that fails (or a Ctrl-C while a thread is waited for) is printed, and
    the verdict's status is the process's status still."""
    code = (
        "import threading\nfrom checker.cli import exit_now\n"
        "threading._register_atexit(lambda: 1 / 0)\nprint('PASS', end='')\nexit_now(0)"
    )
    done = python(code)
    assert (done.returncode, done.stdout) == (0, "PASS")
    assert done.stderr.count("ZeroDivisionError") == 1  # said once, and no teardown ran the hook again


@pytest.mark.skipif(sys.platform == "win32", reason="closes descriptor 1 under the interpreter")
def test_output_that_cannot_be_flushed_fails_the_exit() -> None:
    code = "import os, sys\nfrom checker.cli import exit_now\nsys.stdout.write('lost')\nos.close(1)\nexit_now(0)"
    assert python(code).returncode == 120


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell closes the descriptor")
def test_a_run_with_its_output_closed_still_writes_its_report(example: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    script = 'exec "$0" -m checker verify "$1" -o "$2" >&- 2>&-'
    done = subprocess.run(["sh", "-c", script, sys.executable, str(example), str(out)], check=False, timeout=120)
    assert done.returncode == EXIT_PASS
    assert json.loads(out.read_text())["status"] == "pass"
