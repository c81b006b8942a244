"""`checker init DIR` on a folder that `transformers` itself wrote: a tiny ViT made from its configuration (no
weights downloaded), its config.json and preprocessor_config.json saved by transformers, the graph exported by
torch.onnx and its dtype files made by onnxruntime's converters. Needs the [torch] extra with transformers;
`.ci/run` installs it and runs this with --fail-on-skip."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from releasekit import Cli, ids, verify_json
from ruamel.yaml import YAML

pytest.importorskip("torch", reason="the [torch] extra is not installed")
pytest.importorskip("transformers", reason="the [torch] extra is not installed")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import hubkit


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("transformers")
    hubkit.transformers_vit(root / "repo")
    hubkit.photos(root / "photos")
    return root


def test_a_folder_transformers_wrote_becomes_a_bundle_whose_variants_are_judged(
    built: Path, tmp_path: Path, cli: Cli
) -> None:
    repo = shutil.copytree(built / "repo", tmp_path / "repo")
    code, out, err = cli("init", repo, "--raw", built / "photos")
    assert code == 0, err
    assert "transformers.js_config's default: dtype fp16, device webgpu (judged first)" in out
    manifest = YAML(typ="safe").load((repo / "bundle.yaml").read_text(encoding="utf-8"))
    assert manifest["inputs"][0]["preprocessing"] == {"kind": "image", "config": "preprocessor_config.json"}
    assert (repo / "labels.txt").read_text().split() == hubkit.LABELS
    assert [v["name"] for v in manifest["variants"]] == ["fp16", "q8", "q4"]
    status, bundle = verify_json(cli, repo)
    assert status == 0, ids(bundle, "error")
    judged = {(c["graph"], c["against"]) for c in bundle["comparisons"]}
    assert {("fp16", "baseline"), ("q8", "baseline"), ("q4", "baseline")} <= judged


def test_a_sentence_encoder_transformers_wrote_gets_its_pooling_and_tokenizer(tmp_path: Path, cli: Cli) -> None:
    folder = hubkit.transformers_sentence_encoder(tmp_path / "encoder")
    code, _out, err = cli("init", folder, "--raw", hubkit.texts(tmp_path / "texts"))
    assert code == 0, err
    manifest = YAML(typ="safe").load((folder / "bundle.yaml").read_text(encoding="utf-8"))
    (answer,) = manifest["answers"]
    assert answer["steps"] == [{"pool": {"mode": "mean", "axis": 1, "mask": "attention_mask"}}, {"normalize": "l2"}]
    preps = {i["name"]: i["preprocessing"] for i in manifest["inputs"]}
    assert preps["input_ids"] == {"kind": "text", "tokenizer": "tokenizer.json", "max_length": 32, "truncation": True}
    assert preps["token_type_ids"] == {"kind": "derived", "from": "input_ids", "field": "type_ids"}
    status, bundle = verify_json(cli, folder)
    assert status == 0, ids(bundle, "error")
    assert "inputs.tokenizer_settings" not in ids(bundle)
