"""The one place a tabular block's named file is read: `import: {format: skops, path}`, a fitted scikit-learn
ColumnTransformer in the bundle, whose columns stand in for `columns` (before parsing, which reads no file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checker.bundle.paths import BundlePathError, resolve_inside
from checker.preprocess import fields as f
from checker.preprocess.errors import PreprocessError
from checker.preprocess.tabular.skops_import import import_skops

FORMATS = ("skops",)


def read_block(prep: dict[str, Any], root: Path) -> dict[str, Any]:
    """`prep` with the imported columns in place of `import`; a block with both is refused by name."""
    if "import" not in prep:
        return prep
    if "columns" in prep:
        raise PreprocessError("preprocessing gives both columns and import; give one")
    where = "preprocessing.import"
    d = f.mapping(prep["import"], where)
    unknown = set(d) - {"format", "path"}
    if unknown:
        raise PreprocessError(f"{where} has unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    f.choice(d, "format", FORMATS, "", where)
    rel = d.get("path")
    if not isinstance(rel, str) or not rel:
        raise PreprocessError(f"{where}.path is {rel!r}; expected a bundle path")
    try:
        path = resolve_inside(root, rel)
    except BundlePathError as e:
        raise PreprocessError(str(e)) from e
    block, _ = import_skops(path, rel)
    return {k: v for k, v in prep.items() if k != "import"} | {"columns": block["columns"]}
