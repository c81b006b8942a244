"""Every message names the file and the line: `checker lock` on broken YAML, a manifest that is not UTF-8, a
damaged `.npy` header (named by its path in the bundle, in words), and `bundle.json`, read as strict JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from bundlekit import EXAMPLE

from checker.cli import main


def copy(tmp_path: Path) -> Path:
    bundle = tmp_path / "m"
    shutil.copytree(EXAMPLE, bundle)
    return bundle


def findings(bundle: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    capsys.readouterr()
    assert main(["verify", str(bundle), "--format", "json"]) == 1
    found: list[dict[str, object]] = json.loads(capsys.readouterr().out)["bundles"][0]["findings"]
    return found


def test_lock_on_broken_yaml_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = copy(tmp_path)
    manifest = bundle / "bundle.yaml"
    lines = manifest.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  license:"))
    lines[at] = "  license: {Apache-2.0"  # a flow mapping never closed
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["lock", str(bundle)]) == 1
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"{manifest}:") and "not valid YAML" in out
    line = int(out.removeprefix(f"{manifest}:").split(":", 1)[0])
    assert at + 1 <= line <= at + 2  # at the mapping or the line that breaks it


def test_a_manifest_that_is_not_utf8_names_the_line_of_the_first_bad_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = copy(tmp_path)
    manifest = bundle / "bundle.yaml"
    data = manifest.read_bytes()
    assert data.count(b"A 10-class image") == 1
    manifest.write_bytes(data.replace(b"A 10-class image", b"A 10-class \xff image"))
    line = data[: data.index(b"A 10-class image")].count(b"\n") + 1
    (found,) = findings(bundle, capsys)
    assert found["id"] == "manifest.parse" and (found["file"], found["line"]) == ("bundle.yaml", line)
    assert f"byte 0xff at line {line}, column" in str(found["message"])
    assert main(["lock", str(bundle)]) == 1
    assert f"{manifest}:{line}: bundle.yaml is not UTF-8 text" in capsys.readouterr().out


def test_a_damaged_npy_header_is_named_inside_the_bundle_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = copy(tmp_path)
    tensor = bundle / "cases" / "dusk" / "logits.npy"
    raw = tensor.read_bytes()
    assert b"'shape': (1, 10), }" in raw
    tensor.write_bytes(raw.replace(b"'shape': (1, 10), }", b"'shape': (1, 10, }"))  # the tuple never closes
    (found,) = [f for f in findings(bundle, capsys) if f["id"] == "comparison.case"]
    message = str(found["message"])
    assert "cases/dusk/logits.npy is not a readable .npy file" in message
    assert "EOF in multi-line statement" not in message and "(3, 0)" not in message
    assert found["file"] == "bundle.yaml" and isinstance(found["line"], int)


def json_bundle(tmp_path: Path) -> tuple[Path, list[str]]:
    bundle = copy(tmp_path)
    data = yaml.safe_load((bundle / "bundle.yaml").read_text(encoding="utf-8"))
    (bundle / "bundle.yaml").unlink()
    return bundle, json.dumps(data, indent=2).splitlines()


def test_bundle_json_is_strict_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle, lines = json_bundle(tmp_path)
    (bundle / "bundle.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["verify", str(bundle)]) == 0  # the same manifest as JSON passes
    at = next(i for i, line in enumerate(lines) if '"license"' in line)
    lines[at] += ","  # the last field of `release`, then a trailing comma: YAML reads it, JSON does not
    (bundle / "bundle.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (found,) = findings(bundle, capsys)
    assert found["id"] == "manifest.parse" and found["file"] == "bundle.json"
    assert found["line"] == at + 2  # where JSON finds the closing brace instead of a name
    assert str(found["message"]).startswith("not valid JSON:") and f"line {at + 2}, column" in str(found["message"])
