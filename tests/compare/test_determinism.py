"""Each graph runs its first cases twice before its rules are judged: a graph whose outputs differ between runs
is comparison.nondeterministic, named before any rule, with its random nodes (a seed does not help: onnxruntime
seeds a node once per session and draws on in every run)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest
from bundlekit import linear_model, manifest, write_bundle
from onnx import helper

Cli = Callable[..., tuple[int, str, str]]


def noisy(seed: float | None) -> onnx.ModelProto:
    """The linear model plus uniform noise below 1e-4: within the rule's tolerance, but different each run."""
    model = linear_model()
    graph = model.graph
    graph.node[-1].output[0] = "clean"
    extra = {"seed": seed} if seed is not None else {}
    graph.node.extend(
        [
            helper.make_node("RandomUniformLike", ["clean"], ["noise"], name="jitter", low=0.0, high=1e-4, **extra),
            helper.make_node("Add", ["clean", "noise"], ["y"]),
        ]
    )
    return model


def _findings(cli: Cli, root: Path, model: onnx.ModelProto) -> tuple[int, list[dict]]:
    rules = [{"output": "y", "check": "allclose", "atol": 1e-3, "rtol": 1e-4}]
    data = manifest(comparison={"reference": {"description": "NumPy"}, "cases": [], "rules": rules})
    write_bundle(root, model, data)
    out = root.parent / "r.json"
    code, _, err = cli("verify", root, "--format", "json", "-o", out)
    assert code in (0, 1), err
    return code, json.loads(out.read_text())["bundles"][0]["findings"]


@pytest.mark.parametrize(("seed", "marked"), [(None, "no seed"), (7.0, "seeded")])
def test_a_random_node_makes_the_graph_nondeterministic(
    cli: Cli, tmp_path: Path, seed: float | None, marked: str
) -> None:
    code, findings = _findings(cli, tmp_path / "b", noisy(seed))
    ids = [f["id"] for f in findings]
    assert code == 1 and ids.count("comparison.nondeterministic") == 1
    [found] = [f for f in findings if f["id"] == "comparison.nondeterministic"]
    assert found["severity"] == "error" and found["details"]["nodes"] == [f"jitter (RandomUniformLike, {marked})"]
    assert found["details"]["graph"] == "baseline" and 0 < found["details"]["difference"] < 1e-4
    assert "comparison.rule" not in ids  # within the rule's tolerance: only the determinism fails it


def test_a_deterministic_graph_passes(cli: Cli, tmp_path: Path) -> None:
    code, findings = _findings(cli, tmp_path / "b", linear_model())
    assert code == 0 and "comparison.nondeterministic" not in [f["id"] for f in findings]
