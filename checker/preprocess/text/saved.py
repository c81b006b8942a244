"""What a tokenizer.json saved that the declaration overrides: its truncation, its padding, and the special
tokens its post-processor adds.

The declared settings replace the file's (tokenize.configured), which is right: an application that loads the
file and then calls `enable_truncation(256)` and `no_padding()` feeds what it set, not what the file saved. But
the two disagreeing is worth a reviewer's look, since copying the file's settings into the manifest, or the
application's into the file, is the usual mistake; so each one is named, with both values and the side that wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checker.preprocess.text.spec import TextSpec
from checker.preprocess.text.tokenize import Loaded


@dataclass(frozen=True)
class Override:
    setting: str  # truncation, padding or special tokens
    saved: str  # what the file saved, in words
    declared: str  # what the declaration says, in words

    def words(self) -> str:
        return f"{self.setting} (the file: {self.saved}; the declaration: {self.declared})"

    def data(self) -> dict[str, str]:
        return {"setting": self.setting, "file": self.saved, "declared": self.declared}


def overrides(loaded: Loaded, spec: TextSpec) -> list[Override]:
    """Each setting the file saved that the declaration changes, in the order truncation, padding, special tokens."""
    out = []
    saved, declared = _truncation_saved(loaded.truncation), _truncation_declared(spec)
    if loaded.truncation is not None and saved != declared:  # a file that saved none overrides nothing
        out.append(Override("truncation", saved, declared))
    saved, declared = _padding_saved(loaded.padding), _padding_declared(spec)
    if loaded.padding is not None and saved != declared:
        out.append(Override("padding", saved, declared))
    added = _special_tokens(loaded.tokenizer)
    if added and not spec.special_tokens:
        out.append(Override("special tokens", f"its post-processor adds {added}", "add_special_tokens: false"))
    return out


def _truncation_saved(truncation: dict[str, Any] | None) -> str:
    if truncation is None:
        return "none"
    return f"to {truncation.get('max_length')} tokens"


def _truncation_declared(spec: TextSpec) -> str:
    return f"to {spec.max_length} tokens" if spec.truncation else "none"


def _padding_saved(padding: dict[str, Any] | None) -> str:
    if padding is None:
        return "none"
    length = padding.get("length")
    return "to the longest" if length is None else f"to {length} tokens"


def _padding_declared(spec: TextSpec) -> str:
    if spec.padding == "max_length":
        return f"to {spec.max_length} tokens"
    return "to the longest" if spec.padding == "longest" else "none"


def _special_tokens(tok: Any) -> str:
    """How many special tokens the file's post-processor adds to one text, in words ("" when it adds none)."""
    count = int(tok.num_special_tokens_to_add(False)) if tok.post_processor is not None else 0
    return f"{count} special token{'s' if count > 1 else ''}" if count else ""
