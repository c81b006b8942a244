"""The whole manifest as one typed block, and the JSON Schema made from it."""

from __future__ import annotations

from typing import Annotated, Any

from checker.manifest.model.answers import Answers
from checker.manifest.model.comparison import Comparison
from checker.manifest.model.core import Block, S
from checker.manifest.model.generate import block_schema
from checker.manifest.model.inputs import Inputs
from checker.manifest.model.release import Graph, Release
from checker.manifest.model.runtime import Runtime
from checker.manifest.model.tensors import Outputs
from checker.manifest.model.validation import Validation
from checker.manifest.model.variants import Variants

SCHEMA_ID = "https://onnx-release-checker.dev/schemas/manifest-1.schema.json"


class Spec(Block):
    """A manifest that matched the schema, as typed data: what the stages read."""

    WORDS = S(
        "ONNX release bundle manifest, version 1",
        "bundle.yaml: everything a model release needs to be checked: the graph, its external weights, "
        "preprocessing, labels, comparison cases with reference outputs and rules, the target runtime and the "
        "validation command.",
    )

    manifest_version: Annotated[int, S("Manifest version", "The version of this format; 1.", minimum=1, maximum=1000)]
    release: Release
    graph: Graph | None = None
    inputs: Inputs | None = None
    outputs: Outputs | None = None
    runtime: Runtime | None = None
    validation: Validation | None = None
    answers: Answers | None = None
    comparison: Comparison | None = None
    variants: Variants | None = None


def manifest_schema() -> dict[str, Any]:
    """The manifest's JSON Schema (2020-12), as `schemas/manifest.schema.json` holds it."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **block_schema(Spec),
    }
