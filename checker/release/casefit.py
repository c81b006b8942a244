"""Whether a new case's tensors fit what the manifest declares, before anything is written.

`checker verify` would refuse a case whose tensor has another rank or static size than its input or output
(`comparison.case`), and every rule on it would fail after; refusing it when it is added names the one mistake
at the file that made it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from checker.errors import Error
from checker.manifest import written

if TYPE_CHECKING:
    import numpy as np


class FitError(Error):
    """A case's tensor does not fit its declared input or output."""


def declared_entries(tree: Any, side: str) -> dict[str, Mapping[str, Any]]:
    """The manifest's `inputs` or `outputs` entries by name (none in an export script's early manifest)."""
    return {str(e["name"]): e for e in written.entries(tree, side) if "name" in e}


def shape_text(shape: Any) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def misfit(array: np.ndarray, declared: Any) -> str | None:
    """How the array's shape departs from a declared shape (ints static, strings named dynamic dims), or None."""
    if not isinstance(declared, list):
        return None
    if array.ndim != len(declared):
        return f"rank {array.ndim}, not {len(declared)}"
    for axis, (want, have) in enumerate(zip(declared, array.shape)):
        if isinstance(want, int) and not isinstance(want, bool) and want != have:
            return f"axis {axis} is {have}, not {want}"
    return None


def check_fit(
    case: str,
    arrays: Mapping[str, np.ndarray],
    declared: Mapping[str, Mapping[str, Any]],
    side: str,
    sources: Mapping[str, str],
) -> None:
    """FitError naming the file, the input (or output) and both shapes when an array does not fit its entry.

    `side` is "input" or "output"; `sources` says where each array came from (its file, as given).
    """
    for name, array in arrays.items():
        entry = declared.get(name)
        if entry is None:
            continue
        shape = entry.get("shape")
        problem = misfit(array, shape)
        if problem is None:
            continue
        source = sources.get(name, f"the array given for '{name}'")
        raise FitError(
            f"case '{case}': {source} holds a tensor of shape {shape_text(array.shape)}, but {side} '{name}' is "
            f"declared {shape_text(shape)} ({problem}): give the tensor the {side} takes"
        )
