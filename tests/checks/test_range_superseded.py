"""A stored tensor whose channels were reversed is out of the range its preprocessing implies *and* differs
from its raw photo rebuilt. The explained fidelity finding says which edit made it so; the range finding of the
same case says only that values are off, with a generic fix, so it is left out rather than shown first."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from bundlekit import EXAMPLE

from checker import findings as F
from checker.context import Options
from checker.release.lock import lock
from checker.render import markdown
from checker.reports.model import Report
from checker.verify import verify_bundle


def test_reversed_channels_give_the_explained_fidelity_finding_alone(tmp_path: Path) -> None:
    bundle = tmp_path / "m"
    shutil.copytree(EXAMPLE, bundle)
    stored = sorted(bundle.glob("cases/*/pixel_values.npy"))
    for path in stored:
        np.save(path, np.ascontiguousarray(np.load(path)[:, ::-1]))
    assert lock(bundle).ok
    report = verify_bundle(bundle, Options(gain_budget_s=0.0))
    ids = [f.id for f in report.findings]
    assert F.INPUTS_RANGE not in ids
    fidelity = [f for f in report.findings if f.id == F.INPUTS_FIDELITY]
    assert len(fidelity) == len(stored) and all("channels reversed" in str(f.details["explanation"]) for f in fidelity)
    shown = markdown.render(Report("0", [report]))
    first_fix = shown[shown.index("**Fix:**") :].split("\n", 1)[0]
    assert "channels reversed" in first_fix and "regenerate the case tensor" not in shown


def test_a_tensor_without_a_raw_file_still_gets_its_range_finding(tmp_path: Path) -> None:
    bundle = tmp_path / "m"
    shutil.copytree(EXAMPLE, bundle)
    path = bundle / "cases" / "dusk" / "pixel_values.npy"
    np.save(path, np.load(path) * np.float32(255))  # 0-255 where the preprocessing implies about +-2.6

    import yaml

    manifest = bundle / "bundle.yaml"
    data = yaml.safe_load(manifest.read_text())
    case = next(c for c in data["comparison"]["cases"] if c["name"] == "dusk")
    assert case.pop("raw", None) is not None
    manifest.write_text(yaml.safe_dump(data, sort_keys=False))
    assert lock(bundle).ok
    report = verify_bundle(bundle, Options(gain_budget_s=0.0))
    ranges = [f for f in report.findings if f.id == F.INPUTS_RANGE]
    assert [f.details.get("case") for f in ranges] == ["dusk"]
