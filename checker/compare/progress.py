"""A progress bar for long comparisons, drawn on a terminal only (never in CI logs or JSON output)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Protocol, TextIO

_WIDTH = 30
_INTERVAL_S = 0.1  # redraw at most ten times a second
_DELAY_S = 0.5  # a comparison that ends sooner shows no bar at all


class Progress(Protocol):
    def start(self, label: str, total: int) -> None: ...
    def describe(self, label: str) -> None: ...
    def advance(self, done: int = 1) -> None: ...
    def close(self) -> None: ...


class NoProgress:
    """The stand-in when no bar is wanted."""

    def start(self, label: str, total: int) -> None:
        return None

    def describe(self, label: str) -> None:
        return None

    def advance(self, done: int = 1) -> None:
        return None

    def close(self) -> None:
        return None


class Bar:
    """A one-line bar, redrawn in place with a carriage return and cleared when it closes."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._clock = clock
        self._label, self._total, self._done = "", 0, 0
        self._began, self._drawn_at, self._visible = 0.0, 0.0, False

    def start(self, label: str, total: int) -> None:
        self._label, self._total, self._done = label, max(total, 1), 0
        self._began = self._now()

    def describe(self, label: str) -> None:
        self._label = label

    def advance(self, done: int = 1) -> None:
        self._done = min(self._done + done, self._total)
        now = self._now()
        if now - self._began >= _DELAY_S and (now - self._drawn_at >= _INTERVAL_S or self._done == self._total):
            self._draw(now)

    def close(self) -> None:
        if self._visible:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._visible = False

    def line(self) -> str:
        filled = _WIDTH * self._done // self._total
        return f"{self._label} [{'#' * filled}{'.' * (_WIDTH - filled)}] {self._done}/{self._total}"

    def _draw(self, now: float) -> None:
        self._stream.write("\r\x1b[K" + self.line())
        self._stream.flush()
        self._drawn_at, self._visible = now, True

    def _now(self) -> float:
        return self._clock()


def for_run(wanted: bool, stream: TextIO | None = None) -> Progress:
    """A bar when the run asked for one and stderr is a terminal; otherwise nothing."""
    target = stream if stream is not None else sys.stderr
    if wanted and target.isatty():
        return Bar(target)
    return NoProgress()
