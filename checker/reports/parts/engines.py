"""What a platform other than Python's onnxruntime ran in: a browser's or Node.js's onnxruntime package and
backend, the WebGPU adapter, or a device as its runner described itself (--platform browser-wasm, browser-webgpu,
node; --device-outputs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Adapter:
    """The WebGPU adapter a browser gave onnxruntime-web (navigator.gpu.requestAdapter())."""

    vendor: str
    architecture: str
    device: str = ""
    description: str = ""
    fallback: bool = False  # a software adapter (SwiftShader) standing in for a GPU

    def to_dict(self) -> dict[str, Any]:
        return {"vendor": self.vendor, "architecture": self.architecture, "device": self.device,
                "description": self.description, "fallback": self.fallback}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Adapter:
        return cls(
            vendor=str(data.get("vendor") or "")[:200],
            architecture=str(data.get("architecture") or "")[:200],
            device=str(data.get("device") or "")[:200],
            description=str(data.get("description") or "")[:200],
            fallback=bool(data.get("fallback", False)),
        )


@dataclass
class Fingerprint:
    """What a platform other than Python's onnxruntime ran in (--platform browser-wasm, browser-webgpu, node, or
    a device's outputs): the engine, its package and build, the backend that took the nodes, and around it the
    browser and WebGPU adapter, Node.js, or the device as its runner described it."""

    engine: str  # browser-wasm | browser-webgpu | node | device
    package: str  # onnxruntime-web, onnxruntime-node, or the runtime a device named
    package_version: str
    backend: str  # wasm | webgpu | cpu, or a device's own word (nnapi, coreml, ...)
    build: str | None = None  # the package's file that ran: ort.webgpu.min.mjs
    browser: str | None = None  # Chromium 156.0.8078.114
    node: str | None = None  # v20.20.2
    os: str | None = None
    device: str | None = None  # a device's own name for itself (device.json)
    cross_origin_isolated: bool | None = None  # the page could use WASM threads
    wasm_threads: int | None = None
    adapter: Adapter | None = None
    placed: dict[str, int] = field(default_factory=dict)  # provider -> nodes it took, over every graph

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"engine": self.engine, "package": self.package,
                               "package_version": self.package_version, "backend": self.backend}  # fmt: skip
        for key in ("build", "browser", "node", "os", "device", "cross_origin_isolated", "wasm_threads"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.adapter is not None:
            out["adapter"] = self.adapter.to_dict()
        if self.placed:
            out["placed"] = dict(self.placed)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fingerprint:
        adapter = data.get("adapter")
        isolated, threads = data.get("cross_origin_isolated"), data.get("wasm_threads")
        return cls(
            engine=str(data["engine"]),
            package=str(data.get("package", "")),
            package_version=str(data.get("package_version", "")),
            backend=str(data.get("backend", "")),
            build=data.get("build"),
            browser=data.get("browser"),
            node=data.get("node"),
            os=data.get("os"),
            device=data.get("device"),
            cross_origin_isolated=isolated if isinstance(isolated, bool) else None,
            wasm_threads=threads if isinstance(threads, int) else None,
            adapter=Adapter.from_dict(adapter) if isinstance(adapter, Mapping) else None,
            placed={str(k): int(v) for k, v in (data.get("placed") or {}).items()},
        )

    def words(self) -> str:
        """One line for a reader: `Chromium 156.0.8078.114, onnxruntime-web 1.31.1 (webgpu on google swiftshader)`."""
        around = self.browser or (f"Node.js {self.node}" if self.node else self.device or self.engine)
        backend = self.backend
        if self.adapter is not None:
            backend += f" on {self.adapter.vendor} {self.adapter.architecture}".rstrip()
        return f"{around}, {self.package} {self.package_version} ({backend})"
