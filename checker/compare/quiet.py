"""onnxruntime.quantization's own logging kept off the reader's screen.

The tool logs through Python's root logger (`WARNING:root:Please consider to run pre-processing before
quantization`, generic advice that names nothing of the bundle), and the sessions it opens for calibration use
onnxruntime's default logger, which prints coloured `[W:onnxruntime:…]` lines to stderr. What the checker has
to say about a trial is in its own report; these lines would only land after the verdict. Its calibrators also
`print` their progress ("Collecting tensor data and making histogram ..."): on standard output, ahead of a
JSON report, that would make the report unreadable, so standard output is captured too.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

ORT_ERRORS_ONLY = 3  # onnxruntime's severities: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal


class _Kept(logging.Handler):
    def __init__(self, kept: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.kept = kept

    def emit(self, record: logging.LogRecord) -> None:
        self.kept.append(record.getMessage())


@contextmanager
def quiet_logging() -> Iterator[list[str]]:
    """While it lasts, the root logger's records are kept in the list it yields, not printed (a root logger
    without handlers would print them: logging.warning() calls basicConfig), and onnxruntime logs errors only."""
    import onnxruntime as ort

    ort.set_default_logger_severity(ORT_ERRORS_ONLY)
    root = logging.getLogger()
    kept: list[str] = []
    saved = root.handlers[:]
    root.handlers = [_Kept(kept)]
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            yield kept
    finally:
        root.handlers = saved
        kept.extend(line for line in printed.getvalue().splitlines() if line.strip())


def quietly(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` run inside quiet_logging(); its signature and name stay visible (inspect follows wraps)."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        with quiet_logging():
            return function(*args, **kwargs)

    return run
