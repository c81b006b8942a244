"""Runtime environments for the tests: one cache for the whole test session (and the next ones on this machine)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def runtime_cache(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """CHECKER_CACHE_DIR under pytest's own cache folder, so each onnxruntime is installed once, not per test."""
    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    root = cache.mkdir("checker-runtimes") if cache is not None else tmp_path / "runtimes"
    monkeypatch.setenv("CHECKER_CACHE_DIR", str(root))
    return Path(root)
