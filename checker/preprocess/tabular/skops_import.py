"""A fitted scikit-learn ColumnTransformer (or a Pipeline of one) saved with skops, read as a tabular block.

The file is hostile input and never unpickled: its zip members are bounded and its schema is read first, so
that a file naming any type outside the ones mapped here (and the containers and arrays skops stores them in)
is refused by name before any of it is built; then `skops.io.load` builds it trusting only those. Each
transformer becomes its columns, in the order its output holds them, with the fitted constants.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from checker.preprocess.errors import MissingExtra, PreprocessError

MAX_FILE_BYTES = 64 << 20
MAX_UNPACKED_BYTES = 256 << 20
MAX_SCHEMA_BYTES = 16 << 20

# The estimators this import maps, by the module skops records and the class name.
MAPPED = {
    ("sklearn.compose._column_transformer", "ColumnTransformer"),
    ("sklearn.pipeline", "Pipeline"),
    ("sklearn.preprocessing._data", "StandardScaler"),
    ("sklearn.preprocessing._data", "MinMaxScaler"),
    ("sklearn.preprocessing._data", "RobustScaler"),
    ("sklearn.preprocessing._data", "MaxAbsScaler"),
    ("sklearn.preprocessing._encoders", "OneHotEncoder"),
    ("sklearn.preprocessing._encoders", "OrdinalEncoder"),
    ("sklearn.impute._base", "SimpleImputer"),
    # A fitted ColumnTransformer holds "passthrough" as an identity FunctionTransformer; no function node
    # (below) is accepted, so one that calls a function is refused.
    ("sklearn.preprocessing._function_transformer", "FunctionTransformer"),
}
MAPPED_NAMES = (
    "ColumnTransformer, Pipeline, StandardScaler, MinMaxScaler, RobustScaler, MaxAbsScaler, OneHotEncoder, "
    "OrdinalEncoder, SimpleImputer, passthrough"
)
# How skops builds a node: plain data, arrays and objects of the types above. A function, a method, a partial
# or a constructor call from the file (FunctionNode, MethodNode, ReduceNode, ...) is never accepted.
LOADERS = {
    "ObjectNode",
    "DictNode",
    "ListNode",
    "TupleNode",
    "SliceNode",
    "JsonNode",
    "TypeNode",
    "DTypeNode",
    "NdArrayNode",
}
# What skops stores the fitted values in.
CONTAINERS = {"dict", "list", "tuple", "slice", "str", "int", "float", "bool", "NoneType"}
# The model a Pipeline ends in (it is not preprocessing, and is left out); skops trusts these itself.
FINAL_MODULES = ("sklearn.linear_model.", "sklearn.ensemble.", "sklearn.tree.", "sklearn.svm.", "sklearn.neighbors.")


def import_skops(path: Path, name: str) -> tuple[dict[str, Any], list[str]]:
    """The tabular block the file's fitted transformer becomes, and notes on what was left out."""
    _check_types(path, name)
    try:
        import skops.io as sio  # the [tabular] extra; only this import loads it
    except ImportError as e:
        raise MissingExtra("tabular", "skops") from e
    try:
        untrusted = sio.get_untrusted_types(file=path)
        model = sio.load(path, trusted=[t for t in untrusted if t == "numpy.dtype"])
    except Exception as e:  # skops raises UntrustedTypesFoundException, and zip or JSON errors for a bad file
        raise PreprocessError(f"{name} cannot be loaded with skops ({type(e).__name__}: {str(e)[:200]})") from e
    notes: list[str] = []
    return {"kind": "tabular", "columns": list(_model_columns(model, name, notes))}, notes


def _check_types(path: Path, name: str) -> None:
    """Every type the file's schema names is mapped here, a container, an array, or a Pipeline's final model."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise PreprocessError(f"{name} is {size >> 20} MiB; a skops file may be at most {MAX_FILE_BYTES >> 20} MiB")
    try:
        with zipfile.ZipFile(path) as z:
            members = z.infolist()
            if sum(m.file_size for m in members) > MAX_UNPACKED_BYTES:
                raise PreprocessError(f"{name} unpacks to more than {MAX_UNPACKED_BYTES >> 20} MiB")
            info = z.getinfo("schema.json")
            if info.file_size > MAX_SCHEMA_BYTES:
                raise PreprocessError(f"{name}'s schema.json is larger than {MAX_SCHEMA_BYTES >> 20} MiB")
            schema = json.loads(z.read(info))
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as e:
        raise PreprocessError(f"{name} is not a skops file (a zip holding schema.json): {e}") from e
    refused = sorted({f"{m}.{c}" + _loader_words(lo) for m, c, lo in _types(schema, 0) if not _allowed(m, c, lo)})
    if refused:
        raise PreprocessError(
            f"{name} holds {', '.join(refused[:5])}, which the skops import does not map; it maps " + MAPPED_NAMES
        )


def _types(node: Any, depth: int) -> Iterator[tuple[str, str, str]]:
    if depth > 200:
        raise PreprocessError("the skops schema is nested more than 200 levels deep")
    if isinstance(node, dict):
        if "__class__" in node:
            yield str(node.get("__module__")), str(node["__class__"]), str(node.get("__loader__"))
        for value in node.values():
            yield from _types(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _types(value, depth + 1)


def _loader_words(loader: str) -> str:
    return "" if loader in LOADERS else f" (a {loader.removesuffix('Node').lower()} node)"


def _allowed(module: str, cls: str, loader: str) -> bool:
    if loader not in LOADERS:
        return False
    if (module, cls) in MAPPED:
        return True
    if module == "builtins":
        return cls in CONTAINERS
    if module == "numpy":
        return True  # arrays, dtypes and scalars, which skops builds without calling any code of the file
    return module.startswith(FINAL_MODULES)


def _model_columns(model: Any, name: str, notes: list[str]) -> Iterator[dict[str, Any]]:
    kind = type(model).__name__
    if kind == "Pipeline":
        steps = list(model.steps)
        if steps and not hasattr(steps[-1][1], "transform"):
            notes.append(f"the final step {type(steps[-1][1]).__name__} is the model, not preprocessing: left out")
            steps = steps[:-1]
        if len(steps) != 1 or type(steps[0][1]).__name__ != "ColumnTransformer":
            raise PreprocessError(f"{name}: a Pipeline is imported when its preprocessing is one ColumnTransformer")
        model = steps[0][1]
    elif kind != "ColumnTransformer":
        raise PreprocessError(f"{name} holds a {kind}; the skops import reads a ColumnTransformer or a Pipeline")
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        raise PreprocessError(
            f"{name}: the ColumnTransformer was fitted on an array; fit it on a DataFrame to name its columns"
        )
    for label, transformer, columns in model.transformers_:
        chosen = _column_names(columns, [str(n) for n in names], label)
        if isinstance(transformer, str):
            if transformer == "drop":
                continue
            if transformer != "passthrough":
                raise PreprocessError(f"transformer '{label}' is {transformer!r}; expected drop or passthrough")
            yield from ({"name": c, "dtype": "float64"} for c in chosen)
            continue
        yield from _transformer_columns(transformer, chosen, label)


def _column_names(columns: Any, names: list[str], label: str) -> list[str]:
    if isinstance(columns, str):
        return [columns]
    if isinstance(columns, slice):
        return names[columns]
    items = list(columns)
    if all(isinstance(c, bool) for c in items):
        return [n for n, keep in zip(names, items) if keep]
    out = []
    for c in items:
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, int) and 0 <= c < len(names):
            out.append(names[c])
        else:
            raise PreprocessError(f"transformer '{label}' selects columns {str(columns)[:60]}, which name no column")
    return out


def _transformer_columns(transformer: Any, columns: list[str], label: str) -> Iterator[dict[str, Any]]:
    """One transformer, or a Pipeline of an optional SimpleImputer and one transformer, over `columns`."""
    fills: list[Any] | None = None
    kind = type(transformer).__name__
    if kind == "Pipeline":
        steps = [s for _, s in transformer.steps if s != "passthrough"]
        if steps and type(steps[0]).__name__ == "SimpleImputer":
            fills = _fills(steps[0], label)
            steps = steps[1:]
        if len(steps) > 1:
            raise PreprocessError(f"transformer '{label}' chains {len(steps)} transforms; a column takes at most one")
        transformer = steps[0] if steps else None
    elif kind == "SimpleImputer":
        fills, transformer = _fills(transformer, label), None
    for k, column in enumerate(columns):
        entry = _column(transformer, k, column, label)
        if fills is not None:
            entry["missing"] = fills[k] if not isinstance(fills[k], str) or fills[k] != "error" else {"fill": "error"}
        yield entry


def _fills(imputer: Any, label: str) -> list[Any]:
    missing = imputer.missing_values
    if not (isinstance(missing, float) and math.isnan(missing)) and missing is not None:
        raise PreprocessError(f"transformer '{label}': SimpleImputer's missing_values {missing!r}; the import maps NaN")
    if getattr(imputer, "add_indicator", False):
        raise PreprocessError(
            f"transformer '{label}': SimpleImputer's add_indicator makes features the import does not map"
        )
    return [_scalar(v) for v in imputer.statistics_]


def _column(transformer: Any, k: int, column: str, label: str) -> dict[str, Any]:
    if transformer is None:
        return {"name": column, "dtype": "float64"}
    kind = type(transformer).__name__
    if kind == "StandardScaler":
        mean = float(transformer.mean_[k]) if transformer.with_mean else 0.0
        std = float(transformer.scale_[k]) if transformer.with_std else 1.0
        return {"name": column, "dtype": "float64", "standard": {"mean": mean, "std": std}}
    if kind == "RobustScaler":
        center = float(transformer.center_[k]) if transformer.with_centering else 0.0
        scale = float(transformer.scale_[k]) if transformer.with_scaling else 1.0
        return {"name": column, "dtype": "float64", "standard": {"mean": center, "std": scale}}
    if kind == "MaxAbsScaler":
        return {"name": column, "dtype": "float64", "standard": {"mean": 0.0, "std": float(transformer.scale_[k])}}
    if kind == "FunctionTransformer":
        if transformer.func is not None or transformer.inverse_func is not None:
            raise PreprocessError(f"transformer '{label}' is a FunctionTransformer with a function, not mapped")
        return {"name": column, "dtype": "float64"}
    if kind == "MinMaxScaler":
        if tuple(transformer.feature_range) != (0, 1) or transformer.clip:
            raise PreprocessError(f"transformer '{label}': MinMaxScaler with feature_range (0, 1) and clip=False only")
        low, high = float(transformer.data_min_[k]), float(transformer.data_max_[k])
        return {"name": column, "dtype": "float64", "min_max": {"min": low, "max": high}}
    if kind in ("OneHotEncoder", "OrdinalEncoder"):
        return _encoded(transformer, kind, k, column, label)
    raise PreprocessError(f"transformer '{label}' is a {kind}, which the skops import does not map")


def _encoded(encoder: Any, kind: str, k: int, column: str, label: str) -> dict[str, Any]:
    categories = [_scalar(c) for c in encoder.categories_[k]]
    if any(c is None for c in categories):
        raise PreprocessError(f"transformer '{label}': a missing value among the categories of '{column}'")
    if getattr(encoder, "infrequent_categories_", None) is not None and any(
        x is not None for x in encoder.infrequent_categories_
    ):
        raise PreprocessError(f"transformer '{label}': infrequent categories are not mapped")
    dtype = "string" if all(isinstance(c, str) for c in categories) else "float64"
    if dtype == "float64" and not all(isinstance(c, (int, float)) for c in categories):
        raise PreprocessError(f"transformer '{label}': the categories of '{column}' mix strings and numbers")
    policy = encoder.handle_unknown
    if kind == "OneHotEncoder":
        if encoder.drop_idx_ is not None:
            raise PreprocessError(f"transformer '{label}': OneHotEncoder's drop is not mapped")
        if policy not in ("error", "ignore"):
            raise PreprocessError(f"transformer '{label}': OneHotEncoder's handle_unknown {policy!r} is not mapped")
        return {"name": column, "dtype": dtype, "one_hot": {"categories": categories, "unknown": policy}}
    block: dict[str, Any] = {"categories": categories}
    if policy == "use_encoded_value":
        value = float(encoder.unknown_value)
        if math.isnan(value):
            raise PreprocessError(f"transformer '{label}': OrdinalEncoder's unknown_value NaN is not mapped")
        block["unknown"] = value
    return {"name": column, "dtype": dtype, "ordinal": block}


def _scalar(value: Any) -> Any:
    """A NumPy scalar as the plain value a manifest holds; None for NaN."""
    item = value.item() if hasattr(value, "item") else value
    if isinstance(item, float) and math.isnan(item):
        return None
    return item
