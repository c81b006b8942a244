"""Rebuilding model inputs from application inputs (images, audio, text, tables) with the declared preprocessing."""

# The kinds kinds.KINDS holds, by name: for a caller that must know whether a block has one without loading
# them (tests/preprocess/test_step_entries.py holds the two to each other).
KIND_NAMES = ("image", "text", "audio", "tabular")
