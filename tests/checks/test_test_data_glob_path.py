"""One id per fact: an `onnx_test_data` glob that leaves the bundle is bundle.path, like any other path."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from bundlekit import linear_model, manifest, write_bundle

from checker import findings as F
from checker.context import Options
from checker.verify import verify_bundle


@pytest.mark.parametrize("pattern", ["../*", "/tmp/*", "cases/../../*"])
def test_a_glob_leaving_the_bundle_is_bundle_path(tmp_path: Path, pattern: str) -> None:
    root = write_bundle(tmp_path / "b", linear_model(), manifest())
    (tmp_path / "test_data_set_0").mkdir()
    data = yaml.safe_load((root / "bundle.yaml").read_text())
    data["comparison"]["cases"].append({"name": "outside", "onnx_test_data": pattern})
    (root / "bundle.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    report = verify_bundle(root, Options())
    paths = [f for f in report.findings if f.id == F.BUNDLE_PATH]
    assert len(paths) == 1 and pattern in paths[0].message, report.findings
    line = (root / "bundle.yaml").read_text().splitlines()[paths[0].line - 1]
    assert "onnx_test_data" in line
    assert not [f for f in report.findings if f.id == F.COMPARISON_CASE], report.findings
    assert report.status() == "fail"
