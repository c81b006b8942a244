"""What the engine platforms' tests need: Node.js, Debian's chromium, and onnxruntime-node and onnxruntime-web in
the checker's own npm cache. The tests never reach the registry: they run with --offline, and the cache is filled
once, online, by the command below (`.ci/run` runs it before the tests, then these tests where a skip fails)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from checker.platforms import npm
from checker.platforms.browser import chromium

FILL = (
    "checker verify examples/mobilenet-tiny --platform node --platform browser-wasm --platform browser-webgpu "
    "(once, online, fills the npm cache)"
)
JS = Path(npm.__file__).with_name("js")


def cached(package: str) -> Path | None:
    """The node_modules of the newest release of `package` in the checker's cache."""
    versions = sorted(npm.cached_versions(package))
    return npm.modules(package, str(versions[-1])) if versions else None


def cached_version(package: str) -> str:
    modules = cached(package)
    assert modules is not None
    return str(json.loads((modules / package / "package.json").read_text())["version"])


def _node_missing() -> str | None:
    if shutil.which("node") is None:
        return "Node.js is not installed (apt-get install nodejs npm)"
    if cached(npm.NODE) is None:
        return f"onnxruntime-node is not in the checker's cache: {FILL}"
    return None


def _browser_missing() -> str | None:
    if chromium() is None:
        return "chromium is not installed (apt-get install chromium)"
    if cached(npm.WEB) is None:
        return f"onnxruntime-web is not in the checker's cache: {FILL}"
    return None


needs_node_tool = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
needs_node = pytest.mark.skipif(_node_missing() is not None, reason=str(_node_missing()))
needs_browser = pytest.mark.skipif(_browser_missing() is not None, reason=str(_browser_missing()))


def node_version() -> str:
    done = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def chromium_version() -> str:
    browser = chromium()
    assert browser is not None
    done = subprocess.run([browser, "--version"], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.split()[1]  # "Chromium 156.0.8078.114 built on Debian ..."


# onnxruntime-node alone, without the checker's worker: each case's outputs of one graph, as .npy files.
_NODE_RUN = """
const [modules, graph, out, ...inputs] = process.argv.slice(2);
const { createRequire } = require('node:module');
const fs = require('node:fs');
const ort = createRequire(modules + '/index.js')('onnxruntime-node');
function npy(file) {
  const b = fs.readFileSync(file);
  const len = b.readUInt16LE(8);
  const header = b.subarray(10, 10 + len).toString('latin1');
  const shape = /'shape':\\s*\\(([^)]*)\\)/.exec(header)[1].split(',').map(s => s.trim()).filter(Boolean).map(Number);
  const data = new Float32Array(b.buffer.slice(b.byteOffset + 10 + len, b.byteOffset + b.length));
  return new ort.Tensor('float32', data, shape);
}
(async () => {
  const session = await ort.InferenceSession.create(graph, { graphOptimizationLevel: 'all', intraOpNumThreads: 1 });
  const result = [];
  for (const file of inputs) {
    const r = await session.run({ [session.inputNames[0]]: npy(file) });
    result.push(Array.from(r[session.outputNames[0]].data));
  }
  fs.writeFileSync(out, JSON.stringify(result));
})();
"""


def node_outputs(graph: Path, inputs: list[Path], work: Path) -> list[list[float]]:
    """The first output of `graph` for each float32 .npy input, computed by onnxruntime-node directly."""
    script = work / "run.cjs"
    script.write_text(_NODE_RUN)
    out = work / "out.json"
    modules = cached(npm.NODE)
    command = ["node", str(script), str(modules), str(graph), str(out), *map(str, inputs)]
    subprocess.run(command, check=True, timeout=300, capture_output=True)
    return list(json.loads(out.read_text()))
