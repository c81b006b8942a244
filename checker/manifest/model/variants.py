"""Graphs derived from the baseline: `variants:` (each one's graph, transform, rules and expected gain)."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Any

from checker.manifest.model.common import BundlePath
from checker.manifest.model.core import Block, S
from checker.manifest.model.release import Graph
from checker.manifest.model.rules import MAX_RULES, Rule

MAX_VARIANTS = 64
MAX_GAIN = 1_000_000


class VariantGraph(Graph):
    WORDS = S("Variant graph", "The derived graph.")

    # Required here: `field()` keeps the baseline graph's default (absent) from being inherited.
    path: Annotated[BundlePath, S("Graph file", "The .onnx file, relative to the manifest.")] = field()


class Transform(Block):
    WORDS = S("Transform", "The tool, its version and its settings.")

    tool: Annotated[str, S("Tool", "E.g. onnxruntime.quantization.quantize_static.", min_length=1)]
    version: Annotated[str, S("Tool version", "The tool's version.", min_length=1)]
    # Free-form: the tool's own keyword arguments (quant_format, per_channel, ...), and `calibration_cases`,
    # which compare.quantizing reads.
    settings: Annotated[dict[str, Any], S("Transform settings", "The transform's settings, free-form.")]


class Expect(Block):
    WORDS = S(
        "Expected gain",
        "What the variant must gain over the baseline; a measured figure short of it is a variant.no_gain error.",
        min_properties=1,
    )

    smaller: Annotated[
        float | None,
        S(
            "Smaller",
            "The least baseline size / variant size (graph plus external data), e.g. 2.0.",
            exclusive_minimum=0,
            maximum=MAX_GAIN,
        ),
    ] = None
    faster: Annotated[
        float | None,
        S(
            "Faster",
            "The least median baseline time / variant time on the same cases, e.g. 1.2.",
            exclusive_minimum=0,
            maximum=MAX_GAIN,
        ),
    ] = None


class Variant(Block):
    WORDS = S("Variant", "A derived graph judged on the same cases.")

    name: Annotated[
        str,
        S(
            "Variant name",
            "Unique; not 'baseline'.",
            pattern="^[A-Za-z0-9][A-Za-z0-9._-]*$",
            max_length=64,
            extra={"not": {"const": "baseline"}},
        ),
    ]
    graph: VariantGraph
    derived_from: Annotated[str, S("Derived from", "`baseline` or an earlier variant's name.", min_length=1)]
    transform: Transform
    rules: Annotated[
        list[Rule], S("Rules", "Judged on the same cases against the same reference.", max_items=MAX_RULES)
    ]
    drift_rules: Annotated[
        list[Rule] | None,
        S("Rules", "Judged against the baseline's own outputs on the same cases.", max_items=MAX_RULES),
    ] = None
    expect: Expect | None = None


Variants = Annotated[
    list[Variant], S("Variants", "Graphs derived from the baseline (quantized, fp16, pruned).", max_items=MAX_VARIANTS)
]
