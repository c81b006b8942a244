"""Material for the tabular tests: scikit-learn's wine data (13 named columns, shipped with scikit-learn),
pipelines fitted on it, their classifiers exported with skl2onnx, and bundles whose raw inputs are CSV rows.

scikit-learn's own `transform` makes every stored tensor: it is the oracle the rebuilt tensors are held to.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from bundlekit import put, write_manifest

sklearn = pytest.importorskip("sklearn", reason="the tabular tests need scikit-learn (the [dev] extra)")
skl2onnx = pytest.importorskip("skl2onnx", reason="the tabular tests need skl2onnx (the [dev] extra)")
pd = pytest.importorskip("pandas", reason="the tabular tests need pandas (the [dev] extra)")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.datasets import load_wine  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline, make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler  # noqa: E402

WINE = load_wine()
NAMES: list[str] = list(WINE.feature_names)
HUE_BANDS = ["pale", "medium", "deep"]  # colour_intensity in thirds: a categorical column made from a real one
VINTAGE = ["young", "mature", "old"]  # an ordered category, from the proline column


def wine_frame(missing_every: int = 0) -> Any:
    """The wine data as a DataFrame with two categorical columns made from real ones (and, when asked, every
    `missing_every`-th magnesium cell missing)."""
    frame = pd.DataFrame(WINE.data, columns=NAMES)
    frame["hue_band"] = pd.cut(frame["color_intensity"], [0, 3.5, 6.5, 20], labels=HUE_BANDS).astype(str)
    frame["vintage"] = pd.cut(frame["proline"], [0, 600, 1000, 2000], labels=VINTAGE).astype(str)
    if missing_every:
        frame.loc[frame.index[::missing_every], "magnesium"] = np.nan
    return frame


def write_csv(path: Path, frame: Any, columns: Sequence[str] | None = None) -> Path:
    """The frame's rows as RFC 4180 CSV with a header; a NaN is an empty cell."""
    columns = list(columns or frame.columns)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(columns)
        for row in frame[columns].itertuples(index=False):
            out.writerow([_cell(v) for v in row])
    return path


def _cell(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return "" if np.isnan(value) else repr(float(value))  # repr: the shortest text that reads back exactly
    return str(value)


def scaled_classifier() -> Pipeline:
    """StandardScaler + LogisticRegression on the 13 wine columns."""
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(WINE.data, WINE.target)


def column_transformer(missing_every: int = 0) -> tuple[ColumnTransformer, LogisticRegression, Any]:
    """A ColumnTransformer (mean-imputed, scaled numbers; a one-hot and an ordinal category) and a classifier
    fitted on its output, with the frame they were fitted on."""
    frame = wine_frame(missing_every)
    numeric = [n for n in NAMES if n not in ("magnesium", "color_intensity")]
    ct = ColumnTransformer(
        [
            ("num", StandardScaler(), numeric),
            ("mg", make_pipeline(SimpleImputer(strategy="mean"), StandardScaler()), ["magnesium"]),
            ("band", OneHotEncoder(categories=[HUE_BANDS]), ["hue_band"]),
            ("age", OrdinalEncoder(categories=[VINTAGE]), ["vintage"]),
        ],
        sparse_threshold=0,
    ).fit(frame)
    classifier = LogisticRegression(max_iter=2000).fit(ct.transform(frame), WINE.target)
    return ct, classifier, frame


def to_onnx(model: Any, width: int, name: str = "features") -> onnx.ModelProto:
    """The fitted model exported by skl2onnx (class probabilities as a tensor, not a list of maps)."""
    from skl2onnx.common.data_types import FloatTensorType

    last = model.steps[-1][1] if isinstance(model, Pipeline) else model
    exported = skl2onnx.to_onnx(
        model,
        initial_types=[(name, FloatTensorType([None, width]))],
        options={id(last): {"zipmap": False}},
        target_opset={"": 17, "ai.onnx.ml": 3},
    )
    assert isinstance(exported, onnx.ModelProto)
    return exported


@dataclass(frozen=True)
class Case:
    name: str
    rows: Any  # the DataFrame rows the case's CSV holds
    stored: np.ndarray  # the tensor the application fed the graph (scikit-learn's transform)
    reference: Any  # the fitted scikit-learn model whose predict_proba on `model_input` is the reference
    model_input: Any  # what the reference model takes: the stored tensor, or the raw rows for a pipeline


def write_tabular_bundle(
    root: Path, model: onnx.ModelProto, prep: dict[str, Any], cases: list[Case], csv_columns: Sequence[str]
) -> Path:
    """A complete bundle: the graph, its labels, each case's CSV rows and stored tensor, and scikit-learn's own
    predictions as the reference outputs."""
    put(root / "model.onnx", model)
    put(root / "labels.txt", "".join(f"{n}\n" for n in WINE.target_names))
    width = int(cases[0].stored.shape[1])
    entries = []
    for case in cases:
        write_csv(root / "cases" / f"{case.name}.csv", case.rows, csv_columns)
        put(root / "cases" / f"{case.name}_in.npy", case.stored)
        probs = case.reference.predict_proba(case.model_input).astype(np.float32)
        label = case.reference.predict(case.model_input).astype(np.int64)
        put(root / "cases" / f"{case.name}_probs.npy", probs)
        put(root / "cases" / f"{case.name}_label.npy", label)
        entries.append(
            {
                "name": case.name,
                "tags": ["edge"],
                "inputs": {"features": f"cases/{case.name}_in.npy"},
                "expected": {"probabilities": f"cases/{case.name}_probs.npy", "label": f"cases/{case.name}_label.npy"},
                "raw": {"features": f"cases/{case.name}.csv"},
            }
        )
    manifest = {
        "manifest_version": 1,
        "release": {"name": "wine-classifier", "version": "1.0.0"},
        "graph": {"path": "model.onnx", "producer": {"tool": "skl2onnx", "version": skl2onnx.__version__}},
        "inputs": [
            {"name": "features", "dtype": "float32", "shape": ["batch", width], "meaning": "tabular"}
            | {"preprocessing": prep}
        ],
        "outputs": [
            {"name": "label", "dtype": "int64", "shape": ["batch"], "meaning": "other"},
            {"name": "probabilities", "dtype": "float32", "shape": ["batch", 3], "meaning": "probabilities"}
            | {"labels": {"path": "labels.txt"}},
        ],
        "runtime": {"name": "onnxruntime", "version": ">=1.17"},
        "validation": {"command": "checker verify bundle.yaml"},
        "comparison": {
            "reference": {"description": f"scikit-learn {sklearn.__version__} predict_proba, float64"},
            "cases": entries,
            "rules": [{"output": "probabilities", "check": "allclose", "atol": 1e-5}],
        },
    }
    write_manifest(root, manifest)
    return root
