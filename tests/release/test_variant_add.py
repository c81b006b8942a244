"""`checker variant add`: a quantized or float16 graph recorded as a variant, its transform read from the graph and
its rules measured on the bundle's cases, so that the bundle verifies; the example's own variant block reproduced.

Every graph here is made by the tool that makes it for a device: onnxruntime's quantize_static, quantize_dynamic
and MatMulNBits quantizer, and its float16 converter. No test states a measured int8 figure: the proposed rules
are held to `checker verify` on the same machine, and the example's thresholds are measured on the CPU class they
were set for (x86-64-v3, natively or under qemu).
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from bundlekit import EXAMPLE, REPO
from releasekit import Cli, classifier, edit, ids, mlp_bundle, verify_json
from ruamel.yaml import YAML

from checker.release.measure import Figure
from checker.release.proposal import Planned, decade_up, nice_up, propose
from checker.release.traces import DYNAMIC, FLOAT16, NBITS, STATIC, shown_transform

V3 = "x86-64-v3"


def _yaml(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def _v3_unavailable() -> str | None:
    """Why an x86-64-v3 CPU cannot be had here (natively or under qemu), or None."""
    from checker.platforms.catalog import resolve
    from checker.platforms.features import this_machine
    from checker.platforms.launch import plan

    (platform,), _ = resolve([V3], {})
    chosen = plan(platform, this_machine()[0])
    return chosen if isinstance(chosen, str) else None


def _without_variants(bundle: Path) -> None:
    edit(bundle / "bundle.yaml", lambda tree: tree.pop("variants"))


@pytest.fixture(autouse=True)
def _quiet_quantizers() -> Iterator[None]:
    """onnxruntime.quantization logs advice to the root logger; the tests read the checker's output only."""
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


def test_variant_add_on_the_examples_int8_graph_reproduces_its_variant_block(example: Path, cli: Cli) -> None:
    """The Done-when of the release flow. The example's thresholds hold on x86 CPUs without VNNI, where its
    uint8-by-int8 graph drifts most; measured there too (--platform), the proposal is the same on any machine."""
    reason = _v3_unavailable()
    if reason is not None:
        pytest.skip(reason)
    shipped = _yaml(EXAMPLE / "bundle.yaml")
    _without_variants(example)
    code, out, err = cli(
        "variant", "add", example, "--graph", example / "model.int8.onnx", "--calibration-cases", "8", "--platform", V3
    )
    assert code == 0, err
    assert "recorded variant 'int8'" in out and "Traceback" not in err
    written = _yaml(example / "bundle.yaml")
    assert written["variants"] == shipped["variants"]
    # The manifest's data is the shipped one again, so its lock gives the shipped bundle digest.
    assert "release.digest no longer matches" in out
    assert cli("lock", example)[0] == 0
    assert _yaml(example / "bundle.yaml")["release"]["digest"] == shipped["release"]["digest"]


def test_the_record_says_where_each_setting_and_threshold_came_from(example: Path, cli: Cli) -> None:
    _without_variants(example)
    code, _out, err = cli("variant", "add", example, "--graph", example / "model.int8.onnx", "--calibration-cases", "8")
    assert code == 0, err
    text = (example / "bundle.yaml").read_text(encoding="utf-8")
    assert "# read from the graph: quant_format, per_channel, activation_type, weight_type" in text
    assert "# assumed: calibrate_method: MinMax, quantize_static's default" in text
    assert re.search(
        r"# proposed from the worst case, \w+: [0-9.]+ on this machine \(x86-64[-\w]*\), with at least 20% headroom",
        text,
    )
    assert "# 1/255" in text  # the manifest's own comments are kept
    # What it proposed passes on the machine that measured it, as verify judges it.
    assert cli("lock", example)[0] == 0
    code, report = verify_json(cli, example)
    assert code == 0, report["findings"]
    assert [c["status"] for c in report["comparisons"] if c["graph"] == "int8"] == ["pass", "pass"]


def _docs_flow() -> tuple[str, list[str]]:
    """docs/release.md's quantize.py and the commands that follow it."""
    section = (REPO / "docs" / "release.md").read_text(encoding="utf-8").split("## Variants:", 1)[1]
    section = section.split("\n## ", 1)[0]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    commands = [line.split("#")[0].split() for line in re.findall(r"```bash\n(.*?)```", section, re.S)[0].splitlines()]
    assert commands[0] == ["python", "quantize.py"] and all(c[0] == "checker" for c in commands[1:])
    assert 'bundle = Path("release")' in snippet
    return snippet, [c[1:] for c in commands[1:]]


def test_the_docs_release_flow_quantizes_and_declares_the_variant(tmp_path: Path, cli: Cli) -> None:
    """docs/release.md's quantize.py, run as it stands on a bundle without a variant, then its commands: the
    variant verifies, and its record re-runs to the very graph (diagnose --reproduce)."""
    snippet, commands = _docs_flow()
    bundle = tmp_path / "release"
    shutil.copytree(EXAMPLE, bundle)
    (bundle / "model.int8.onnx").unlink()
    (bundle / "bundle.sha256").unlink()  # a bundle not locked yet: `checker lock` comes after the variant
    edit(bundle / "bundle.yaml", lambda tree: (tree.pop("variants"), tree["release"].pop("digest")))
    code = snippet.replace('Path("release")', f"Path({str(bundle)!r})")
    exec(compile(code, "docs/release.md", "exec"), {})
    assert (bundle / "model.int8.onnx").is_file()
    for args in commands:
        code_, out, err = cli(*[str(bundle) + a[len("release") :] if a.startswith("release") else a for a in args])
        assert code_ == 0, (args, out, err)
    transform = _yaml(bundle / "bundle.yaml")["variants"][0]["transform"]
    assert transform["settings"] == _yaml(EXAMPLE / "bundle.yaml")["variants"][0]["transform"]["settings"]
    code_, report = verify_json(cli, bundle)
    assert code_ == 0 and "bundle.unlisted" not in ids(report), report["findings"]


# --- what the graph shows --------------------------------------------------------------------------------------


def _features(root: Path) -> list[np.ndarray]:
    return [np.load(root / "cases" / f"c{i}" / "features.npy") for i in range(6)]


def _static(root: Path, out: str, **settings: Any) -> Path:
    from onnxruntime.quantization import CalibrationDataReader, quantize_static

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.items = iter([{"features": x} for x in _features(root)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.items, None)

    quantize_static(str(root / "model.onnx"), str(root / out), Reader(), **settings)
    return root / out


def _dynamic(root: Path, out: str, **settings: Any) -> Path:
    from onnxruntime.quantization import quantize_dynamic

    quantize_dynamic(str(root / "model.onnx"), str(root / out), **settings)
    return root / out


def _float16(root: Path, out: str) -> Path:
    from onnxruntime.transformers.float16 import convert_float_to_float16
    from onnxruntime.transformers.onnx_model import OnnxModel

    converted = OnnxModel(convert_float_to_float16(onnx.load(str(root / "model.onnx")), keep_io_types=True))
    converted.topological_sort()  # the converter appends the input casts last; the ONNX checker wants them first
    onnx.save(converted.model, str(root / out))
    return root / out


def _four_bit(root: Path, out: str) -> Path:
    quantizer_module = pytest.importorskip("onnxruntime.quantization.matmul_nbits_quantizer", exc_type=ImportError)
    quantizer = quantizer_module.MatMulNBitsQuantizer(
        onnx.load(str(root / "model.onnx")), block_size=32, is_symmetric=True, accuracy_level=4
    )
    quantizer.process()
    onnx.save(quantizer.model.model, str(root / out))
    return root / out


def _shown(path: Path) -> tuple[str | None, dict[str, Any]]:
    shown = shown_transform(onnx.load(str(path), load_external_data=False))
    return shown.tool, shown.settings


def test_each_quantization_is_read_from_its_graph(tmp_path: Path) -> None:
    from onnxruntime.quantization import QuantFormat, QuantType

    root = mlp_bundle(tmp_path / "mlp")
    assert _shown(root / "model.onnx") == (None, {})
    qdq = _static(root, "qdq.onnx", per_channel=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    assert _shown(qdq) == (
        STATIC,
        {"quant_format": "QDQ", "per_channel": True, "activation_type": "QUInt8", "weight_type": "QInt8"},
    )
    qop = _static(
        root, "qop.onnx", quant_format=QuantFormat.QOperator, reduce_range=True,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8,
    )  # fmt: skip
    assert _shown(qop) == (
        STATIC,
        {"quant_format": "QOperator", "reduce_range": True, "activation_type": "QUInt8", "weight_type": "QUInt8"},
    )
    assert _shown(_dynamic(root, "dyn.onnx", per_channel=True, weight_type=QuantType.QInt8)) == (
        DYNAMIC,
        {"per_channel": True, "weight_type": "QInt8"},
    )
    assert _shown(_dynamic(root, "dyn-plain.onnx", weight_type=QuantType.QUInt8)) == (
        DYNAMIC,
        {"weight_type": "QUInt8"},
    )
    assert _shown(_float16(root, "fp16.onnx")) == (FLOAT16, {"keep_io_types": True})


def test_four_bit_weights_are_read_from_their_graph(tmp_path: Path) -> None:
    root = mlp_bundle(tmp_path / "mlp")
    assert _shown(_four_bit(root, "q4.onnx")) == (
        NBITS,
        {"bits": 4, "block_size": 32, "is_symmetric": True, "accuracy_level": 4},
    )


@pytest.mark.parametrize("kind", ["dynamic", "float16", "4-bit"])
def test_each_kind_of_variant_is_recorded_with_rules_that_pass(tmp_path: Path, cli: Cli, kind: str) -> None:
    from onnxruntime.quantization import QuantType

    root = mlp_bundle(tmp_path / "mlp")
    made = {
        "dynamic": lambda: _dynamic(root, "model.dyn.onnx", per_channel=True, weight_type=QuantType.QInt8),
        "float16": lambda: _float16(root, "model_fp16.onnx"),
        "4-bit": lambda: _four_bit(root, "model_q4.onnx"),
    }[kind]()
    code, _out, err = cli("variant", "add", root, "--graph", made)
    assert code == 0, err
    (variant,) = _yaml(root / "bundle.yaml")["variants"]
    assert variant["name"] == {"dynamic": "dyn", "float16": "fp16", "4-bit": "q4"}[kind]
    assert variant["transform"]["tool"] == {"dynamic": DYNAMIC, "float16": FLOAT16, "4-bit": NBITS}[kind]
    checks = [(r["output"], r["check"]) for r in variant["rules"]]
    assert checks == [("logits", "topk"), ("logits", "score_drift")]
    assert [r["check"] for r in variant["drift_rules"]] == ["cosine"]
    code, report = verify_json(cli, root)
    assert code == 0, report["findings"]
    assert "variant.transform" not in ids(report)


# --- what the user states ----------------------------------------------------------------------------------------


def test_a_stated_setting_wins_and_a_contradiction_is_said(example: Path, cli: Cli) -> None:
    _without_variants(example)
    code, out, err = cli(
        "variant", "add", example, "--graph", example / "model.int8.onnx", "--name", "edge-int8",
        "--transform", "quantize_static", "--transform-version", "1.19.2",
        "--settings", "per_channel=false", "calibrate_method=Entropy", "--calibration-cases", "meadow", "dusk",
    )  # fmt: skip
    assert code == 0, err
    assert "said: per_channel is stated as false, but the graph shows true" in out
    (variant,) = _yaml(example / "bundle.yaml")["variants"]
    assert variant["name"] == "edge-int8"
    assert variant["transform"] == {
        "tool": STATIC,
        "version": "1.19.2",
        "settings": {
            "quant_format": "QDQ",
            "per_channel": False,
            "activation_type": "QUInt8",
            "weight_type": "QInt8",
            "calibrate_method": "Entropy",
            "calibration_cases": ["meadow", "dusk"],
        },
    }
    text = (example / "bundle.yaml").read_text(encoding="utf-8")
    assert "# said: per_channel is stated as false, but the graph shows true" in text
    assert "assumed: version" not in text and "assumed: calibrate_method" not in text
    # verify says the same of the recorded transform
    assert cli("lock", example)[0] == 0
    _, report = verify_json(cli, example)
    assert any(f["id"] == "variant.transform" and "per_channel is false" in f["message"] for f in report["findings"])


def test_a_graph_outside_the_bundle_is_copied_in_and_a_name_taken_is_refused(
    example: Path, tmp_path: Path, cli: Cli
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copyfile(example / "model.int8.onnx", elsewhere / "model.int8.onnx")
    code, _out, err = cli("variant", "add", example, "--graph", elsewhere / "model.int8.onnx")
    assert code == 2 and "variant named 'int8' already" in err and "--replace" in err
    outside = elsewhere / "mobilenet.int8.onnx"
    shutil.copyfile(example / "model.int8.onnx", outside)
    code, out, err = cli("variant", "add", example, "--graph", outside, "--name", "int8-b", "--calibration-cases", "8")
    assert code == 0, err
    assert "copied into the bundle: mobilenet.int8.onnx" in out
    names = [(v["name"], v["graph"]["path"]) for v in _yaml(example / "bundle.yaml")["variants"]]
    assert names == [("int8", "model.int8.onnx"), ("int8-b", "mobilenet.int8.onnx")]
    code, out, err = cli("variant", "add", example, "--graph", outside, "--name", "int8-b", "--replace")
    assert code == 0 and "recorded anew" in out, err  # the same bytes in the way are no obstacle


def _unchanged(bundle: Path, run: Callable[[], tuple[int, str, str]]) -> str:
    before = (bundle / "bundle.yaml").read_text(encoding="utf-8")
    code, _out, err = run()
    assert code == 2 and "Traceback" not in err, err
    assert (bundle / "bundle.yaml").read_text(encoding="utf-8") == before
    return err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--graph", "model.onnx", "--name", "again"], "is the baseline graph"),
        (["--graph", "model.int8.onnx", "--name", "b", "--derived-from", "fp16"], "--derived-from fp16"),
        (["--graph", "model.int8.onnx", "--name", "b", "--calibration-cases", "9"], "from 1 to 8"),
        (["--graph", "model.int8.onnx", "--name", "b", "--calibration-cases", "moon"], "no case moon"),
        (["--graph", "model.int8.onnx", "--name", "b", "--settings", "per channel=1"], "expected KEY=VALUE"),
        (["--graph", "model.int8.onnx", "--name", "b", "--settings", "x=[1"], "not a YAML value"),
        (["--graph", "model.int8.onnx", "--name", "../b"], "variant name '../b'"),
        (["--graph", "labels.txt", "--name", "b"], "cannot be parsed as an ONNX model"),
        (["--graph", "model.int8.onnx", "--name", "b", "--platform", "aarch64-i8mm"], "cannot be emulated"),
        (["--graph", "model.int8.onnx", "--name", "b", "--platform", "pdp-11"], "no platform of that name"),
    ],
)
def test_what_cannot_be_recorded_is_a_clear_error_that_changes_nothing(
    example: Path, cli: Cli, args: list[str], message: str
) -> None:
    _without_variants(example)
    args = [str(example / a) if a.endswith((".onnx", ".txt")) else a for a in args]
    err = _unchanged(example, lambda: cli("variant", "add", example, *args))
    assert message in err


def test_a_variant_that_does_not_run_on_the_cases_is_refused(example: Path, tmp_path: Path, cli: Cli) -> None:
    """A graph whose input is another size: every case fails, and the refusal says how."""
    model = classifier(["a", "b", "c", "d"])
    model.graph.input[0].name = "pixel_values"
    other = tmp_path / "other.onnx"
    onnx.save(model, str(other))
    err = _unchanged(example, lambda: cli("variant", "add", example, "--graph", other, "--transform", "pruned",
                                          "--transform-version", "1"))  # fmt: skip
    assert "cannot be measured" in err
    assert not (example / "other.onnx").exists()


def test_a_quantization_for_dynamic_takes_no_calibration_cases(tmp_path: Path, cli: Cli) -> None:
    from onnxruntime.quantization import QuantType

    root = mlp_bundle(tmp_path / "mlp")
    made = _dynamic(root, "model.dyn.onnx", weight_type=QuantType.QInt8)
    err = _unchanged(root, lambda: cli("variant", "add", root, "--graph", made, "--calibration-cases", "2"))
    assert "quantize_dynamic does not calibrate on cases" in err
    err = _unchanged(root, lambda: cli("variant", "add", root, "--graph", root / "model.onnx", "--name", "copy"))
    assert "is the baseline graph" in err


def test_a_graph_that_shows_no_transform_needs_one_stated(tmp_path: Path, cli: Cli) -> None:
    root = mlp_bundle(tmp_path / "mlp")
    shutil.copyfile(root / "model.onnx", root / "model.pruned.onnx")
    err = _unchanged(root, lambda: cli("variant", "add", root, "--graph", root / "model.pruned.onnx"))
    assert "shows no transform" in err and "--transform TOOL" in err
    code, _out, err = cli(
        "variant", "add", root, "--graph", root / "model.pruned.onnx", "--transform", "sparseml.prune",
        "--transform-version", "1.8.0", "--settings", "sparsity=0.0",
    )  # fmt: skip
    assert code == 0, err
    (variant,) = _yaml(root / "bundle.yaml")["variants"]
    assert variant["name"] == "pruned"
    assert variant["transform"] == {"tool": "sparseml.prune", "version": "1.8.0", "settings": {"sparsity": 0.0}}
    # The same graph as the baseline: every figure is perfect, and the proposal is at its strictest.
    assert variant["rules"][1]["max"] == 0.001 and variant["drift_rules"] == [
        {"output": "logits", "check": "cosine", "min": 0.999999}
    ]


def test_without_cases_the_transform_is_recorded_and_the_rules_left_to_do(tmp_path: Path, cli: Cli) -> None:
    from checker.release.init import init_bundle

    onnx.save(classifier(["a", "b", "c", "d"]), str(tmp_path / "model.onnx"))
    init_bundle(tmp_path / "model.onnx")
    _float16_of_classifier(tmp_path)
    code, out, err = cli("variant", "add", tmp_path, "--graph", tmp_path / "model_fp16.onnx")
    assert code == 0, err
    assert "to do: no rules are proposed: the bundle has no cases yet" in out
    (variant,) = _yaml(tmp_path / "bundle.yaml")["variants"]
    assert variant["rules"] == [] and "drift_rules" not in variant
    assert "# TODO: no rules are proposed" in (tmp_path / "bundle.yaml").read_text(encoding="utf-8")


def _float16_of_classifier(root: Path) -> None:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    onnx.save(convert_float_to_float16(onnx.load(str(root / "model.onnx")), keep_io_types=True), str(root / "x.onnx"))
    from onnxruntime.transformers.onnx_model import OnnxModel

    converted = OnnxModel(onnx.load(str(root / "x.onnx")))
    converted.topological_sort()
    onnx.save(converted.model, str(root / "model_fp16.onnx"))
    (root / "x.onnx").unlink()


def test_checker_help_lists_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    from checker.cli import main

    for argv, wanted in ((["--help"], "variant"), (["variant", "add", "--help"], "--calibration-cases")):
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code == 0 and wanted in capsys.readouterr().out


# --- the proposal's arithmetic -----------------------------------------------------------------------------------


def _figures(values: list[float], where: str = "this machine (x86-64-v3)") -> list[Figure]:
    return [Figure(f"c{i}", v, where) for i, v in enumerate(values)]


def test_thresholds_are_round_values_with_headroom() -> None:
    assert [nice_up(x) for x in (0.0486, 0.05, 0.0500001, 0.0203, 7.0)] == [0.05, 0.05, 0.1, 0.05, 10.0]
    assert [decade_up(x) for x in (0.004, 0.01, 1.16e-4)] == [0.01, 0.01, 0.001]
    drift = Planned("rules", {"output": "logits", "check": "score_drift", "apply": "softmax"})
    assert propose(drift, _figures([0.01, 0.0405, 0.02])).rule == {
        "output": "logits", "check": "score_drift", "max": 0.05, "apply": "softmax",
    }  # fmt: skip
    assert propose(drift, _figures([0.0417])).rule["max"] == 0.1  # 0.0417 * 1.2 > 0.05: no 20% headroom
    assert propose(drift, _figures([0.9])).rule["max"] == 1.0  # a softmax score moves by 1 at most
    cosine = Planned("drift_rules", {"output": "logits", "check": "cosine"})
    assert propose(cosine, _figures([0.99667, 0.999])).rule["min"] == 0.99
    assert propose(cosine, _figures([0.99990])).rule["min"] == 0.999
    assert propose(cosine, _figures([1.0])).rule["min"] == 0.999999
    unrelated = propose(cosine, _figures([0.3]))
    assert unrelated.rule is None and "do not resemble" in unrelated.note


def test_a_top_class_that_changes_is_stated_not_hidden_in_a_threshold() -> None:
    topk = Planned("rules", {"output": "logits", "check": "topk", "k": 1})
    assert propose(topk, _figures([1.0] * 8)).rule == {
        "output": "logits",
        "check": "topk",
        "k": 1,
        "min_agreement": 1.0,
    }
    changed = propose(topk, _figures([1.0, 0.0, 1.0, 1.0, 1.0, 0.5, 1.0, 1.0]))
    assert changed.rule == {"output": "logits", "check": "topk", "k": 1, "min_agreement": 1.0, "min_pass_rate": 0.75}
    assert "on c1, c5 the top 1 differs" in changed.note and "6 of 8 cases hold" in changed.note
    # Large batches, every case a little off: a share of each case's items, with headroom.
    assert propose(topk, _figures([0.95, 0.97, 0.99])).rule["min_agreement"] == 0.9
    assert propose(topk, _figures([0.0, 0.0, 0.25])).rule is None
    exact = Planned("rules", {"output": "ids", "check": "exact"})
    assert propose(exact, _figures([0.0, 0.0])).rule == {"output": "ids", "check": "exact"}
    assert propose(exact, _figures([0.0, 3.0, 0.0, 0.0])).rule == {
        "output": "ids",
        "check": "exact",
        "min_pass_rate": 0.75,
    }


def test_the_worst_place_decides() -> None:
    drift = Planned("rules", {"output": "logits", "check": "score_drift", "apply": "softmax"})
    figures = _figures([0.0169, 0.012]) + _figures([0.0405, 0.03], "x86-64-v3 (qemu-x86_64 -cpu Haswell-v4)")
    proposed = propose(drift, figures)
    assert proposed.rule is not None and proposed.rule["max"] == 0.05
    assert "0.0405 on x86-64-v3 (qemu-x86_64 -cpu Haswell-v4)" in proposed.note


def test_a_graph_with_external_data_is_copied_in_with_it_and_a_json_manifest_stays_json(
    tmp_path: Path, cli: Cli
) -> None:
    import json

    from onnxruntime.quantization import QuantType

    root = mlp_bundle(tmp_path / "mlp")
    data = YAML(typ="safe").load((root / "bundle.yaml").read_text(encoding="utf-8"))
    (root / "bundle.yaml").unlink()
    (root / "bundle.json").write_text(json.dumps(data), encoding="utf-8")
    made = tmp_path / "made"
    made.mkdir()
    shutil.copyfile(root / "model.onnx", made / "model.onnx")
    _dynamic(made, "model_int8.onnx", weight_type=QuantType.QInt8, use_external_data_format=True)
    code, out, err = cli("variant", "add", root, "--graph", made / "model_int8.onnx")
    assert code == 0, err
    assert "copied into the bundle: model_int8.onnx, model_int8.onnx.data" in out
    assert "reduce_range is not shown" in out  # its weights were not read
    (variant,) = json.loads((root / "bundle.json").read_text(encoding="utf-8"))["variants"]
    assert variant["name"] == "int8" and [e["path"] for e in variant["graph"]["external_data"]] == [
        "model_int8.onnx.data"
    ]
    code, report = verify_json(cli, root)
    assert code == 0, report["findings"]
