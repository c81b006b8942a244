"""A case's raw rows: a CSV file (RFC 4180, UTF-8) or a Parquet file, read into columns by header name.

A raw file is hostile input. Its size is checked before it is read, each physical line and each field is
bounded while the csv module reads it (so a line of millions of empty fields is refused before it becomes a
list), and the table's rows and cells are counted as they come. Parquet's own metadata gives the rows, columns
and uncompressed bytes, checked before any column is decoded.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker.preprocess.errors import MissingExtra, PreprocessError

MAX_FILE_BYTES = 16 << 20
MAX_LINE_CHARS = 1 << 20
MAX_FIELD_CHARS = 1 << 16
MAX_ROWS = 1 << 16
MAX_FILE_COLUMNS = 1 << 14
MAX_CELLS = 1 << 22  # rows x columns kept: about 32 MiB of references

Cell = Any  # CSV: str, "" for an empty field; Parquet: a Python scalar, None for null


@dataclass(frozen=True)
class Table:
    """The file's columns by header name, each a list with one cell per data row, and where each row is."""

    name: str  # the raw file as the case names it
    header: tuple[str, ...]
    columns: dict[str, list[Cell]]
    lines: tuple[int, ...]  # each data row's place in the file: its CSV line, or its Parquet row (from 1)
    line_word: str = "line"

    @property
    def rows(self) -> int:
        return len(self.lines)

    def where(self, row: int) -> str:
        return f"{self.name} {self.line_word} {self.lines[row]}"


def read_table(raw: Path, raw_name: str) -> Table:
    size = raw.stat().st_size
    if size > MAX_FILE_BYTES:
        limit = MAX_FILE_BYTES >> 20
        raise PreprocessError(f"{raw_name} is {size >> 20} MiB; a tabular raw file may be at most {limit} MiB")
    if raw.suffix.lower() in (".parquet", ".pq"):
        return _read_parquet(raw, raw_name)
    return _read_csv(raw, raw_name)


def _read_csv(raw: Path, raw_name: str) -> Table:
    try:
        text = raw.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.read_bytes()[: e.start].count(b"\n") + 1
        raise PreprocessError(f"{raw_name} line {line}: not UTF-8 ({e.reason})") from e
    reader = csv.reader(_bounded_lines(text, raw_name), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise PreprocessError(f"{raw_name} is empty; a CSV raw file starts with a header row naming its columns")
        _check_header(header, raw_name)
        columns: dict[str, list[Cell]] = {name: [] for name in header}
        lines: list[int] = []
        for row in reader:
            line = reader.line_num
            if not row:
                continue  # a blank line is no row (the csv module gives it as an empty list)
            _check_row(row, header, raw_name, line, len(lines))
            for name, cell in zip(header, row):
                columns[name].append(cell)
            lines.append(line)
    except csv.Error as e:
        raise PreprocessError(f"{raw_name} line {reader.line_num}: not valid CSV ({e})") from e
    return Table(raw_name, tuple(header), columns, tuple(lines))


def _bounded_lines(text: str, raw_name: str) -> Iterator[str]:
    for number, line in enumerate(io.StringIO(text, newline=""), start=1):
        if len(line) > MAX_LINE_CHARS:
            raise PreprocessError(f"{raw_name} line {number} is longer than {MAX_LINE_CHARS} characters")
        yield line


def _check_header(header: list[str], raw_name: str) -> None:
    if len(header) > MAX_FILE_COLUMNS:
        raise PreprocessError(f"{raw_name} line 1 has {len(header)} columns; at most {MAX_FILE_COLUMNS}")
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise PreprocessError(f"{raw_name} line 1 names the column '{name[:60]}' twice")
        seen.add(name)


def _check_row(row: list[str], header: list[str], raw_name: str, line: int, done: int) -> None:
    if len(row) != len(header):
        raise PreprocessError(f"{raw_name} line {line} has {len(row)} fields; the header names {len(header)}")
    if done >= MAX_ROWS or (done + 1) * len(header) > MAX_CELLS:
        raise PreprocessError(f"{raw_name} line {line}: more than {min(MAX_ROWS, MAX_CELLS // len(header))} rows")
    for cell in row:
        if len(cell) > MAX_FIELD_CHARS:
            raise PreprocessError(f"{raw_name} line {line} has a field longer than {MAX_FIELD_CHARS} characters")


# Parquet: pyarrow is the optional [tabular] extra; the metadata is checked before a column is decoded.
MAX_PARQUET_BYTES = 256 << 20


def _read_parquet(raw: Path, raw_name: str) -> Table:
    try:
        import pyarrow.parquet as pq  # the [tabular] extra; only a Parquet raw file loads it
    except ImportError as e:
        raise MissingExtra("tabular", "pyarrow") from e
    try:
        pf = pq.ParquetFile(raw)
        meta = pf.metadata
        header = tuple(pf.schema_arrow.names)
        _check_header(list(header), raw_name)
        rows, width = int(meta.num_rows), len(header)
        unpacked = sum(int(meta.row_group(i).total_byte_size) for i in range(meta.num_row_groups))
        if rows > MAX_ROWS or rows * max(width, 1) > MAX_CELLS or unpacked > MAX_PARQUET_BYTES:
            raise PreprocessError(
                f"{raw_name} holds {rows} rows of {width} columns ({unpacked >> 20} MiB uncompressed); at most "
                f"{MAX_ROWS} rows, {MAX_CELLS} cells and {MAX_PARQUET_BYTES >> 20} MiB"
            )
        table = pf.read()
    except PreprocessError:
        raise
    except Exception as e:  # pyarrow raises its own ArrowException family, OSError and ValueError for a bad file
        raise PreprocessError(f"{raw_name} is not a readable Parquet file ({type(e).__name__}: {str(e)[:200]})") from e
    columns = {name: table.column(name).to_pylist() for name in header}
    return Table(raw_name, header, columns, tuple(range(1, table.num_rows + 1)), "row")
