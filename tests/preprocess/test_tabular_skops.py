"""`checker preprocess --import skops`: a fitted scikit-learn ColumnTransformer saved with skops becomes the
tabular block whose rebuilt rows equal scikit-learn's own `transform`; `checker preprocess` and `checker case
add` rebuild tabular raw rows like other kinds; a file naming a type the import does not map is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from tabkit import NAMES, WINE, Case, column_transformer, to_onnx, write_csv, write_tabular_bundle

from checker.preprocess.errors import PreprocessError
from checker.preprocess.kind import Target
from checker.preprocess.tabular.rows import read_table
from checker.preprocess.tabular.skops_import import import_skops
from checker.preprocess.tabular.source import TabularSource
from checker.preprocess.tabular.spec import TabularSpec

sio = pytest.importorskip("skops.io", reason="the skops import tests need skops (the [tabular] extra)")
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import FunctionTransformer, MaxAbsScaler, MinMaxScaler, RobustScaler  # noqa: E402

Cli = Callable[..., tuple[int, str, str]]


def imported(cli: Cli, path: Path) -> tuple[dict[str, Any], str]:
    code, out, err = cli("preprocess", "--import", "skops", str(path))
    assert code == 0, err
    return yaml.safe_load(out)["preprocessing"], out


def rebuilt(block: dict[str, Any], raw: Path, width: int) -> np.ndarray:
    spec = TabularSpec.from_manifest(block)
    target = Target("features", 0, "float64", None, ["batch", width])
    return TabularSource(spec, read_table(raw, raw.name), target).build()["features"]


def test_imported_block_rebuilds_scikit_learns_transform(tmp_path: Path, cli: Cli) -> None:
    ct, classifier, frame = column_transformer(missing_every=7)
    sio.dump(make_pipeline(ct, classifier), tmp_path / "pipeline.skops")
    block, out = imported(cli, tmp_path / "pipeline.skops")
    assert "# the final step LogisticRegression is the model, not preprocessing: left out" in out
    raw = write_csv(tmp_path / "rows.csv", frame)
    oracle = ct.transform(frame)
    assert frame["magnesium"].isna().any()  # the imputer's fill is in the block and exercised
    np.testing.assert_allclose(rebuilt(block, raw, oracle.shape[1]), oracle, rtol=0, atol=1e-12)


def test_scalers_of_every_kind_match_their_transform(tmp_path: Path, cli: Cli) -> None:
    frame = __import__("tabkit").wine_frame()
    ct = ColumnTransformer(
        [
            ("minmax", MinMaxScaler(), NAMES[:3]),
            ("robust", RobustScaler(), NAMES[3:6]),
            ("maxabs", MaxAbsScaler(), NAMES[6:9]),
            ("keep", "passthrough", NAMES[9:]),
        ]
    ).fit(frame)
    sio.dump(ct, tmp_path / "ct.skops")
    block, _ = imported(cli, tmp_path / "ct.skops")
    raw = write_csv(tmp_path / "rows.csv", frame.iloc[::3])
    np.testing.assert_allclose(rebuilt(block, raw, 13), ct.transform(frame.iloc[::3]), rtol=1e-12, atol=1e-12)


def test_imported_block_passes_verify_and_case_add_and_preprocess_rebuild(tmp_path: Path, cli: Cli) -> None:
    ct, classifier, frame = column_transformer(missing_every=7)
    sio.dump(ct, tmp_path / "ct.skops")
    block, _ = imported(cli, tmp_path / "ct.skops")
    rows = frame.iloc[::5]
    stored = ct.transform(rows).astype(np.float32)
    case = Case("rows", rows, stored, make_pipeline(ct, classifier), rows)
    root = write_tabular_bundle(tmp_path / "b", to_onnx(classifier, 16), block, [case], list(frame.columns))

    out = tmp_path / "made.npy"
    code, _, err = cli("preprocess", str(root), "--input", "features", str(root / "cases" / "rows.csv"), "-o", str(out))
    assert code == 0, err
    np.testing.assert_array_equal(np.load(out), stored)

    more = write_csv(tmp_path / "more.csv", frame.iloc[2::5])
    probs = make_pipeline(ct, classifier).predict_proba(frame.iloc[2::5]).astype(np.float32)
    np.save(tmp_path / "probs.npy", probs)
    np.save(tmp_path / "label.npy", classifier.predict(ct.transform(frame.iloc[2::5])).astype(np.int64))
    code, said, err = cli(
        "case", "add", str(root), "--name", "more", "--raw", f"features={more}", "--tag", "edge",
        "--expected", f"probabilities={tmp_path / 'probs.npy'}", "--expected", f"label={tmp_path / 'label.npy'}",
    )  # fmt: skip
    assert code == 0, err
    assert "made from the raw inputs by the declared preprocessing: features" in said
    np.testing.assert_array_equal(
        np.load(root / "cases" / "more" / "features.npy"), ct.transform(frame.iloc[2::5]).astype(np.float32)
    )
    code, report, err = cli("verify", str(root), "--format", "json")
    assert code == 0, report
    assert '"inputs.fidelity"' not in report and WINE.target_names[0] in (root / "labels.txt").read_text()


def test_unmapped_types_are_refused_by_name_before_loading(tmp_path: Path) -> None:
    frame = __import__("tabkit").wine_frame()
    ct = ColumnTransformer([("log", FunctionTransformer(np.log1p), NAMES)]).fit(frame)
    sio.dump(ct, tmp_path / "log.skops")
    with pytest.raises(
        PreprocessError, match=r"log\.skops holds numpy\.log1p \(a function node\), which the skops import does not map"
    ):
        import_skops(tmp_path / "log.skops", "log.skops")
    unnamed = ColumnTransformer([("s", MinMaxScaler(), [0, 1])]).fit(WINE.data)
    sio.dump(unnamed, tmp_path / "unnamed.skops")
    with pytest.raises(PreprocessError, match="fitted on an array"):
        import_skops(tmp_path / "unnamed.skops", "unnamed.skops")
    (tmp_path / "bad.skops").write_bytes(b"not a zip")
    with pytest.raises(PreprocessError, match=r"bad\.skops is not a skops file"):
        import_skops(tmp_path / "bad.skops", "bad.skops")


def test_import_errors_reach_the_command_line_without_a_traceback(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "bad.skops").write_bytes(b"not a zip")
    code, _, err = cli("preprocess", "--import", "skops", str(tmp_path / "bad.skops"))
    assert code in (1, 2) and "bad.skops is not a skops file" in err and "Traceback" not in err


def imported_bundle(root: Path, model: Any) -> Path:
    """A bundle whose tabular block imports `model` (saved with skops in the bundle) instead of listing columns."""
    ct, classifier, frame = column_transformer(missing_every=7)
    rows = frame.iloc[::5]
    stored = ct.transform(rows).astype(np.float32)
    case = Case("rows", rows, stored, make_pipeline(ct, classifier), rows)
    block = {"kind": "tabular", "import": {"format": "skops", "path": "preprocessing.skops"}}
    root = write_tabular_bundle(root, to_onnx(classifier, 16), block, [case], list(frame.columns))
    sio.dump(model if model is not None else make_pipeline(ct, classifier), root / "preprocessing.skops")
    return root


def test_a_bundle_may_import_its_fitted_column_transformer(tmp_path: Path, cli: Cli) -> None:
    root = imported_bundle(tmp_path, None)
    code, report, _ = cli("verify", str(root), "--format", "json")
    assert code == 0, report
    assert '"inputs.fidelity"' not in report and '"bundle.unlisted"' not in report


def test_an_imported_file_with_a_function_is_one_fidelity_error(tmp_path: Path, cli: Cli) -> None:
    frame = __import__("tabkit").wine_frame()
    hostile = ColumnTransformer([("log", FunctionTransformer(np.log1p), NAMES)]).fit(frame)
    root = imported_bundle(tmp_path, hostile)
    code, report, _ = cli("verify", str(root), "--format", "json")
    assert code == 1
    assert "preprocessing.skops holds numpy.log1p (a function node)" in report and '"inputs.fidelity"' in report
