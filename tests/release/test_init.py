"""`checker init` on real graphs: the manifest it writes, and verify listing exactly its placeholders as missing."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from releasekit import (
    Cli,
    classifier,
    converted,
    expected_pieces,
    ids,
    missing_pieces,
    verify_json,
)
from ruamel.yaml import YAML

from checker.bundle.layout import locate
from checker.manifest.schema import load
from checker.readers.support import releases
from checker.release.init import InitError, init_bundle


def _read(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["test_Conv2d", "test_Linear", "test_Embedding", "test_Softmax", "test_PReLU_2d"])
def test_init_on_a_converted_model_leaves_exactly_its_placeholders_missing(name: str, tmp_path: Path, cli: Cli) -> None:
    folder = converted(name, tmp_path)
    code, out, err = cli("init", folder / "model.onnx")
    assert code == 0, err
    manifest = folder / "bundle.yaml"
    assert f"wrote {manifest}" in out
    code, bundle = verify_json(cli, folder)
    assert code == 1
    result_placeholders = [line.strip()[2:] for line in out.splitlines() if line.startswith("  - ")]
    assert missing_pieces(bundle) == expected_pieces(result_placeholders)
    errors = set(ids(bundle, "error"))
    assert errors <= {"bundle.missing_piece", "comparison.not_run"}, bundle["findings"]
    model = onnx.load(str(folder / "model.onnx"))
    data = _read(manifest)
    inputs = {i.name for i in model.graph.input} - {t.name for t in model.graph.initializer}
    assert [e["name"] for e in data["inputs"]] == [i.name for i in model.graph.input if i.name in inputs]
    assert [e["name"] for e in data["outputs"]] == [o.name for o in model.graph.output]
    assert data["graph"]["producer"] == {
        "tool": "pytorch",
        "version": "0.3",
        "settings": {"ir_version": model.ir_version, "opset": 6},
    }


def test_the_manifest_names_its_schema_for_editors_and_matches_it(tmp_path: Path, cli: Cli) -> None:
    folder = converted("test_Linear", tmp_path)
    init_bundle(folder / "model.onnx")
    first = (folder / "bundle.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=manifest.schema.json"
    # The reference resolves offline: a relative path to the schema, written beside the manifest.
    import json

    import jsonschema
    import yaml

    schema = json.loads((folder / first.rsplit("=", 1)[1]).read_text(encoding="utf-8"))
    assert schema == load("manifest")
    data = yaml.safe_load((folder / "bundle.yaml").read_text(encoding="utf-8"))
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(data))
    _code, bundle = verify_json(cli, folder)
    assert "manifest.schema" not in ids(bundle)
    assert "check.skipped" not in ids(bundle)
    assert not [f for f in bundle["findings"] if f["id"] == "bundle.unlisted" and "schema" in f["message"]]


def test_dims_shapes_dtypes_and_the_runtime_come_from_the_graph(tmp_path: Path) -> None:
    onnx.save(classifier(), str(tmp_path / "model.onnx"))
    init_bundle(tmp_path / "model.onnx")
    data = _read(tmp_path / "bundle.yaml")
    assert data["inputs"][0] == {
        "name": "pixel_values",
        "dtype": "float32",
        "shape": ["batch", 3, 8, 8],
        "layout": "NCHW",
        "meaning": "image",
    }
    assert data["outputs"][0] == {"name": "logits", "dtype": "float32", "shape": ["batch", 4], "meaning": "logits"}
    # IR 8 / opset 17: the oldest release of the support table that loads it, and the one before it does not.
    assert data["runtime"] == {"name": "onnxruntime", "version": ">=1.12"}
    table = {r.minor: r for r in releases()}
    assert table["1.12"].loads(8, 17, None) and not table["1.11"].loads(8, 17, None)


def test_labels_in_the_graph_metadata_are_used(tmp_path: Path, cli: Cli) -> None:
    onnx.save(classifier(["cat", "dog", "fox", "owl"]), str(tmp_path / "model.onnx"))
    result = init_bundle(tmp_path / "model.onnx")
    data = _read(tmp_path / "bundle.yaml")
    assert data["outputs"][0]["labels"] == {"metadata_key": "names", "axis": -1}
    assert not any("labels" in p for p in result.placeholders)
    _code, bundle = verify_json(cli, tmp_path)
    assert bundle["pieces"]["labels"] == "present"
    assert sorted(set(missing_pieces(bundle))) == ["comparison_inputs", "preprocessing", "validation_command"]
    assert not {"labels.count", "labels.invalid"} & set(ids(bundle))


def test_a_classifier_without_labels_gets_a_labels_placeholder(tmp_path: Path, cli: Cli) -> None:
    onnx.save(classifier(), str(tmp_path / "model.onnx"))
    result = init_bundle(tmp_path / "model.onnx")
    assert "outputs[0] 'logits': labels" in result.placeholders
    assert "# TODO: labels:" in (tmp_path / "bundle.yaml").read_text(encoding="utf-8")
    _code, bundle = verify_json(cli, tmp_path)
    assert missing_pieces(bundle) == expected_pieces(result.placeholders)
    assert "labels" in missing_pieces(bundle)


def test_external_data_is_listed_with_digests(tmp_path: Path, cli: Cli) -> None:
    from bundlekit import linear_model

    onnx.save(
        linear_model(),
        str(tmp_path / "model.onnx"),
        save_as_external_data=True,
        location="model.weights",
        size_threshold=0,
    )
    result = init_bundle(tmp_path / "model.onnx")
    data = _read(tmp_path / "bundle.yaml")
    from checker.readers.digest import sha256_file

    assert data["graph"]["external_data"] == [
        {"path": "model.weights", "sha256": sha256_file(tmp_path / "model.weights")}
    ]
    assert data["graph"]["sha256"] == sha256_file(tmp_path / "model.onnx")
    _code, bundle = verify_json(cli, tmp_path)
    assert bundle["pieces"]["external_weights"] == "present"
    assert missing_pieces(bundle) == expected_pieces(result.placeholders)
    assert not {"graph.external_data", "bundle.digest"} & set(ids(bundle))


def test_a_model_outside_the_bundle_is_copied_in_with_its_external_data(tmp_path: Path, cli: Cli) -> None:
    from bundlekit import linear_model

    export = tmp_path / "export"
    export.mkdir()
    onnx.save(
        linear_model(),
        str(export / "linear.onnx"),
        save_as_external_data=True,
        location="linear.data",
        size_threshold=0,
    )
    code, out, err = cli(
        "init", export / "linear.onnx", "--out", tmp_path / "release", "--name", "linear", "--release-version", "2.0.0"
    )
    assert code == 0, err
    assert "copied into the bundle: linear.onnx, linear.data" in out
    data = _read(tmp_path / "release" / "bundle.yaml")
    assert data["release"] == {"name": "linear", "version": "2.0.0"}
    assert data["graph"]["path"] == "linear.onnx"
    code, bundle = verify_json(cli, tmp_path / "release")
    assert "bundle.file_missing" not in ids(bundle) and "bundle.unlisted" not in ids(bundle)


def test_a_graph_in_a_subfolder_of_the_bundle_stays_there(tmp_path: Path, cli: Cli) -> None:
    from bundlekit import linear_model

    (tmp_path / "graphs").mkdir()
    onnx.save(
        linear_model(),
        str(tmp_path / "graphs" / "linear.onnx"),
        save_as_external_data=True,
        location="linear.data",
        size_threshold=0,
    )
    result = init_bundle(tmp_path / "graphs" / "linear.onnx", tmp_path)
    assert result.copied == [] and result.manifest == tmp_path / "bundle.yaml"
    graph = _read(tmp_path / "bundle.yaml")["graph"]
    assert graph["path"] == "graphs/linear.onnx"
    assert [e["path"] for e in graph["external_data"]] == ["graphs/linear.data"]
    _code, bundle = verify_json(cli, tmp_path)
    assert bundle["pieces"]["external_weights"] == "present" and "graph.external_data" not in ids(bundle)


def test_a_graph_without_a_producer_gets_a_producer_placeholder(tmp_path: Path, cli: Cli) -> None:
    onnx.save(classifier(producer=""), str(tmp_path / "model.onnx"))
    result = init_bundle(tmp_path / "model.onnx")
    assert "graph.producer" in result.placeholders
    _code, bundle = verify_json(cli, tmp_path)
    assert "graph.producer" in ids(bundle, "warning")


def test_an_existing_manifest_is_not_overwritten_without_force(tmp_path: Path, cli: Cli) -> None:
    folder = converted("test_Linear", tmp_path)
    init_bundle(folder / "model.onnx")
    before = (folder / "bundle.yaml").read_text(encoding="utf-8")
    code, _out, err = cli("init", folder / "model.onnx")
    assert code == 2 and "--force" in err and "Traceback" not in err
    assert (folder / "bundle.yaml").read_text(encoding="utf-8") == before
    with pytest.raises(InitError):
        init_bundle(folder / "model.onnx")
    init_bundle(folder / "model.onnx", force=True, name="again")
    assert _read(folder / "bundle.yaml")["release"]["name"] == "again"


def test_hostile_tensor_names_are_written_faithfully(tmp_path: Path, cli: Cli) -> None:
    from onnx import TensorProto, helper

    odd = ["in: put #1", "- [x]", "'quoted\"", "line\nbreak", "ünï/cødé:0", "123", "true", "a" * 250]
    nodes = [helper.make_node("Identity", [n], [f"out {i}"]) for i, n in enumerate(odd)]
    graph = helper.make_graph(
        nodes,
        "odd",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in odd],
        [helper.make_tensor_value_info(f"out {i}", TensorProto.FLOAT, [2]) for i in range(len(odd))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(tmp_path / "model.onnx"))
    init_bundle(tmp_path / "model.onnx")
    assert [e["name"] for e in _read(tmp_path / "bundle.yaml")["inputs"]] == odd
    _code, bundle = verify_json(cli, tmp_path)
    assert "graph.io" not in ids(bundle) and "manifest.schema" not in ids(bundle)


def test_unnamed_dynamic_dims_get_distinct_names(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [None, 4])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [None, 4])
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])],
        "g",
        [a, b],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, ["n", 4])],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
        str(tmp_path / "model.onnx"),
    )
    init_bundle(tmp_path / "model.onnx")
    data = _read(tmp_path / "bundle.yaml")
    dims = [data["inputs"][0]["shape"][0], data["inputs"][1]["shape"][0], data["outputs"][0]["shape"][0]]
    assert dims[2] == "n" and len(set(dims)) == 3 and all(isinstance(d, str) for d in dims)


def test_a_file_that_is_not_a_graph_is_a_clear_error(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "model.onnx").write_bytes(b"\xff\x00 not protobuf" * 10)
    code, _out, err = cli("init", tmp_path / "model.onnx")
    assert code == 2 and "cannot be parsed as an ONNX model" in err and "Traceback" not in err
    assert locate(tmp_path) is None
    code, _out, err = cli("init", tmp_path / "absent.onnx")
    assert code == 2 and "no such model file" in err


def test_an_image_input_is_shown_both_ways_of_declaring_preprocessing(tmp_path: Path) -> None:
    onnx.save(classifier(), str(tmp_path / "model.onnx"))
    init_bundle(tmp_path / "model.onnx")
    text = (tmp_path / "bundle.yaml").read_text(encoding="utf-8")
    assert "preprocessing: {kind: image, color: RGB, resize:" in text
    assert "preprocessing: {kind: image, steps: [{decode: {mode: RGB}}, {resize:" in text
