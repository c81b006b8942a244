"""Digests of every file: `checker lock` lists each named file's sha256 beside the manifest, and verify names the
file that changed (a case tensor, a raw input, an ONNX test-data file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from bundlekit import linear_forward, linear_model, manifest, write_bundle
from onnx import numpy_helper

from checker import findings as F
from checker.context import Options
from checker.manifest.canonical import field_digests
from checker.manifest.named import named_files
from checker.readers.digest import bundle_digest, sha256_file
from checker.readers.digestlist import DIGEST_LIST, read_digest_list
from checker.release.lock import lock
from checker.verify import verify_bundle


def digest_findings(root: Path) -> list[F.Finding]:
    return [f for f in verify_bundle(root, Options()).findings if f.id == F.DIGEST]


def test_lock_lists_every_named_file_and_the_digest_is_the_lists_hash(example: Path) -> None:
    result = lock(example)
    assert result.ok and result.digest
    listed = read_digest_list(example)
    assert listed is not None and not listed.problems
    data = yaml.safe_load((example / "bundle.yaml").read_text())
    named = {n.rel for n in named_files(data, example)}
    assert set(listed.digests) == named | set(field_digests(data))  # every file and every manifest field
    assert "cases/dusk/photo.png" in named and "cases/dusk/logits.npy" in named  # raw inputs and case tensors
    assert listed.digests["cases/dusk/logits.npy"][0] == sha256_file(example / "cases/dusk/logits.npy")
    assert result.digest == "sha256:" + sha256_file(example / DIGEST_LIST)
    assert result.digest == bundle_digest({rel: d for rel, (d, _) in listed.digests.items()})
    report = verify_bundle(example, Options())
    assert report.status() == "pass" and not [f for f in report.findings if f.id in (F.DIGEST, F.UNLISTED)]


def test_a_changed_case_tensor_is_named(example: Path) -> None:
    lock(example)
    path = example / "cases/dusk/logits.npy"
    array = np.load(path)
    np.save(path, array + 1)
    found = digest_findings(example)
    named = [f for f in found if f.details.get("path") == "cases/dusk/logits.npy"]
    assert len(named) == 1 and "changed" in named[0].message, found
    lines = (example / "bundle.yaml").read_text().splitlines()
    assert "cases/dusk/logits.npy" in lines[named[0].line - 1]
    release = next(f for f in found if "release.digest" in f.message)
    assert "changed: 'cases/dusk/logits.npy'" in release.message


def test_a_changed_raw_input_is_named(example: Path) -> None:
    lock(example)
    (example / "cases/meadow/photo.png").write_bytes(b"not the photo")
    assert any(f.details.get("path") == "cases/meadow/photo.png" for f in digest_findings(example))


def test_a_changed_onnx_test_data_file_is_named(tmp_path: Path) -> None:
    model = linear_model()
    root = write_bundle(tmp_path / "b", model, manifest(), n_cases=2)
    folder = root / "test_data_set_0"
    folder.mkdir()
    x = np.ones((2, 4), np.float32)
    (folder / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    (folder / "output_0.pb").write_bytes(numpy_helper.from_array(linear_forward(model, x), "y").SerializeToString())
    data = yaml.safe_load((root / "bundle.yaml").read_text())
    data["comparison"]["cases"].append({"name": "onnx", "onnx_test_data": "test_data_set_*"})
    (root / "bundle.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    assert lock(root).ok
    listed = read_digest_list(root)
    assert listed is not None and "test_data_set_0/output_0.pb" in listed.digests
    (folder / "output_0.pb").write_bytes(numpy_helper.from_array(x[:, :3], "y").SerializeToString())
    found = digest_findings(root)
    assert [f.details.get("path") for f in found if f.details.get("path")] == ["test_data_set_0/output_0.pb"]


def test_a_malformed_list_line_is_named(example: Path) -> None:
    lock(example)
    with (example / DIGEST_LIST).open("a") as handle:
        handle.write("not a digest line\n")
    found = digest_findings(example)
    bad = [f for f in found if f.file == DIGEST_LIST]
    assert len(bad) == 1 and bad[0].line is not None and "is not '<sha256>  <path>'" in bad[0].message
