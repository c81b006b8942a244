"""The fuzz suite: every input family through `checker verify`, for CHECKER_FUZZ_SECONDS each.

No input may end in an internal error (exit 3), and every report must validate against the report schema.
The default budget is short; the scheduled workflow (.github/workflows/fuzz.yml) runs it for longer.
"""

from __future__ import annotations

import pytest
from generators import FAMILIES
from harness import check_input, fuzz, fuzz_seconds


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_no_input_crashes_or_breaks_the_report_schema(family: str) -> None:
    runs = fuzz(FAMILIES[family](), fuzz_seconds(), check_input)
    assert runs >= 1
