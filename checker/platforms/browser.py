"""A worker in headless Chromium: onnxruntime-web's WASM or WebGPU backend, as a web application runs it.

The checker serves one page from a loopback HTTP server of its own, with the headers that isolate it across
origins (COOP and COEP: WASM threads need SharedArrayBuffer, as in a deployed app), and starts Debian's
`chromium` on it with a fresh profile. The page (platforms/js/browser.mjs) answers the same requests as the
Python worker: it asks the server for the next request and posts its answer back. The graph, the feed and the
output of a request are the files the request names, each reachable only under a random URL made for that
request, read or written once; nothing else of the machine is served, and the server listens on 127.0.0.1 only,
under a random path prefix.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from checker.runtimes.remote import START_TIMEOUT_S, WorkerError

JS = Path(__file__).with_name("js")
BUILDS = {"wasm": "ort.wasm.min.mjs", "webgpu": "ort.webgpu.min.mjs"}
# Headless, no GPU process for WASM, no network but the loopback server; WebGPU keeps the GPU process: Chromium
# takes a real adapter where the machine has one and SwiftShader's (a software Vulkan) where it has none.
FLAGS = ("--headless", "--no-sandbox", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions", "--mute-audio")  # fmt: skip
BACKEND_FLAGS = {"wasm": ("--disable-gpu",), "webgpu": ("--enable-unsafe-webgpu",)}
MAX_ANSWER_BYTES = 16 << 20  # a JSON answer (a session's placement of every node included)
MAX_OUTPUT_BYTES = 4 << 30  # an output .npz: WASM's memory is 4 GiB at most
POLL_S = 20.0  # how long the page's request for the next request is held open
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_TYPES = {".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm", ".html": "text/html",
          ".json": "application/json"}  # fmt: skip
_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>checker</title></head>
<body><script type="module" src="browser.mjs"></script></body></html>
"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_version(browser: str) -> str:
    try:
        done = subprocess.run([browser, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip()[:200]


class _Files:
    """The files a request's URLs stand for: id -> (path, 'r' or 'w'), each taken once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[str, tuple[Path, str]] = {}

    def add(self, path: Path, mode: str) -> str:
        key = secrets.token_urlsafe(18)
        with self._lock:
            self._by_id[key] = (path, mode)
        return key

    def take(self, key: str, mode: str) -> Path | None:
        with self._lock:
            found = self._by_id.get(key)
            if found is None or found[1] != mode:
                return None
            if mode == "w":
                del self._by_id[key]
            return found[0]

    def drop(self, keys: list[str]) -> None:
        with self._lock:
            for key in keys:
                self._by_id.pop(key, None)


class BrowserWorker:
    """onnxruntime-web in headless Chromium, with the methods of runtimes.remote.Worker the comparison uses."""

    def __init__(self, backend: str, dist: Path, label: str, case_timeout_s: float, threads: int = 0) -> None:
        browser = chromium()
        if browser is None:
            raise WorkerError(f"{label}: chromium is not installed (Debian and Ubuntu: apt-get install chromium)")
        self.label = label
        self.case_timeout_s = case_timeout_s
        self.backend = backend
        self._dist = dist
        self._folder = tempfile.TemporaryDirectory(prefix="checker-browser-")
        self._count = 0
        # graph path -> where onnxruntime put its nodes: [[provider, [[op type, node name], ...], count], ...]
        self.placements: dict[str, list[Any]] = {}
        self._token = secrets.token_urlsafe(18)
        self._files = _Files()
        self._requests: queue.Queue[dict[str, Any]] = queue.Queue()
        self._answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self._hello: queue.Queue[dict[str, Any]] = queue.Queue()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="checker-browser", daemon=True).start()
        port = self._server.server_address[1]
        url = f"http://127.0.0.1:{port}/{self._token}/page.html?backend={backend}&build={BUILDS[backend]}"
        if threads > 0:
            url += f"&threads={threads}"
        profile = Path(self._folder.name) / "profile"
        command = [browser, *FLAGS, *BACKEND_FLAGS[backend], f"--user-data-dir={profile}", url]
        self._stderr: list[str] = []
        try:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                errors="replace", start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            self._stop_server()
            raise WorkerError(f"{label}: chromium could not start: {exc}") from exc
        threading.Thread(target=self._drain, daemon=True).start()
        hello = self._wait(self._hello, START_TIMEOUT_S, "the page gave no sign of life")
        self.fingerprint: dict[str, Any] | None = dict(hello.get("fingerprint") or {}) or None
        if not hello.get("ready"):
            self.close()
            raise WorkerError(f"{label}: {hello.get('error')}")
        self.version = str(hello.get("version"))
        self.numpy = ""
        self.providers = [str(p) for p in hello.get("providers") or []]
        self.machine = str(hello.get("machine") or "wasm32")
        self.cpu_features: list[str] = []
        if self.fingerprint is not None:
            self.fingerprint.setdefault("browser", chromium_version(browser))

    # -- the worker's face -------------------------------------------------------------------------------

    def ask(self, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        if self._process.poll() is not None:
            raise WorkerError(f"{self.label}: the browser is not running{self._tail()}")
        sent, keys = self._translated(dict(request))
        self._requests.put(sent)
        try:
            answer = self._wait(self._answers, timeout, "the page gave no answer")
        finally:
            self._files.drop(keys)
        placed = answer.get("placement")
        if request.get("op") == "open" and isinstance(placed, list):
            self.placements[str(request["path"])] = placed
        return answer

    def scratch(self, stem: str) -> Path:
        self._count += 1
        return Path(self._folder.name) / f"{stem}-{self._count}.npz"

    def close(self) -> None:
        self._requests.put({"op": "quit"})
        process = self._process
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, 15)  # Chromium's own processes (GPU, renderer) are in its session
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, 9)
                process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()
        self._stop_server()
        self._folder.cleanup()

    # -- what the server does for the page ----------------------------------------------------------------

    def next_request(self) -> dict[str, Any]:
        try:
            return self._requests.get(timeout=POLL_S)
        except queue.Empty:
            return {"op": "wait"}

    def posted(self, where: str, message: dict[str, Any]) -> None:
        (self._hello if where == "hello" else self._answers).put(message)

    def static(self, name: str) -> Path | None:
        """The page, its scripts, and onnxruntime-web's files: nothing else is served by name."""
        if name in ("browser.mjs", "worker.mjs"):
            return JS / name
        if name.startswith("ort/") and _NAME.match(name[4:]):
            found = self._dist / name[4:]
            return found if found.is_file() else None
        return None

    def file(self, key: str, mode: str) -> Path | None:
        return self._files.take(key, mode)

    # -- inside ---------------------------------------------------------------------------------------------

    def _translated(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The request with its file paths replaced by URLs of this server (ids made for this request)."""
        keys: list[str] = []

        def url(path: str, mode: str) -> str:
            keys.append(self._files.add(Path(path), mode))
            return f"/{self._token}/file/{keys[-1]}"

        op = request.get("op")
        if op == "open":
            graph = Path(str(request["path"]))
            request["external"] = [{"path": rel, "data": url(str(graph.parent / rel), "r")} for rel in external(graph)]
            request["path"] = url(str(graph), "r")
        elif op == "run":
            request["feed"] = url(str(request["feed"]), "r")
            request["out"] = url(str(request["out"]), "w")
        return request, keys

    def _wait(self, answers: queue.Queue[dict[str, Any]], timeout: float, what: str) -> dict[str, Any]:
        step = 0.5
        waited = 0.0
        while waited < timeout:
            try:
                return answers.get(timeout=step)
            except queue.Empty:
                waited += step
            if self._process.poll() is not None:
                raise WorkerError(f"{self.label}: the browser stopped (exit status {self._process.returncode})"
                                  f"{self._tail()}")  # fmt: skip
        self.close()
        raise WorkerError(f"{self.label}: {what} within {timeout:g} s")

    def _drain(self) -> None:
        stream = self._process.stderr
        if stream is None:
            return
        for line in stream:
            self._stderr.append(line)
            del self._stderr[:-20]

    def _tail(self) -> str:
        tail = "".join(self._stderr)[-2000:].strip()
        return f": {tail}" if tail else ""

    def _stop_server(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def external(graph: Path) -> list[str]:
    """The external-data files a graph names, relative to its folder (the page must fetch them for it); only
    names inside that folder: the checker's graph stage has already refused a bundle graph whose names leave it."""
    import onnx

    from checker.readers.graphinfo import ExternalRef, external_refs

    try:
        model = onnx.load(str(graph), load_external_data=False)
    except Exception:  # protobuf's decode errors share no narrower base; onnxruntime will say why
        return []
    names: dict[str, None] = {}
    base = graph.parent.resolve()
    for ref in external_refs(model):
        if isinstance(ref, ExternalRef):
            target = (base / ref.location).resolve()
            if target.is_relative_to(base) and target.is_file():
                names[ref.location] = None
    return list(names)


def _handler(worker: BrowserWorker) -> type[BaseHTTPRequestHandler]:
    prefix = f"/{worker._token}/"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _headers(self, status: int, kind: str, length: int) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(length))
            # Cross-origin isolation: SharedArrayBuffer, so onnxruntime-web runs its WASM threads as deployed.
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            self.send_header("Cross-Origin-Resource-Policy", "same-origin")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()

        def _send(self, data: bytes, kind: str = "application/json", status: int = 200) -> None:
            self._headers(status, kind, len(data))
            self.wfile.write(data)

        def _path(self) -> str | None:
            path = self.path.split("?", 1)[0]
            return path[len(prefix) :] if path.startswith(prefix) else None

        def do_GET(self) -> None:
            name = self._path()
            if name is None:
                return self._send(b"{}", status=404)
            if name == "page.html":
                return self._send(_PAGE.encode(), "text/html")
            if name == "next":
                return self._send(json.dumps(worker.next_request()).encode())
            found = worker.file(name[5:], "r") if name.startswith("file/") else worker.static(name)
            if found is None or not found.is_file():
                return self._send(b"{}", status=404)
            self._headers(200, _TYPES.get(found.suffix, "application/octet-stream"), found.stat().st_size)
            with found.open("rb") as stream:
                shutil.copyfileobj(stream, self.wfile, 1 << 20)

        def do_POST(self) -> None:
            name = self._path()
            length = int(self.headers.get("Content-Length") or 0)
            if name not in ("hello", "answer") or not 0 < length <= MAX_ANSWER_BYTES:
                return self._send(b"{}", status=400)
            try:
                message = json.loads(self.rfile.read(length))
            except (json.JSONDecodeError, UnicodeDecodeError):
                return self._send(b"{}", status=400)
            if not isinstance(message, dict):
                return self._send(b"{}", status=400)
            worker.posted(name, message)
            self._send(b"{}")

        def do_PUT(self) -> None:
            name = self._path() or ""
            length = int(self.headers.get("Content-Length") or 0)
            target = worker.file(name[5:], "w") if name.startswith("file/") else None
            if target is None or not 0 < length <= MAX_OUTPUT_BYTES:
                return self._send(b"{}", status=400)
            with target.open("wb") as stream:
                left = length
                while left > 0:
                    chunk = self.rfile.read(min(left, 1 << 20))
                    if not chunk:
                        break
                    stream.write(chunk)
                    left -= len(chunk)
            self._send(b"{}")

    return Handler
