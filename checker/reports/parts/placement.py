"""Where the graphs' nodes ran: each declared execution provider's share as onnxruntime recorded it
(checks.placement), the NNAPI and CoreML coverage onnxruntime's mobile usability check finds offline
(checks.usability), and the CPU a runtime set ran on (--platform), with its distance from the native run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checker.reports.parts.values import integer, mapping, number_or, strings, text


@dataclass
class ProviderNodes:
    """The nodes one provider took: how many, in how many partitions, counted by operator type."""

    nodes: int = 0
    partitions: int = 0
    ops: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "partitions": self.partitions, "ops": self.ops}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProviderNodes:
        ops = mapping(data.get("ops"))
        return cls(int(data["nodes"]), int(data["partitions"]), {str(k): int(v) for k, v in ops.items()})


@dataclass
class Forbid:
    """With runtime.fallback: forbid, whether the graph opened with the CPU fallback disabled, else why not."""

    opened: bool
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"opened": self.opened, **({"error": self.error} if self.error is not None else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Forbid:
        return cls(bool(data.get("opened")), text(data.get("error")))


@dataclass
class Placement:
    """One graph opened with one declared provider first: the nodes each provider took."""

    runtime: str  # the onnxruntime that placed it, as a reader names it
    provider: str  # the declared provider put first
    graph: str
    nodes: int
    providers: dict[str, ProviderNodes]
    measured_by: str | None = None
    optimization_level: str | None = None
    # The nodes that left the declared provider ("op:name", the first few) and their count; None for the CPU's.
    fallback: list[str] | None = None
    fallback_count: int | None = None
    forbid: Forbid | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"runtime": self.runtime, "provider": self.provider, "graph": self.graph}
        if self.measured_by is not None:
            out["measured_by"] = self.measured_by
        if self.optimization_level is not None:
            out["optimization_level"] = self.optimization_level
        out["nodes"] = self.nodes
        out["providers"] = {name: p.to_dict() for name, p in self.providers.items()}
        if self.fallback is not None:
            out["fallback"] = self.fallback
        if self.fallback_count is not None:
            out["fallback_count"] = self.fallback_count
        if self.forbid is not None:
            out["forbid"] = self.forbid.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Placement:
        forbid = data.get("forbid")
        return cls(
            runtime=str(data["runtime"]),
            provider=str(data["provider"]),
            graph=str(data["graph"]),
            nodes=int(data["nodes"]),
            providers={str(k): ProviderNodes.from_dict(v) for k, v in mapping(data.get("providers")).items()},
            measured_by=text(data.get("measured_by")),
            optimization_level=text(data.get("optimization_level")),
            fallback=strings(data["fallback"]) if "fallback" in data else None,
            fallback_count=integer(data.get("fallback_count")),
            forbid=Forbid.from_dict(forbid) if isinstance(forbid, Mapping) else None,
        )


@dataclass
class FixedShape:
    """The usability check again with the graph's dynamic shapes fixed."""

    supported: int
    partitions: int
    recommendation: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"supported": self.supported, "partitions": self.partitions, "recommendation": self.recommendation}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FixedShape:
        return cls(
            int(data.get("supported") or 0), int(data.get("partitions") or 0), str(data.get("recommendation") or "")
        )


@dataclass
class Usability:
    """onnxruntime's mobile usability check of one graph for one model format of NNAPI or CoreML."""

    graph: str
    provider: str
    ep: str  # the model format the tool names, e.g. "CoreML MLProgram"
    nodes: int
    supported: int
    partitions: int
    suitability: str  # the tool's verdict as shipped: YES, MAYBE or NO
    partition_sizes: list[int] = field(default_factory=list)
    unsupported_ops: list[str] = field(default_factory=list)
    recommendation: str = ""  # the tool's last line
    log: list[str] = field(default_factory=list)
    fixed_shape_suitability: str | None = None
    fixed_shape: FixedShape | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "graph": self.graph,
            "provider": self.provider,
            "ep": self.ep,
            "nodes": self.nodes,
            "supported": self.supported,
            "partitions": self.partitions,
            "partition_sizes": self.partition_sizes,
            "unsupported_ops": self.unsupported_ops,
            "suitability": self.suitability,
            "recommendation": self.recommendation,
            "log": self.log,
        }
        if self.fixed_shape_suitability is not None:
            out["fixed_shape_suitability"] = self.fixed_shape_suitability
        if self.fixed_shape is not None:
            out["fixed_shape"] = self.fixed_shape.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usability:
        fixed = data.get("fixed_shape")
        return cls(
            graph=str(data["graph"]),
            provider=str(data["provider"]),
            ep=str(data["ep"]),
            nodes=int(data["nodes"]),
            supported=int(data["supported"]),
            partitions=int(data["partitions"]),
            suitability=str(data["suitability"]),
            partition_sizes=[int(n) for n in data.get("partition_sizes") or []],
            unsupported_ops=strings(data.get("unsupported_ops")),
            recommendation=str(data.get("recommendation") or ""),
            log=strings(data.get("log")),
            fixed_shape_suitability=text(data.get("fixed_shape_suitability")),
            fixed_shape=FixedShape.from_dict(fixed) if isinstance(fixed, Mapping) else None,
        )

    @property
    def verdict(self) -> str:
        """The tool's own conclusion: the better of as shipped and with fixed shapes (YES, MAYBE or NO)."""
        order = ("NO", "MAYBE", "YES")
        found = [self.suitability, self.fixed_shape_suitability]
        return max((s for s in found if s in order), key=order.index, default="NO")


@dataclass
class NativeFigures:
    """How many output values of one graph differ on a platform from this machine's own run, and by how much."""

    differ: int = 0
    of: int = 0
    max_abs: float = 0.0  # nan when one side is nan and the other is not
    cases: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"differ": self.differ, "of": self.of, "max_abs": self.max_abs}
        if self.cases is not None:
            out["cases"] = self.cases
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NativeFigures:
        return cls(int(data["differ"]), int(data["of"]), number_or(data["max_abs"], 0.0), integer(data.get("cases")))


@dataclass
class PlatformRecord:
    """The CPU class a runtime set ran on (--platform), how (native or emulated), and what the worker saw."""

    name: str
    arch: str
    cpu_class: str  # "class" in the report
    how: str  # "native" or the emulator's words
    cpu_features: list[str]  # as the worker's CPU reported them
    level: str | None = None
    features: list[str] = field(default_factory=list)
    machine: str | None = None
    onnxruntime: str | None = None
    session_config: dict[str, str] | None = None  # with a remedy measured: the session config entries tried
    against_native: dict[str, NativeFigures] | None = None  # per graph
    engine: str | None = None  # browser-wasm, browser-webgpu, node or device: a platform that is not a CPU class
    # comparison.envelope's points there: per graph and point, its status and its rules' figures. Written for
    # the JSON report only (no renderer reads it), so it stays the plain data checks/envelope.py makes.
    envelope: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "arch": self.arch, "class": self.cpu_class}
        if self.engine is not None:
            out["engine"] = self.engine
        if self.level is not None:
            out["level"] = self.level
        out["features"] = self.features
        out["how"] = self.how
        if self.machine is not None:
            out["machine"] = self.machine
        out["cpu_features"] = self.cpu_features
        if self.onnxruntime is not None:
            out["onnxruntime"] = self.onnxruntime
        if self.session_config is not None:
            out["session_config"] = self.session_config
        if self.against_native is not None:
            out["against_native"] = {graph: f.to_dict() for graph, f in self.against_native.items()}
        if self.envelope is not None:
            out["envelope"] = self.envelope
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlatformRecord:
        config, against = data.get("session_config"), data.get("against_native")
        return cls(
            name=str(data["name"]),
            arch=str(data["arch"]),
            cpu_class=str(data["class"]),
            how=str(data["how"]),
            cpu_features=strings(data.get("cpu_features")),
            level=text(data.get("level")),
            features=strings(data.get("features")),
            machine=text(data.get("machine")),
            onnxruntime=text(data.get("onnxruntime")),
            session_config={str(k): str(v) for k, v in config.items()} if isinstance(config, Mapping) else None,
            against_native=(
                {str(g): NativeFigures.from_dict(f) for g, f in against.items() if isinstance(f, Mapping)}
                if isinstance(against, Mapping)
                else None
            ),
            engine=text(data.get("engine")),
            envelope=[dict(e) for e in data["envelope"] if isinstance(e, Mapping)]
            if isinstance(data.get("envelope"), list)
            else None,
        )

    @property
    def x86_without_vnni(self) -> bool:
        return self.arch == "x86_64" and "vnni" not in self.features
