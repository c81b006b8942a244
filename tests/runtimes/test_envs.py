"""--runtime SPECs, the choice of oldest/newest, and the cache's offline rules (no install here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.runtimes.envs import (
    READY,
    RuntimeSpecError,
    Wanted,
    cache_root,
    choose,
    ensure,
    env_folder,
    parse_spec,
    requirements,
)


@pytest.mark.parametrize(
    ("spec", "package", "version"),
    [
        ("1.17.3", "onnxruntime", "1.17.3"),
        ("oldest", "onnxruntime", "oldest"),
        ("newest", "onnxruntime", "newest"),
        ("onnxruntime-openvino==1.24.1", "onnxruntime-openvino", "1.24.1"),
        ("onnxruntime_gpu==newest", "onnxruntime-gpu", "newest"),
    ],
)
def test_specs(spec: str, package: str, version: str) -> None:
    assert parse_spec(spec) == Wanted(spec, package, version)


@pytest.mark.parametrize("spec", ["latest", "1.17.x", "onnx runtime==1.2", "==1.17", "a==b"])
def test_bad_specs(spec: str) -> None:
    with pytest.raises(RuntimeSpecError):
        parse_spec(spec)


def _wheel(folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(b"")


def test_offline_oldest_and_newest_come_from_the_wheelhouse_and_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHECKER_CACHE_DIR", str(tmp_path / "cache"))  # empty: not the tests' shared cache
    house = tmp_path / "wheels"
    for version in ("1.16.3", "1.17.0", "1.18.1", "2.0.0"):
        _wheel(house, f"onnxruntime-{version}-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl")
    _wheel(house, "onnxruntime-1.17.1-cp38-cp38-win_amd64.whl")  # not for this platform
    _wheel(house, "onnxruntime-1.19.0rc1-cp311-cp311-manylinux_2_27_x86_64.whl")  # a pre-release
    oldest, newest = Wanted("oldest", "onnxruntime", "oldest"), Wanted("newest", "onnxruntime", "newest")
    assert choose(oldest, ">=1.17,<2", True, [str(house)]) == "1.17.0"
    assert choose(newest, ">=1.17,<2", True, [str(house)]) == "1.18.1"
    ready = env_folder("onnxruntime", "1.18.4")
    ready.mkdir(parents=True)
    (ready / READY).write_text("{}")
    assert choose(newest, ">=1.17,<2", True, [str(house)]) == "1.18.4"  # a cached environment counts too
    with pytest.raises(RuntimeSpecError, match="no release of onnxruntime admitted by '>=3'"):
        choose(oldest, ">=3", True, [str(house)])


def test_offline_without_the_environment_or_a_wheelhouse_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHECKER_CACHE_DIR", str(tmp_path))
    with pytest.raises(RuntimeSpecError, match="not in the runtime cache"):
        ensure("onnxruntime", "1.17.3", offline=True, find_links=[])
    assert cache_root() == tmp_path / "runtimes"


def test_an_old_onnxruntime_gets_the_numpy_it_was_built_for() -> None:
    assert requirements("onnxruntime", "1.17.0") == ["onnxruntime==1.17.0", "numpy<2"]
    assert requirements("onnxruntime-openvino", "1.24.1") == ["onnxruntime-openvino==1.24.1"]
