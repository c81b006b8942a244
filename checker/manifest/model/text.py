"""A text input's preprocessing (the tokenizer and its settings), and an input derived from its tokenization."""

# Annotations are evaluated as the class is made (no `from __future__ import annotations`): the builder and
# the generator read them as objects, and evaluating hundreds of annotation strings cost more than the build.

from typing import Annotated, Literal

from checker.manifest.model.common import MAX_PATH, Sha256
from checker.manifest.model.core import Block, Const, S

MAX_LENGTH = 1 << 20  # a sequence's length after padding or truncation
MAX_TEMPLATE = 4096

Padding = Literal["max_length", "longest", "none"]
Field = Literal["ids", "attention_mask", "type_ids"]
_FIELD = S("Field", "Which array of the encoding this input holds.")


class Text(Block):
    TAG = "text"

    kind: Annotated[Literal["text"], Const(), S("Kind", "The kind of preprocessing.")]
    tokenizer: Annotated[
        str,
        S(
            "Tokenizer",
            "A tokenizer.json (the tokenizers library) in the bundle.",
            min_length=1,
            max_length=MAX_PATH,
        ),
    ]
    tokenizer_sha256: Sha256 | None = None
    template: Annotated[
        str | None,
        S(
            "Template",
            "The formatting rule applied to the application text before tokenizing; must contain {text}.",
            pattern="\\{text\\}",
            max_length=MAX_TEMPLATE,
        ),
    ] = None
    max_length: Annotated[
        int | None,
        S("Max length", "The sequence length after padding/truncation.", minimum=1, maximum=MAX_LENGTH),
    ] = None
    padding: Annotated[
        Padding, S("Padding", "max_length: pad to max_length; longest: to the longest in the batch; none.")
    ] = "none"
    truncation: Annotated[bool, S("Truncation", "Whether sequences longer than max_length are cut.")] = False
    add_special_tokens: Annotated[
        bool, S("Special tokens", "Whether the tokenizer's post-processor adds special tokens (default true).")
    ] = True
    field: Annotated[Field, _FIELD] = "ids"


class Derived(Block):
    TAG = "derived"

    kind: Annotated[
        Literal["derived"],
        Const(),
        S("Kind", "An input made from another input's tokenization of the same raw text."),
    ]
    from_: Annotated[
        str, S("From", "The name of the text input whose tokenization this input comes from.", min_length=1)
    ]
    field: Annotated[Field, _FIELD]
