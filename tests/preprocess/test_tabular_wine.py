"""The tabular kind on scikit-learn's wine data: the rebuilt tensor held to scikit-learn's own `transform`,
real classifiers exported by skl2onnx and run by onnxruntime inside `checker verify`, and each planted
mistake named by its one edit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from tabkit import (
    HUE_BANDS,
    NAMES,
    VINTAGE,
    WINE,
    Case,
    column_transformer,
    scaled_classifier,
    to_onnx,
    wine_frame,
    write_tabular_bundle,
)

from checker.context import Options
from checker.preprocess.kind import Target
from checker.preprocess.tabular.rows import read_table
from checker.preprocess.tabular.source import TabularSource
from checker.preprocess.tabular.spec import TabularSpec
from checker.verify import verify_paths

TARGET = Target("features", 0, "float32", None, ["batch", 13])


def scaled_columns(scaler: Any, names: list[str]) -> list[dict[str, Any]]:
    return [
        {"name": n, "dtype": "float64", "standard": {"mean": float(m), "std": float(s)}}
        for n, m, s in zip(names, scaler.mean_, scaler.scale_)
    ]


def verify(root: Path, strict: bool = False) -> dict[str, Any]:
    report = verify_paths([str(root)], Options(strict=strict)).to_dict()
    (bundle,) = report["bundles"]
    assert not [f for f in bundle["findings"] if f["id"] == "manifest.schema"], bundle["findings"]
    return bundle


def fidelity(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in bundle["findings"] if f["id"] == "inputs.fidelity"]


def errors(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in bundle["findings"] if f["severity"] == "error"]


@pytest.fixture(scope="module")
def pipeline() -> Any:
    return scaled_classifier()


def outside_graph(root: Path, pipeline: Any, columns: list[dict[str, Any]], rows: slice = slice(None)) -> Path:
    """The classifier alone in the graph; the application standardizes the 13 columns (StandardScaler)."""
    scaler, classifier = pipeline.steps[0][1], pipeline.steps[-1][1]
    frame = wine_frame().iloc[rows]
    stored = scaler.transform(frame[NAMES].to_numpy()).astype(np.float32)
    case = Case("rows", frame, stored, classifier, stored)
    prep = {"kind": "tabular", "columns": columns}
    return write_tabular_bundle(root, to_onnx(classifier, 13), prep, [case], [*NAMES, "hue_band"])


def test_rebuilt_rows_equal_scikit_learns_transform(tmp_path: Path, pipeline: Any) -> None:
    scaler = pipeline.steps[0][1]
    frame = wine_frame().iloc[::7]
    from tabkit import write_csv

    raw = write_csv(tmp_path / "rows.csv", frame, list(reversed([*NAMES, "hue_band"])))  # by name, not place
    spec = TabularSpec.from_manifest({"kind": "tabular", "columns": scaled_columns(scaler, NAMES)})
    rebuilt = TabularSource(spec, read_table(raw, "rows.csv"), TARGET).build()["features"]
    oracle = scaler.transform(frame[NAMES].to_numpy())
    assert rebuilt.dtype == np.float32 and rebuilt.shape == (len(frame), 13)
    np.testing.assert_array_equal(rebuilt, oracle.astype(np.float32))


def test_faithful_declaration_passes_verify(tmp_path: Path, pipeline: Any) -> None:
    root = outside_graph(tmp_path, pipeline, scaled_columns(pipeline.steps[0][1], NAMES), slice(0, 178, 5))
    bundle = verify(root)
    assert errors(bundle) == [] and bundle["status"] == "pass"


def test_swapped_columns_are_named(tmp_path: Path, pipeline: Any) -> None:
    columns = scaled_columns(pipeline.steps[0][1], NAMES)
    at = {c["name"]: i for i, c in enumerate(columns)}
    i, j = at["magnesium"], at["proline"]
    columns[i], columns[j] = columns[j], columns[i]
    (finding,) = fidelity(verify(outside_graph(tmp_path, pipeline, columns, slice(0, 178, 5))))
    assert "when `proline` and `magnesium` are swapped in `columns`" in finding["message"]
    assert finding["line"] > 0 and finding["details"]["explanation"].startswith("when `proline`")


def test_missing_scaler_is_named_fitted_from_the_rows(tmp_path: Path, pipeline: Any) -> None:
    # The scaler was fitted on all 178 rows, so a case holding them all fits it again exactly.
    columns = [{"name": n, "dtype": "float64"} for n in NAMES]
    (finding,) = fidelity(verify(outside_graph(tmp_path, pipeline, columns)))
    assert "with `standard` added on 13 unscaled columns, fitted from the case's 178 rows" in finding["message"]


def test_scaler_applied_twice_names_the_graphs_scaler(tmp_path: Path, pipeline: Any) -> None:
    """The whole pipeline is in the graph (an ai.onnx.ml Scaler first): the declared `standard` scales twice."""
    frame = wine_frame().iloc[::9]
    stored = frame[NAMES].to_numpy().astype(np.float32)
    prep = {"kind": "tabular", "columns": scaled_columns(pipeline.steps[0][1], NAMES)}
    root = write_tabular_bundle(
        tmp_path, to_onnx(pipeline, 13), prep, [Case("rows", frame, stored, pipeline, stored)], NAMES
    )
    (finding,) = fidelity(verify(root))
    message = finding["message"]
    assert "without every `standard`; the graph scales this input itself, with the ai.onnx.ml Scaler" in message
    assert "a scaler applied twice" in message


def test_whole_pipeline_in_graph_declared_raw_passes(tmp_path: Path, pipeline: Any) -> None:
    frame = wine_frame().iloc[::9]
    stored = frame[NAMES].to_numpy().astype(np.float32)
    prep = {"kind": "tabular", "columns": [{"name": n, "dtype": "float32"} for n in NAMES]}
    root = write_tabular_bundle(
        tmp_path, to_onnx(pipeline, 13), prep, [Case("rows", frame, stored, pipeline, stored)], NAMES
    )
    bundle = verify(root)
    assert errors(bundle) == [] and bundle["status"] == "pass"


def test_unlisted_and_extra_columns_are_named(tmp_path: Path, pipeline: Any) -> None:
    frame = wine_frame().iloc[::9]
    stored = frame[NAMES].to_numpy().astype(np.float32)
    model = to_onnx(pipeline, 13)
    left_out = [{"name": n, "dtype": "float64"} for n in NAMES if n != "ash"]
    root = write_tabular_bundle(
        tmp_path / "a",
        model,
        {"kind": "tabular", "columns": left_out},
        [Case("r", frame, stored, pipeline, stored)],
        NAMES,
    )
    (finding,) = fidelity(verify(root))
    assert "with the file's unlisted column `ash` put in `columns` before `alcalinity_of_ash`" in finding["message"]
    extra = [{"name": n, "dtype": "float64"} for n in [*NAMES[:4], "hue_band", *NAMES[4:]]]
    extra[4] = {"name": "hue_band", "dtype": "string", "one_hot": {"categories": HUE_BANDS}}
    root = write_tabular_bundle(
        tmp_path / "b",
        model,
        {"kind": "tabular", "columns": extra},
        [Case("r", frame, stored, pipeline, stored)],
        [*NAMES, "hue_band"],
    )
    (finding,) = fidelity(verify(root))
    assert "with `hue_band` left out of `columns`" in finding["message"]


def ct_columns(ct: Any) -> list[dict[str, Any]]:
    """The ColumnTransformer's fitted parameters written out by hand, as a manifest declares them."""
    num, mg, band, age = (ct.named_transformers_[k] for k in ("num", "mg", "band", "age"))
    imputer, mg_scaler = mg.steps[0][1], mg.steps[1][1]
    columns = scaled_columns(num, list(ct.transformers_[0][2]))
    columns.append(
        {"name": "magnesium", "dtype": "float64", "missing": float(imputer.statistics_[0])}
        | {"standard": {"mean": float(mg_scaler.mean_[0]), "std": float(mg_scaler.scale_[0])}}
    )
    columns.append({"name": "hue_band", "dtype": "string", "one_hot": {"categories": list(band.categories_[0])}})
    columns.append({"name": "vintage", "dtype": "string", "ordinal": {"categories": list(age.categories_[0])}})
    return columns


def encoded_bundle(root: Path, columns: list[dict[str, Any]]) -> Path:
    ct, classifier, frame = column_transformer(missing_every=11)
    rows = frame.iloc[::4]
    stored = ct.transform(rows).astype(np.float32)
    prep = {"kind": "tabular", "columns": columns}
    model = to_onnx(classifier, stored.shape[1])
    case = Case("rows", rows, stored, make_pipeline(ct, classifier), rows)  # the reference: ct, then classifier
    return write_tabular_bundle(root, model, prep, [case], list(frame.columns))


def test_column_transformer_with_encodings_and_imputer_passes(tmp_path: Path) -> None:
    ct, _, frame = column_transformer(missing_every=11)
    assert frame["magnesium"].isna().sum() > 5  # the mean fill is exercised
    bundle = verify(encoded_bundle(tmp_path, ct_columns(ct)))
    assert errors(bundle) == [] and bundle["status"] == "pass"


def test_wrong_category_order_is_named(tmp_path: Path) -> None:
    ct, _, _ = column_transformer(missing_every=11)
    columns = ct_columns(ct)
    columns[-2]["one_hot"]["categories"] = ["deep", "medium", "pale"]
    (finding,) = fidelity(verify(encoded_bundle(tmp_path / "a", columns)))
    assert "when `deep` and `pale` are swapped in the categories of `hue_band` (one_hot)" in finding["message"]
    columns = ct_columns(ct)
    columns[-1]["ordinal"]["categories"] = ["young", "old", "mature"]
    (finding,) = fidelity(verify(encoded_bundle(tmp_path / "b", columns)))
    assert "when `old` and `mature` are swapped in the categories of `vintage` (ordinal)" in finding["message"]


def test_refused_missing_cell_names_case_line_and_column(tmp_path: Path) -> None:
    ct, _, _ = column_transformer(missing_every=11)
    columns = ct_columns(ct)
    del columns[-3]["missing"]
    (finding,) = fidelity(verify(encoded_bundle(tmp_path, columns)))
    assert "cases/rows.csv line 2, column 'magnesium': the cell is missing" in finding["message"]
    assert "case 'rows'" in finding["message"] and finding["line"] > 0


def test_categories_match_scikit_learns_order() -> None:
    ct, _, _ = column_transformer()
    assert list(ct.named_transformers_["band"].categories_[0]) == HUE_BANDS
    assert list(ct.named_transformers_["age"].categories_[0]) == VINTAGE
    assert len(WINE.feature_names) == 13


def parquet_bundle(root: Path, pipeline: Any) -> Path:
    """Two cases whose raw rows are Parquet files (two: one case alone draws a coverage warning)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    frames = {"odd": wine_frame().iloc[1::9], "even": wine_frame().iloc[::9]}
    cases = [
        Case(k, f, f[NAMES].to_numpy().astype(np.float32), pipeline, f[NAMES].to_numpy()) for k, f in frames.items()
    ]
    prep = {"kind": "tabular", "columns": [{"name": n, "dtype": "float32"} for n in NAMES]}
    root = write_tabular_bundle(root, to_onnx(pipeline, 13), prep, cases, NAMES)
    text = (root / "bundle.yaml").read_text()
    for name, frame in frames.items():
        pq.write_table(pa.Table.from_pandas(frame[NAMES], preserve_index=False), root / "cases" / f"{name}.parquet")
        (root / "cases" / f"{name}.csv").unlink()
        text = text.replace(f"cases/{name}.csv", f"cases/{name}.parquet")
    (root / "bundle.yaml").write_text(text)
    return root


def test_parquet_case_is_rebuilt(tmp_path: Path, pipeline: Any) -> None:
    pytest.importorskip("pyarrow")
    root = parquet_bundle(tmp_path, pipeline)
    bundle = verify(root, strict=True)
    assert bundle["status"] == "pass" and bundle["not_run"] == [], bundle["findings"]
    text = (root / "bundle.yaml").read_text().replace("name: ash\n", "name: ashes\n")
    (root / "bundle.yaml").write_text(text)
    finding, _ = fidelity(verify(root))
    assert "odd.parquet has no column 'ashes'" in finding["message"]


def test_parquet_without_pyarrow_is_a_check_not_run(
    tmp_path: Path, pipeline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow")
    root = parquet_bundle(tmp_path, pipeline)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as on a machine without the [tabular] extra
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    bundle = verify(root)
    assert bundle["status"] == "pass" and errors(bundle) == []
    assert [n["check"] for n in bundle["not_run"]] == ["tabular fidelity"]
    assert "[tabular]" in bundle["not_run"][0]["reason"]
    strict = verify(root, strict=True)
    assert strict["status"] == "fail" and errors(strict) == []  # failed for the check that could not run


def test_application_scaling_before_a_graph_that_scales_is_named(tmp_path: Path, pipeline: Any) -> None:
    """The application standardizes the rows and the graph (StandardScaler inside) does it again."""
    frame = wine_frame()
    stored = pipeline.steps[0][1].transform(frame[NAMES].to_numpy()).astype(np.float32)
    prep = {"kind": "tabular", "columns": [{"name": n, "dtype": "float64"} for n in NAMES]}
    case = Case("rows", frame, stored, pipeline, frame[NAMES].to_numpy())
    (finding,) = fidelity(verify(write_tabular_bundle(tmp_path, to_onnx(pipeline, 13), prep, [case], NAMES)))
    message = finding["message"]
    assert "with `standard` added on 13 unscaled columns, fitted from the case's 178 rows" in message
    assert "the graph scales this input too, with the ai.onnx.ml Scaler" in message and "applied twice" in message


def explained(columns: list[dict[str, Any]], stored: np.ndarray, raw: Path) -> str | None:
    from checker.preprocess.tabular.kind import KIND

    spec = KIND.parse({"kind": "tabular", "columns": columns}, raw.parent)
    target = Target("features", 0, "float64", None, ["batch", stored.shape[1]])
    source = KIND.open(spec, [target], raw, raw.name, raw.parent)
    return KIND.explain(source, "features", stored, spec.tolerance).found


def test_min_max_dropped_or_doubled_is_named(tmp_path: Path) -> None:
    from sklearn.preprocessing import MinMaxScaler
    from tabkit import write_csv

    frame = wine_frame().iloc[::6]
    raw = write_csv(tmp_path / "rows.csv", frame, NAMES)
    scaler = MinMaxScaler().fit(WINE.data)
    columns = [
        {"name": n, "dtype": "float64", "min_max": {"min": float(lo), "max": float(hi)}}
        for n, lo, hi in zip(NAMES, scaler.data_min_, scaler.data_max_)
    ]
    once = scaler.transform(frame[NAMES].to_numpy())
    assert explained(columns, frame[NAMES].to_numpy(), raw) == "without every `min_max`"
    assert explained(columns, scaler.transform(once), raw) == "with every scaler (`standard`, `min_max`) applied twice"
    assert explained(columns, once, raw) is None  # the declared columns reproduce it: no edit does
