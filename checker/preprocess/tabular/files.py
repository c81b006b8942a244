"""The one place a tabular block's named file is read: `import: {format: skops, path}`, a fitted scikit-learn
ColumnTransformer in the bundle, whose columns stand in for `columns` (before parsing, which reads no file)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from checker.bundle.paths import BundlePathError, resolve_inside
from checker.manifest.model import tabular as m
from checker.preprocess.checked import checked
from checker.preprocess.errors import PreprocessError
from checker.preprocess.tabular.skops_import import import_skops


def read_block(prep: m.Tabular, root: Path) -> m.Tabular:
    """The typed block with the columns its `import` names in place of it (the schema allows one of the two),
    the imported columns held to what the same columns written in a manifest must meet."""
    if prep.import_ is None:
        return prep
    rel = prep.import_.path
    try:
        path = resolve_inside(root, rel)
    except BundlePathError as e:
        raise PreprocessError(str(e)) from e
    block, _ = import_skops(path, rel)
    columns = checked(list[m.Column], block["columns"], f"the columns of {rel}")
    return replace(prep, columns=columns, import_=None)
