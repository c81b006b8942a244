"""Fixtures for the hostile-input tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from checker.context import Options
from checker.reports.model import BundleReport
from checker.verify import verify_bundle


@pytest.fixture
def verify() -> Callable[[Path], BundleReport]:
    """verify_bundle in-process, with default options."""

    def run(path: Path) -> BundleReport:
        return verify_bundle(path, Options())

    return run
