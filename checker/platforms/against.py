"""How far a platform's outputs are from this machine's own: per graph, how many output values differ from the
native run and by how much at most ("44 of 80 logits differ, up to 0.82"); and the sentinels of silent failure
(compare/sentinels.py) the platform trips where the native run does not.

The platform's outputs are seen case by case as its worker gives them (comparison.Run.observe); each case is
run natively beside it and only the counts are kept, so no case's outputs outlive its comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.compare.sentinels import Watch
from checker.compare.session import CPU, CaseRunError, Runtime, SessionError, open_session, run_case
from checker.manifest import views
from checker.reports.parts.placement import NativeFigures

if TYPE_CHECKING:
    import numpy as np

    from checker.context import Case, Context


class NativeDiff:
    """Counts, per graph, the output values of another platform that differ from this machine's."""

    def __init__(self, ctx: Context, options: dict[str, Any]) -> None:
        self.ctx = ctx
        self.runtime = Runtime([CPU], dict(options))
        self._sessions: dict[str, Any] = {}
        self.figures: dict[str, NativeFigures] = {}  # per graph
        self.sentinels = Watch()

    def _path(self, graph: str) -> Path | None:
        if graph == "baseline":
            return self.ctx.graph_path
        variant = views.variant(self.ctx.spec, graph)
        return self.ctx.path(variant.graph.path) if variant is not None else None

    def _session(self, graph: str) -> Any:
        if graph not in self._sessions:
            path = self._path(graph)
            try:
                self._sessions[graph] = None if path is None else open_session(path, self.runtime)
            except SessionError:
                self._sessions[graph] = None  # the checker's own run says why it cannot load
        return self._sessions[graph]

    def observe(self, graph: str, case: Case, outputs: dict[str, np.ndarray] | None) -> None:
        session = self._session(graph) if outputs is not None else None
        if session is None or outputs is None:
            self.sentinels.judge(graph, case, outputs, None)
            return
        try:
            native = run_case(session, case.inputs, self.ctx.options.case_timeout_s)
        except CaseRunError:
            self.sentinels.judge(graph, case, outputs, None)
            return
        self.sentinels.judge(graph, case, outputs, native)
        entry = self.figures.setdefault(graph, NativeFigures(cases=0))
        entry.cases = (entry.cases or 0) + 1
        for name, value in outputs.items():
            if name in native:
                _add(entry, native[name], value)

    def close(self) -> None:
        self._sessions.clear()


def _add(entry: NativeFigures, native: np.ndarray, there: np.ndarray) -> None:
    import numpy as np

    if native.shape != there.shape or native.dtype.kind not in "fiub" or there.dtype.kind not in "fiub":
        return  # shapes that differ are graph.io's to report; strings have no distance
    a, b = native.astype(np.float64), there.astype(np.float64)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    entry.of += int(a.size)
    entry.differ += int(a.size - np.count_nonzero(same))
    if not same.all():
        worst = float(np.max(np.abs(a - b)[~same]))  # nan when one side is nan and the other is not
        entry.max_abs = float(np.fmax(entry.max_abs, worst)) if worst == worst else worst
