#!/usr/bin/env python3
"""Run a device kit on the device: every graph on every case with onnxruntime, as kit.json says, writing the
folder `checker verify BUNDLE --device-outputs DIR` judges. Needs only Python 3, NumPy and onnxruntime.

    python run.py --out DIR [--providers NnapiExecutionProvider,CPUExecutionProvider] [--preprocess app.py]

--providers replaces the kit's execution providers (those of the manifest). --preprocess names a Python file
whose `preprocess(input_name, raw_path)` returns the tensor the application makes from a raw input; each is
written to DIR/tensors/<case>/<input>.npy. The graphs still run on the kit's own tensors, so the comparison and
the application's preprocessing are judged apart.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

KIT = Path(__file__).resolve().parent
LEVELS = {"disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED"}


def session_options(ort: Any, session: dict[str, Any]) -> Any:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    level = session.get("graph_optimization_level") or "all"
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS.get(level, "ORT_ENABLE_ALL"))
    if session.get("execution_mode") == "parallel":
        so.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    for key in ("intra_op_num_threads", "inter_op_num_threads"):
        if session.get(key) is not None:
            setattr(so, key, int(session[key]))
    for name, size in (session.get("dimension_overrides") or {}).items():
        so.add_free_dimension_override_by_name(str(name), int(size))
    return so


def preprocessor(path: str | None) -> Any:
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location("application_preprocessing", path)
    if spec is None or spec.loader is None:
        sys.exit(f"run.py: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.preprocess


def write(path: Path, array: Any) -> None:
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the device kit's graphs on its cases with onnxruntime.")
    parser.add_argument("--out", required=True, type=Path, help="the folder to write (outputs/, tensors/, device.json)")
    parser.add_argument("--providers", help="execution providers, comma-separated (default: the kit's)")
    parser.add_argument("--preprocess", help="a Python file with preprocess(input_name, raw_path) -> array")
    parser.add_argument("--platform", help="the name runtime.platforms gives this device (written to device.json)")
    args = parser.parse_args()

    import numpy as np
    import onnxruntime as ort

    kit = json.loads((KIT / "kit.json").read_text(encoding="utf-8"))
    session = kit.get("session") or {}
    wanted = args.providers.split(",") if args.providers else list(session.get("execution_providers") or [])
    available = ort.get_available_providers()
    providers = [p for p in wanted if p in available] or ["CPUExecutionProvider"]
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    used: list[str] = []
    for graph in kit["graphs"]:
        s = ort.InferenceSession(str(KIT / graph["path"]), session_options(ort, session), providers=providers)
        used = used or list(s.get_providers())
        names = [o["name"] for o in graph["outputs"]]
        for case in kit["cases"]:
            feed = {name: np.load(KIT / entry["npy"], allow_pickle=False) for name, entry in case["inputs"].items()}
            feed = {i.name: feed[i.name] for i in s.get_inputs()}
            values = s.run(names, feed)
            for entry, value in zip(graph["outputs"], values):
                write(out / "outputs" / graph["folder"] / case["folder"] / entry["file"], value)
    preprocess = preprocessor(args.preprocess)
    if preprocess is not None:
        for case in kit["cases"]:
            for name, raw in (case.get("raw") or {}).items():
                tensor = preprocess(name, str(KIT / raw["path"]))
                write(out / "tensors" / case["folder"] / raw["file"], tensor)
    device = {
        "runtime": "onnxruntime",
        "version": ort.__version__,
        "backend": ",".join(used),
        "device": os.environ.get("KIT_DEVICE_NAME") or platform.node(),
        "machine": platform.machine(),
        "os": platform.platform(),
        "runner": "run.py",
        "release_digest": (kit.get("release") or {}).get("digest"),
    }
    if args.platform:
        device["platform"] = args.platform
    (out / "device.json").write_text(json.dumps(device, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
