"""`checker preprocess PATH --input NAME FILE -o OUT`, run in-process through the CLI's main()."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
from prepkit import ids, photo, write_tokenizer

from checker.cli import main
from checker.preprocess.image.build import build_image
from checker.preprocess.image.spec import parse_image

CHELSEA = photo("chelsea.png")
IMAGE_PREP = {"kind": "image", "resize": {"mode": "exact", "size": [64, 96]}, "scale": 0.00392156862745098}
TEXT_PREP = {"kind": "text", "tokenizer": "tokenizer.json", "max_length": 8, "padding": "max_length"}


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    root.mkdir()
    write_tokenizer(root / "tokenizer.json")
    mask = {"kind": "derived", "from": "input_ids", "field": "attention_mask"}
    inputs = [
        {"name": "image", "dtype": "float32", "layout": "NHWC", "preprocessing": IMAGE_PREP},
        {"name": "input_ids", "dtype": "int64", "shape": ["batch", 8], "preprocessing": TEXT_PREP},
        {"name": "mask", "dtype": "int64", "preprocessing": mask},
        {"name": "wave", "dtype": "float32", "preprocessing": {"kind": "audio", "sample_rate": 16000}},
    ]
    (root / "bundle.yaml").write_text(json.dumps({"manifest_version": 1, "inputs": inputs}, indent=2))
    return root


def test_an_image_becomes_its_tensor(bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "image.npy"
    assert main(["preprocess", str(bundle), "--input", "image", str(CHELSEA), "-o", str(out)]) == 0
    got = np.load(out, allow_pickle=False)
    np.testing.assert_array_equal(got, build_image(parse_image(IMAGE_PREP), CHELSEA, "NHWC", "float32"))
    assert got.shape == (1, 64, 96, 3)
    assert "input 'image', float32 [1, 64, 96, 3]" in capsys.readouterr().out


def test_a_text_and_its_derived_inputs(bundle: Path, tmp_path: Path) -> None:
    raw = tmp_path / "q.txt"
    raw.write_text("the dog ran\n")
    out = tmp_path / "text.npz"
    assert main(["preprocess", str(bundle / "bundle.yaml"), "--input", "input_ids", str(raw), "-o", str(out)]) == 0
    with np.load(out, allow_pickle=False) as npz:
        assert sorted(npz.files) == ["input_ids", "mask"]
        np.testing.assert_array_equal(npz["input_ids"], [[*ids("[CLS]", "the", "dog", "ran", "[SEP]"), 0, 0, 0]])
        np.testing.assert_array_equal(npz["mask"], [[1, 1, 1, 1, 1, 0, 0, 0]])
    single = tmp_path / "mask.npy"
    assert main(["preprocess", str(bundle), "--input", "mask", str(raw), "-o", str(single)]) == 0
    np.testing.assert_array_equal(np.load(single), [[1, 1, 1, 1, 1, 0, 0, 0]])


def test_an_archived_bundle(bundle: Path, tmp_path: Path) -> None:
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(bundle, arcname="bundle")
    out = tmp_path / "image.npy"
    assert main(["preprocess", str(archive), "--input", "image", str(CHELSEA), "-o", str(out)]) == 0
    assert np.load(out).shape == (1, 64, 96, 3)


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        ("pixels", CHELSEA, "no input 'pixels' (its inputs: image, input_ids, mask, wave)"),
        ("image", Path("/nonexistent/cat.png"), "no such file"),
        ("wave", CHELSEA, "kind 'audio'; only image, text, tabular and audio (with `steps`) inputs are rebuilt"),
        ("image", Path(__file__), "cannot be decoded as an image"),
    ],
)
def test_usage_problems_exit_2(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, raw: Path, message: str
) -> None:
    out = tmp_path / "out.npy"
    assert main(["preprocess", str(bundle), "--input", name, str(raw), "-o", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_without_pillow_the_command_says_what_to_install(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)
    assert main(["preprocess", str(bundle), "--input", "image", str(CHELSEA), "-o", str(tmp_path / "o.npy")]) == 2
    assert "pip install 'onnx-release-checker[image]'" in capsys.readouterr().err


def test_a_folder_without_a_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preprocess", str(tmp_path), "--input", "x", str(CHELSEA), "-o", str(tmp_path / "o.npy")]) == 2
    assert "no manifest" in capsys.readouterr().err
