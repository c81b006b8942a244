"""The validation command's run (checks.validation, with --run-validation) and the shard a report judged
(--shard K/N)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checker.reports.parts.values import integer, number_or, strings, text


@dataclass
class Validation:
    """What the validation command did: how it ended and the tails of its output."""

    command: list[str]
    timeout_s: float
    exit_code: int | None = None
    timed_out: bool = False
    started: bool = True  # False: the program could not be started (start_error says why)
    start_error: str | None = None
    duration_s: float = 0.0
    stdout_tail: str = ""
    stderr_tail: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "command": self.command,
            "timeout_s": self.timeout_s,
            "started": self.started,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
        }
        if self.start_error is not None:
            out["start_error"] = self.start_error
        out.update(duration_s=self.duration_s, stdout_tail=self.stdout_tail, stderr_tail=self.stderr_tail)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Validation:
        return cls(
            command=strings(data.get("command")),
            timeout_s=number_or(data.get("timeout_s"), 0.0),
            exit_code=integer(data.get("exit_code")),
            timed_out=data.get("timed_out") is True,
            started=data.get("started") is not False,
            start_error=text(data.get("start_error")),
            duration_s=number_or(data.get("duration_s"), 0.0),
            stdout_tail=str(data.get("stdout_tail") or ""),
            stderr_tail=str(data.get("stderr_tail") or ""),
        )


@dataclass
class JudgedShard:
    """The share of the cases a --shard K/N report judged, and every case name of the whole set, in order."""

    index: int
    count: int
    cases: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "count": self.count, "cases": self.cases}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgedShard:
        return cls(int(data["index"]), int(data["count"]), strings(data.get("cases")))
