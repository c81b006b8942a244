"""Reading a tabular raw file as hostile input: CSV bounded in bytes, lines, fields, rows and columns, and
named by file and line when it is wrong; Parquet read where pyarrow is installed, and a check that could not
run (shown in the verdict, failed by --strict) where it is not."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from checker.preprocess.errors import MissingExtra, PreprocessError
from checker.preprocess.kind import Target
from checker.preprocess.tabular import rows as rows_module
from checker.preprocess.tabular.rows import read_table
from checker.preprocess.tabular.source import TabularSource
from checker.preprocess.tabular.spec import TabularSpec

TARGET = Target("x", 0, "float32", None, ["batch", 3])
COLUMNS = [
    {"name": "a", "dtype": "float64", "standard": {"mean": 1.0, "std": 2.0}},
    {"name": "b", "dtype": "int64", "min_max": {"min": 0, "max": 10}},
    {"name": "c", "dtype": "bool"},
]


def rebuild(path: Path, columns: list[dict[str, Any]] = COLUMNS, target: Target = TARGET, **block: Any) -> np.ndarray:
    spec = TabularSpec.from_manifest({"kind": "tabular", "columns": columns, **block})
    return TabularSource(spec, read_table(path, path.name), target).build()[target.name]


def write(tmp_path: Path, text: str | bytes, name: str = "rows.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_columns_by_header_name_with_bom_and_quotes(tmp_path: Path) -> None:
    raw = write(tmp_path, '\ufeffc,ignored,b,a\r\ntrue,"x, ""quoted""",5,3\r\nno,,10,-1\r\n')
    out = rebuild(raw)
    np.testing.assert_array_equal(out, np.array([[1.0, 0.5, 1.0], [-1.0, 1.0, 0.0]], np.float32))


def test_without_batch_axis_takes_exactly_one_row(tmp_path: Path) -> None:
    one = Target("x", 0, "float64", None, [3])
    assert rebuild(write(tmp_path, "a,b,c\n3,5,1\n"), target=one).shape == (3,)
    with pytest.raises(PreprocessError, match="exactly one row; this one has 2"):
        rebuild(write(tmp_path, "a,b,c\n3,5,1\n4,5,1\n"), target=one)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,b,c\n1,2\n", r"rows.csv line 2 has 2 fields; the header names 3"),
        ("a,b,c\n1,x,1\n", r"rows.csv line 2, column 'b': 'x' is not a int64 value"),
        ("a,b,c\n1,2,maybe\n", r"rows.csv line 2, column 'c': 'maybe' is not a bool value"),
        ("a,b,c\n1,2,1\ninf,2,1\n", r"rows.csv line 3, column 'a': 'inf' is not a float64 value"),
        ("a,b,c\n1,,1\n", r"rows.csv line 2, column 'b': the cell is missing .*missing: error"),
        ("a,b\n1,2\n", r"rows.csv has no column 'c' \(its header: a, b\)"),
        ("a,a,c\n", r"rows.csv line 1 names the column 'a' twice"),
        ("", r"rows.csv is empty"),
        ('a,b,c\n"1,2,1\n', r"rows.csv line \d+: not valid CSV"),
    ],
)
def test_bad_rows_are_named_by_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(PreprocessError, match=message):
        rebuild(write(tmp_path, text))


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(PreprocessError, match=r"rows.csv line 3: not UTF-8"):
        rebuild(write(tmp_path, b"a,b,c\n1,2,1\n\xff,2,1\n"))


def test_bounds_refuse_before_the_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A line of a million empty fields is refused by its length, before the csv module makes it a list.
    with pytest.raises(PreprocessError, match="line 2 is longer than"):
        rebuild(write(tmp_path, "a,b,c\n" + "," * (rows_module.MAX_LINE_CHARS + 1) + "\n"))
    with pytest.raises(PreprocessError, match=r"field larger than field limit|a field longer than"):
        rebuild(write(tmp_path, "a,b,c\n" + "9" * (rows_module.MAX_FIELD_CHARS + 1) + ",1,1\n"))
    monkeypatch.setattr(rows_module, "MAX_ROWS", 3)
    with pytest.raises(PreprocessError, match="line 5: more than 3 rows"):
        rebuild(write(tmp_path, "a,b,c\n" + "1,2,1\n" * 4))
    monkeypatch.setattr(rows_module, "MAX_FILE_BYTES", 64)
    with pytest.raises(PreprocessError, match="a tabular raw file may be at most"):
        rebuild(write(tmp_path, "a,b,c\n" + "1,2,1\n" * 20))


def test_missing_policies_and_unknown_categories(tmp_path: Path) -> None:
    raw = write(tmp_path, "n,k\n,red\n2,blue\n4,green\n")
    columns = [
        {"name": "n", "dtype": "float64", "missing": 3.5},
        {"name": "k", "dtype": "string", "one_hot": {"categories": ["red", "blue"], "unknown": "ignore"}},
    ]
    target = Target("x", 0, "float64", None, ["batch", 3])
    np.testing.assert_array_equal(rebuild(raw, columns, target), [[3.5, 1, 0], [2, 0, 1], [4, 0, 0]])
    ordinal = [columns[0], {"name": "k", "dtype": "string", "ordinal": {"categories": ["red", "blue"], "unknown": -1}}]
    np.testing.assert_array_equal(
        rebuild(raw, ordinal, Target("x", 0, "float64", None, ["batch", 2])), [[3.5, 0], [2, 1], [4, -1]]
    )
    refused = [columns[0], {"name": "k", "dtype": "string", "one_hot": {"categories": ["red", "blue"]}}]
    with pytest.raises(PreprocessError, match=r"rows.csv line 4, column 'k': 'green' is not one of its categories"):
        rebuild(raw, refused, target)
    with pytest.raises(PreprocessError, match="line 2, column 'n': the cell is missing"):
        rebuild(raw, [{"name": "n", "dtype": "float64"}, refused[1]], target, missing="error")


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ([{"name": "k", "dtype": "string"}], "a string column without ordinal or one_hot categories"),
        (
            [{"name": "a", "standard": {"mean": 0, "std": 1}, "min_max": {"min": 0, "max": 1}}],
            r"columns\[0\]: \{.*\} should not be valid under .*'standard', 'min_max'",
        ),
        ([{"name": "a", "standard": {"mean": 0, "std": 0}}], "std is 0"),
        ([{"name": "a"}, {"name": "a"}], "names 'a' twice"),
        ([{"name": "k", "dtype": "string", "one_hot": {"categories": ["x", "x"]}}], "lists a category twice"),
        ([{"name": "a", "missing": "zero"}], r"columns\[0\].missing is zero; expected a finite number"),
    ],
)
def test_bad_blocks_are_refused(columns: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(PreprocessError, match=message):
        TabularSpec.from_manifest({"kind": "tabular", "columns": columns})


def test_block_fill_is_checked_against_each_column() -> None:
    with pytest.raises(PreprocessError, match=r"the fill value of column 'a'"):
        TabularSpec.from_manifest({"kind": "tabular", "columns": [{"name": "a"}], "missing": "zero"})


def test_parquet_rows_read_like_csv(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"c": [True, False], "b": [5, 10], "a": [3.0, None], "other": ["x", "y"]})
    pq.write_table(table, tmp_path / "rows.parquet")
    filled = [{**COLUMNS[0], "missing": 1.0}, *COLUMNS[1:]]
    out = rebuild(tmp_path / "rows.parquet", filled)
    np.testing.assert_array_equal(out, np.array([[1.0, 0.5, 1.0], [0.0, 1.0, 0.0]], np.float32))
    with pytest.raises(PreprocessError, match=r"rows.parquet row 2, column 'a': the cell is missing"):
        rebuild(tmp_path / "rows.parquet")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(PreprocessError, match=r"bad\.parquet is not a readable Parquet file"):
        rebuild(tmp_path / "bad.parquet")


def test_parquet_without_pyarrow_is_an_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = write(tmp_path, b"PAR1", "rows.parquet")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as on a machine without the [tabular] extra
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingExtra, match=r"pyarrow is not installed.*\[tabular\]"):
        rebuild(raw)


def test_rows_times_features_are_bounded_before_the_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from checker.preprocess.tabular import build

    monkeypatch.setattr(build, "MAX_VALUES", 8)
    with pytest.raises(PreprocessError, match=r"3 rows of 3 features would make 9 values; at most 8"):
        rebuild(write(tmp_path, "a,b,c\n" + "1,2,1\n" * 3))
