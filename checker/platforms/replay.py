"""A device judged by its outputs: sessions that answer each case with what the device wrote, so the comparison
stage's own judging (judge_all) holds them to the same rules as every platform.

A case is recognised by its inputs (their names, dtypes, shapes and bytes), exactly as the comparison feeds
them; the device's arrays for it are read from its folder (readers/deviceoutputs.py) when the case is run. A
case the device sent nothing for fails as a case the runtime could not run, and is named.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.readers.deviceoutputs import DeviceFolder, DeviceFolderError, output_path
from checker.readers.graphinfo import graph_inputs, graph_outputs

if TYPE_CHECKING:
    import numpy as np

    from checker.compare.session import Runtime
    from checker.context import Case

# The manifest's dtype names -> onnxruntime's tensor type names, as a session's NodeArg gives them.
_ORT = {"float32": "float", "float64": "double"}


def feed_key(feed: Mapping[str, Any]) -> str:
    """A digest of a case's inputs by name, dtype, shape and bytes: which case a run is of."""
    import numpy as np

    digest = hashlib.sha256()
    for name in sorted(feed):
        array = np.ascontiguousarray(feed[name])
        digest.update(f"{name}\0{array.dtype.str}\0{array.shape}\0".encode("utf-8", "surrogatepass"))
        digest.update(array.tobytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class Arg:
    name: str
    type: str
    shape: list[Any]


@dataclass
class Replay:
    """The device's folder and the cases it is judged on; `missing` collects what it did not send."""

    folder: DeviceFolder
    cases: Sequence[Case]
    graphs: dict[Path, tuple[str, Any]]  # graph file -> (its name in the report, its parsed model)
    backend: str
    missing: dict[str, list[str]] = field(default_factory=dict)  # graph -> case names without outputs
    read_errors: list[str] = field(default_factory=list)
    _by_feed: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for case in self.cases:
            self._by_feed.setdefault(feed_key(case.inputs), []).append(case.name)

    def opener(self, path: Path, runtime: Runtime, weight_bytes: int) -> ReplaySession:
        from checker.compare.session import SessionError

        known = self.graphs.get(path)
        if known is None:
            raise SessionError(f"the device kit has no graph {path.name}")
        return ReplaySession(self, known[0], known[1])

    def outputs(self, graph: str, feed: Mapping[str, Any], names: Sequence[str]) -> list[np.ndarray]:
        """The device's arrays for the case fed, in `names` order; a RuntimeError saying what is not there."""
        cases = self._by_feed.get(feed_key(feed))
        if not cases:
            raise RuntimeError("these inputs are no case of the device kit")
        case = cases[0]
        wanted = [output_path(graph, case, name) for name in names]
        absent = [rel for rel in wanted if rel not in self.folder.files]
        if absent:
            self.missing.setdefault(graph, []).append(case)
            raise RuntimeError(f"the device sent no {', '.join(absent[:3])}")
        try:
            return [self.folder.load(rel) for rel in wanted]
        except DeviceFolderError as exc:
            self.read_errors.append(str(exc))
            raise RuntimeError(str(exc)) from None


class ReplaySession:
    """A session whose runs read the device's outputs: the methods of InferenceSession the comparison uses."""

    def __init__(self, replay: Replay, graph: str, model: Any) -> None:
        self._replay, self._graph = replay, graph
        self._inputs = [_arg(s) for s in graph_inputs(model)]
        self._outputs = [_arg(s) for s in graph_outputs(model)]

    def get_inputs(self) -> list[Arg]:
        return list(self._inputs)

    def get_outputs(self) -> list[Arg]:
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        return [self._replay.backend]

    def run(self, wanted: Sequence[str] | None, feed: Mapping[str, Any], options: Any = None) -> list[Any]:
        names = list(wanted) if wanted is not None else [o.name for o in self._outputs]
        return list(self._replay.outputs(self._graph, feed, names))


def _arg(spec: Any) -> Arg:
    shape = [] if spec.shape is None else list(spec.shape)
    return Arg(spec.name, f"tensor({_ORT.get(spec.dtype, spec.dtype)})", shape)
