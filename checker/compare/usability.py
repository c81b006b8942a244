"""onnxruntime's own offline check of a graph for its mobile providers (NNAPI, CoreML), its figures kept.

The check is `python -m onnxruntime.tools.check_onnx_model_mobile_usability`; its library functions are called
here the way that command calls them (the graph optimized to the basic level into a private folder, shapes
inferred, each provider's supported-operator table applied), so the figures are the tool's own: the nodes it
can take, the partitions they form, its suitability verdict, and the lines it logs (captured, not printed).
"""

from __future__ import annotations

import logging
import pathlib
import tempfile
from collections.abc import Callable
from typing import Any

from checker.reports.parts.placement import FixedShape, Usability

# The declared provider -> the tool's names for what it checks (CoreML has two model formats).
CHECKED = {
    "NnapiExecutionProvider": ("NNAPI",),
    "CoreMLExecutionProvider": ("CoreML NeuralNetwork", "CoreML MLProgram"),
}
_MAX_LINES = 40


class UsabilityError(RuntimeError):
    """The tool could not analyse the graph; the message says why."""


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.lines) < _MAX_LINES:
            self.lines.append(" ".join(record.getMessage().split())[:500])


def _captured() -> tuple[logging.Logger, _Lines]:
    logger = logging.getLogger("checker.usability")
    logger.handlers.clear()
    logger.propagate = False  # its lines go into the report, never onto the checker's output
    logger.setLevel(logging.INFO)
    handler = _Lines()
    logger.addHandler(handler)
    return logger, handler


def _checkers() -> dict[str, Callable[[Any, bool], Any]]:
    from onnxruntime.tools.mobile_helpers import usability_checker as uc

    return {
        "NNAPI": uc.check_nnapi_partitions,
        "CoreML NeuralNetwork": lambda m, fixed: uc.check_coreml_partitions(
            m, fixed, "coreml_supported_neuralnetwork_ops.md"
        ),
        "CoreML MLProgram": lambda m, fixed: uc.check_coreml_partitions(m, fixed, "coreml_supported_mlprogram_ops.md"),
    }


def analyse(path: pathlib.Path, provider: str, graph: str) -> list[Usability]:
    """One entry per model format the provider runs: the tool's figures for `graph` (its file at `path`) as it
    ships, and with its dynamic shapes fixed when that would change its verdict."""
    from onnxruntime.tools.mobile_helpers import usability_checker as uc
    from onnxruntime.tools.onnx_model_utils import optimize_model

    with tempfile.TemporaryDirectory(prefix="checker-usability-") as folder:
        optimized = pathlib.Path(folder) / "model.onnx"
        try:
            optimize_model(path, optimized, use_external_initializers=True)
            model = uc.ModelProtoWithShapeInfo(optimized).model_with_shape_info
            dynamic_inputs, _ = uc.check_shapes(model.graph)
            return [_one(model, ep, bool(dynamic_inputs), graph, provider) for ep in CHECKED[provider]]
        except Exception as exc:  # onnx and onnxruntime raise many kinds; the tool's failure is reported
            raise UsabilityError(" ".join(str(exc).split())[:500] or type(exc).__name__) from exc


def _one(model: Any, ep: str, dynamic: bool, graph: str, provider: str) -> Usability:
    check = _checkers()[ep]
    logger, lines = _captured()
    info = check(model, True)
    info.print_analysis(logger, ep)
    suitability = info.suitability()
    entry = Usability(
        graph=graph,
        provider=provider,
        ep=ep,
        nodes=int(info.num_nodes),
        supported=int(info.num_supported_nodes),
        partitions=int(info.num_partitions),
        partition_sizes=[len(group) for group in info.supported_groups],
        unsupported_ops=sorted(str(op) for op in info.unsupported_ops),
        suitability=suitability.name,
        recommendation=lines.lines[-1] if lines.lines else "",
        log=list(lines.lines),
    )
    if suitability.name != "YES" and dynamic:  # as the tool does: would fixed shapes help?
        fixed = check(model, False)
        logger, lines = _captured()
        fixed.print_analysis(logger, ep)
        entry.fixed_shape_suitability = fixed.suitability().name
        entry.fixed_shape = FixedShape(
            int(fixed.num_supported_nodes), int(fixed.num_partitions), lines.lines[-1] if lines.lines else ""
        )
    return entry
