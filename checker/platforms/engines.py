"""Starting an engine platform's worker: onnxruntime-node under Node.js, onnxruntime-web's WASM or WebGPU backend
in headless Chromium. Each speaks the Python worker's requests (platforms/js), so the comparison is the same.

The package is the release of onnxruntime-node or onnxruntime-web the manifest admits (platforms/npm.py),
installed once into the user cache. What the engine ran in — browser, package build, backend, WebGPU adapter,
Node.js — is its fingerprint, and where onnxruntime-web's WebGPU backend put each node is read from its own log:
a node left to the CPU is named, never a quiet pass.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker.manifest.model.runtime import Runtime as Declared
from checker.platforms import npm
from checker.platforms.catalog import BROWSER_WASM, BROWSER_WEBGPU, NODE, Platform
from checker.reports.model import Adapter, Fingerprint
from checker.runtimes.remote import Worker, WorkerError

JS = Path(__file__).with_name("js")
BACKENDS = {BROWSER_WASM: "wasm", BROWSER_WEBGPU: "webgpu", NODE: "cpu"}
CPU_PROVIDER = "CPUExecutionProvider"
# Operators onnxruntime puts on the CPU on purpose when they only compute shapes (its log says so): not a
# fallback when every output of the node is an integer tensor.
_SHAPE_OPS = {"Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Reshape", "Range",
              "ConstantOfShape", "Equal", "Where", "Cast", "Expand", "ReduceProd", "Mul", "Add", "Sub", "Div",
              "NonZero", "Max", "Min"}  # fmt: skip


@dataclass
class Started:
    """An engine's running worker, and what it runs."""

    worker: Any  # runtimes.remote.Worker or platforms.browser.BrowserWorker
    package: str
    version: str
    backend: str
    how: str
    fingerprint: Fingerprint

    @property
    def placements(self) -> dict[str, list[Any]]:
        """graph path -> where onnxruntime put its nodes (a browser's WebGPU backend records it; empty else)."""
        found = getattr(self.worker, "placements", None)
        return found if isinstance(found, dict) else {}

    def close(self) -> None:
        self.worker.close()


def package_of(engine: str) -> str:
    return npm.NODE if engine == NODE else npm.WEB


def start(
    platform: Platform, runtime: Declared | None, offline: bool, case_timeout_s: float, threads: int
) -> Started | str:
    """The platform's worker started, or why it cannot run here."""
    engine = str(platform.engine)
    label = f"platform {platform.name}"
    package = package_of(engine)
    if engine == NODE:
        node = shutil.which("node")
        if node is None:
            return "Node.js is not installed (Debian and Ubuntu: apt-get install nodejs npm)"
    else:
        from checker.platforms.browser import chromium

        if chromium() is None:
            return "chromium is not installed (Debian and Ubuntu: apt-get install chromium)"
    try:
        version = npm.choose(package, npm.admitted(runtime, package), offline)
        modules = npm.ensure(package, version, offline)
    except npm.NpmError as exc:
        return str(exc)
    try:
        if engine == NODE:
            worker: Any = Worker(Path(), label, case_timeout_s, command=[str(node), str(JS / "node.mjs"), str(modules)])
        else:
            from checker.platforms.browser import BrowserWorker

            dist = modules / package / "dist"
            worker = BrowserWorker(BACKENDS[engine], dist, label, case_timeout_s, threads)
    except WorkerError as exc:
        return f"its worker did not start: {exc}"
    fingerprint = fingerprint_of(worker.fingerprint or {}, engine, package, worker.version)
    return Started(worker, package, worker.version, BACKENDS[engine], fingerprint.words(), fingerprint)


def fingerprint_of(seen: Mapping[str, Any], engine: str, package: str, version: str) -> Fingerprint:
    """The worker's own account of what it runs in, typed; what it leaves out stays None."""
    adapter = seen.get("adapter")
    isolated, wasm_threads = seen.get("cross_origin_isolated"), seen.get("wasm_threads")
    return Fingerprint(
        engine=engine,
        package=str(seen.get("package") or package),
        package_version=str(seen.get("package_version") or version),
        backend=str(seen.get("backend") or BACKENDS.get(engine, "")),
        build=_text(seen.get("package_build")),
        browser=_text(seen.get("browser")),
        node=_text(seen.get("node")),
        os=_text(seen.get("os")),
        cross_origin_isolated=isolated if isinstance(isolated, bool) else None,
        wasm_threads=wasm_threads if isinstance(wasm_threads, int) else None,
        adapter=Adapter.from_dict(adapter) if isinstance(adapter, Mapping) and adapter.get("available") else None,
    )


def _text(value: Any) -> str | None:
    return str(value)[:300] if isinstance(value, (str, int, float)) and str(value) else None


# How onnxruntime names the node it could not place or run: "... Cast node with name 'to_text' is not set",
# "Could not find an implementation for Det(11) node with name 'det0'", "Node (det0) Op (Det) ...".
_NODE_NAMED = (re.compile(r"node with name '([^']{1,256})'"), re.compile(r"\bNode \(([^)]{1,256})\)"))


def named_node(message: str) -> str | None:
    """The node an onnxruntime error names, or None."""
    for pattern in _NODE_NAMED:
        found = pattern.search(message)
        if found:
            return found.group(1)
    return None


@dataclass(frozen=True)
class Fallback:
    """The nodes of one graph that a backend left to another provider."""

    graph: str
    provider: str  # the provider that took them (onnxruntime's name)
    nodes: list[tuple[str, str]]  # (op type, node name)


def placed_counts(placements: Iterable[list[Any]]) -> dict[str, int]:
    """provider -> nodes it took, over every graph opened (Memcpy nodes left out)."""
    out: dict[str, int] = {}
    for entries in placements:
        for entry in entries:
            if isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str):
                nodes = [n for n in entry[1] if isinstance(n, list)]
                out[entry[0]] = out.get(entry[0], 0) + (len(nodes) if nodes else int(entry[2]))
    return out


def fallbacks(graph: str, placed: list[Any], model: Any, inputs: Mapping[str, Any]) -> Fallback | None:
    """The nodes of `graph` placed on the CPU provider that do more than compute shapes, or None."""
    shape_only = integer_nodes(model, inputs)
    for entry in placed:
        if not (isinstance(entry, list) and len(entry) == 3 and entry[0] == CPU_PROVIDER):
            continue
        nodes = [(str(n[0]), str(n[1])) for n in entry[1] if isinstance(n, list) and len(n) == 2]
        real = [n for n in nodes if not (n[0] in _SHAPE_OPS and n[1] in shape_only)]
        if real:
            return Fallback(graph, CPU_PROVIDER, real)
    return None


def integer_nodes(model: Any, inputs: Mapping[str, Any]) -> set[str]:
    """Names of the nodes whose every output is an integer tensor (shape work), by onnx's shape inference on
    these inputs' shapes (the weights counted by their dims alone)."""
    if model is None:
        return set()
    from checker.compare.divergence import tensor_sizes

    sizes = tensor_sizes(model, inputs)
    integer = {6, 7}  # int32, int64
    return {
        n.name for n in model.graph.node
        if n.name and n.output and all(sizes.get(o, (0, None))[0] in integer for o in n.output)
    }  # fmt: skip
