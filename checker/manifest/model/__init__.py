"""The manifest as typed blocks: one definition per block (its fields, types, bounds, defaults and words), from
which the JSON Schema is generated and into which a valid manifest is built once (see core.py)."""
