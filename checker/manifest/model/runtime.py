"""The runtime the release targets: `runtime:` (onnxruntime, its providers, session options and platforms)."""

from __future__ import annotations

from typing import Annotated, Literal

from checker.manifest.model.core import Block, S

OptimizationLevel = Literal["disabled", "basic", "extended", "all"]
MAX_PROVIDERS = 16
MAX_THREADS = 256
MAX_PLATFORMS = 16
# The engines a platform may name instead of a CPU class (checker/platforms/catalog.ENGINES runs each).
Engine = Literal["browser-wasm", "browser-webgpu", "node", "device"]
EngineVersion = Annotated[str, S(min_length=1, max_length=256)]


class SessionOptions(Block):
    WORDS = S("Session options", "onnxruntime session options.")

    graph_optimization_level: Annotated[
        OptimizationLevel | None, S("Optimization level", "disabled | basic | extended | all.")
    ] = None
    intra_op_num_threads: Annotated[
        int | None, S("Intra-op threads", "0 lets onnxruntime choose.", minimum=0, maximum=MAX_THREADS)
    ] = None
    inter_op_num_threads: Annotated[
        int | None, S("Inter-op threads", "0 lets onnxruntime choose.", minimum=0, maximum=MAX_THREADS)
    ] = None
    execution_mode: Annotated[
        Literal["sequential", "parallel"] | None, S("Execution mode", "sequential | parallel.")
    ] = None


class Platform(Block):
    WORDS = S("Platform")
    EXTRA = {
        "allOf": [
            {
                "if": {"required": ["arch"], "properties": {"arch": {"const": "x86_64"}}},
                "then": {
                    "required": ["cpu"],
                    "properties": {
                        "features": {
                            "title": "x86_64 features",
                            "description": "vnni only.",
                            "items": {"enum": ["vnni"]},
                        }
                    },
                },
                "else": {
                    "not": {"required": ["cpu"]},
                    "properties": {
                        "features": {
                            "title": "aarch64 features",
                            "description": "dotprod, i8mm.",
                            "items": {"enum": ["dotprod", "i8mm"]},
                        }
                    },
                },
            },
            {
                "if": {"required": ["engine"]},
                "then": {"not": {"anyOf": [{"required": ["arch"]}, {"required": ["cpu"]}, {"required": ["features"]}]}},
            },
        ],
        "anyOf": [{"required": ["arch"]}, {"required": ["engine"]}],
    }

    name: Annotated[
        str | None,
        S(
            "Name",
            "What --platform and a device's device.json call it; default: its class or engine, e.g. x86-64-v3, "
            "aarch64-dotprod, browser-webgpu.",
            pattern="^[a-z0-9][a-z0-9._-]{0,63}$",
        ),
    ] = None
    engine: Annotated[
        Engine | None,
        S(
            "Engine",
            "Instead of a CPU class: browser-wasm | browser-webgpu (onnxruntime-web in headless Chromium), node "
            "(onnxruntime-node), or device (a device's own runner, judged from its outputs: --device-outputs).",
        ),
    ] = None
    arch: Annotated[Literal["x86_64", "aarch64"] | None, S("Architecture", "x86_64 | aarch64.")] = None
    cpu: Annotated[
        Literal["x86-64-v2", "x86-64-v3", "x86-64-v4"] | None,
        S(
            "CPU level",
            "The x86-64 micro-architecture level: x86-64-v2 (SSE4.2), x86-64-v3 (AVX2, FMA), x86-64-v4 (AVX-512).",
        ),
    ] = None
    features: Annotated[
        list[Literal["vnni", "dotprod", "i8mm"]] | None,
        S(
            "Features",
            "The int8 instructions it has: vnni (x86_64); dotprod, i8mm (aarch64).",
            max_items=2,
            unique_items=True,
        ),
    ] = None
    description: Annotated[str | None, S("Description", "Free text: the device or runner.", max_length=1024)] = None


class Runtime(Block):
    WORDS = S("Runtime", "The runtime the release targets.")

    name: Annotated[Literal["onnxruntime"] | None, S("Runtime name", "onnxruntime.")] = None
    version: Annotated[
        str | None,
        S("Runtime version", "A PEP 440 specifier, e.g. '>=1.17,<2'.", min_length=1, max_length=256),
    ] = None
    web: Annotated[
        EngineVersion | None,
        S(
            "onnxruntime-web version",
            "The onnxruntime-web releases the browser platforms (browser-wasm, browser-webgpu) may run: a PEP 440 "
            "specifier, e.g. '>=1.30,<2'; default: runtime.version. The newest admitted release in the cache is "
            "judged, else the newest on the npm registry (installed once).",
        ),
    ] = None
    node: Annotated[
        EngineVersion | None,
        S(
            "onnxruntime-node version",
            "The onnxruntime-node releases the node platform may run: a PEP 440 specifier; default: runtime.version.",
        ),
    ] = None
    execution_providers: Annotated[
        list[Annotated[str, S(pattern="^[A-Za-z]+ExecutionProvider$")]] | None,
        S("Execution providers", "In preference order.", max_items=MAX_PROVIDERS),
    ] = None
    fallback: Annotated[
        Literal["allow", "forbid"],
        S(
            "Fallback",
            "allow (default) | forbid: whether a declared execution provider may leave nodes to another (the CPU "
            "provider). With forbid, `checker verify` opens each graph with session.disable_cpu_ep_fallback=1 "
            "and a session that does not open is a runtime.fallback error.",
        ),
    ] = "allow"
    optimization_levels: Annotated[
        list[OptimizationLevel] | None,
        S(
            "Optimization levels",
            "Every graph optimization level the application may open its sessions at; --platform and "
            "--opt-levels judge each.",
            min_items=1,
            max_items=4,
            unique_items=True,
        ),
    ] = None
    session_options: SessionOptions | None = None
    target: Annotated[str | None, S("Target", "Free text: the edge device.", max_length=1024)] = None
    platforms: Annotated[
        list[Platform] | None,
        S(
            "Platforms",
            "The platforms the release must hold on: CPU classes (arch, cpu, features) and engines (browser-wasm, "
            "browser-webgpu, node, device). `checker verify` judges the comparison on each (--platform narrows it); "
            "one that cannot run here is not_run.",
            max_items=MAX_PLATFORMS,
        ),
    ] = None
