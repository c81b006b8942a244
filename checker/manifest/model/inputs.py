"""The graph's inputs as the manifest declares them (`inputs:`), each with its preprocessing: a block picked by
its `kind`, defined in image.py, audio.py, text.py and tabular.py, or `custom`, described in words."""

# Annotations are evaluated as the class is made (no `from __future__ import annotations`): the builder and
# the generator read them as objects, and evaluating hundreds of annotation strings cost more than the build.

from typing import Annotated, Literal

from checker.manifest.model.audio import Audio
from checker.manifest.model.common import MAX_PATH, MAX_TENSORS, ElementType, Range, Shape, TensorName
from checker.manifest.model.core import Block, Const, S, Tagged
from checker.manifest.model.image import Image
from checker.manifest.model.tabular import Tabular
from checker.manifest.model.text import Derived, Text

InputMeaning = Literal["image", "text", "audio", "tabular", "state", "tensor"]


class Custom(Block):
    TAG = "custom"

    kind: Annotated[Literal["custom"], Const(), S("Kind", "Anything else, described in words.")]
    description: Annotated[str, S("Description", "How an application input becomes this tensor.", min_length=1)]
    config: Annotated[
        str | None, S("Config", "An optional configuration file in the bundle.", min_length=1, max_length=MAX_PATH)
    ] = None


Preprocessing = Annotated[
    Image | Text | Derived | Audio | Tabular | Custom,
    Tagged("kind", S("Kind", "image | text | derived | audio | tabular | custom")),
    S("Preprocessing", "How an application input becomes this tensor; `kind` selects the fields."),
]
# The kinds a manifest may give, in the schema's order.
KINDS = tuple(block.TAG for block in (Image, Text, Derived, Audio, Tabular, Custom))


class Input(Block):
    WORDS = S("Input", "One graph input (initializers excluded).")

    name: TensorName
    dtype: ElementType
    shape: Shape | None = None
    layout: Annotated[
        str | None,
        S(
            "Layout",
            "One letter per axis: N batch, C channel, H, W, S sequence, T time, F feature.",
            pattern="^[NCHWSTF]{1,8}$",
        ),
    ] = None
    meaning: Annotated[InputMeaning, S("Meaning", "What the tensor holds.")]
    range: Range | None = None
    preprocessing: Preprocessing | None = None


Inputs = Annotated[
    list[Input],
    S("Inputs", "One entry per graph input (initializers excluded).", max_items=MAX_TENSORS),
]
