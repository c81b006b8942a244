"""Shards that belong together: `checker report merge` joins only reports of one release (the same bundle
digest and manifest), and the joined report of a failing variant equals the unsharded one finding for finding.

The failing variant is the example's graph with one weight tensor tripled: it fails by a wide margin on every
CPU, so no verdict here depends on the instruction set.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from releasekit import edit

from checker.release.lock import lock

Cli = Callable[..., tuple[int, str, str]]


def _verify(cli: Cli, bundle: Path, out: Path, *extra: str) -> dict[str, Any]:
    # Untimed (--gain-budget 0): a timing differs from run to run, and these reports are compared finding for finding.
    code, _, err = cli("verify", bundle, "--format", "json", "-o", out, "--gain-budget", "0", *extra)
    assert code in (0, 1), err
    return json.loads(out.read_text())


def _broken_variant(bundle: Path) -> None:
    """Replace the int8 variant (whose figures depend on the CPU) by a float graph with a tripled weight."""
    model = onnx.load(str(bundle / "model.onnx"))
    weight = next(t for t in model.graph.initializer if numpy_helper.to_array(t).size > 1)
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * np.float32(3), weight.name))
    onnx.save(model, str(bundle / "model.broken.onnx"))
    (bundle / "model.int8.onnx").unlink()

    def use_broken(tree: Any) -> None:
        variant = tree["variants"][0]
        variant["name"], variant["graph"] = "broken", {"path": "model.broken.onnx"}
        variant["transform"] = {"tool": "a test that triples a weight", "version": "1", "settings": {}}
        variant["rules"] = [{"output": "logits", "check": "allclose", "atol": 1.0e-4, "rtol": 1.0e-3}]
        del variant["drift_rules"]

    edit(bundle / "bundle.yaml", use_broken)
    assert lock(bundle).ok


def _key(finding: dict[str, Any]) -> str:
    return json.dumps(finding, sort_keys=True)


@pytest.mark.parametrize("count", [2, 3])
def test_merged_shards_of_a_failing_variant_equal_the_unsharded_run(
    cli: Cli, example: Path, tmp_path: Path, count: int
) -> None:
    _broken_variant(example)
    whole = _verify(cli, example, tmp_path / "whole.json")["bundles"][0]
    assert [c["status"] for c in whole["comparisons"]] == ["pass", "fail"]
    files = [tmp_path / f"s{k}.json" for k in range(1, count + 1)]
    shards = [_verify(cli, example, f, "--shard", f"{k}/{count}")["bundles"][0] for k, f in enumerate(files, 1)]
    # Every shard with cases fails the variant and diagnoses it on its own worst case.
    diagnosed = [f for s in shards for f in s["findings"] if f["id"] == "variant.diagnosis"]
    assert len(diagnosed) == sum(1 for s in shards if s["comparisons"] and s["comparisons"][-1]["status"] == "fail")
    assert len(diagnosed) > 1

    code, _, err = cli("report", "merge", *files, "--format", "json", "-o", tmp_path / "merged.json")
    merged = json.loads((tmp_path / "merged.json").read_text())["bundles"][0]
    assert code == 1, err
    assert sorted(map(_key, merged["findings"])) == sorted(map(_key, whole["findings"]))
    assert merged["comparisons"][-1]["diagnosis"] == whole["comparisons"][-1]["diagnosis"]
    assert merged["digest"] == whole["digest"] and merged["manifest_digest"] == whole["manifest_digest"]


def test_shards_of_different_manifests_are_refused_naming_the_files(cli: Cli, example: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "s1.json", tmp_path / "s2.json"
    _verify(cli, example, first, "--shard", "1/2")

    def loosen(tree: Any) -> None:
        tree["variants"][0]["rules"][1]["max"] = 0.5

    edit(example / "bundle.yaml", loosen)
    assert lock(example).ok
    _verify(cli, example, second, "--shard", "2/2")
    code, _, err = cli("report", "merge", first, second)
    assert code == 2
    assert "judged different bundle digests" in err and str(first) in err and str(second) in err


def test_reports_of_one_digest_but_different_manifests_are_refused(cli: Cli, example: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "s1.json", tmp_path / "s2.json"
    _verify(cli, example, first, "--shard", "1/2")
    report = _verify(cli, example, second, "--shard", "2/2")
    assert report["bundles"][0]["manifest_digest"].startswith("sha256:")
    report["bundles"][0]["manifest_digest"] = "sha256:" + "0" * 64  # a report from another manifest's run
    second.write_text(json.dumps(report))
    code, _, err = cli("report", "merge", first, second)
    assert code == 2 and "judged different manifests" in err and str(second) in err


def test_shards_of_one_release_still_merge(cli: Cli, example: Path, tmp_path: Path) -> None:
    files = [tmp_path / "s1.json", tmp_path / "s2.json"]
    for k, f in enumerate(files, 1):
        _verify(cli, example, f, "--shard", f"{k}/2")
    code, _, err = cli("report", "merge", *files, "--format", "json", "-o", tmp_path / "m.json")
    assert code == 0, err


def test_merged_shards_judge_task_rules_on_the_whole_set(cli: Cli, tmp_path: Path) -> None:
    """accuracy_drop over all cases and over the edge slice: the merged report sums every case's counts, so its
    figures, intervals and too-few-cases warnings are the unsharded run's, not the first shard's."""
    from taskkit import labelled_bundle

    drop = {"output": "logits", "check": "accuracy_drop", "k": 1, "max": 0.1}
    bundle = labelled_bundle(tmp_path / "b", 40, 4, [drop, {**drop, "tags": ["edge"]}])
    whole = _verify(cli, bundle, tmp_path / "whole.json")["bundles"][0]
    files = [tmp_path / f"s{k}.json" for k in (1, 2, 3)]
    shards = [_verify(cli, bundle, f, "--shard", f"{k}/3")["bundles"][0] for k, f in enumerate(files, 1)]

    def task_rules(report: dict[str, Any]) -> list[dict[str, Any]]:
        return [r for c in report["comparisons"] for r in c["rules"] if r["check"] == "accuracy_drop"]

    assert all(task_rules(s)[0]["statistics"]["items"] < 40 for s in shards)  # each shard saw a part
    code, _, err = cli("report", "merge", *files, "--format", "json", "-o", tmp_path / "merged.json")
    assert code == 1, err
    merged = json.loads((tmp_path / "merged.json").read_text())["bundles"][0]
    assert task_rules(merged) == task_rules(whole)
    assert [r["statistics"]["items"] for r in task_rules(merged)] == [40, 4]
    assert sorted(map(_key, merged["findings"])) == sorted(map(_key, whole["findings"]))
    assert any(f["id"] == "comparison.too_few_cases" for f in whole["findings"])
