"""The function an export script calls right after running the original model, before converting it.

Saving the reference outputs at that moment, from the model that defines the release, is what the release process
asks for: they must not come from the converted graph they are meant to judge.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.release.casestore import AddedCase, CaseError, NewCase, add_case

if TYPE_CHECKING:
    import numpy as np


def save_case(
    bundle: str | os.PathLike[str],
    name: str,
    inputs: Mapping[str, Any],
    expected: Mapping[str, Any],
    *,
    raw: Mapping[str, str | os.PathLike[str]] | None = None,
    tags: Iterable[str] = (),
    reference: str | None = None,
    replace: bool = False,
) -> AddedCase:
    """Store one comparison case in the bundle folder `bundle` and name it in the manifest.

    `inputs` and `expected` map tensor names to arrays (NumPy arrays, or anything `numpy.asarray` takes; a
    PyTorch tensor is detached and moved to the CPU first). `raw` maps an input name to the application input it
    was made from (an image, a text file), which is copied into the bundle so `checker verify` can rebuild the
    tensor with the declared preprocessing. `reference` describes what produced `expected` (e.g. "PyTorch 2.5.1
    eager, float32, x86_64") and fills comparison.reference when it is empty. Without a manifest yet (before the
    graph exists), one is started; `checker init` completes it later and keeps the cases.
    Raises `checker.errors.Error` (a CaseError) when the case cannot be stored as given.
    """
    case = NewCase(
        name=name,
        inputs={k: _array(k, v) for k, v in inputs.items()},
        expected={k: _array(k, v) for k, v in expected.items()},
        raw={k: Path(v) for k, v in (raw or {}).items()},
        tags=list(tags),
    )
    return add_case(Path(bundle), case, replace=replace, reference=reference)


def _array(name: str, value: Any) -> np.ndarray:
    import numpy as np

    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch.Tensor, possibly on a GPU or needing grad
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    if array.dtype == object:
        raise CaseError(f"'{name}' is not a numeric or string array (dtype object)")
    return array
