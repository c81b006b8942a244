"""The tabular kind: named columns of CSV or Parquet rows, scaled and encoded into one feature tensor."""
