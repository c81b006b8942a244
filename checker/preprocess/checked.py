"""Plain data handed to the preprocessing parsers (by a test, an importer, a Hugging Face config, a skops
file), judged by its block's schema first and built into the typed block the parsers read, as a manifest's
own blocks are after the schema gate (manifest/fragment.py)."""

from __future__ import annotations

from typing import Any

from checker.manifest.fragment import Refused
from checker.manifest.fragment import checked as fragment_checked
from checker.manifest.model.core import Keys
from checker.preprocess.errors import PreprocessError


def checked(tp: Any, data: Any, where: str | Keys) -> Any:
    """`data` as type `tp`, standing at `where` (a path such as "preprocessing.steps", or keys); a
    PreprocessError naming every field the schema refuses."""
    at = (where,) if isinstance(where, str) else where
    try:
        return fragment_checked(tp, data, at)
    except Refused as e:
        raise PreprocessError(str(e)) from None
