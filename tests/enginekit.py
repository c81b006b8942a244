"""What the engine platforms' tests need: Node.js, Debian's chromium, and onnxruntime-node and onnxruntime-web in
the checker's own npm cache. The tests never reach the registry: they run with --offline, and the cache is filled
once, online, by the command below (`.ci/run` runs it before the tests, then these tests where a skip fails)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

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


_CANVAS_PAGE = """<!doctype html><html><body><script type="module">
const job = await (await fetch('/job.json')).json();
const [h, w] = job.shape;
const source = new OffscreenCanvas(w, h);
source.getContext('2d').putImageData(new ImageData(new Uint8ClampedArray(job.rgba), w, h), 0, 0);
const out = {};
for (const [th, tw] of job.sizes) {
  const target = new OffscreenCanvas(tw, th);
  const ctx = target.getContext('2d');
  ctx.imageSmoothingEnabled = job.smoothing;
  ctx.drawImage(source, 0, 0, tw, th);
  out[`${th}x${tw}`] = Array.from(ctx.getImageData(0, 0, tw, th).data);
}
await fetch('/result', { method: 'POST', body: JSON.stringify(out) });
</script></body></html>"""


def canvas_draw(image: Any, sizes: list[tuple[int, int]], smoothing: bool = True) -> dict[tuple[int, int], Any]:
    """`image` (H x W x 3, uint8) drawn by Chromium's canvas drawImage at each (h, w): the RGB pixels it gives."""
    import http.server
    import tempfile
    import threading

    import numpy as np

    rgba = np.concatenate([image, np.full((*image.shape[:2], 1), 255, np.uint8)], axis=-1)
    job = json.dumps({"shape": list(image.shape[:2]), "rgba": rgba.reshape(-1).tolist(), "sizes": sizes,
                      "smoothing": smoothing}).encode()  # fmt: skip
    result: list[bytes] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            body = _CANVAS_PAGE.encode() if self.path.startswith("/page") else job
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if self.path.startswith("/page") else "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            result.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    browser = chromium()
    assert browser is not None
    with tempfile.TemporaryDirectory(prefix="canvas-profile-") as profile:
        url = f"http://127.0.0.1:{server.server_address[1]}/page.html"
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={profile}"]
        process = subprocess.Popen([browser, *flags, url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(1200):
                if result:
                    break
                threading.Event().wait(0.1)
        finally:
            process.kill()
            process.wait()
            server.shutdown()
            server.server_close()
    assert result, "the canvas page gave no answer within 120 s"
    drawn = json.loads(result[0])
    return {
        (h, w): np.array(drawn[f"{h}x{w}"], np.uint8).reshape(h, w, 4)[..., :3] for h, w in sizes
    }  # fmt: skip
