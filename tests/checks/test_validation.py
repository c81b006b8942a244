"""`checker verify --run-validation`: the command runs in the bundle folder, bounded in time and output."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from bundlekit import linear_model, manifest, write_bundle
from releasekit import Cli, ids, verify_json

from checker.checks.validation import NESTED_ENV
from checker.process import TAIL_BYTES

PY = sys.executable


def _bundle(tmp_path: Path, command: Any, timeout_s: float | None = None) -> Path:
    validation: dict[str, Any] = {"command": command}
    if timeout_s is not None:
        validation["timeout_s"] = timeout_s
    return write_bundle(tmp_path / "bundle", linear_model(), manifest(validation=validation))


def _finding(bundle: dict[str, Any], fid: str) -> dict[str, Any]:
    return next(f for f in bundle["findings"] if f["id"] == fid)


def _alive(pid: int) -> bool:
    """Whether a process runs (a zombie waiting for its reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def test_a_passing_command_runs_in_the_bundle_folder(tmp_path: Path, cli: Cli) -> None:
    script = "import os; print('validated on', os.getcwd())"
    folder = _bundle(tmp_path, [PY, "-c", script])
    code, bundle = verify_json(cli, folder, "--run-validation")
    assert code == 0, bundle["findings"]
    run = bundle["validation"]
    assert run["command"] == [PY, "-c", script]
    assert run["exit_code"] == 0 and run["timed_out"] is False and run["duration_s"] >= 0
    assert run["stdout_tail"].strip() == f"validated on {folder.resolve()}"
    assert "validation.failed" not in ids(bundle) and "validation.not_run" not in ids(bundle)


def test_a_failing_command_fails_the_bundle_with_its_last_words(tmp_path: Path, cli: Cli) -> None:
    script = "import sys; print('checking'); sys.stderr.write('warming up\\nlatency 41 ms > 20 ms\\n'); sys.exit(3)"
    folder = _bundle(tmp_path, f"{shlex.quote(PY)} -c {shlex.quote(script)}")
    code, bundle = verify_json(cli, folder, "--run-validation")
    assert code == 1
    finding = _finding(bundle, "validation.failed")
    assert finding["severity"] == "error" and finding["line"] is not None
    assert "exited with status 3: latency 41 ms > 20 ms" in finding["message"]
    assert bundle["validation"]["exit_code"] == 3
    assert bundle["validation"]["stderr_tail"] == "warming up\nlatency 41 ms > 20 ms\n"


def test_a_command_past_its_timeout_is_killed_with_everything_it_started(tmp_path: Path, cli: Cli) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(120)"
    )
    folder = _bundle(tmp_path, [PY, "-c", script], timeout_s=2)
    code, bundle = verify_json(cli, folder, "--run-validation")
    assert code == 1
    assert "did not finish within 2 s" in _finding(bundle, "validation.failed")["message"]
    assert bundle["validation"]["timed_out"] is True and bundle["validation"]["exit_code"] is None
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 10  # SIGKILL is delivered asynchronously; give the kernel a moment
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_without_the_flag_the_command_is_only_shown(tmp_path: Path, cli: Cli) -> None:
    marker = tmp_path / "ran"
    folder = _bundle(tmp_path, [PY, "-c", f"open({str(marker)!r}, 'w')"])
    code, bundle = verify_json(cli, folder)
    assert code == 0
    finding = _finding(bundle, "validation.not_run")
    assert finding["severity"] == "info" and "--run-validation" in finding["message"]
    assert not marker.exists() and "validation" not in bundle


def test_a_nested_run_validation_is_refused(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "ran"
    folder = _bundle(tmp_path, [PY, "-c", f"open({str(marker)!r}, 'w')"])
    monkeypatch.setenv(NESTED_ENV, "1")
    code, bundle = verify_json(cli, folder, "--run-validation")
    assert code == 1 and "would recurse" in _finding(bundle, "validation.failed")["message"]
    assert not marker.exists()


def test_a_command_that_calls_the_checker_with_run_validation_ends(tmp_path: Path, cli: Cli) -> None:
    folder = _bundle(tmp_path, [PY, "-m", "checker", "verify", "--run-validation", "--no-progress", "bundle.yaml"])
    code, bundle = verify_json(cli, folder, "--run-validation")
    assert code == 1
    assert "exited with status 1" in _finding(bundle, "validation.failed")["message"]
    assert "would recurse" in bundle["validation"]["stdout_tail"]


def test_output_is_kept_to_a_bounded_tail(tmp_path: Path, cli: Cli) -> None:
    script = "import sys; sys.stdout.write('x' * 1_000_000 + 'THE END')"
    folder = _bundle(tmp_path, [PY, "-c", script])
    code, bundle = verify_json(cli, folder, "--run-validation")
    assert code == 0
    tail = bundle["validation"]["stdout_tail"]
    assert tail.startswith("[... ") and tail.endswith("THE END")
    assert len(tail) <= TAIL_BYTES + 64


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["no-such-program-on-this-device"], "cannot be started"),
        ("echo 'unterminated", "cannot be split"),
        ([""], "names no program"),
    ],
)
def test_a_command_that_cannot_run_is_a_failure(tmp_path: Path, cli: Cli, command: Any, message: str) -> None:
    folder = _bundle(tmp_path, command)
    code, bundle = verify_json(cli, folder, "--run-validation")
    assert code == 1 and message in _finding(bundle, "validation.failed")["message"]


def test_a_command_that_cannot_start_says_so_without_an_exit_status(tmp_path: Path, cli: Cli) -> None:
    folder = _bundle(tmp_path, ["no-such-program-on-this-device"])
    code, out, _ = cli("verify", folder, "--run-validation", "--format", "text")
    assert code == 1
    assert "could not start" in out and "exit None" not in out
    _, bundle = verify_json(cli, folder, "--run-validation")
    assert bundle["validation"]["started"] is False and bundle["validation"]["start_error"]


def test_the_manifests_checker_command_runs_with_the_running_checker(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no `checker`, not even a python, on PATH
    folder = _bundle(tmp_path, "checker --version")
    code, bundle = verify_json(cli, folder, "--run-validation")
    assert code == 0, bundle["findings"]
    assert bundle["validation"]["exit_code"] == 0 and bundle["validation"]["stdout_tail"].startswith("checker ")
