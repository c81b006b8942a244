"""The platforms' cache for the tests: the aarch64 userland is built once for the test session and the next."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def platform_cache(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """CHECKER_CACHE_DIR under pytest's own cache folder (the userland goes to its `platforms`), so that it is
    built once, not per test."""
    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    root = cache.mkdir("checker-platforms") if cache is not None else tmp_path / "cache"
    monkeypatch.setenv("CHECKER_CACHE_DIR", str(root))
    return Path(root)
