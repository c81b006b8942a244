"""inputs.tokenizer_settings: a text input's tokenizer.json saved settings that its declaration overrides.

The declared truncation, padding and special tokens replace what the file saved (docs/preprocessing.md); this
stage says where the two disagree, once per input, so that a reviewer sees which side wins. A tokenizer that
cannot be read here (the extra missing, a file refused or changed) is the fidelity and files stages' to report.
"""

from __future__ import annotations

from collections.abc import Iterator

from checker import findings as F
from checker.checks.prepared import names_unusable_file, prepared
from checker.context import Context
from checker.findings import Finding
from checker.manifest import views
from checker.preprocess.errors import PreprocessError


def tokenizer_stage(ctx: Context) -> Iterator[Finding]:
    if not any(e.preprocessing is not None and e.preprocessing.kind == "text" for e in views.inputs(ctx.spec)):
        return  # nothing to load the preprocessing package for: it costs a small bundle much of its run
    inputs = prepared(ctx)
    texts = [e.name for e in inputs.entries if inputs.kind(e.name) == "text"]
    # Loaded only for a bundle with a text input, as the text kind itself is.
    from checker.preprocess.text.saved import overrides
    from checker.preprocess.text.tokenize import load_tokenizer

    for name in texts:
        if names_unusable_file(ctx, inputs.preprocessing(name)):
            continue
        try:
            spec = inputs.spec(name)
            found = overrides(load_tokenizer(spec, ctx.root), spec)
        except PreprocessError:
            continue  # the block, the file or the extra: the ranges or fidelity stage says what
        if not found:
            continue
        said = "; ".join(o.words() for o in found)
        msg = (
            f"input '{name}': {spec.tokenizer} saved settings that the declaration overrides, and the declaration "
            f"wins (the tensors are rebuilt as declared): {said}"
        )
        where = ctx.where("inputs", inputs.index(name), "preprocessing")
        yield F.warning(F.INPUTS_TOKENIZER_SETTINGS, msg, **where, input=name, overridden=[o.data() for o in found])
