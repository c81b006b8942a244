"""A tabular input's preprocessing: its columns in the model's feature order, each with its dtype, at most one
transform and what fills a missing cell; or a fitted scikit-learn transformer imported from a skops file.

Categories and fill values are `Numeric` where numbers: an integer stays one, as an int64 column holds it.
"""

# Annotations are evaluated as the class is made (no `from __future__ import annotations`): the builder and
# the generator read them as objects, and evaluating hundreds of annotation strings cost more than the build.

from itertools import combinations
from typing import Annotated, Literal

from checker.manifest.model.common import MAX_NUMBER, MAX_PATH, NonNegative, Number, Numeric
from checker.manifest.model.core import Block, Const, S

# Bounds on what a block can declare: no tabular model of an edge release has more features than this.
MAX_COLUMNS = 4096
MAX_CATEGORIES = 4096
MAX_NAME = 256  # a column's name, a category or a fill that is a string

DType = Literal["float64", "float32", "int64", "bool", "string"]
Value = Annotated[str, S(max_length=MAX_NAME)] | Annotated[Numeric, S(minimum=-MAX_NUMBER, maximum=MAX_NUMBER)] | bool


class Fill(Block):
    fill: Annotated[Value, S("Fill", "The value a missing cell becomes.")]


Missing = Annotated[
    Value | Fill,
    S(
        "Missing",
        "What an empty cell (Parquet: null) becomes: `error` (the default) refuses it naming case, row and column; "
        "a fill value replaces it before the column's transform; `{fill: value}` for a string column whose fill "
        "is the word error.",
    ),
]
Categories = Annotated[
    list[Value],
    S("Categories", "The categories in the encoding's order.", min_items=1, max_items=MAX_CATEGORIES),
]


class Standard(Block):
    WORDS = S("Standard scaling", "(x - mean) / std, in float64.")

    mean: Annotated[Number, S("Mean", "The mean subtracted.")]
    std: Annotated[Number, S("Std", "The divisor (not 0).")]


class MinMax(Block):
    WORDS = S("Min-max scaling", "(x - min) / (max - min), not clipped.")

    min: Annotated[Number, S("Min", "The value that becomes 0.")]
    max: Annotated[Number, S("Max", "The value that becomes 1.")]


class Ordinal(Block):
    WORDS = S("Ordinal encoding", "One feature: the value's index in `categories`.")

    categories: Categories
    unknown: Annotated[
        Annotated[Literal["error"], Const()] | Number,
        S("Unknown", "`error` (the default), or the number an unlisted category becomes."),
    ] = "error"


class OneHot(Block):
    WORDS = S("One-hot encoding", "One feature per category, in order: 1 at the value's category, else 0.")

    categories: Categories
    unknown: Annotated[
        Literal["error", "ignore"],
        S("Unknown", "`error` (the default), or `ignore`: an unlisted category is all zeros."),
    ] = "error"


# A column's transforms, of which it has at most one.
TRANSFORMS = ("standard", "min_max", "ordinal", "one_hot")


class Column(Block):
    EXTRA = {"not": {"anyOf": [{"required": list(pair)} for pair in combinations(TRANSFORMS, 2)]}}

    name: Annotated[str, S("Name", "The column's header name in the raw file.", min_length=1, max_length=MAX_NAME)]
    dtype: Annotated[DType, S("Dtype", "How a cell is parsed.")] = "float64"
    missing: Missing | None = None  # None: the block's policy
    standard: Standard | None = None
    min_max: MinMax | None = None
    ordinal: Ordinal | None = None
    one_hot: OneHot | None = None


class SkopsImport(Block):
    WORDS = S(
        "Import",
        "A fitted scikit-learn ColumnTransformer (or a Pipeline of one) saved with skops, whose columns stand in "
        "for `columns`.",
    )

    format: Annotated[Literal["skops"], S("Format", "The file's format.")]
    path: Annotated[str, S("Path", "The skops file in the bundle.", min_length=1, max_length=MAX_PATH)]


class Tabular(Block):
    TAG = "tabular"
    EXTRA = {"oneOf": [{"required": ["columns"]}, {"required": ["import"]}]}

    kind: Annotated[Literal["tabular"], Const(), S("Kind", "Named columns of CSV or Parquet rows.")]
    columns: Annotated[
        list[Column] | None,
        S(
            "Columns",
            "The columns in the model's feature order, each with its dtype and at most one transform.",
            min_items=1,
            max_items=MAX_COLUMNS,
        ),
    ] = None
    missing: Missing = "error"
    tolerance: Annotated[
        NonNegative,
        S(
            "Tolerance",
            "Each rebuilt feature must be within tolerance * max(1, |stored|) of the stored one (default 1e-6).",
        ),
    ] = 1e-6
    import_: SkopsImport | None = None
