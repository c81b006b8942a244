"""The runner's files: step outputs (GITHUB_OUTPUT) and the job summary (GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path


def write_outputs(path: Path, values: Mapping[str, str]) -> None:
    """Append `name<<DELIMITER` blocks: safe for any value, a newline or a forged `name=` line included."""
    with path.open("a", encoding="utf-8", newline="\n") as out:
        for name, value in values.items():
            delimiter = _delimiter(value)
            out.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def _delimiter(value: str) -> str:
    while True:
        candidate = f"ghadelimiter_{secrets.token_hex(16)}"
        if candidate not in value:
            return candidate


def append_summary(path: Path, markdown: str) -> None:
    with path.open("a", encoding="utf-8", newline="\n") as out:
        out.write(markdown if markdown.endswith("\n") else markdown + "\n")
