"""The inputs' parsed preprocessing, the Context's `preprocessing` slot: made once, read by the ranges and the
fidelity stages, so that a block is parsed (and the files it names are read) once per bundle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from checker.context import Case, Context
from checker.manifest.model.inputs import Preprocessing
from checker.preprocess.errors import PreprocessError
from checker.readers.graphinfo import scaled_inputs

if TYPE_CHECKING:
    from checker.preprocess.rebuild import Inputs


def prepared(ctx: Context) -> Inputs:
    """The slot, made on first use; each input's block is parsed when first asked for, errors kept."""
    if ctx.preprocessing is None:
        # Loaded only for a bundle whose inputs declare preprocessing: it costs a small bundle much of its run.
        from checker.preprocess.rebuild import Inputs

        # What the graph scales itself tells a tabular explanation that a declared scaler is applied twice.
        scaled = scaled_inputs(ctx.graph) if ctx.graph is not None else {}
        ctx.preprocessing = Inputs(list(ctx.spec.inputs or ()), ctx.root, scaled)
    return ctx.preprocessing


def names_unusable_file(ctx: Context, prep: Preprocessing | None) -> bool:
    """Whether the block names a file (config, tokenizer, imported pipeline) the files stage refused or found
    missing: that stage has said so, and the block is left alone."""
    imported = getattr(prep, "import_", None)
    named = [getattr(prep, "config", None), getattr(prep, "tokenizer", None), getattr(imported, "path", None)]
    return any(rel is not None and rel in ctx.unusable for rel in named)


def has_raw(cases: list[Case], inputs: Inputs, name: str) -> bool:
    """Whether a case's raw files rebuild input `name` (itself, or an input derived from it): then the
    fidelity stage reports what is wrong with its block."""
    for case in cases:
        for raw_name in case.raw:
            try:
                if raw_name == name or inputs.source_name(raw_name) == name:
                    return True
            except PreprocessError:  # a derived input from a non-text one: the fidelity stage reports it
                continue
    return False
