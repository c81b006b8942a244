"""`checker case add` and `save_case`: cases stored as .npy, the manifest updated with its comments kept."""

from __future__ import annotations

import copy
import json
import platform
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from releasekit import Cli, classifier, complete, edit, ids, verify_json
from ruamel.yaml import YAML

from checker.errors import Error
from checker.release import save_case
from checker.release.init import init_bundle

LABELS = ["cat", "dog", "fox", "owl"]
RULES = [
    {"output": "logits", "check": "allclose", "atol": 1e-5, "rtol": 1e-4},
    {"output": "logits", "check": "topk", "k": 1},
]


def _forward(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """The classifier's reference, in NumPy: average pool, then the linear layer."""
    w = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == "w")).astype(np.float64)
    return (x.astype(np.float64).mean(axis=(2, 3)) @ w.T).astype(np.float32)


def _pixels(seed: int, batch: int = 2) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, 3, 8, 8)).astype(np.float32)


@pytest.fixture
def started(tmp_path: Path) -> tuple[Path, onnx.ModelProto]:
    """A bundle started by `checker init` from a classifier whose class names are in its metadata."""
    model = classifier(LABELS)
    onnx.save(model, str(tmp_path / "model.onnx"))
    init_bundle(tmp_path / "model.onnx")
    return tmp_path, model


def _files(tmp_path: Path, model: onnx.ModelProto, seed: int) -> tuple[Path, Path]:
    x = _pixels(seed)
    np.save(tmp_path / f"x{seed}.npy", x)
    np.save(tmp_path / f"y{seed}.npy", _forward(model, x))
    return tmp_path / f"x{seed}.npy", tmp_path / f"y{seed}.npy"


def test_case_add_then_verify_passes(
    started: tuple[Path, onnx.ModelProto], tmp_path_factory: pytest.TempPathFactory, cli: Cli
) -> None:
    bundle, model = started
    outside = tmp_path_factory.mktemp("reference")
    for seed, tags in ((1, ["ordinary"]), (2, ["edge", "dark"]), (3, [])):
        x, y = _files(outside, model, seed)
        args = [
            "case",
            "add",
            bundle,
            "--name",
            f"case-{seed}",
            "--input",
            f"pixel_values={x}",
            "--expected",
            f"logits={y}",
        ] + [a for t in tags for a in ("--tag", t)]
        code, out, err = cli(*args)
        assert code == 0, err
        assert f"added case 'case-{seed}'" in out
    edit(bundle / "bundle.yaml", lambda tree: complete(tree, RULES))
    code, report = verify_json(cli, bundle)
    assert code == 0, report["findings"]
    assert report["status"] == "pass" and report["comparisons"][0]["status"] == "pass"
    assert "bundle.unlisted" not in ids(report)
    stored = np.load(bundle / "cases" / "case-2" / "pixel_values.npy", allow_pickle=False)
    assert np.array_equal(stored, _pixels(2))


def test_case_add_keeps_the_manifests_comments_and_drops_the_filled_placeholder(
    started: tuple[Path, onnx.ModelProto], cli: Cli
) -> None:
    bundle, model = started
    x, y = _files(bundle.parent, model, 4)
    code, _out, err = cli(
        "case",
        "add",
        bundle,
        "--name",
        "c",
        "--input",
        f"pixel_values={x}",
        "--expected",
        f"logits={y}",
        "--reference",
        "NumPy float64",
    )
    assert code == 0, err
    text = (bundle / "bundle.yaml").read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=")
    assert "# TODO: preprocessing:" in text and "# TODO: command:" in text and "# TODO: at least one" in text
    assert "add them with `checker case add`" not in text
    assert "TODO: what produced the expected outputs" not in text
    data = YAML(typ="safe").load(text)
    assert data["comparison"]["cases"] == [
        {
            "name": "c",
            "inputs": {"pixel_values": "cases/c/pixel_values.npy"},
            "expected": {"logits": "cases/c/logits.npy"},
        }
    ]
    reference = data["comparison"]["reference"]
    produced = reference.pop("produced_on")  # where the reference's outputs were stored, once for the bundle
    assert produced["arch"] == platform.machine() and produced["numpy"] == np.__version__
    assert reference == {"description": "NumPy float64"}


def test_npz_and_onnx_pb_tensor_files_are_accepted(started: tuple[Path, onnx.ModelProto], cli: Cli) -> None:
    bundle, model = started
    x = _pixels(5)
    np.savez(bundle.parent / "both.npz", pixel_values=x, logits=_forward(model, x))
    (bundle.parent / "x.pb").write_bytes(numpy_helper.from_array(x).SerializeToString())
    code, _out, err = cli(
        "case",
        "add",
        bundle,
        "--name",
        "pb",
        "--input",
        f"pixel_values={bundle.parent / 'x.pb'}",
        "--expected",
        f"logits={bundle.parent / 'both.npz'}",
    )
    assert code == 0, err
    assert np.array_equal(np.load(bundle / "cases" / "pb" / "pixel_values.npy"), x)
    assert np.array_equal(np.load(bundle / "cases" / "pb" / "logits.npy"), _forward(model, x))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name", "../up"], "case name '../up'"),
        (["--name", "ok", "--input", "nope=X"], "the manifest has no input 'nope'"),
        (["--name", "ok", "--input", "pixel_values"], "expected NAME=FILE"),
        (["--name", "ok", "--input", "pixel_values=/no/such.npy"], "no such tensor file"),
        (["--name", "ok", "--input", "pixel_values=F64"], "is float64, the manifest declares float32"),
    ],
)
def test_bad_arguments_are_clear_errors(
    started: tuple[Path, onnx.ModelProto], cli: Cli, args: list[str], message: str
) -> None:
    bundle, model = started
    x, y = _files(bundle.parent, model, 6)
    np.save(bundle.parent / "f64.npy", _pixels(6).astype(np.float64))
    args = [a.replace("=X", f"={x}").replace("=F64", f"={bundle.parent / 'f64.npy'}") for a in args]
    before = (bundle / "bundle.yaml").read_text(encoding="utf-8")
    code, _out, err = cli("case", "add", bundle, *args, "--expected", f"logits={y}")
    assert code == 2 and message in err and "Traceback" not in err, err
    assert (bundle / "bundle.yaml").read_text(encoding="utf-8") == before


def test_a_second_case_of_the_same_name_needs_replace(started: tuple[Path, onnx.ModelProto], cli: Cli) -> None:
    bundle, model = started
    x, y = _files(bundle.parent, model, 7)
    base = ["case", "add", bundle, "--name", "same", "--input", f"pixel_values={x}", "--expected", f"logits={y}"]
    assert cli(*base)[0] == 0
    code, out, err = cli(*base)
    assert code == 2 and "--replace" in err
    code, out, err = cli(*base, "--replace", "--tag", "edge")
    assert code == 0 and "replaced case 'same'" in out
    cases = YAML(typ="safe").load((bundle / "bundle.yaml").read_text(encoding="utf-8"))["comparison"]["cases"]
    assert [(c["name"], c.get("tags")) for c in cases] == [("same", ["edge"])]


def test_tensor_names_that_are_not_file_names_get_safe_files(tmp_path: Path) -> None:
    save_case(
        tmp_path,
        "odd",
        inputs={"in/put:0": np.zeros(2, np.float32), "In.Put": np.ones(2, np.float32)},
        expected={"in put:0": np.ones(2, np.float32)},
    )
    case = YAML(typ="safe").load((tmp_path / "bundle.yaml").read_text(encoding="utf-8"))["comparison"]["cases"][0]
    files = [*case["inputs"].values(), *case["expected"].values()]
    assert len({f.lower() for f in files}) == 3
    assert all(f.startswith("cases/odd/") and "/" not in f[len("cases/odd/") :] for f in files)
    assert np.array_equal(np.load(tmp_path / case["inputs"]["in/put:0"]), np.zeros(2, np.float32))


def test_a_raw_input_without_a_tensor_is_made_by_the_declared_preprocessing(example: Path, cli: Cli) -> None:
    photo, logits = example / "cases" / "meadow" / "photo.png", example / "cases" / "meadow" / "logits.npy"
    code, out, err = cli(
        "case",
        "add",
        example,
        "--name",
        "meadow-raw",
        "--raw",
        f"pixel_values={photo}",
        "--expected",
        f"logits={logits}",
        "--tag",
        "edge",
    )
    assert code == 0, err
    assert "made from the raw inputs by the declared preprocessing: pixel_values" in out
    assert "run `checker lock`" in out  # the example is locked: its release.digest is stale now
    built = np.load(example / "cases" / "meadow-raw" / "pixel_values.npy")
    stored = np.load(example / "cases" / "meadow" / "pixel_values.npy")
    assert built.shape == stored.shape and np.abs(built - stored).max() < 1e-3
    assert cli("lock", example)[0] == 0
    code, report = verify_json(cli, example)
    assert code == 0, report["findings"]
    assert "inputs.fidelity" not in ids(report)


def test_save_case_before_the_graph_exists_then_init_keeps_the_cases(tmp_path: Path, cli: Cli) -> None:
    # The export script: run the original model, save what it saw and said, then convert.
    model = classifier(LABELS)
    bundle = tmp_path / "release"
    for seed in (11, 12):
        x = _pixels(seed)
        added = save_case(
            bundle,
            f"s{seed}",
            inputs={"pixel_values": x},
            expected={"logits": _forward(model, x)},
            tags=["edge"] if seed == 12 else ["ordinary"],
            reference="NumPy float64, x86_64",
        )
        assert added.files == [f"cases/s{seed}/pixel_values.npy", f"cases/s{seed}/logits.npy"]
    early = YAML(typ="safe").load((bundle / "bundle.yaml").read_text(encoding="utf-8"))
    assert set(early) == {"manifest_version", "release", "comparison"}
    onnx.save(model, str(bundle / "model.onnx"))
    result = init_bundle(bundle / "model.onnx")
    assert "comparison.cases" not in result.placeholders and "comparison.reference" not in result.placeholders
    data = YAML(typ="safe").load((bundle / "bundle.yaml").read_text(encoding="utf-8"))
    assert [c["name"] for c in data["comparison"]["cases"]] == ["s11", "s12"]
    # init keeps what the export script recorded: the reference and where its outputs were stored
    assert data["comparison"]["reference"] == early["comparison"]["reference"]
    assert data["comparison"]["reference"]["description"] == "NumPy float64, x86_64"
    edit(bundle / "bundle.yaml", lambda tree: complete(tree, RULES))
    code, report = verify_json(cli, bundle)
    assert code == 0, report["findings"]


def test_save_case_refuses_what_cannot_be_stored_without_pickles(tmp_path: Path) -> None:
    with pytest.raises(Error, match="dtype object"):
        save_case(tmp_path, "bad", inputs={"x": np.array([{"a": 1}], dtype=object)}, expected={"y": np.zeros(1)})
    with pytest.raises(Error, match="one reference"):
        save_case(tmp_path, "a", inputs={"x": np.zeros(1)}, expected={"y": np.zeros(1)}, reference="first")
        save_case(tmp_path, "b", inputs={"x": np.zeros(1)}, expected={"y": np.zeros(1)}, reference="second")


def test_a_manifest_path_that_does_not_exist_yet_is_started_there(tmp_path: Path) -> None:
    save_case(tmp_path / "release" / "bundle.yml", "c", inputs={"x": np.zeros(1)}, expected={"y": np.zeros(1)})
    assert (tmp_path / "release" / "bundle.yml").is_file()
    assert (tmp_path / "release" / "cases" / "c" / "x.npy").is_file()


def test_a_json_manifest_stays_json(tmp_path: Path) -> None:
    (tmp_path / "bundle.json").write_text(json.dumps({"manifest_version": 1, "release": {"name": "j", "version": "1"}}))
    save_case(tmp_path, "c", inputs={"x": np.zeros(1)}, expected={"y": np.zeros(1)})
    data = json.loads((tmp_path / "bundle.json").read_text(encoding="utf-8"))
    assert data["comparison"]["cases"][0]["name"] == "c"
    assert not (tmp_path / "bundle.yaml").exists()


def test_a_tensor_that_does_not_fit_its_input_is_refused_naming_the_file_and_both_shapes(
    started: tuple[Path, onnx.ModelProto], cli: Cli
) -> None:
    bundle, model = started
    x, y = _files(bundle.parent, model, 8)
    flat, narrow = bundle.parent / "flat.npy", bundle.parent / "narrow.npy"
    np.save(flat, np.zeros((1, 10), np.float32))
    np.save(narrow, np.zeros((1, 3, 8, 7), np.float32))
    before = (bundle / "bundle.yaml").read_text(encoding="utf-8")
    for tensor, problem in ((flat, "rank 2, not 4"), (narrow, "axis 3 is 7, not 8")):
        args = ["case", "add", bundle, "--name", "misfit", "--input", f"pixel_values={tensor}"]
        code, _out, err = cli(*args, "--expected", f"logits={y}")
        assert code == 2 and "Traceback" not in err, err
        assert f"case 'misfit': {tensor} holds a tensor of shape [1, {'10' if tensor == flat else '3, 8, 7'}]" in err
        assert "input 'pixel_values' is declared [batch, 3, 8, 8]" in err and problem in err
    code, _out, err = cli("case", "add", bundle, "--name", "misfit", "--input", f"pixel_values={x}",
                          "--expected", f"logits={flat}")  # fmt: skip
    assert code == 2 and f"{flat} holds a tensor of shape [1, 10], but output 'logits' is declared [batch, 4]" in err
    assert (bundle / "bundle.yaml").read_text(encoding="utf-8") == before
    assert not (bundle / "cases" / "misfit").exists()


def test_save_case_names_the_array_that_does_not_fit(started: tuple[Path, onnx.ModelProto]) -> None:
    bundle, _model = started
    with pytest.raises(Error, match=r"the array given for 'pixel_values' holds a tensor of shape \[1, 10\]"):
        save_case(
            bundle,
            "flat",
            inputs={"pixel_values": np.zeros((1, 10), np.float32)},
            expected={"logits": np.zeros((1, 4), np.float32)},
        )


def test_where_the_reference_was_made_is_recorded_once_per_bundle(
    started: tuple[Path, onnx.ModelProto], cli: Cli
) -> None:
    bundle, model = started
    for seed in (21, 22, 23):
        x, y = _files(bundle.parent, model, seed)
        code, _out, err = cli("case", "add", bundle, "--name", f"c{seed}", "--input", f"pixel_values={x}",
                              "--expected", f"logits={y}")  # fmt: skip
        assert code == 0, err
    text = (bundle / "bundle.yaml").read_text(encoding="utf-8")
    assert "cpu_features" not in text and text.count("produced_on") == 1
    data = YAML(typ="safe").load(text)
    produced = data["comparison"]["reference"]["produced_on"]
    assert set(produced) == {"arch", "cpu_class", "onnxruntime", "numpy"} and produced["arch"] == platform.machine()
    assert all("produced_on" not in case for case in data["comparison"]["cases"])
    # A case stored where another machine made the others says where it was made.
    edit(
        bundle / "bundle.yaml",
        lambda tree: tree["comparison"]["reference"]["produced_on"].update(cpu_class="elsewhere"),
    )
    x, y = _files(bundle.parent, model, 24)
    assert (
        cli("case", "add", bundle, "--name", "c24", "--input", f"pixel_values={x}", "--expected", f"logits={y}")[0] == 0
    )
    cases = YAML(typ="safe").load((bundle / "bundle.yaml").read_text(encoding="utf-8"))["comparison"]["cases"]
    assert [c.get("produced_on") for c in cases] == [None, None, None, produced]


def test_a_manifest_with_a_record_in_every_case_stays_valid(example: Path, cli: Cli) -> None:
    """Manifests written before the bundle-wide record hold one, with the CPU's features, in every case."""
    old = {"arch": "x86_64", "cpu_class": "x86-64-v3", "cpu_features": ["SSE", "AVX2", "FMA3"], "numpy": "2.4.6"}
    edit(
        example / "bundle.yaml",
        lambda tree: [case.update(produced_on=copy.deepcopy(old)) for case in tree["comparison"]["cases"]],
    )
    assert cli("lock", example)[0] == 0
    code, report = verify_json(cli, example)
    assert code == 0 and "manifest.schema" not in ids(report), report["findings"]
    x, y = example / "cases" / "dusk" / "pixel_values.npy", example / "cases" / "dusk" / "logits.npy"
    assert (
        cli("case", "add", example, "--name", "dusk-2", "--input", f"pixel_values={x}", "--expected", f"logits={y}")[0]
        == 0
    )
    assert cli("lock", example)[0] == 0
    code, report = verify_json(cli, example)
    assert code == 0, report["findings"]
