"""The `inputs:` block as typed models (checker/manifest/model/inputs.py and the kinds' modules): the schema
generated from them judges an inputs block as the committed schema does, a valid block builds into typed
blocks that keep what the manifest wrote, and plain data handed to the parsers is judged in the schema
findings' own words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bundlekit import write_manifest
from jsonschema import Draft202012Validator

from checker.cli import main
from checker.manifest.fragment import problems
from checker.manifest.load import load_manifest
from checker.manifest.model import audio, image, tabular, text
from checker.manifest.model.build import build
from checker.manifest.model.inputs import Custom, Input, Inputs
from checker.manifest.model.root import Spec, manifest_schema
from checker.manifest.schema import load
from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.importers import read_pipeline

RELEASE = {"name": "r", "version": "1"}
IMAGE_STEPS = [
    {"decode": {"mode": "BGR", "library": "opencv", "alpha": {"composite": [255, 255, 255]}}},
    {"convert": {"to": "RGB"}},
    {"resize": {"shorter_side": 256, "max_longer": 400, "when": {"longer_side": {"gt": 960}, "area": {"le": 4}}}},
    {"crop": {"center": 224, "pad_if_smaller": [0, 0, 0]}},
    {"pad": {"at_least": [32, None], "position": "top_left", "value": 114}},
    {"scale": 0.00392156862745098},
    {"normalize": {"mean": [0.5, 0.5, 0.5], "std": 0.25}},
    {"cast": "float16"},
    {"batch": {"repeat": 2}},
    {"layout": "NHWC"},
]
AUDIO_STEPS = [
    {"decode": {"library": "wave"}},
    {"mix": "mono"},
    {"mix": {"to": "first"}},
    {"resample": {"library": "scipy", "rate": 16000}},
    {"gain": 6},
    {"gain": {"db": -3.5}},
    {"normalize": "peak"},
    {"normalize": {"mean": [0, 1], "std": [1, 2]}},
    {"pad": {"to": 16000, "value": 0}},
    {"trim": {"to": 16000, "position": "center"}},
    {"frames": {"size": 400, "hop": 160}},
    {"layout": "NCT"},
    {"cast": "int16"},
]
TABULAR = {
    "kind": "tabular",
    "columns": [
        {"name": "age", "dtype": "int64", "missing": 0, "standard": {"mean": 40, "std": 12}},
        {"name": "colour", "dtype": "string", "missing": {"fill": "error"}, "one_hot": {"categories": ["r", "g"]}},
        {"name": "size", "ordinal": {"categories": [1, 2, 3], "unknown": -1}},
    ],
    "missing": "error",
}


def entry(prep: dict[str, Any] | None, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": "x", "dtype": "float32", "meaning": "tensor", **more}
    return out if prep is None else {**out, "preprocessing": prep}


VALID = [
    entry({"kind": "image", "color": "BGR", "resize": {"mode": "exact", "size": [224, 224]}, "scale": 1}),
    entry({"kind": "image", "steps": IMAGE_STEPS, "tolerance": 0.01}),
    entry({"kind": "image", "import": {"format": "openvino", "path": "ac.yml"}}),
    entry({"kind": "image", "config": "preprocessor_config.json", "pad": {"mode": "letterbox", "size": 64}}),
    entry({"kind": "text", "tokenizer": "tokenizer.json", "template": "q: {text}", "max_length": 8}),
    entry({"kind": "derived", "from": "ids", "field": "attention_mask"}),
    entry({"kind": "audio", "sample_rate": 16000, "range": [-1, 1], "steps": AUDIO_STEPS}),
    entry(TABULAR),
    entry({"kind": "tabular", "import": {"format": "skops", "path": "t.skops"}, "tolerance": 0}),
    entry({"kind": "custom", "description": "a state"}, shape=[1, "n"], layout="NC", range=[0, 1]),
]
INVALID = [
    entry({"kind": "image", "steps": [{"scale": 2}], "scale": 2}),  # steps and the shorthand
    entry({"kind": "image", "steps": [{"blur": 3}]}),
    entry({"kind": "image", "steps": [{"batch": {"repeat": 65}}]}),
    entry({"kind": "image", "steps": [{"pad": {"at_least": [32, "n"]}}]}),
    entry({"kind": "image", "steps": [{"decode": {"alpha": "keep"}}]}),
    entry({"kind": "image", "steps": [{"resize": {"size": 4, "when": {"height": {}}}}]}),
    entry({"kind": "image", "import": {"format": "openvino"}}),
    entry({"kind": "text"}),
    entry({"kind": "text", "tokenizer": "t.json", "template": "no placeholder"}),
    entry({"kind": "derived", "from": "ids"}),
    entry({"kind": "audio", "steps": [{"mix": {"to": "left"}}]}),
    entry({"kind": "audio", "steps": [{"gain": {}}]}),
    entry({"kind": "audio", "steps": [{"layout": "NCHW"}]}),
    entry({"kind": "tabular", "columns": [{"name": "a", "standard": {"mean": 0, "std": 1}, "min_max": {}}]}),
    entry({"kind": "tabular", "columns": [{"name": "a"}], "import": {"format": "skops", "path": "t"}}),
    entry({"kind": "tabular"}),
    entry({"kind": "custom"}),
    entry({"kind": "video"}),
    entry(None, meaning="pixels"),
    entry(None, range=[0]),
]


def judged(validator: Draft202012Validator, inputs: list[Any]) -> bool:
    return bool(validator.is_valid({"manifest_version": 1, "release": RELEASE, "inputs": inputs}))


@pytest.mark.parametrize("inputs", [[e] for e in VALID] + [[e] for e in INVALID])
def test_the_generated_schema_judges_inputs_as_the_committed_one(inputs: list[Any]) -> None:
    generated, committed = Draft202012Validator(manifest_schema()), Draft202012Validator(load("manifest"))
    assert judged(generated, inputs) == judged(committed, inputs) == (inputs[0] in VALID)


def test_a_valid_inputs_block_builds_typed_and_as_written() -> None:
    spec = build(Spec, {"manifest_version": 1, "release": RELEASE, "inputs": VALID})
    assert spec.inputs is not None
    shorthand, steps, _, _, tokens, derived, sound, table, _, custom = spec.inputs
    assert all(isinstance(e, Input) for e in spec.inputs)
    assert isinstance(shorthand.preprocessing, image.Image) and shorthand.preprocessing.steps is None
    assert isinstance(shorthand.preprocessing.resize, image.ShorthandResize)
    assert shorthand.preprocessing.resize.interpolation is None  # absent: a config's, not a default
    assert isinstance(steps.preprocessing, image.Image) and steps.preprocessing.steps is not None
    built = steps.preprocessing.steps
    kinds = (image.Decode, image.Convert, image.Resize, image.Crop, image.Pad, image.Scale, image.Normalize)
    assert [type(b) for b in built] == [*kinds, image.Cast, image.Batch, image.LayoutStep]
    resize = built[2]
    assert isinstance(resize, image.Resize) and resize.when is not None
    assert resize.when.given == ("longer_side", "area")  # the manifest's order, which a condition keeps
    assert resize.rounding == "half_up" and "rounding" not in (resize.given or ())  # a default, not written
    assert resize.at == ("inputs", 1, "preprocessing", "steps", 2, "resize")
    assert built[5].given is None and isinstance(built[5], image.Scale) and built[5].factor == 0.00392156862745098
    assert isinstance(tokens.preprocessing, text.Text) and tokens.preprocessing.padding == "none"
    assert isinstance(derived.preprocessing, text.Derived) and derived.preprocessing.from_ == "ids"
    assert isinstance(sound.preprocessing, audio.Audio) and sound.preprocessing.steps is not None
    mono, first, _, gain, gain_db = sound.preprocessing.steps[1:6]
    assert mono.given is None and first.given == ("to",)  # `mix: mono` and `mix: {to: first}`
    assert isinstance(gain, audio.Gain) and gain.db == 6 and isinstance(gain.db, int)  # as written
    assert isinstance(gain_db, audio.Gain) and gain_db.db == -3.5
    assert isinstance(table.preprocessing, tabular.Tabular) and table.preprocessing.columns is not None
    age, colour, size = table.preprocessing.columns
    assert age.missing == 0 and isinstance(colour.missing, tabular.Fill) and colour.missing.fill == "error"
    assert size.dtype == "float64" and size.ordinal is not None and size.ordinal.categories == [1, 2, 3]
    assert isinstance(custom.preprocessing, Custom) and custom.shape == [1, "n"] and custom.range == [0.0, 1.0]
    empty = build(Spec, {"manifest_version": 1, "release": RELEASE, "inputs": []})
    absent = build(Spec, {"manifest_version": 1, "release": RELEASE})
    assert empty.inputs == [] and absent.inputs is None


def test_plain_data_is_judged_in_the_words_of_the_schema_findings(tmp_path: Path) -> None:
    """What `checked` says of a plain block is what `checker verify` says of the same block in a manifest."""
    bad = entry({"kind": "image", "steps": [{"resiz": {"size": 4}}, {"batch": {"repeat": 65}}, {"cast": "int4"}]})
    path = write_manifest(tmp_path, {"manifest_version": 1, "release": RELEASE, "inputs": [bad]})
    manifest, findings = load_manifest(path)
    assert manifest is not None
    assert problems(Inputs, [bad], ("inputs",)) == [f.message for f in findings]
    assert [f.message for f in findings] == [
        "inputs[0].preprocessing.steps[0].resiz: unknown field 'resiz'; did you mean 'resize'?",
        "inputs[0].preprocessing.steps[1].batch.repeat: 65 is greater than the maximum of 64",
        "inputs[0].preprocessing.steps[2].cast: 'int4' is not one of "
        "['float32', 'float16', 'float64', 'uint8', 'int8', 'int16', 'int32', 'int64']",
    ]


def test_an_imported_pipeline_is_held_to_what_the_manifest_s_steps_must_meet(tmp_path: Path) -> None:
    """A step the file makes that a manifest could not hold (a factor past the schema's bound) is refused."""
    to_float = {"__class_fullname__": "ToFloat", "max_value": 1e-31, "p": 1.0}
    path = tmp_path / "aug.json"
    path.write_text(json.dumps({"transform": {"__class_fullname__": "Compose", "transforms": [to_float], "p": 1}}))
    with pytest.raises(PreprocessError, match=r"the steps of aug\.json\[1\]\.scale: 1e\+31 is greater than"):
        read_pipeline("albumentations", path, "aug.json")


def test_the_preprocess_command_judges_the_inputs_as_verify_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prep = {"kind": "image", "resize": {"mode": "stretch", "size": 4}}
    write_manifest(tmp_path, {"manifest_version": 1, "inputs": [{"name": "x", "preprocessing": prep}]})
    raw = tmp_path / "x.png"
    raw.write_bytes(b"")
    assert main(["preprocess", str(tmp_path), "--input", "x", str(raw), "-o", str(tmp_path / "x.npy")]) == 2
    assert "inputs[0].preprocessing.resize.mode: 'stretch' is not one of" in capsys.readouterr().err
