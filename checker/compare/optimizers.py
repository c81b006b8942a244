"""Which onnxruntime graph optimizer changes a graph's numbers between two optimization levels.

The graph's outputs at the higher level are held to its outputs at the lower one, on one case; onnxruntime's
`disabled_optimizers` turns a set of transformers off by name, and halving the set finds the one whose absence
makes the two agree. The names are those onnxruntime 1.17 to 1.32 register for the CPU
provider (an unknown name is ignored by onnxruntime, so a list for another release only bisects less).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from checker.compare.session import Runtime, session_options, timed_run

OPTIMIZERS = (
    # basic
    "ConstantFolding", "ConstantSharing", "CommonSubexpressionElimination", "MatMulAddFusion", "ReshapeFusion",
    "FreeDimensionOverrideTransformer", "QDQPropagationTransformer", "EnsureUniqueDQForNodeUnit",
    "WeightBiasQuantization", "Level1_RuleBasedTransformer", "DoubleQDQPairsRemover",
    # extended
    "QDQS8ToU8Transformer", "QDQSelectorActionTransformer", "GemmActivationFusion", "MatMulIntegerToFloatFusion",
    "DynamicQuantizeMatMulFusion", "ConvActivationFusion", "GeluFusion", "LayerNormFusion",
    "SimplifiedLayerNormFusion", "AttentionFusion", "EmbedLayerNormFusion", "GatherSliceToSplitFusion",
    "GatherToSliceFusion", "MatmulTransposeFusion", "BiasGeluFusion", "SkipLayerNormFusion", "FastGeluFusion",
    "QuickGeluFusion", "BiasSoftmaxFusion", "BiasDropoutFusion", "MatMulScaleFusion", "MatMulActivationFusion",
    "MatMulNBitsFusion", "Level2_RuleBasedTransformer", "TransposeOptimizer",
    # all (layout)
    "NchwcTransformer", "NhwcTransformer",
)  # fmt: skip


def outputs_at(
    path: Path, runtime: Runtime, level: str, feed: Mapping[str, np.ndarray], disabled: Sequence[str] = ()
) -> list[np.ndarray]:
    """One case's outputs of the graph at `level`, with these optimizers turned off."""
    import onnxruntime as ort

    so = session_options({**runtime.options, "graph_optimization_level": level})
    session = ort.InferenceSession(str(path), so, providers=runtime.providers, disabled_optimizers=list(disabled))
    names = [i.name for i in session.get_inputs()]
    return [np.asarray(v) for v in timed_run(session, None, {n: feed[n] for n in names})]


def _agree(one: Sequence[np.ndarray], two: Sequence[np.ndarray]) -> bool:
    return all(a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True) for a, b in zip(one, two))


def responsible(path: Path, runtime: Runtime, high: str, low: str, feed: Mapping[str, Any]) -> str | None:
    """The optimizer whose absence at level `high` gives the outputs of level `low`, or None when no single one
    of OPTIMIZERS does."""
    wanted = outputs_at(path, runtime, low, feed)

    def agrees(disabled: Sequence[str]) -> bool:
        return _agree(outputs_at(path, runtime, high, feed, disabled), wanted)

    candidates = list(OPTIMIZERS)
    if not agrees(candidates):
        return None
    while len(candidates) > 1:
        half = candidates[: len(candidates) // 2]
        candidates = half if agrees(half) else candidates[len(candidates) // 2 :]
    return candidates[0] if agrees(candidates) else None
