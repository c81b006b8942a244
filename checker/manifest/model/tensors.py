"""The graph's outputs as the manifest declares them: `outputs:`."""

from __future__ import annotations

from typing import Annotated, Literal

from checker.manifest.model.common import MAX_PATH, MAX_TENSORS, ElementType, Sha256, Shape, TensorName
from checker.manifest.model.core import Block, S

OutputMeaning = Literal[
    "logits", "probabilities", "scores", "embedding", "boxes", "mask", "tokens", "state", "regression", "other"
]
MAX_LABEL_AXIS = 64


class Labels(Block):
    WORDS = S("Labels", "The label mapping for a classification-like output: a file or a graph metadata key.")
    EXTRA = {
        "dependentSchemas": {"values": {"not": {"required": ["axis"]}}},
        "oneOf": [{"required": ["path"]}, {"required": ["metadata_key"]}],
    }

    path: Annotated[
        str | None,
        S(
            "Label file",
            'labels.txt (one per line) or .json (a list, or a {"0": "cat"} mapping).',
            min_length=1,
            max_length=MAX_PATH,
        ),
    ] = None
    metadata_key: Annotated[
        str | None,
        S(
            "Metadata key",
            "A key of the graph's metadata_props holding the labels (JSON, a newline list, or a Python literal "
            "such as {0: 'cat'}).",
            min_length=1,
        ),
    ] = None
    axis: Annotated[
        int | None,
        S(
            "Axis",
            "The axis the labels index; the label count must equal its size.",
            minimum=-MAX_LABEL_AXIS,
            maximum=MAX_LABEL_AXIS,
        ),
    ] = None
    values: Annotated[
        Literal["index"] | None,
        S(
            "Values",
            "`index`: the output's values are class indices into the labels (ArgMax in the graph), not scores "
            "over a labelled axis; no `axis` then.",
        ),
    ] = None
    sha256: Sha256 | None = None


class Output(Block):
    WORDS = S("Output", "One graph output.")

    name: TensorName
    dtype: ElementType | None = None
    shape: Shape | None = None
    meaning: Annotated[
        OutputMeaning, S("Meaning", "What the tensor holds; logits, probabilities and scores need labels.")
    ]
    labels: Labels | None = None


Outputs = Annotated[
    list[Output],
    S("Outputs", "One entry per graph output that rules name; all outputs recommended.", max_items=MAX_TENSORS),
]
