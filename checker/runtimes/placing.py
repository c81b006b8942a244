"""Where onnxruntime places a graph's nodes: asked of this process's onnxruntime or of a runtime's worker, by
the same code (worker.Worker.place), so both answer alike.

The answer is onnxruntime's own record (session option `session.record_ep_graph_assignment_info` and
`InferenceSession.get_provider_graph_assignment_info()`, onnxruntime 1.23 and later): one entry per subgraph,
its provider and its nodes (op type, name), of the graph as onnxruntime partitions it among the providers: after
the basic-level optimizations, before the fusions of the higher levels (which work within a provider's nodes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checker.runtimes.remote import MARGIN_S, START_TIMEOUT_S, Worker, WorkerError

MEASURED_BY = "session.record_ep_graph_assignment_info + InferenceSession.get_provider_graph_assignment_info()"


def place(
    path: Path, providers: list[str], options: dict[str, Any], forbid: bool, worker: Worker | None = None
) -> dict[str, Any]:
    """{"ok": True, "subgraphs": [[provider, [[op_type, name], ...]], ...], "forbid": {...}} or {"ok": False,
    "error": why}; in `worker`'s onnxruntime when given, else in this process's."""
    request = {"op": "place", "path": str(path), "providers": list(providers), "options": options, "forbid": forbid}
    if worker is not None:
        try:
            return worker.ask(request, START_TIMEOUT_S + MARGIN_S)
        except WorkerError as exc:
            return {"ok": False, "error": str(exc)}
    import numpy as np
    import onnxruntime as ort

    from checker.runtimes.worker import Worker as Here

    return Here(ort, np).place(request)
