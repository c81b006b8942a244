"""`checker device-kit` and `checker verify --device-outputs`: a device judged by what it sends back.

The stand-in device is the kit's own runners (run.py with this onnxruntime, run.mjs with onnxruntime-node),
whose folder a test then edits as a device could: outputs changed, zeroed, dropped, files added, a link, a
pickled array, an application's preprocessing that reverses the channels.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from bundlekit import EXAMPLE, write_manifest
from enginekit import cached, needs_node
from onnx import numpy_helper

from checker.platforms import npm
from checker.reports.files import validate

Cli = Callable[..., tuple[int, str, str]]
CASES = ("meadow", "harbour", "forest", "portrait", "dusk", "thumbnail", "panorama", "overexposed")
MEAN, STD = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)

# The application's own preprocessing, written as an application would (Pillow and NumPy, not the checker):
# the example's declared steps, with the channels in BGR order when REVERSED is set.
APP = """
import os
import numpy as np
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def preprocess(name, path):
    image = Image.open(path).convert("RGB")
    w, h = image.size
    if w < h:
        size = (36, int(36 * h / w + 0.5))
    else:
        size = (int(36 * w / h + 0.5), 36)
    image = image.resize(size, Image.BILINEAR)
    left, top = (size[0] - 32) // 2, (size[1] - 32) // 2
    pixels = np.asarray(image.crop((left, top, left + 32, top + 32)), np.float32)
    if os.environ.get("REVERSED"):
        pixels = pixels[..., ::-1]
    tensor = (pixels * np.float32(1 / 255) - MEAN) / STD
    return tensor.transpose(2, 0, 1)[None].astype(np.float32)
"""


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from checker.cli import main

    out = tmp_path_factory.mktemp("kit") / "kit"
    assert main(["device-kit", str(EXAMPLE), "-o", str(out)]) == 0
    return out


def _run_py(kit: Path, out: Path, *extra: str, env: dict[str, str] | None = None) -> Path:
    command = [sys.executable, str(kit / "run.py"), "--out", str(out), *extra]
    subprocess.run(command, check=True, timeout=300, env={**os.environ, **(env or {})})
    return out


@pytest.fixture(scope="module")
def sent(kit: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the stand-in device sends back, untouched: copied by each test that edits it."""
    return _run_py(kit, tmp_path_factory.mktemp("device") / "out", env={"KIT_DEVICE_NAME": "stand-in"})


def _copy(sent: Path, where: Path) -> Path:
    import shutil

    shutil.copytree(sent, where)
    return where


def _verify(cli: Cli, out: Path, *extra: str | Path, bundle: Path = EXAMPLE) -> tuple[int, dict[str, Any]]:
    code, _, err = cli("verify", bundle, "--no-progress", "--format", "json", "-o", out, *extra)
    assert code in (0, 1), err
    report = json.loads(out.read_text())
    validate(report, out)
    return code, report["bundles"][0]


def _device_set(bundle: dict[str, Any]) -> dict[str, Any]:
    [found] = [s for s in bundle["runtimes"] if (s.get("platform") or {}).get("engine") == "device"]
    return found


def _measured(result: dict[str, Any], graph: str, against: str, check: str) -> float:
    return next(
        r["measured"] for c in result["comparisons"] if c["graph"] == graph and c["against"] == against
        for r in c["rules"] if r["check"] == check
    )  # fmt: skip


def test_the_kit_holds_what_a_device_needs(kit: Path) -> None:
    said = json.loads((kit / "kit.json").read_text())
    assert said["kit_version"] == 1 and said["release"]["name"] == "mobilenet-tiny"
    assert [g["name"] for g in said["graphs"]] == ["baseline", "int8"]
    assert said["session"]["dimension_overrides"] == {"batch": 1}  # every case has a batch of one
    assert said["session"]["intra_op_num_threads"] == 1 and said["session"]["graph_optimization_level"] == "all"
    assert [c["name"] for c in said["cases"]] == list(CASES)
    for case in said["cases"]:
        entry = case["inputs"]["pixel_values"]
        stored = np.load(EXAMPLE / "cases" / case["name"] / "pixel_values.npy")
        assert np.array_equal(np.load(kit / entry["npy"]), stored)
        proto = onnx.TensorProto()
        proto.ParseFromString((kit / entry["pb"]).read_bytes())
        assert proto.name == "pixel_values" and np.array_equal(numpy_helper.to_array(proto), stored)
        raw = kit / case["raw"]["pixel_values"]["path"]
        assert raw.read_bytes() == (EXAMPLE / "cases" / case["name"] / "photo.png").read_bytes()
    shipped = ("run.py", "run.mjs", "worker.mjs", "README.md", "graphs/baseline/model.onnx")
    shipped += ("graphs/int8/model.int8.onnx",)
    for name in shipped:
        assert (kit / name).is_file(), name


def test_a_round_trip_through_the_stand_in_device_passes_figure_for_figure(
    cli: Cli, sent: Path, tmp_path: Path
) -> None:
    code, bundle = _verify(cli, tmp_path / "r.json", "--device-outputs", sent)
    assert code == 0
    device = _device_set(bundle)
    assert device["runtime"] == "platform stand-in (device)" and device["status"] == "pass"
    assert device["fingerprint"]["package"] == "onnxruntime" and device["fingerprint"]["device"] == "stand-in"
    import onnxruntime

    assert device["version"] == onnxruntime.__version__
    # The same onnxruntime on the same machine: the same figures as the checker's own run.
    for graph, against, check in (("baseline", "reference", "allclose"), ("int8", "reference", "score_drift")):
        assert _measured(device, graph, against, check) == _measured(bundle, graph, against, check)
    assert not [f for f in bundle["findings"] if f["id"].startswith("device.")]


def test_outputs_changed_on_the_device_fail_the_rule_that_sees_them(cli: Cli, sent: Path, tmp_path: Path) -> None:
    edited = _copy(sent, tmp_path / "edited")
    logits = edited / "outputs/baseline/dusk/logits.npy"
    values = np.load(logits)
    values[0, 3] += 0.25
    np.save(logits, values)
    code, bundle = _verify(cli, tmp_path / "r.json", "--device-outputs", edited)
    assert code == 1
    [rule] = [f for f in bundle["findings"] if f["id"] == "comparison.rule"]
    head = "[platform stand-in (device)] baseline: rule logits/allclose failed: worst case 'dusk'"
    assert rule["message"].startswith(head)
    # allclose's figure is the atol it needs at its rtol: the 0.25 added, less rtol times the expected value
    expected = float(np.load(EXAMPLE / "cases/dusk/logits.npy")[0, 3])
    figure = _measured(_device_set(bundle), "baseline", "reference", "allclose")
    assert figure == pytest.approx(abs(values[0, 3] - expected) - 1e-3 * abs(expected), abs=1e-6)


def test_all_zero_outputs_are_caught_by_the_sentinel(cli: Cli, sent: Path, tmp_path: Path) -> None:
    edited = _copy(sent, tmp_path / "zeroed")
    for case in ("meadow", "forest"):
        path = edited / f"outputs/int8/{case}/logits.npy"
        np.save(path, np.zeros_like(np.load(path)))
    code, bundle = _verify(cli, tmp_path / "r.json", "--device-outputs", edited)
    assert code == 1
    [sentinel] = [f for f in bundle["findings"] if f["id"] == "comparison.sentinel"]
    details = sentinel["details"]
    assert details["platform"] == "stand-in" and details["graph"] == "int8" and details["output"] == "logits"
    assert details["sentinel"] == "all_zero" and details["cases"] == ["meadow", "forest"]
    assert "is all zero in 2 of 8 case(s)" in sentinel["message"]


def test_a_missing_case_and_an_extra_one_are_named(cli: Cli, sent: Path, tmp_path: Path) -> None:
    import shutil

    edited = _copy(sent, tmp_path / "gaps")
    shutil.rmtree(edited / "outputs/int8/portrait")
    shutil.copytree(edited / "outputs/int8/dusk", edited / "outputs/int8/sunrise")
    code, bundle = _verify(cli, tmp_path / "r.json", "--device-outputs", edited)
    assert code == 1
    [missing] = [f for f in bundle["findings"] if f["id"] == "device.outputs"]
    assert missing["details"]["graph"] == "int8" and missing["details"]["cases"] == ["portrait"]
    [extra] = [f for f in bundle["findings"] if f["id"] == "device.extra"]
    assert extra["severity"] == "warning" and extra["details"]["cases"] == ["sunrise"]
    assert extra["details"]["files"] == ["outputs/int8/sunrise/logits.npy"]


def test_what_a_device_sends_is_read_as_untrusted(cli: Cli, sent: Path, tmp_path: Path) -> None:
    edited = _copy(sent, tmp_path / "hostile")
    secret = tmp_path / "secret.npy"
    np.save(secret, np.ones((1, 10), np.float32))
    target = edited / "outputs/baseline/meadow/logits.npy"
    target.unlink()
    target.symlink_to(secret)  # a link leaving the folder: named, never followed
    np.save(edited / "outputs/baseline/forest/logits.npy", np.array([{"x": 1}], dtype=object), allow_pickle=True)
    (edited / "device.json").write_text("{not json")
    code, bundle = _verify(cli, tmp_path / "r.json", "--device-outputs", edited)
    [broken] = [f for f in bundle["findings"] if f["id"] == "device.outputs"]
    assert code == 1 and "device.json is not JSON" in broken["message"]
    (edited / "device.json").write_text(json.dumps({"device": "hostile", "runtime": "x" * 10_000}))
    code, bundle = _verify(cli, tmp_path / "r2.json", "--device-outputs", edited)
    found = [f for f in bundle["findings"] if f["id"] == "device.outputs"]
    messages = " | ".join(f["message"] for f in found)
    assert "outputs/baseline/meadow/logits.npy" in messages and "no regular files" in messages
    assert "outputs/baseline/forest/logits.npy" in messages and "pickle" in messages.lower()
    device = _device_set(bundle)
    assert len(device["fingerprint"]["package"]) == 200  # what a device says is cut to size
    assert code == 1


def test_a_declared_device_is_judged_under_its_name_or_shown_as_not_run(cli: Cli, sent: Path, tmp_path: Path) -> None:
    import shutil

    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLE, bundle)
    import yaml

    data = yaml.safe_load((bundle / "bundle.yaml").read_text())
    data["runtime"]["platforms"] = [{"name": "pixel-8", "engine": "device", "description": "the app on a phone"}]
    data["release"].pop("digest")
    write_manifest(bundle, data)
    (bundle / "bundle.sha256").unlink()
    code, report = _verify(cli, tmp_path / "r.json", bundle=bundle)
    assert code == 0
    assert report["not_run"] == [{"check": "platform pixel-8 (device)", "reason": "no --device-outputs folder was "
                                  "given for it (checker device-kit makes the kit its runner needs)"}]  # fmt: skip
    code, _, _ = cli("verify", bundle, "--strict", "--no-progress")
    assert code == 1
    # The outputs of the example's kit: this bundle's digest differs (its manifest declares one more platform).
    code, report = _verify(cli, tmp_path / "s.json", "--device-outputs", sent, bundle=bundle)
    [other] = [f for f in report["findings"] if f["id"] == "device.outputs"]
    assert code == 1 and "not of this bundle" in other["message"]
    said = _copy(sent, tmp_path / "said")
    device = json.loads((said / "device.json").read_text())
    device.pop("release_digest")
    (said / "device.json").write_text(json.dumps(device))
    code, report = _verify(cli, tmp_path / "t.json", "--device-outputs", said, bundle=bundle)
    assert code == 0 and report["not_run"] == []
    assert _device_set(report)["runtime"] == "platform pixel-8 (device)"
    # A release that declares the device is packed only with its outputs judged.
    archive = tmp_path / "release.tar.gz"
    assert cli("pack", bundle, "-o", archive)[0] == 1 and not archive.exists()
    assert cli("pack", bundle, "-o", archive, "--device-outputs", said)[0] == 0 and archive.is_file()


def test_a_tensor_the_application_made_in_bgr_order_is_explained_as_such(kit: Path, cli: Cli, tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    app = tmp_path / "app.py"
    app.write_text(APP)
    faithful = _run_py(kit, tmp_path / "faithful", "--preprocess", str(app))
    code, bundle = _verify(cli, tmp_path / "f.json", "--device-outputs", faithful)
    assert code == 0 and not [f for f in bundle["findings"] if f["id"] == "device.preprocessing"]
    reversed_ = _run_py(kit, tmp_path / "bgr", "--preprocess", str(app), env={"REVERSED": "1"})
    code, bundle = _verify(cli, tmp_path / "b.json", "--device-outputs", reversed_)
    assert code == 1
    found = [f for f in bundle["findings"] if f["id"] == "device.preprocessing"]
    assert sorted(f["details"]["case"] for f in found) == sorted(CASES)
    for finding in found:
        assert finding["details"]["explanation"].startswith("with channels reversed"), finding["details"]
        assert finding["line"] is not None and finding["details"]["input"] == "pixel_values"


@needs_node
def test_the_node_runner_round_trip_passes(kit: Path, cli: Cli, tmp_path: Path) -> None:
    modules = cached(npm.NODE)
    out = tmp_path / "node"
    command = ["node", str(kit / "run.mjs"), "--out", str(out), "--modules", str(modules), "--platform", "edge-box"]
    subprocess.run(command, check=True, timeout=300)
    code, bundle = _verify(cli, tmp_path / "r.json", "--device-outputs", out)
    assert code == 0
    device = _device_set(bundle)
    assert device["runtime"] == "platform edge-box (device)" and device["package"] == "onnxruntime-node"
    assert device["fingerprint"]["node"].startswith("v") and device["status"] == "pass"


def test_a_device_that_disagrees_is_named_the_wrong_side_with_a_reproduction(
    cli: Cli, sent: Path, tmp_path: Path
) -> None:
    import onnxruntime as ort

    edited = _copy(sent, tmp_path / "planted")
    logits = edited / "outputs/baseline/dusk/logits.npy"
    values = np.load(logits)
    values[0, 3] += 0.25
    np.save(logits, values)
    repro = tmp_path / "repro"
    code, bundle = _verify(cli, tmp_path / "r.json", "--device-outputs", edited, "--reproductions", repro)
    [settled] = [f for f in bundle["findings"] if f["id"] == "platform.divergence"]
    details = settled["details"]
    assert code == 1 and details["wrong"] == "platform" and details["case"] == "dusk"
    assert details["platform_error"] == pytest.approx(0.25, abs=1e-3) and details["native_error"] < 1e-4
    assert details["subgraph"] == "graph"  # a device sends no intermediate tensors
    folder = Path(details["reproduction"])
    assert folder.is_relative_to(repro)
    feed = {p.stem: np.load(p) for p in (folder / "inputs").glob("*.npy")}
    [value] = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"]).run(None, feed)
    assert np.abs(value - np.load(folder / "outputs/platform/logits.npy")).max() == pytest.approx(0.25, abs=1e-3)
    assert np.abs(value - np.load(folder / "outputs/native/logits.npy")).max() < 1e-5
