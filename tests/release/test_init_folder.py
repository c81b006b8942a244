"""`checker init DIR` on a Hugging Face repository in transformers.js's layout, built offline (hubkit.py): the
baseline and every dtype file become a bundle that verifies, each variant judged against the baseline on cases
made from raw photos; a chunk of the declared external-data map that is missing, or one that is not declared, is
named before any graph is read."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from releasekit import Cli, ids, verify_json
from ruamel.yaml import YAML

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "answers"))
import hubkit
from answerkit import CLASSES, detector


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder and its photos, made once a session (the converters are the slow part); tests copy it."""
    root = tmp_path_factory.mktemp("hub")
    hubkit.transformers_js_image(root / "repo")
    hubkit.photos(root / "photos")
    return root


@pytest.fixture
def repo(built: Path, tmp_path: Path) -> Path:
    shutil.copytree(built / "repo", tmp_path / "repo")
    return tmp_path / "repo"


def _read(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def test_a_transformers_js_folder_becomes_a_bundle_whose_variants_are_judged(repo: Path, built: Path, cli: Cli) -> None:
    code, out, err = cli("init", repo, "--raw", built / "photos")
    assert code == 0, err
    assert "found a Hugging Face repository in transformers.js's layout" in out
    assert "transformers.js_config's default: dtype q8, device wasm (judged first)" in out
    manifest = _read(repo / "bundle.yaml")
    assert manifest["graph"]["path"] == "onnx/model.onnx"
    assert [e["path"] for e in manifest["graph"]["external_data"]] == ["onnx/model.onnx_data", "onnx/model.onnx_data_1"]
    assert manifest["inputs"][0]["preprocessing"] == {"kind": "image", "config": "preprocessor_config.json"}
    assert manifest["outputs"][0]["labels"] == {"path": "labels.txt", "axis": -1}
    assert (repo / "labels.txt").read_text().split() == hubkit.LABELS
    assert manifest["answers"] == [
        {"name": "top", "kind": "classes", "from": "logits", "steps": [{"apply": "softmax"}]}
    ]
    comparison = manifest["comparison"]
    assert comparison["reference"]["description"] == "baseline graph, made by checker init"
    assert [c["name"] for c in comparison["cases"]] == ["photo0", "photo1", "photo2", "photo3"]
    variants = {v["name"]: v for v in manifest["variants"]}
    assert list(variants) == ["q8", "fp16", "q4"]  # the default dtype first, then transformers.js's order
    assert variants["q8"]["transform"]["tool"] == "onnxruntime.quantization.quantize_dynamic"
    assert variants["fp16"]["transform"]["tool"] == "onnxruntime.transformers.float16.convert_float_to_float16"
    q4 = variants["q4"]["transform"]
    assert q4["tool"].endswith("MatMulNBitsQuantizer") and q4["settings"]["block_size"] == 16
    assert all(v["derived_from"] == "baseline" and v["rules"] and v["drift_rules"] for v in variants.values())
    for variant in variants.values():  # what the application shows, against what the baseline makes it show
        (top,) = [r for r in variant["drift_rules"] if r.get("answer") == "top"]
        assert top["check"] == "classes" and 0.5 <= top["min_agreement"] <= 1

    status, bundle = verify_json(cli, repo)
    assert status == 0, ids(bundle, "error")
    judged = {(c["graph"], c["against"]) for c in bundle["comparisons"]}
    for name in ("q8", "fp16", "q4"):
        assert (name, "baseline") in judged and (name, "reference") in judged
    # The folder's other files are shipped, named and digested, so none is unlisted.
    assert "config.json" in manifest["release"]["files"] and "bundle.yaml" not in manifest["release"]["files"]
    assert not set(manifest["release"]["files"]) & {"onnx/model.onnx", "preprocessor_config.json", "labels.txt"}
    assert "bundle.unlisted" not in ids(bundle)


def test_only_the_folders_plain_files_are_listed_as_shipped(repo: Path, cli: Cli) -> None:
    (repo / "README.md").write_text("# a model\n")
    (repo / "config-link.json").symlink_to("config.json")
    os.mkfifo(repo / "pipe")
    code, _, err = cli("init", repo)
    assert code == 0, err
    assert _read(repo / "bundle.yaml")["release"]["files"] == ["README.md", "config.json"]


def test_a_missing_chunk_is_named_before_any_graph_is_read(repo: Path, built: Path, cli: Cli) -> None:
    (repo / "onnx" / "model.onnx_data_1").unlink()
    code, _out, err = cli("init", repo, "--raw", built / "photos")
    assert code == 2
    assert "graph.external_data: onnx/model.onnx_data_1 is missing" in err
    assert "declares 2 for onnx/model.onnx" in err
    assert "Traceback" not in err and not (repo / "bundle.yaml").exists()


def test_a_chunk_the_map_does_not_declare_is_named(repo: Path, cli: Cli) -> None:
    config = json.loads((repo / "config.json").read_text())
    config["transformers.js_config"]["use_external_data_format"] = True  # one chunk: model.onnx_data
    (repo / "config.json").write_text(json.dumps(config))
    code, _out, err = cli("init", repo)
    assert code == 2
    assert "graph.external_data: onnx/model.onnx_data_1 is not a declared chunk" in err


def test_a_config_that_is_not_json_is_named_with_its_line(repo: Path, cli: Cli) -> None:
    (repo / "config.json").write_text('{\n  "id2label": {\n')
    code, _out, err = cli("init", repo)
    assert code == 2 and "config.json:3: not JSON" in err and "Traceback" not in err


def test_a_folder_of_no_known_layout_is_refused(tmp_path: Path, cli: Cli) -> None:
    code, _out, err = cli("init", tmp_path)
    assert code == 2 and "no layout checker init knows" in err


def test_an_ultralytics_export_becomes_a_letterbox_and_a_yolo_answer(built: Path, tmp_path: Path, cli: Cli) -> None:
    folder = hubkit.ultralytics_export(tmp_path / "yolo", detector(), CLASSES)
    code, out, err = cli("init", folder, "--raw", built / "photos")
    assert code == 0, err
    assert "found an Ultralytics export: yolov8n.onnx's metadata holds names, imgsz, stride, task" in out
    manifest = _read(folder / "bundle.yaml")
    (image,) = manifest["inputs"]
    assert image["preprocessing"] == {
        "kind": "image",
        "steps": [
            {"decode": {"mode": "RGB", "library": "opencv"}},
            {"resize": {"fit": [32, 32], "rounding": "half_even", "filter": "linear", "library": "opencv"}},
            {"pad": {"to": [32, 32], "value": 114}},
            {"scale": 1 / 255},
            {"layout": "NCHW"},
        ],
    }
    (answer,) = manifest["answers"]
    assert answer["kind"] == "detections" and answer["labels"] == {"metadata_key": "names"}
    assert answer["decode"] == {
        "layout": "yolo", "box_format": "cxcywh", "min_score": 0.25, "nms": {"iou": 0.7}, "to_raw": "images"
    }  # fmt: skip
    assert {"answer": "objects", "check": "detections"} in manifest["comparison"]["rules"]
    status, bundle = verify_json(cli, folder)
    assert status == 0, ids(bundle, "error")
    assert "answers.invalid" not in ids(bundle)


def _ultralytics_letterbox(path: Path, size: tuple[int, int]) -> np.ndarray:
    """What Ultralytics' predict makes of an image file (ultralytics/data/augment.py LetterBox, then BGR to RGB,
    CHW and 1/255), written out with OpenCV as it is there."""
    import cv2

    image = cv2.imread(str(path))
    h, w = image.shape[:2]
    r = min(size[0] / h, size[1] / w)
    new = round(w * r), round(h * r)
    dw, dh = (size[1] - new[0]) / 2, (size[0] - new[1]) / 2
    if (w, h) != new:
        image = cv2.resize(image, new, interpolation=cv2.INTER_LINEAR)
    top, bottom = round(dh - 0.1), round(dh + 0.1)
    left, right = round(dw - 0.1), round(dw + 0.1)
    image = cv2.copyMakeBorder(image, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(114, 114, 114))
    return (image[..., ::-1].transpose(2, 0, 1)[None].astype(np.float32) / 255).astype(np.float32)


def test_the_letterbox_makes_the_tensor_ultralytics_predict_makes(built: Path, tmp_path: Path, cli: Cli) -> None:
    folder = hubkit.ultralytics_export(tmp_path / "yolo", detector(), CLASSES)
    code, _out, err = cli("init", folder, "--raw", built / "photos")
    assert code == 0, err
    for case in _read(folder / "bundle.yaml")["comparison"]["cases"]:
        made = np.load(folder / case["inputs"]["images"])
        np.testing.assert_allclose(made, _ultralytics_letterbox(folder / case["raw"]["images"], (32, 32)), atol=1e-6)


@pytest.mark.parametrize(
    ("pooling", "normalize", "steps"),
    [
        ("mean", True, [{"pool": {"mode": "mean", "axis": 1, "mask": "attention_mask"}}, {"normalize": "l2"}]),
        ("cls", False, [{"pool": {"mode": "first", "axis": 1, "mask": "attention_mask"}}]),
    ],
)
def test_a_sentence_encoder_gets_the_pooling_and_normalisation_its_files_declare(
    tmp_path: Path, cli: Cli, pooling: str, normalize: bool, steps: list
) -> None:
    folder = hubkit.sentence_encoder(tmp_path / "encoder", pooling, normalize)
    code, _out, err = cli("init", folder, "--raw", hubkit.texts(tmp_path / "texts"))
    assert code == 0, err
    manifest = _read(folder / "bundle.yaml")
    (answer,) = manifest["answers"]
    assert answer == {"name": "sentence", "kind": "embedding", "from": "last_hidden_state", "steps": steps}
    preps = {i["name"]: i["preprocessing"] for i in manifest["inputs"]}
    assert preps == {
        "input_ids": {"kind": "text", "tokenizer": "tokenizer.json", "max_length": 16, "truncation": True},
        "attention_mask": {"kind": "derived", "from": "input_ids", "field": "attention_mask"},
        "token_type_ids": {"kind": "derived", "from": "input_ids", "field": "type_ids"},
    }
    (q8,) = manifest["variants"]
    assert q8["name"] == "q8"
    (drift,) = [r for r in q8["drift_rules"] if r.get("answer") == "sentence"]
    assert drift["check"] == "embedding" and 0.5 <= drift["min_cosine"] < 1
    assert {"answer": "sentence", "check": "embedding", "min_cosine": 0.9999} in manifest["comparison"]["rules"]
    status, bundle = verify_json(cli, folder)
    assert status == 0, ids(bundle, "error")


def test_an_optimum_export_becomes_a_bundle_with_its_quantized_graph_as_a_variant(
    built: Path, tmp_path: Path, cli: Cli
) -> None:
    folder = hubkit.optimum_image(tmp_path / "optimum")
    code, out, err = cli("init", folder, "--raw", built / "photos")
    assert code == 0, err
    assert "found an Optimum export: model.onnx beside config.json and model_quantized.onnx" in out
    manifest = _read(folder / "bundle.yaml")
    assert manifest["inputs"][0]["preprocessing"] == {"kind": "image", "config": "preprocessor_config.json"}
    assert manifest["outputs"][0]["labels"] == {"path": "labels.txt", "axis": -1}
    assert manifest["answers"][0]["kind"] == "classes"
    (variant,) = manifest["variants"]
    assert variant["name"] == "q8" and variant["transform"]["settings"]["weight_type"] == "QInt8"
    status, bundle = verify_json(cli, folder)
    assert status == 0, ids(bundle, "error")


def test_files_the_folder_names_outside_itself_are_not_read(tmp_path: Path, cli: Cli) -> None:
    folder = hubkit.sentence_encoder(tmp_path / "encoder")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "config.json").write_text('{"pooling_mode_max_tokens": true}')
    modules = json.loads((folder / "modules.json").read_text())
    modules[1]["path"] = "../elsewhere"
    (folder / "modules.json").write_text(json.dumps(modules))
    code, _out, err = cli("init", folder)
    assert code == 2 and "../elsewhere/config.json" in err and "Traceback" not in err
    assert not (folder / "bundle.yaml").exists() and not (folder / "cases").exists()  # not left half-written
    (folder / "modules.json").unlink()
    (folder / "tokenizer_config.json").unlink()
    (folder / "tokenizer_config.json").symlink_to(tmp_path / "elsewhere" / "config.json")
    code, _out, err = cli("init", folder)
    assert code == 2 and "tokenizer_config.json" in err and "Traceback" not in err


def test_a_class_name_with_a_line_break_is_refused(repo: Path, cli: Cli) -> None:
    config = json.loads((repo / "config.json").read_text())
    config["id2label"]["1"] = "dog\nwolf"
    (repo / "config.json").write_text(json.dumps(config))
    code, _out, err = cli("init", repo)
    assert code == 2 and "id2label holds a name with a line break" in err


def test_a_token_classifier_gets_the_class_of_each_token(tmp_path: Path, cli: Cli) -> None:
    folder = hubkit.token_classifier(tmp_path / "ner")
    code, _out, err = cli("init", folder, "--raw", hubkit.texts(tmp_path / "texts"))
    assert code == 0, err
    manifest = _read(folder / "bundle.yaml")
    (answer,) = manifest["answers"]
    assert answer["kind"] == "classes" and answer["steps"] == [
        {"select": {"axis": 0, "index": 0}}, {"apply": "softmax"}
    ]  # fmt: skip
    assert manifest["outputs"][0]["labels"] == {"path": "labels.txt", "axis": -1}
    status, bundle = verify_json(cli, folder)
    assert status == 0, ids(bundle, "error")


@pytest.mark.parametrize("declared", ["two", -1, 10**9, [2]])
def test_a_chunk_map_that_is_no_count_is_named(repo: Path, cli: Cli, declared: object) -> None:
    config = json.loads((repo / "config.json").read_text())
    config["transformers.js_config"]["use_external_data_format"] = {"model.onnx": declared}
    (repo / "config.json").write_text(json.dumps(config))
    code, _out, err = cli("init", repo)
    assert code == 2 and "use_external_data_format for model.onnx is" in err and "Traceback" not in err


@pytest.mark.parametrize("imgsz", ["[32]", "[0, 32]", "__import__('os')", "[99999, 32]"])
def test_an_ultralytics_image_size_that_is_no_size_is_named(tmp_path: Path, cli: Cli, imgsz: str) -> None:
    folder = hubkit.ultralytics_export(tmp_path / "yolo", detector(), CLASSES)
    model = onnx.load(str(folder / "yolov8n.onnx"))
    next(p for p in model.metadata_props if p.key == "imgsz").value = imgsz
    onnx.save(model, str(folder / "yolov8n.onnx"))
    code, _out, err = cli("init", folder)
    assert code == 2 and "the graph's metadata imgsz is" in err and "Traceback" not in err
    assert not (folder / "bundle.yaml").exists()


def test_a_real_ultralytics_export_becomes_a_bundle_that_verifies(built: Path, tmp_path: Path, cli: Cli) -> None:
    """NudeNet's detector as its wheel ships it: a YOLOv8n graph written by Ultralytics 8.2.46's own exporter, with
    the metadata that exporter writes (names, imgsz [320, 320], stride, task, batch)."""
    from fetch_models import cached

    model = cached("nudenet-320n.onnx")
    if model is None:
        pytest.skip("nudenet-320n.onnx is not in the model cache; fetch it with: python tests/fetch_models.py")
    folder = tmp_path / "nudenet"
    folder.mkdir()
    shutil.copy(model, folder / "320n.onnx")
    code, out, err = cli("init", folder, "--raw", built / "photos")
    assert code == 0, err
    assert "found an Ultralytics export: 320n.onnx's metadata holds names, imgsz, stride, task" in out
    manifest = _read(folder / "bundle.yaml")
    (image,) = manifest["inputs"]
    steps = image["preprocessing"]["steps"]
    assert {"resize": {"fit": [320, 320], "rounding": "half_even", "filter": "linear", "library": "opencv"}} in steps
    assert {"pad": {"to": [320, 320], "value": 114}} in steps
    (answer,) = manifest["answers"]
    assert answer["labels"] == {"metadata_key": "names"}
    assert answer["decode"]["layout"] == "yolo" and answer["decode"]["nms"] == {"iou": 0.7}
    status, bundle = verify_json(cli, folder)
    assert status == 0, ids(bundle, "error")
    assert "answers.invalid" not in ids(bundle)
