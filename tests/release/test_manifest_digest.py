"""The bundle digest covers the manifest's fields and every file a field names: a changed rule, tolerance,
preprocessing field or imported pipeline changes it, and `bundle.digest` names what changed."""

from __future__ import annotations

import json
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from releasekit import edit

from checker import findings as F
from checker.context import Options
from checker.manifest.canonical import field_digests, field_keys
from checker.release.lock import lock
from checker.release.pack import pack
from checker.verify import verify_bundle

HF_CONFIG = {  # the example's preprocessing, as a Hugging Face image processor writes it
    "image_processor_type": "ViTImageProcessor",
    "do_convert_rgb": True,
    "do_resize": True,
    "size": {"shortest_edge": 36},
    "resample": 2,
    "do_center_crop": True,
    "crop_size": {"height": 32, "width": 32},
    "do_rescale": True,
    "rescale_factor": 0.00392156862745098,
    "do_normalize": True,
    "image_mean": [0.485, 0.456, 0.406],
    "image_std": [0.229, 0.224, 0.225],
}


def release_finding(root: Path) -> F.Finding:
    report = verify_bundle(root, Options(run_comparison=False))
    (finding,) = [f for f in report.findings if f.id == F.DIGEST and "release.digest" in f.message]
    return finding


def set_max(tree: Any) -> None:
    tree["variants"][0]["rules"][1]["max"] = 0.5


def set_atol(tree: Any) -> None:
    tree["comparison"]["rules"][0]["atol"] = 0.1


def set_resize(tree: Any) -> None:
    tree["inputs"][0]["preprocessing"]["resize"]["size"] = 40


def set_tolerance(tree: Any) -> None:
    tree["inputs"][0]["preprocessing"]["tolerance"] = 0.5


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (set_max, "variants[0].rules[1].max"),
        (set_atol, "comparison.rules[0].atol"),
        (set_resize, "inputs[0].preprocessing.resize.size"),
        (set_tolerance, "inputs[0].preprocessing.tolerance"),
    ],
    ids=["rule", "tolerance", "preprocessing", "fidelity-tolerance"],
)
def test_a_changed_manifest_field_changes_the_digest_and_is_named(
    example: Path, change: Callable[[Any], None], field: str
) -> None:
    before = verify_bundle(example, Options(run_comparison=False)).digest
    edit(example / "bundle.yaml", change)
    finding = release_finding(example)
    assert finding.details["actual"] != before
    assert finding.details["fields_changed"] == [field]
    assert finding.message.startswith(f"manifest field '{field}' changed since the last lock (")


def test_a_relocked_manifest_passes_with_a_new_digest(example: Path) -> None:
    before = lock(example).digest
    edit(example / "bundle.yaml", set_max)
    after = lock(example).digest
    assert after != before
    report = verify_bundle(example, Options(run_comparison=False))
    assert report.digest == after and not [f for f in report.findings if f.id == F.DIGEST]


def test_comments_and_release_digest_are_not_part_of_it(example: Path) -> None:
    manifest = example / "bundle.yaml"
    before = verify_bundle(example, Options(run_comparison=False)).digest
    manifest.write_text("# a new comment\n" + manifest.read_text())
    assert verify_bundle(example, Options(run_comparison=False)).digest == before
    data = yaml.safe_load(manifest.read_text())
    assert "manifest:/release/digest" not in field_digests(data)
    data["release"]["digest"] = "sha256:" + "0" * 64
    assert field_digests(data) == field_digests(yaml.safe_load(manifest.read_text()))


def test_yaml_and_json_spellings_of_the_same_data_agree() -> None:
    data = {"release": {"name": "m", "version": "1"}, "inputs": [{"shape": [1, 3], "a/b": {"x~": 0.5}}]}
    again = json.loads(json.dumps(data))
    assert field_digests(data) == field_digests(yaml.safe_load(yaml.safe_dump(again, sort_keys=True)))
    assert field_keys("manifest:/inputs/0/a~1b/x~0") == ("inputs", 0, "a/b", "x~")


def imported_bundle(example: Path) -> Path:
    """The example with its preprocessing imported from a preprocessor_config.json, locked."""
    (example / "preprocessor_config.json").write_text(json.dumps(HF_CONFIG))

    def use_import(tree: Any) -> None:
        tree["inputs"][0]["preprocessing"] = {
            "kind": "image",
            "import": {"format": "huggingface", "path": "preprocessor_config.json"},
        }
        # Hugging Face rounds this case's resize up where the stored tensor rounds down: not what is tested here.
        tree["comparison"]["cases"] = [c for c in tree["comparison"]["cases"] if c["name"] != "overexposed"]

    edit(example / "bundle.yaml", use_import)
    shutil.rmtree(example / "cases" / "overexposed")
    assert lock(example).ok
    return example


def test_an_imported_pipeline_is_named_locked_and_packed(example: Path, tmp_path: Path) -> None:
    root = imported_bundle(example)
    assert "preprocessor_config.json" in (root / "bundle.sha256").read_text()
    result = pack(root, tmp_path / "m.tar.gz")
    assert result.archive is not None, [f.message for f in result.report.findings]
    assert not [f for f in result.report.findings if f.id == F.UNLISTED]
    with tarfile.open(result.archive) as tar:
        assert "mobilenet-tiny-1.0.0/preprocessor_config.json" in tar.getnames()
    report = verify_bundle(result.archive, Options())
    assert report.status() == "pass", [f.message for f in report.findings]
    assert report.digest == result.digest


def test_an_edited_imported_pipeline_changes_the_digest_and_is_named(example: Path) -> None:
    root = imported_bundle(example)
    before = verify_bundle(root, Options(run_comparison=False)).digest
    (root / "preprocessor_config.json").write_text(json.dumps({**HF_CONFIG, "rescale_factor": 0.5}))
    report = verify_bundle(root, Options(run_comparison=False))
    assert report.digest != before
    named = [f for f in report.findings if f.id == F.DIGEST and f.details.get("path") == "preprocessor_config.json"]
    assert len(named) == 1 and "changed" in named[0].message
