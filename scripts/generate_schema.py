"""Writes schemas/manifest.schema.json from the manifest's typed blocks (checker/manifest/model/).

The committed file is what the checker validates with and what editors read; tests/manifest/test_model_schema.py
fails when it differs from what this writes. Run it after changing a block: `python scripts/generate_schema.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from checker.manifest.model.generate import dumps
from checker.manifest.model.root import manifest_schema

TARGET = Path(__file__).resolve().parents[1] / "schemas" / "manifest.schema.json"


def main() -> int:
    TARGET.write_text(dumps(manifest_schema()), encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
