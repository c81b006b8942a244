"""One test per crash or hang class the fuzz campaign found: each is now a finding with its id, file and line."""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hostile import ids, messages, rewrite_manifest

from checker import findings as F
from checker.bundle.archives import extract
from checker.compare.rules import RuleError, parse_rule
from checker.compare.session import machine_threads, session_options
from checker.manifest.schema import load, validator
from checker.preprocess.errors import PreprocessError
from checker.preprocess.fields import number
from checker.render import render
from checker.reports.model import BundleReport, Comparison, Report, RuleResult

Verify = Callable[..., BundleReport]
Cli = Callable[..., tuple[int, str, str]]


def _write_manifest_text(example: Path, edit: Callable[[str], str]) -> None:
    path = example / "bundle.yaml"
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")


def _report_of(example: Path, cli: Cli, fmt: str = "json", *more: str) -> tuple[int, Path]:
    out = example.parent / f"report.{fmt}"
    code, _, _ = cli("verify", example, "--format", fmt, "--output", out, *more)
    return code, out


def _valid(report: dict[str, Any]) -> list[str]:
    return [str(e.message) for e in validator("report").iter_errors(report)]


# ----- undecodable names


def test_a_lone_surrogate_in_a_manifest_path_is_a_schema_finding(example: Path, cli: Cli) -> None:
    # YAML's \u escapes spell a lone surrogate, which no file system call or renderer can encode.
    _write_manifest_text(example, lambda t: t.replace("path: model.onnx", 'path: "model\\ud800.onnx"', 1))
    code, out = _report_of(example, cli)
    report = json.loads(out.read_text(encoding="utf-8"))
    found = report["bundles"][0]["findings"]
    assert code == 1 and not _valid(report)
    assert [f["id"] for f in found] == ["manifest.schema"]
    assert found[0]["message"].startswith("graph.path: holds a lone surrogate")
    assert found[0]["file"] == "bundle.yaml" and found[0]["line"] == 11
    code, out = _report_of(example, cli, "markdown")
    assert code == 1 and "graph.path: holds a lone surrogate" in out.read_text(encoding="utf-8")


def test_a_file_name_that_is_not_utf8_renders_in_every_format(example: Path, cli: Cli) -> None:
    # os.walk hands back such a name with surrogate escapes; the unlisted-file warning quotes it.
    (example / os.fsdecode(b"notes-\xff.txt")).write_bytes(b"x")
    for fmt in ("json", "markdown", "junit", "text"):
        code, out = _report_of(example, cli, fmt)
        text = out.read_text(encoding="utf-8")
        assert code in (0, 1), fmt
        if fmt == "json":
            text = "\n".join(f["message"] for f in json.loads(text)["bundles"][0]["findings"])
        assert "notes-\\udcff.txt" in text.replace("&#92;", "\\"), fmt


# ----- archives


def _zip_of(example: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(example.rglob("*")):
            zf.write(path, path.relative_to(example).as_posix())
    return buffer.getvalue()


def _patched_headers(data: bytes, offset: int, value: bytes) -> bytes:
    out = bytearray(data)
    for magic, at in ((b"PK\x03\x04", offset), (b"PK\x01\x02", offset + 2)):
        start = out.find(magic)
        while start != -1:
            out[start + at : start + at + len(value)] = value
            start = out.find(magic, start + 4)
    return bytes(out)


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("method", "compression method this checker does not read"),  # NotImplementedError
        ("encrypted", "a member is encrypted"),  # RuntimeError
        ("corrupt", "cannot be read"),  # zlib.error
    ],
)
def test_an_unreadable_zip_is_a_bundle_path_finding(example: Path, tmp_path: Path, how: str, expected: str) -> None:
    data = _zip_of(example)
    if how == "method":
        data = _patched_headers(data, 8, (99).to_bytes(2, "little"))
    elif how == "encrypted":
        data = _patched_headers(data, 6, b"\x01")
    else:
        start = data.find(b"PK\x03\x04")
        name_len = int.from_bytes(data[start + 26 : start + 28], "little")
        body = start + 30 + name_len
        data = data[:body] + b"\xff" * 16 + data[body + 16 :]
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(data)
    (tmp_path / "out").mkdir()
    found = extract(archive, tmp_path / "out")
    assert [f.id for f in found] == ["bundle.path"] and found[0].file == "bundle.zip"
    assert expected in found[0].message


def test_a_corrupt_xz_stream_inside_a_tar_is_a_bundle_path_finding(tmp_path: Path) -> None:
    import lzma

    packed = lzma.compress(b"not a tar at all" * 100)
    archive = tmp_path / "bundle.tar"
    archive.write_bytes(packed[:20] + b"\x00" * 40 + packed[60:])  # an LZMAError, not a clean end
    (tmp_path / "out").mkdir()
    found = extract(archive, tmp_path / "out")
    assert [f.id for f in found] == ["bundle.path"] and "cannot be read" in found[0].message


def test_a_truncated_tar_gz_is_a_bundle_path_finding(example: Path, tmp_path: Path, verify: Verify) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(example, "bundle")
    archive = tmp_path / "bundle.tar.gz"
    archive.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    report = verify(archive)
    assert ids(report) == ["bundle.path"] and "cannot be read" in report.findings[0].message


# ----- tensor files


def test_a_zeroed_npy_header_is_a_case_finding(example: Path, verify: Verify) -> None:
    path = example / "cases/meadow/pixel_values.npy"
    data = bytearray(path.read_bytes())
    data[10:60] = bytes(50)  # tokenize.TokenError inside NumPy's header parser
    path.write_bytes(bytes(data))
    rewrite_manifest(example, lambda d: None)
    report = verify(example)
    assert any("is not a readable .npy file" in m for m in messages(report, "comparison.case"))


def test_a_corrupt_npz_member_is_a_case_finding(example: Path, verify: Verify) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, pixel_values=np.load(example / "cases/meadow/pixel_values.npy"))
    data = bytearray(buffer.getvalue())
    data[80:120] = b"\xff" * 40  # inside the deflate stream: zlib.error
    (example / "cases/meadow/inputs.npz").write_bytes(bytes(data))
    rewrite_manifest(example, lambda d: d["comparison"]["cases"][0].update(inputs="cases/meadow/inputs.npz"))
    report = verify(example)
    assert any("inputs.npz is not a readable .npz file" in m for m in messages(report, "comparison.case"))


# ----- numbers that do not fit


def test_an_integer_no_float_holds_is_a_schema_finding(example: Path, verify: Verify) -> None:
    rewrite_manifest(example, lambda d: d["comparison"]["rules"][0].update(atol=10**400))
    report = verify(example)
    assert "manifest.schema" in ids(report)
    assert any("is greater than the maximum of 1e+30" in m for m in messages(report, "manifest.schema"))


def test_huge_integers_are_refused_by_the_rule_and_field_readers() -> None:
    with pytest.raises(RuleError, match="must be a finite number"):
        parse_rule({"output": "y", "check": "allclose", "atol": 10**400})
    with pytest.raises(PreprocessError, match="expected a finite number"):
        number(10**400, "preprocessing.scale")


def test_every_number_in_the_manifest_schema_is_bounded() -> None:
    unbounded = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("number", "integer"):
                low = "minimum" in node or "exclusiveMinimum" in node
                high = "maximum" in node or "exclusiveMaximum" in node
                if not (low and high):
                    unbounded.append(where)
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}")

    walk(load("manifest"), "")
    assert unbounded == []


# ----- infinite figures


def test_an_infinite_figure_is_written_as_a_string_the_schema_admits() -> None:
    rule = RuleResult("logits", "max_abs", {"max": 1.0}, False, 0.0, 1.0, "a", float("inf"), 1.0, float("inf"))
    rule.cases = {"a": float("inf"), "b": float("-inf"), "c": float("nan"), "d": 0.5}
    bundle = BundleReport(path="b", comparisons=[Comparison("baseline", "reference", [rule])])
    report = json.loads(render("json", Report("1", [bundle])))
    written = report["bundles"][0]["comparisons"][0]["rules"][0]
    assert written["measured"] == "inf" and written["would_pass_at"] == "inf"
    assert written["cases"] == {"a": "inf", "b": "-inf", "c": "nan", "d": 0.5}
    assert not _valid(report)
    for fmt in ("markdown", "junit", "text"):
        assert "inf" in render(fmt, Report("1", [bundle]))


# ----- file names the file system refuses


def test_a_name_longer_than_the_file_system_allows_is_a_path_finding(example: Path, verify: Verify) -> None:
    rewrite_manifest(example, lambda d: d["graph"].update(path="m" * 300 + ".onnx"))
    report = verify(example)
    assert any("has a name longer than 255 bytes" in m for m in messages(report, "bundle.path"))
    finding = next(f for f in report.findings if f.id == "bundle.path")
    assert finding.file == "bundle.yaml" and finding.line is not None


# ----- graphs of the wrong format


def test_a_graph_named_json_is_parsed_as_protobuf(example: Path, verify: Verify) -> None:
    # By its extension onnx.load parsed a .json graph as JSON, raising protobuf's json_format.ParseError.
    (example / "model.json").write_text('{"graph": {"node": 5}}', encoding="utf-8")
    rewrite_manifest(example, lambda d: d["graph"].update(path="model.json"))
    report = verify(example)
    assert any("'model.json' cannot be parsed as an ONNX model" in m for m in messages(report, "graph.invalid"))


# ----- allocations


def test_a_crop_too_large_to_allocate_is_refused_before_allocating(example: Path, verify: Verify) -> None:
    # 4096 x 4096 x 3 took 1.6 GB and 38 s; the bound is checked from the declared size alone.
    rewrite_manifest(example, lambda d: d["inputs"][0]["preprocessing"].update(crop={"mode": "center", "size": 4096}))
    report = verify(example)
    refused = [f for f in report.findings if "the crop step would make a 4096x4096x3 image" in f.message]
    assert refused and "at most 64 MiB" in refused[0].message and refused[0].file == "bundle.yaml"


# ----- threads


def test_thread_counts_above_the_machine_are_lowered_and_said(example: Path, verify: Verify) -> None:
    rewrite_manifest(example, lambda d: d["runtime"]["session_options"].update(intra_op_num_threads=200))
    report = verify(example)
    said = [f for f in report.findings if f.id == "runtime.threads"]
    assert len(said) == 1 and said[0].severity is F.Severity.INFO
    assert f"the graphs run with {machine_threads()}" in said[0].message
    assert session_options({"intra_op_num_threads": 200}).intra_op_num_threads == machine_threads()
    assert session_options({"intra_op_num_threads": 1}).intra_op_num_threads == 1


def test_hundreds_of_threads_are_a_schema_finding(example: Path, verify: Verify) -> None:
    rewrite_manifest(example, lambda d: d["runtime"]["session_options"].update(inter_op_num_threads=308))
    report = verify(example)
    assert any("308 is greater than the maximum of 256" in m for m in messages(report, "manifest.schema"))


# ----- message length


def test_a_message_past_the_schema_bound_is_cut_with_a_note(example: Path, cli: Cli) -> None:
    rewrite_manifest(example, lambda d: d.update({"k" * 30_000: 1}))
    code, out = _report_of(example, cli)
    report = json.loads(out.read_text(encoding="utf-8"))
    assert code == 1 and not _valid(report)
    message = report["bundles"][0]["findings"][0]["message"]
    assert len(message) <= F.MAX_MESSAGE_CHARS and message.endswith("more characters]")


# ----- the internal-error path


def _crash(ctx: object) -> Any:
    raise ZeroDivisionError("a bug")
    yield  # a stage is a generator


@pytest.mark.parametrize("fmt", ["json", "junit", "markdown"])
def test_an_internal_error_still_writes_a_report(
    example: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    from checker import verify as verify_module

    stages = list(verify_module.AFTER_SCHEMA)
    _crash.__name__ = "labels_stage"
    stages[stages.index(verify_module.labels_stage)] = _crash
    monkeypatch.setattr(verify_module, "AFTER_SCHEMA", tuple(stages))
    code, out = _report_of(example, cli, fmt)
    text = out.read_text(encoding="utf-8")
    assert code == 3
    assert "internal error in the 'labels' stage: ZeroDivisionError: a bug" in text
    if fmt == "json":
        report = json.loads(text)
        assert not _valid(report)
        found = [f["id"] for f in report["bundles"][0]["findings"]]
        assert found[-1] == "internal.error" and "graph.producer" not in found  # the example records its producer
        assert report["bundles"][0]["findings"][-1]["details"]["stage"] == "labels"
        assert report["bundles"][0]["digest"] is not None  # the files stage ran before


def test_a_renderer_bug_still_writes_a_report(example: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    from checker.render import markdown

    real = markdown.render

    def once(report: dict[str, Any], **kw: Any) -> str:
        monkeypatch.setattr(markdown, "render", real)
        raise KeyError("a bug")

    monkeypatch.setattr(markdown, "render", once)
    code, out = _report_of(example, cli, "markdown")
    assert code == 3 and "internal error in the 'report' stage: KeyError" in out.read_text(encoding="utf-8")


def test_an_element_type_onnx_does_not_know_is_a_graph_finding(example: Path, verify: Verify) -> None:
    # Found by the campaign: elem_type 29 passes the ONNX checker, and naming it raised ValueError.
    import onnx

    model = onnx.load(example / "model.onnx")
    model.graph.input[0].type.tensor_type.elem_type = 29
    onnx.save(model, example / "model.onnx")
    rewrite_manifest(example, lambda d: None)
    report = verify(example)
    assert "internal.error" not in ids(report)
    assert any("type 29" in m for m in messages(report, "graph.io"))


def test_yaml_that_breaks_ruamels_constructor_is_a_parse_finding(tmp_path: Path) -> None:
    # Found by the fuzz campaign: a complex key beside a merge-like key made ruamel.yaml raise IndexError.
    from checker.manifest.load import load_manifest

    path = tmp_path / "bundle.yaml"
    path.write_text('manifest_version:\n  ? ""\n  : []\n  +_:\n    b: 1\n', encoding="utf-8")
    manifest, found = load_manifest(path)
    assert manifest is None and [f.id for f in found] == ["manifest.parse"]
    assert "cannot build it" in found[0].message and found[0].file == "bundle.yaml"
