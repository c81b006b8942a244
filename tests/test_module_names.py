"""The test modules share one namespace (pytest's default import mode puts each folder on sys.path): two modules
of one name in different folders make the second fail to collect, as an error of the whole run."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).parent


def test_every_test_and_helper_module_has_a_name_of_its_own() -> None:
    found: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if path.name not in ("__init__.py", "conftest.py") and "__pycache__" not in path.parts:
            found[path.name].append(str(path.relative_to(TESTS)))
    assert {name: paths for name, paths in found.items() if len(paths) > 1} == {}
