"""The command line in-process: exit statuses, formats, several bundles, and the report's schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from checker.manifest.schema import load

Cli = Callable[..., tuple[int, str, str]]


def break_bundle(root: Path) -> None:
    text = (root / "bundle.yaml").read_text()
    (root / "bundle.yaml").write_text(text.replace("  command: checker verify bundle.yaml\n", ""))


def test_json_report_matches_its_schema(cli: Cli, example: Path) -> None:
    code, out, _ = cli("verify", example, "--format", "json")
    report = json.loads(out)
    jsonschema.validate(report, load("report"))
    bundle = report["bundles"][0]
    assert bundle["name"] == "mobilenet-tiny" and bundle["version"] == "1.0.0"
    assert set(bundle["pieces"]) == {
        "graph",
        "external_weights",
        "preprocessing",
        "labels",
        "comparison_inputs",
        "runtime",
        "validation_command",
    }
    assert bundle["digest"].startswith("sha256:")
    assert code == (0 if report["status"] == "pass" else 1)
    assert {"checker", "onnx", "onnxruntime", "numpy", "python", "machine"} <= set(report["environment"])


def test_failing_bundle_exits_1_and_names_the_line(cli: Cli, example: Path) -> None:
    break_bundle(example)
    code, out, _ = cli("verify", example, "--format", "json")
    assert code == 1
    findings = json.loads(out)["bundles"][0]["findings"]
    missing = [f for f in findings if f["id"] == "bundle.missing_piece"]
    assert missing[0]["file"] == "bundle.yaml" and missing[0]["line"] > 1


def test_several_bundles_one_verdict_each(cli: Cli, example: Path, tmp_path: Path) -> None:
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(example, broken)
    break_bundle(broken)
    code, out, _ = cli("verify", example, broken, "--format", "json")
    report = json.loads(out)
    assert [b["path"] for b in report["bundles"]] == [str(example), str(broken)]
    assert report["bundles"][1]["status"] == "fail"
    assert report["status"] == "fail" and code == 1


def test_usage_errors_exit_2(cli: Cli, tmp_path: Path) -> None:
    code, _, err = cli("verify", tmp_path / "nope")
    assert code == 2 and "no such path" in err
    code, _, err = cli("verify", "--no-such-option", tmp_path)
    assert code == 2 and "unrecognized arguments" in err
    code, _, err = cli("verify", tmp_path)
    assert code == 1  # a folder without a manifest is a failing bundle, not a usage error


def test_internal_error_exits_3_with_traceback(cli: Cli, example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import checker.verify as verify
    from checker.checks.labels import labels_stage

    def boom(ctx: object) -> None:
        raise RuntimeError("a bug")

    stages = tuple(boom if stage is labels_stage else stage for stage in verify.AFTER_SCHEMA)
    monkeypatch.setattr(verify, "AFTER_SCHEMA", stages)
    code, _, err = cli("verify", example)
    assert code == 3 and "Traceback" in err and "a bug" in err


def test_output_file_and_text_on_stdout(cli: Cli, example: Path, tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    _, out, _ = cli("verify", example, "--format", "json", "--output", target)
    assert json.loads(target.read_text())["bundles"][0]["name"] == "mobilenet-tiny"
    assert "mobilenet-tiny 1.0.0" in out and "\x1b[" not in out  # not a terminal: no colour


def test_strict_fails_on_warnings(cli: Cli, example: Path) -> None:
    (example / "stray.txt").write_text("unnamed")
    _, out, _ = cli("verify", example, "--format", "json")
    normal = json.loads(out)
    code_strict, out_strict, _ = cli("verify", example, "--format", "json", "--strict")
    assert any(f["id"] == "bundle.unlisted" for f in normal["bundles"][0]["findings"])
    assert json.loads(out_strict)["status"] == "fail" and code_strict == 1


def test_json_manifest_and_manifest_path(cli: Cli, example: Path) -> None:
    import yaml

    data = yaml.safe_load((example / "bundle.yaml").read_text())
    (example / "bundle.yaml").unlink()
    (example / "bundle.json").write_text(json.dumps(data, indent=2))
    _, out, _ = cli("verify", example / "bundle.json", "--format", "json")
    bundle = json.loads(out)["bundles"][0]
    assert bundle["manifest"] == "bundle.json"
    assert not [f for f in bundle["findings"] if f["id"].startswith(("manifest.", "bundle."))]


def test_schema_command_prints_the_manifest_schema(cli: Cli) -> None:
    code, out, _ = cli("schema")
    assert code == 0 and json.loads(out)["$id"].endswith("manifest-1.schema.json")


def test_version_names_the_dependencies(cli: Cli) -> None:
    code, out, _ = cli("--version")
    for word in ("checker", "onnx", "onnxruntime", "numpy", "python"):
        assert word in out
    assert code == 0


def test_an_output_that_cannot_be_written_is_a_usage_error_before_verifying(
    cli: Cli, example: Path, tmp_path: Path
) -> None:
    for target in (tmp_path / "no-such-folder" / "r.json", tmp_path):
        code, out, err = cli("verify", example, "--format", "json", "--output", target)
        assert code == 2 and "--output" in err and "Traceback" not in err
        assert out == ""  # refused before the bundle was verified


def test_the_output_files_suffix_names_the_format(cli: Cli, example: Path, tmp_path: Path) -> None:
    code, _, _ = cli("verify", example, "--output", tmp_path / "r.json")
    assert code == 0 and json.loads((tmp_path / "r.json").read_text())["status"] == "pass"
    cli("verify", example, "--output", tmp_path / "r.xml")
    assert (tmp_path / "r.xml").read_text().startswith("<?xml")
    cli("verify", example, "--format", "text", "--output", tmp_path / "t.json")
    assert (tmp_path / "t.json").read_text().startswith("PASS")


def test_a_runtime_spec_that_names_no_release_is_a_usage_error(cli: Cli, example: Path) -> None:
    code, out, err = cli("verify", example, "--runtime", "garbage!!")
    assert code == 2 and "--runtime 'garbage!!'" in err and out == ""


def test_each_command_is_registered_by_the_module_the_table_names() -> None:
    """A run builds only its own command's parser: the table that says which module registers which command
    must stay true, and the overall help still lists every command."""
    import argparse

    from checker.cli import BUILT_IN, COMMAND_MODULES, build_parser

    def commands(parser: argparse.ArgumentParser) -> list[str]:
        (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return list(sub.choices)

    everything = commands(build_parser())
    assert sorted(everything) == sorted([*BUILT_IN, *COMMAND_MODULES])
    for name in COMMAND_MODULES:
        assert name in commands(build_parser([name, "--help"]))
    assert commands(build_parser(["verify", "x"])) == list(BUILT_IN)
    assert commands(build_parser(["no-such-command"])) == everything  # so the error lists every choice


def test_verify_imports_no_other_commands_module(example: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\nfrom checker.cli import main\nmain(['verify', sys.argv[1], '--format', 'json', '-o', "
        "sys.argv[2]])\nprint(sorted(m for m in sys.modules if m.endswith('.command')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(example), str(example.parent / "r.json")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()[-1]
    assert out == "[]"
