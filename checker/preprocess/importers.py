"""Other tools' pipeline files read into steps (filled in below)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checker.preprocess.errors import PreprocessError
from checker.preprocess.steps import Step


def import_steps(value: Any, root: Path) -> tuple[Step, ...]:
    raise PreprocessError("preprocessing.import is not supported yet")
