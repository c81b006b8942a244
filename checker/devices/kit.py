"""`checker device-kit PATH -o KIT`: a self-contained folder a device runs, whose outputs `checker verify PATH
--device-outputs DIR` judges as one more platform.

    KIT/kit.json                          what to run and what to write back (docs/devices.md)
    KIT/run.py, run.mjs, worker.mjs       the runners: NumPy and onnxruntime; or onnxruntime-node
    KIT/graphs/<graph>/...                the baseline and every variant, with their external data
    KIT/cases/<case>/<input>.npy, .pb     each case's inputs, as .npy and as ONNX TensorProto
    KIT/raw/<case>/<input>.<ext>          the raw application inputs, for the application's own preprocessing
    KIT/README.md

The bundle is opened and loaded as `checker verify` does (its paths, digests, graphs and cases checked), so a
kit is made only of what verify would judge. Names become file names as readers/deviceoutputs.py says.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker import __version__
from checker.context import Case, Context, Options
from checker.errors import BundleError, UsageError
from checker.findings import Finding, Severity
from checker.manifest import views
from checker.readers.deviceoutputs import OUTPUTS, TENSORS, stem
from checker.readers.graphinfo import ExternalRef, external_refs, graph_inputs, graph_outputs

HERE = Path(__file__).resolve().parent
WORKER = HERE.parent / "platforms" / "js" / "worker.mjs"
KIT_VERSION = 1
_README = """# Device kit of {name} {version}

Made by `checker device-kit` (onnx-release-checker {checker}). Run it on the device, send the folder it writes
back, and judge it there with `checker verify BUNDLE --device-outputs DIR`.

    python run.py --out DIR        # NumPy and onnxruntime
    node run.mjs --out DIR         # onnxruntime-node (next to the kit, or --modules DIR)

Both take `--preprocess FILE` (the application's own preprocessing of each raw input) and `--platform NAME`
(the device's name in runtime.platforms). The format is in docs/devices.md of onnx-release-checker.
"""


@dataclass(frozen=True)
class KitResult:
    folder: Path
    graphs: int
    cases: int
    files: int


def make_kit(path: Path, out: Path) -> KitResult:
    """Write the kit of the bundle at `path` into the new folder `out`."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} exists and is not an empty folder")
    with _opened(path) as ctx:
        return _write(ctx, out)


@contextmanager
def _opened(path: Path) -> Iterator[Context]:
    """The bundle opened and loaded up to its cases, as verify loads them; a BundleError when it cannot be."""
    from checker.bundle.opening import open_bundle
    from checker.checks.cases import cases_stage
    from checker.checks.files import files_stage
    from checker.checks.graph import graph_stage
    from checker.manifest.load import load_manifest

    with open_bundle(path) as opened:
        if opened.manifest_path is None:
            raise BundleError(_reasons(f"{path}: no manifest found", opened.findings))
        manifest, found = load_manifest(opened.manifest_path)
        if manifest is None or _errors(found):
            raise BundleError(_reasons(f"{path}: the manifest is not valid", found))
        ctx = Context(opened.root, manifest, Options())
        for stage in (files_stage, graph_stage, cases_stage):
            found += list(stage(ctx))
        if ctx.graph is None or ctx.graph_path is None or not ctx.cases:
            raise BundleError(_reasons(f"{path}: the baseline graph or the cases cannot be loaded", found))
        yield ctx


def _errors(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.severity is Severity.ERROR]


def _reasons(head: str, found: list[Finding]) -> str:
    errors = _errors(found)[:5]
    return head + "".join(f"\n  {f.id}: {f.message}" for f in errors)


def _write(ctx: Context, out: Path) -> KitResult:
    out.mkdir(parents=True, exist_ok=True)
    copied = 0
    graphs = []
    for name, model, source in _graphs(ctx):
        folder = stem(name)
        target = Path("graphs") / folder / source.name
        copied += _copy(source, out / target)
        for location in _external(model):
            copied += _copy(source.parent / location, out / target.parent / location)
        graphs.append(
            {
                "name": name,
                "folder": folder,
                "path": target.as_posix(),
                "inputs": [{"name": s.name, "dtype": s.dtype, "shape": _shape(s.shape)} for s in graph_inputs(model)],
                "outputs": [{"name": s.name, "file": f"{stem(s.name)}.npy"} for s in graph_outputs(model)],
            }
        )
    cases = []
    for case in [*ctx.loaded_cases, *_envelope(ctx)]:
        entry, count = _case(ctx, case, out)
        cases.append(entry)
        copied += count
    release = {"name": ctx.spec.release.name, "version": ctx.spec.release.version, "digest": ctx.digest}
    kit = {
        "format": "onnx-release-checker device kit",
        "kit_version": KIT_VERSION,
        "checker_version": __version__,
        "release": release,
        "session": _session(ctx),
        "graphs": graphs,
        "cases": cases,
        "write": {
            "outputs": f"{OUTPUTS}/<graph folder>/<case folder>/<output file>",
            "tensors": f"{TENSORS}/<case folder>/<raw file>",
            "device": "device.json",
        },
        "preprocessing": _preprocessing(ctx),
    }
    (out / "kit.json").write_text(json.dumps(kit, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    shutil.copyfile(HERE / "runner.py", out / "run.py")
    shutil.copyfile(HERE / "runner.mjs", out / "run.mjs")
    shutil.copyfile(WORKER, out / "worker.mjs")
    (out / "README.md").write_text(
        _README.format(name=release["name"], version=release["version"], checker=__version__), encoding="utf-8"
    )
    return KitResult(out, len(graphs), len(cases), copied + 6)


def _preprocessing(ctx: Context) -> dict[str, Any]:
    """Each input's preprocessing block as the manifest writes it: the runner's author reads the words they
    wrote (the typed blocks hold defaults the manifest left out)."""
    written = {str(e.get("name")): e.get("preprocessing") for e in ctx.data.get("inputs", []) if isinstance(e, dict)}
    return {e.name: written[e.name] for e in views.inputs(ctx.spec) if e.preprocessing is not None}


def _graphs(ctx: Context) -> list[tuple[str, Any, Path]]:
    """(name, parsed model, file) of the baseline and each variant whose graph loaded."""
    assert ctx.graph is not None and ctx.graph_path is not None
    out: list[tuple[str, Any, Path]] = [("baseline", ctx.graph, ctx.graph_path)]
    for variant in views.variants(ctx.spec):
        name, path = variant.name, ctx.path(variant.graph.path)
        if path is not None and name in ctx.variant_models and name not in ctx.bad_graphs:
            out.append((name, ctx.variant_models[name], path))
    folders = [stem(name) for name, _, _ in out]
    if len(set(folders)) != len(folders):
        raise BundleError("two graph names become the same folder name in the kit; rename a variant")
    return out


def _envelope(ctx: Context) -> list[Case]:
    """The envelope's points as cases (envelope-min, -typical, -max): the device runs them like the others."""
    from checker.checks.envelope import envelope_points
    from checker.compare.envelope import as_case

    found, problems = envelope_points(ctx)
    if problems:
        raise BundleError(problems[0].message)
    return [as_case(p) for p in found]


def _external(model: Any) -> list[str]:
    return list(dict.fromkeys(r.location for r in external_refs(model) if isinstance(r, ExternalRef)))


def _copy(source: Path, target: Path) -> int:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return 1


def _shape(shape: Any) -> list[Any] | None:
    return None if shape is None else list(shape)


def _case(ctx: Context, case: Case, out: Path) -> tuple[dict[str, Any], int]:
    import numpy as np
    from onnx import numpy_helper

    folder = stem(case.name)
    inputs: dict[str, Any] = {}
    count = 0
    for name, array in case.inputs.items():
        base = Path("cases") / folder / stem(name)
        target = out / base.with_suffix(".npy")
        target.parent.mkdir(parents=True, exist_ok=True)
        value = np.ascontiguousarray(array)
        np.save(target, value, allow_pickle=False)
        proto = numpy_helper.from_array(value, name)
        (out / base.with_suffix(".pb")).write_bytes(proto.SerializeToString())
        inputs[name] = {
            "npy": base.with_suffix(".npy").as_posix(),
            "pb": base.with_suffix(".pb").as_posix(),
            "dtype": str(value.dtype),
            "shape": list(value.shape),
        }
        count += 2
    raw: dict[str, Any] = {}
    for name, rel in case.raw.items():
        source = ctx.path(rel)
        if source is None or not source.is_file():
            continue
        target = Path("raw") / folder / (stem(name) + source.suffix.lower()[:16])
        count += _copy(source, out / target)
        raw[name] = {"path": target.as_posix(), "file": f"{stem(name)}.npy"}
    entry = {"name": case.name, "folder": folder, "tags": list(case.tags), "inputs": inputs, "raw": raw}
    return entry, count


def _session(ctx: Context) -> dict[str, Any]:
    """The session settings of the manifest, and the dimensions every case fixes (a mobile provider such as NNAPI
    needs static shapes: the kit names them, as onnxruntime's free dimension overrides)."""
    runtime = ctx.spec.runtime
    options = views.session_options(runtime)
    sizes: dict[str, set[int]] = {}
    assert ctx.graph is not None
    for spec in graph_inputs(ctx.graph):
        for axis, dim in enumerate(spec.shape or ()):
            if isinstance(dim, str):
                for case in [*ctx.loaded_cases, *_envelope(ctx)]:
                    array = case.inputs.get(spec.name)
                    if array is not None and axis < array.ndim:
                        sizes.setdefault(dim, set()).add(int(array.shape[axis]))
    return {
        "execution_providers": views.providers(runtime) or ["CPUExecutionProvider"],
        "graph_optimization_level": options.get("graph_optimization_level", "all"),
        "intra_op_num_threads": options.get("intra_op_num_threads"),
        "inter_op_num_threads": options.get("inter_op_num_threads"),
        "execution_mode": options.get("execution_mode", "sequential"),
        "dimension_overrides": {name: next(iter(found)) for name, found in sorted(sizes.items()) if len(found) == 1},
    }
