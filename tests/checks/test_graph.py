"""The graph stage on real files: external data references, the ONNX checker, and the ONNX package's test data."""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx
import pytest
import yaml
from bundlekit import context_for, linear_model, manifest, write_bundle, write_manifest

from checker.context import Options
from checker.verify import verify_bundle

ONNX_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data" / "pytorch-converted"


def ids(report: object) -> list[str]:
    return [f.id for f in report.findings]  # type: ignore[attr-defined]


def edit_location(root: Path, location: str, **entries: str) -> None:
    """Point every external tensor of model.onnx somewhere else (written without touching the data)."""
    model = onnx.load(str(root / "model.onnx"), load_external_data=False)
    for tensor in model.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = location
            elif entry.key in entries:
                entry.value = entries[entry.key]
    onnx.save(model, str(root / "model.onnx"))


def test_external_data_listed_passes_graph_checks(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", linear_model(), manifest(), external=True)
    report = verify_bundle(root, Options())
    assert not [f for f in report.findings if f.id.startswith("graph.")], report.findings
    assert report.pieces["external_weights"] is True


def test_external_data_unlisted_is_a_missing_piece(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", linear_model(), manifest(), external=True)
    data = yaml.safe_load((root / "bundle.yaml").read_text())
    del data["graph"]["external_data"]
    write_manifest(root, data)
    report = verify_bundle(root, Options())
    missing = [f for f in report.findings if f.id == "bundle.missing_piece"]
    assert missing and "external_weights" in missing[0].message
    assert report.pieces["external_weights"] is False


@pytest.mark.parametrize(
    ("location", "words"),
    [("../outside.bin", "outside the bundle"), ("/etc/passwd", "outside the bundle"), ("other.bin", "does not list")],
)
def test_external_data_location_refused(tmp_path: Path, location: str, words: str) -> None:
    root = write_bundle(tmp_path / "b", linear_model(), manifest(), external=True)
    (tmp_path / "outside.bin").write_bytes(b"\0" * 64)
    edit_location(root, location)
    report = verify_bundle(root, Options())
    found = [f for f in report.findings if f.id == "graph.external_data" and f.severity.value == "error"]
    assert found and words in found[0].message
    lines = (root / "bundle.yaml").read_text().splitlines()
    assert found[0].file == "bundle.yaml" and lines[found[0].line - 1] == "  path: model.onnx"
    assert report.status() == "fail"


def test_external_data_outside_its_file(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", linear_model(), manifest(), external=True)
    edit_location(root, "model.onnx.data", offset="4096")
    report = verify_bundle(root, Options())
    found = [f for f in report.findings if f.id == "graph.external_data"]
    assert found and "lies outside its file" in found[0].message


def test_external_data_through_a_link_that_leaves(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", linear_model(), manifest(), external=True)
    shutil.move(root / "model.onnx.data", tmp_path / "elsewhere.data")
    (root / "model.onnx.data").symlink_to(tmp_path / "elsewhere.data")
    report = verify_bundle(root, Options())
    assert "bundle.path" in ids(report)
    assert "graph.invalid" not in ids(report)  # the checker never followed the link


def test_a_graph_linked_into_another_folder_has_its_external_data_refused(tmp_path: Path) -> None:
    """onnxruntime reads external data beside the file it opens: a graph named 'model.onnx' that is a link to
    'sub/model.onnx' would run with 'sub/model.onnx.data', which nothing names or hashes, while the checker
    hashed './model.onnx.data'."""
    root = write_bundle(tmp_path / "b", linear_model(), manifest(), external=True)
    (root / "sub").mkdir()
    shutil.move(root / "model.onnx", root / "sub" / "model.onnx")
    shutil.copy(root / "model.onnx.data", root / "sub" / "model.onnx.data")
    (root / "model.onnx").symlink_to("sub/model.onnx")
    report = verify_bundle(root, Options())
    [found] = [f for f in report.findings if f.id == "graph.external_data"]
    assert found.severity.value == "error" and "a link to 'sub/model.onnx' in another folder" in found.message
    assert report.pieces["external_weights"] is False
    shutil.move(root / "sub" / "model.onnx", root / "model.real.onnx")
    (root / "model.onnx").unlink()
    (root / "model.onnx").symlink_to("model.real.onnx")  # a link in the same folder: the data is beside it
    report = verify_bundle(root, Options())
    assert not [f for f in report.findings if f.id == "graph.external_data"], report.findings


def test_onnx_checker_rejects_invalid_graph(tmp_path: Path) -> None:
    model = linear_model()
    model.graph.node[0].op_type = "NoSuchOp"
    root = write_bundle(tmp_path / "b", model, manifest())
    report = verify_bundle(root, Options())
    found = [f for f in report.findings if f.id == "graph.invalid"]
    assert found and "NoSuchOp" in found[0].message


@pytest.mark.parametrize("name", ["test_Linear", "test_Conv2d", "test_PReLU_2d"])
def test_onnx_backend_test_data_as_cases(tmp_path: Path, name: str) -> None:
    """The ONNX package's own test folders, loaded as `onnx_test_data` cases against their graph."""
    src = ONNX_DATA / name
    root = tmp_path / name
    shutil.copytree(src, root)
    model = onnx.load(str(root / "model.onnx"))
    from checker.readers.graphinfo import graph_inputs, graph_outputs

    def entry(spec: object, meaning: str) -> dict[str, object]:
        s = spec  # type: ignore[assignment]
        out = {"name": s.name, "dtype": s.dtype, "meaning": meaning}  # type: ignore[attr-defined]
        if meaning != "other":
            out["preprocessing"] = {"kind": "custom", "description": "test data"}
        return out

    data = manifest(
        graph={"path": "model.onnx", "producer": {"tool": "pytorch"}},
        inputs=[entry(s, "tensor") for s in graph_inputs(model)],
        outputs=[entry(s, "other") for s in graph_outputs(model)],
        comparison={
            "reference": {"description": "PyTorch (ONNX backend test data)"},
            "cases": [{"onnx_test_data": "test_data_set_*", "tags": ["edge"]}],
            "rules": [{"output": graph_outputs(model)[0].name, "check": "allclose", "atol": 1e-5, "rtol": 1e-3}],
        },
        runtime={"name": "onnxruntime", "version": ">=1.17"},
    )
    write_manifest(root, data)
    from checker.checks.cases import cases_stage

    ctx = context_for(root)
    ctx.graph = model
    findings = list(cases_stage(ctx))
    assert not [f for f in findings if f.id == "comparison.case"], findings
    assert ctx.cases and ctx.cases[0].name == "test_data_set_0"
    assert set(ctx.cases[0].inputs) == {s.name for s in graph_inputs(model)}


def test_listed_external_data_that_no_tensor_uses_is_warned(tmp_path: Path) -> None:
    data = manifest()
    root = write_bundle(tmp_path / "b", linear_model(), data)
    (root / "stale.data").write_bytes(b"\0" * 16)
    text = (
        (root / "bundle.yaml")
        .read_text()
        .replace("  path: model.onnx\n", "  path: model.onnx\n  external_data:\n  - path: stale.data\n")
    )
    (root / "bundle.yaml").write_text(text)
    report = verify_bundle(root, Options())
    found = [f for f in report.findings if f.id == "graph.external_data"]
    assert found and found[0].severity.value == "warning" and "stale.data" in found[0].message
