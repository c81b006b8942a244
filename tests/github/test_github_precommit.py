"""The pre-commit hook: which files it runs on, and that its entry verifies them."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from ghsupport import make_bundle
from ruamel.yaml import YAML

from checker.cli import main

ROOT = Path(__file__).resolve().parents[2]
HOOKS = YAML(typ="safe").load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))


def test_the_hook_runs_on_bundle_manifests_only() -> None:
    (hook,) = HOOKS
    assert hook["id"] == "onnx-release-check" and hook["language"] == "python"
    files = re.compile(hook["files"])
    for path in ("bundle.yaml", "models/a/bundle.yml", "x/bundle.json"):
        assert files.search(path), path
    for path in ("README.md", "models/a/my-bundle.yaml", "bundle.yaml.bak", "models/config.json"):
        assert not files.search(path), path


def test_the_hook_entry_verifies_the_manifests_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (hook,) = HOOKS
    program, *options = shlex.split(hook["entry"])
    assert program == "checker"
    good = make_bundle(tmp_path / "good", name="good-model") / "bundle.yaml"
    bad = make_bundle(tmp_path / "bad", name="bad-model", complete=False) / "bundle.yaml"
    monkeypatch.setenv("NO_COLOR", "1")
    assert main([*options, str(good)]) == 0
    assert main([*options, str(good), str(bad)]) == 1
    assert "bad-model" in capsys.readouterr().out
