"""The README's first screen is what CI runs: its two commands, word for word, in a fresh virtual environment."""

from __future__ import annotations

import re

from bundlekit import REPO


def _first_block_commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", readme, re.S)
    assert block is not None, "the README's first screen has no bash block"
    lines = [line.strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_first_screen_gives_a_venv_and_two_commands() -> None:
    venv, *commands = _first_block_commands()
    assert venv.startswith("python3 -m venv .venv && . .venv/bin/activate")
    assert len(commands) == 2
    assert "checker verify examples/" in commands[0] and "pytest" in commands[1]


def test_ci_runs_those_commands_word_for_word_inside_a_fresh_venv() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    _, *commands = _first_block_commands()
    venv_at = ci.index("python3 -m venv .venv && . .venv/bin/activate")
    for command in commands:
        assert command in ci, f".ci/run does not run the README's command: {command}"
        assert ci.index(command) > venv_at, "the command runs before the virtual environment is active"


def test_a_failure_anywhere_in_a_readme_command_stops_ci() -> None:
    """Under `set -e` a failing command before a list's last `&&` does not stop the script: each of the
    README's commands is followed by a line that exits with its status."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    _, *commands = _first_block_commands()
    for command in commands:
        after = ci[ci.index(command) + 1]
        assert after.startswith('status=$?; [ "$status" -eq 0 ] || exit "$status"'), after
