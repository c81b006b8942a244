"""--platform node, browser-wasm, browser-webgpu: the comparison in onnxruntime-node and in onnxruntime-web's WASM
and WebGPU backends in headless Chromium, by the same worker requests and the same rules as every platform.

Real parts only: Node.js, Debian's chromium (WebGPU through SwiftShader where there is no GPU), and the npm
packages from the checker's cache, run --offline. Expectations come from independent runs (onnxruntime-node
called directly, `node --version`, `chromium --version`), never from this machine's CPU.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from bundlekit import EXAMPLE, manifest, put, write_manifest
from enginekit import (
    JS,
    cached,
    cached_version,
    chromium_version,
    needs_browser,
    needs_node,
    needs_node_tool,
    node_outputs,
    node_version,
)
from onnx import TensorProto, helper

from checker.platforms import npm
from checker.render import render
from checker.reports.files import validate
from checker.reports.model import Report

Cli = Callable[..., tuple[int, str, str]]
ENGINES = ("node", "browser-wasm", "browser-webgpu")
pytestmark = pytest.mark.xdist_group("engines")  # one browser at a time on a small machine


def _verify(cli: Cli, bundle: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    code, text, err = cli("verify", bundle, "--offline", "--no-progress", "--format", "json", "-o", out, *extra)
    assert code in (0, 1), err
    report = json.loads(out.read_text())
    validate(report, out)
    return code, report, text


# -- the worker's files, read and written by the JavaScript side ---------------------------------------------

_ROUND_TRIP = """
import { readFileSync, writeFileSync } from 'node:fs';
import { readZip, parseNpy, npyBytes, zipBytes } from '%s';
const members = readZip(new Uint8Array(readFileSync(process.argv[2])));
const out = {};
for (const [name, bytes] of Object.entries(members)) {
  const array = parseNpy(bytes);
  out[name] = npyBytes(array.type, array.dims, array.data);
}
writeFileSync(process.argv[3], zipBytes(out));
"""


@needs_node_tool
def test_npz_files_numpy_writes_are_read_and_written_back_by_the_javascript_worker(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    arrays = {
        "f32": rng.standard_normal((2, 3, 4)).astype(np.float32),
        "f16": rng.standard_normal((5,)).astype(np.float16),
        "f64": rng.standard_normal((1, 1)),
        "i64": rng.integers(-(2**40), 2**40, (3, 2)),
        "i32": rng.integers(-100, 100, (7,)).astype(np.int32),
        "u8": rng.integers(0, 255, (2, 2, 3)).astype(np.uint8),
        "i8": rng.integers(-128, 127, (4,)).astype(np.int8),
        "flag": np.array([True, False, True]),
        "scalar": np.float32(2.5) * np.ones((), np.float32),
        "empty": np.zeros((0, 3), np.float32),
    }
    np.savez(tmp_path / "in.npz", **arrays)
    script = tmp_path / "trip.mjs"
    script.write_text(_ROUND_TRIP % (JS / "worker.mjs").as_uri())
    subprocess.run(["node", str(script), str(tmp_path / "in.npz"), str(tmp_path / "out.npz")], check=True, timeout=120)
    with np.load(tmp_path / "out.npz", allow_pickle=False) as back:
        assert sorted(back.files) == sorted(arrays)
        for name, array in arrays.items():
            assert back[name].dtype == array.dtype and back[name].shape == array.shape, name
            assert np.array_equal(back[name], array), name


# -- the example on every engine -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of the example on the three engines (a browser takes seconds to start): its report and text."""
    from checker.cli import main

    out = tmp_path_factory.mktemp("engines") / "r.json"
    args = ["verify", str(EXAMPLE), "--offline", "--no-progress", "--format", "json", "-o", str(out)]
    for engine in ENGINES:
        args += ["--platform", engine]
    code = main(args)
    report = json.loads(out.read_text())
    validate(report, out)
    return {"code": code, "report": report}


def _sets(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["platform"]["name"]: s for s in report["bundles"][0].get("runtimes", []) if s.get("platform")}


def _figure(result: dict[str, Any], graph: str, against: str, check: str) -> float:
    return next(
        r["measured"] for c in result["comparisons"] if c["graph"] == graph and c["against"] == against
        for r in c["rules"] if r["check"] == check
    )  # fmt: skip


def _score_drift(outputs: list[list[float]], expected: list[np.ndarray]) -> float:
    """score_drift with softmax, as docs/manifest.md defines it: the expected top class's score change."""
    worst = 0.0
    for got, want in zip(outputs, expected):
        a = np.asarray(got, np.float64).reshape(want.shape)
        e = want.astype(np.float64)
        sa, se = np.exp(a - a.max(-1, keepdims=True)), np.exp(e - e.max(-1, keepdims=True))
        sa, se = sa / sa.sum(-1, keepdims=True), se / se.sum(-1, keepdims=True)
        top = e.argmax(-1)
        rows = np.arange(e.shape[0])
        worst = max(worst, float(np.abs(sa[rows, top] - se[rows, top]).max()))
    return worst


@needs_node
@needs_browser
def test_the_example_holds_on_node_and_in_the_browser_with_each_fingerprint(
    engines: dict[str, Any], tmp_path: Path
) -> None:
    report = engines["report"]
    assert engines["code"] == 0 and report["status"] == "pass"
    sets = _sets(report)
    assert sorted(sets) == sorted(ENGINES)
    assert all(s["status"] == "pass" for s in sets.values())
    node = sets["node"]
    assert node["package"] == "onnxruntime-node" and node["version"] == cached_version(npm.NODE)
    assert node["fingerprint"]["node"] == node_version() and node["fingerprint"]["backend"] == "cpu"
    # Figure for figure what onnxruntime-node computes alone, outside the checker's worker.
    cases = sorted((EXAMPLE / "cases").iterdir())
    inputs = [c / "pixel_values.npy" for c in cases]
    expected = [np.load(c / "logits.npy") for c in cases]
    alone = node_outputs(EXAMPLE / "model.int8.onnx", inputs, tmp_path)
    assert _figure(node, "int8", "reference", "score_drift") == pytest.approx(_score_drift(alone, expected), abs=1e-6)
    for engine, backend in (("browser-wasm", "wasm"), ("browser-webgpu", "webgpu")):
        found = sets[engine]
        fingerprint = found["fingerprint"]
        assert found["package"] == "onnxruntime-web" and found["version"] == cached_version(npm.WEB)
        assert found["provider"] == backend and fingerprint["backend"] == backend
        assert fingerprint["browser"].endswith(chromium_version())
        assert fingerprint["cross_origin_isolated"] is True  # COOP and COEP: WASM threads as deployed
        assert found["platform"]["arch"] == "wasm32" and found["platform"]["engine"] == engine
        # The baseline holds its allclose rule there: the backends' float kernels agree to 1e-4.
        assert _figure(found, "baseline", "reference", "allclose") <= 1e-4
    adapter = sets["browser-webgpu"]["fingerprint"]["adapter"]
    assert adapter["vendor"] and adapter["architecture"]  # SwiftShader's where there is no GPU
    placed = sets["browser-webgpu"]["fingerprint"]["placed"]
    assert placed.get("WebGpuExecutionProvider", 0) > 0


@needs_node
@needs_browser
def test_each_platform_and_its_fingerprint_is_said_in_text_and_markdown(engines: dict[str, Any]) -> None:
    report = Report.from_dict(engines["report"])
    assert Report.from_dict(report.to_dict()).to_dict() == report.to_dict()
    text = render("text", report, color=False)
    markdown = render("markdown", report)
    browser = _sets(engines["report"])["browser-webgpu"]["fingerprint"]["browser"]
    for shown in (text, markdown):
        for engine in ENGINES:
            assert f"platform {engine}" in shown
        assert browser in shown and "onnxruntime-web" in shown and "onnxruntime-node" in shown


# -- what a backend cannot do is named ---------------------------------------------------------------------


def _det_model(through_text: bool) -> onnx.ModelProto:
    """Relu, Det, Sin on [2, 3, 3]; with `through_text` the determinant goes through a string and back."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu0"), helper.make_node("Det", ["r"], ["d"], name="det0")]
    last = "d"
    if through_text:
        nodes += [
            helper.make_node("Cast", ["d"], ["t"], name="to_text", to=TensorProto.STRING),
            helper.make_node("Cast", ["t"], ["back"], name="to_number", to=TensorProto.FLOAT),
        ]
        last = "back"
    nodes.append(helper.make_node("Sin", [last], ["y"], name="sin0"))
    graph = helper.make_graph(
        nodes, "det", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _det_bundle(root: Path, **runtime: Any) -> Path:
    import onnxruntime as ort

    put(root / "model.onnx", _det_model(False))
    put(root / "text.onnx", _det_model(True))
    session = ort.InferenceSession(str(root / "model.onnx"), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(2)
    cases = []
    for i in range(2):
        x = rng.uniform(0, 1, (2, 3, 3)).astype(np.float32)
        put(root / f"cases/x{i}.npy", x)
        put(root / f"cases/y{i}.npy", session.run(None, {"x": x})[0])
        cases.append({"name": f"c{i}", "tags": ["edge"], "inputs": {"x": f"cases/x{i}.npy"},
                      "expected": {"y": f"cases/y{i}.npy"}})  # fmt: skip
    data = manifest(
        inputs=[{"name": "x", "dtype": "float32", "shape": [2, 3, 3], "meaning": "tensor",
                 "preprocessing": {"kind": "custom", "description": "matrices"}}],
        outputs=[{"name": "y", "dtype": "float32", "shape": [2], "meaning": "regression"}],
        variants=[{"name": "text", "graph": {"path": "text.onnx"}, "derived_from": "baseline",
                   "transform": {"tool": "hand-made", "version": "1", "settings": {}},
                   "rules": [{"output": "y", "check": "allclose", "atol": 1e-4, "rtol": 1e-3}]}],
    )  # fmt: skip
    data["runtime"].update(runtime)
    data["comparison"]["cases"] = cases
    data["comparison"]["rules"] = [{"output": "y", "check": "allclose", "atol": 1e-4, "rtol": 1e-3}]
    write_manifest(root, data)
    return root


@needs_browser
def test_a_node_webgpu_leaves_to_the_cpu_and_an_operator_it_cannot_run_are_named(cli: Cli, tmp_path: Path) -> None:
    bundle = _det_bundle(tmp_path / "det", platforms=[{"engine": "browser-webgpu"}])
    code, report, _ = _verify(cli, bundle, tmp_path / "r.json")  # declared: judged without --platform
    found = report["bundles"][0]["findings"]
    [fallback] = [f for f in found if f["id"] == "platform.fallback"]
    assert fallback["severity"] == "warning" and fallback["details"]["graph"] == "baseline"
    assert fallback["details"]["nodes"] == [{"op_type": "Det", "name": "det0"}]
    assert "Det (det0)" in fallback["message"] and "[platform browser-webgpu]" in fallback["message"]
    [load] = [f for f in found if f["id"] == "runtime.load"]
    assert load["details"]["node"] == "to_text" and "text" in load["message"]
    assert code == 1  # the variant could not be judged there
    strict = _det_bundle(tmp_path / "forbid", platforms=[{"engine": "browser-webgpu"}], fallback="forbid")
    _, report, _ = _verify(cli, strict, tmp_path / "f.json")
    [fallback] = [f for f in report["bundles"][0]["findings"] if f["id"] == "platform.fallback"]
    assert fallback["severity"] == "error"


# -- the loopback server serves the page and the files of a request, nothing else ---------------------------


@needs_browser
def test_the_browser_server_serves_only_the_page_and_what_a_request_names(tmp_path: Path) -> None:
    from checker.platforms.browser import BrowserWorker

    dist = cached(npm.WEB)
    assert dist is not None
    worker = BrowserWorker("wasm", dist / "onnxruntime-web" / "dist", "platform browser-wasm", 60.0)
    try:
        port = worker._server.server_address[1]
        base = f"http://127.0.0.1:{port}"
        secret = tmp_path / "secret.txt"
        secret.write_text("no")
        token = worker._token
        refused_paths = ("/page.html", f"/{token}/file/none", f"/{token}/ort/..%2F..%2Fpackage.json",
                         f"/{token}/ort/../../package.json", f"/{token}/{secret}", "/etc/passwd")  # fmt: skip
        for path in refused_paths:
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(base + path, timeout=30)
            refused.value.close()
            assert refused.value.code == 404, path
        with urllib.request.urlopen(f"{base}/{worker._token}/page.html", timeout=30) as page:
            assert page.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
            assert page.headers["Cross-Origin-Opener-Policy"] == "same-origin"
        request = urllib.request.Request(f"{base}/{worker._token}/file/x", data=b"1" * 10, method="PUT")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        refused.value.close()
        assert refused.value.code == 400
    finally:
        worker.close()
