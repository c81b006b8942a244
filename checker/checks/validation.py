"""validation.command: shown, never run, unless --run-validation asks; then run in the bundle folder.

A manifest may come from a pull request, so its command is untrusted: running it is the caller's explicit choice.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.context import Context
from checker.findings import Finding
from checker.reports.parts.runs import Validation

DEFAULT_TIMEOUT_S = 600.0
# Set for the command's process: a checker that finds it set is running inside a validation command.
NESTED_ENV = "ONNX_RELEASE_CHECKER_VALIDATING"
MESSAGE_LINE_CHARS = 240
CHECKER = "checker"  # the console script; a manifest's `checker verify` means the checker running it


def command_args(command: str | list[str]) -> list[str]:
    """The command's arguments, split without a shell; ValueError when a string cannot be split."""
    args = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if not args or not args[0]:
        raise ValueError("it names no program")
    return args


def with_running_checker(args: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command run by the checker that is running: `checker ...` becomes `python -m checker ...` with this
    interpreter, and this interpreter's bin folder comes first on PATH for anything else it starts. A device
    that installed the checker into a venv it never activated then runs the manifest's `checker verify` too."""
    bin_dir = str(Path(sys.executable).parent)
    path = env.get("PATH", "")
    env = {**env, "PATH": bin_dir + (os.pathsep + path if path else "")}
    if args[0] == CHECKER:
        return [sys.executable, "-m", "checker", *args[1:]], env
    return args, env


def validation_stage(ctx: Context) -> Iterator[Finding]:
    validation = ctx.data.get("validation") or {}
    if not validation.get("command"):
        return  # the completeness stage reports the missing piece
    where = ctx.where("validation", "command")
    try:
        args = command_args(validation["command"])
    except ValueError as exc:
        yield F.error(F.VALIDATION_FAILED, f"validation.command cannot be split into arguments: {exc}", **where)
        return
    shown = shlex.join(args)
    if not ctx.options.run_validation:
        yield F.info(
            F.VALIDATION_NOT_RUN,
            f"validation.command was not run: {shown} (it runs only with "
            "--run-validation, on a machine that trusts this manifest)",
            **where,
            command=args,
        )
        return
    if os.environ.get(NESTED_ENV):
        yield F.error(
            F.VALIDATION_FAILED,
            "--run-validation refused: this checker runs inside a validation "
            "command, and running the command again would recurse; the command should not pass "
            "--run-validation",
            **where,
        )
        return
    yield from _run(ctx, args, float(validation.get("timeout_s") or DEFAULT_TIMEOUT_S), where)


def _run(ctx: Context, args: list[str], timeout: float, where: dict[str, Any]) -> Iterator[Finding]:
    from checker.process import run_bounded

    shown = shlex.join(args)
    run_args, env = with_running_checker(args, {**os.environ, NESTED_ENV: "1"})
    try:
        result = run_bounded(run_args, ctx.root, timeout, env)
    except OSError as exc:
        why = exc.strerror or str(exc)
        ctx.validation = Validation(args, timeout, started=False, start_error=why)
        yield F.error(F.VALIDATION_FAILED, f"validation.command {shown} cannot be started: {why}", **where)
        return
    ctx.validation = Validation(
        args,
        timeout,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration_s=result.duration_s,
        stdout_tail=result.stdout_tail,
        stderr_tail=result.stderr_tail,
    )
    if result.timed_out:
        yield F.error(
            F.VALIDATION_FAILED,
            f"validation.command {shown} did not finish within {timeout:g} s; it "
            "and every process it started were killed",
            **where,
            timed_out=True,
        )
    elif result.exit_code != 0:
        last = _last_line(result.stderr_tail) or _last_line(result.stdout_tail)
        said = f": {last}" if last else ""
        yield F.error(
            F.VALIDATION_FAILED,
            f"validation.command {shown} {_ending(result.exit_code)}{said}",
            **where,
            exit_code=result.exit_code,
        )


def _ending(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    last = lines[-1]
    return last if len(last) <= MESSAGE_LINE_CHARS else last[: MESSAGE_LINE_CHARS - 3] + "..."
