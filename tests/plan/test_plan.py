"""`checker plan`: the bundles that must run, chosen by content since a commit (a changed file runs every
bundle that names it, a touched README none) or by the verdict store, balanced by measured cost into a GitHub
Actions matrix."""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bundlekit import EXAMPLE
from signkit import key_pair
from zookit import change, git, repository, zoo

from checker.reports.files import validate

Cli = Callable[..., tuple[int, str, str]]


def plan(cli: Cli, *args: Any) -> dict[str, Any]:
    code, out, err = cli("plan", *args, "--format", "json")
    assert code == 0, err
    return dict(json.loads(out))


def planned(cli: Cli, *args: Any) -> list[str]:
    """The bundles the matrix runs, in its order."""
    return [b for leg in plan(cli, *args)["include"] for b in shlex.split(leg["bundles"])]


def shared_labels(folder: Path) -> list[Path]:
    """Three releases whose manifests share one folder: a and b name labels.txt, c its own labels-c.txt."""
    shutil.copytree(EXAMPLE, folder)
    text = (folder / "bundle.yaml").read_text()
    (folder / "bundle.yaml").unlink()
    (folder / "bundle.sha256").unlink()
    manifests = []
    for name, labels in (("a", "labels.txt"), ("b", "labels.txt"), ("c", "labels-c.txt")):
        own = text.replace("name: mobilenet-tiny", f"name: {name}", 1).replace("path: labels.txt", f"path: {labels}")
        own = "\n".join(line for line in own.splitlines() if not line.strip().startswith("digest:"))
        (folder / f"{name}.yaml").write_text(own + "\n")
        manifests.append(folder / f"{name}.yaml")
    shutil.copy(folder / "labels.txt", folder / "labels-c.txt")
    return manifests


def test_changed_since_runs_what_changed_by_content(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    bundles = zoo(root / "models", 3)
    a, b, c = shared_labels(root / "shared")
    (root / "README.md").write_text("the zoo\n")
    repository(root)
    monkeypatch.chdir(root)
    every = [str(p.relative_to(root)) for p in [*bundles, a, b, c]]

    assert planned(cli, *every, "--changed-since", "HEAD") == []
    (root / "README.md").write_text("the zoo, touched\n")  # a file no bundle names
    assert planned(cli, *every, "--changed-since", "HEAD") == []
    change(bundles[1])
    assert planned(cli, *every, "--changed-since", "HEAD") == ["models/m01"]
    git(root, "commit", "-qam", "m01 1.0.1")
    (root / "shared" / "labels.txt").write_text((root / "shared" / "labels.txt").read_text().upper())
    assert sorted(planned(cli, *every, "--changed-since", "HEAD")) == ["shared/a.yaml", "shared/b.yaml"]
    git(root, "checkout", "-q", "--", "shared/labels.txt")
    with (root / "models" / "m02" / "bundle.yaml").open("a") as manifest:
        manifest.write("# a comment: no field changes\n")
    assert planned(cli, *every, "--changed-since", "HEAD") == []
    # The change set is everything since REF: the earlier commit's change counts against HEAD~1.
    assert planned(cli, *every, "--changed-since", "HEAD~1") == ["models/m01"]
    code, out, _ = cli("plan", *every, "--changed-since", "HEAD~1")
    assert code == 0 and "run       models/m01: changed since HEAD~1: bundle.yaml (its data)" in out


def test_a_new_or_broken_bundle_runs(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    zoo(root / "models", 1)
    repository(root)
    monkeypatch.chdir(root)
    [added] = zoo(root / "more", 1)  # not yet committed
    (added / "labels.txt").unlink()  # and a named file missing
    assert planned(cli, "models/m00", "more/m00", "--changed-since", "HEAD") == ["more/m00"]


def test_a_bad_ref_is_a_usage_error(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    zoo(root / "models", 1)
    repository(root)
    monkeypatch.chdir(root)
    for ref, said in (("no-such-branch", "no such commit"), ("--output=/tmp/x", "not a commit")):
        code, _, err = cli("plan", "models/m00", f"--changed-since={ref}")
        assert code == 2 and said in err
    code, _, err = cli("plan", "models/m00", "--format", "markdown")
    assert code == 2 and "text or json" in err


def _costs(cli: Cli, bundles: list[Path], seconds: list[float], out: Path) -> Path:
    """A real report of the bundles, with the durations an earlier, slower run measured."""
    code, _, err = cli("verify", *bundles, "--gain-budget", "0", "--format", "json", "-o", out)
    assert code == 0, err
    report = json.loads(out.read_text())
    for bundle, cost in zip(report["bundles"], seconds):
        bundle["duration_s"] = cost
    out.write_text(json.dumps(report))
    return out


def test_legs_are_balanced_by_measured_cost_and_a_heavy_bundle_is_sharded(cli: Cli, tmp_path: Path) -> None:
    bundles = zoo(tmp_path / "zoo", 5)
    costs = _costs(cli, bundles, [30.0, 20.0, 20.0, 10.0, 600.0], tmp_path / "costs.json")
    # Two legs: splitting the heavy one would leave no leg for the rest, so it runs whole, alone.
    matrix = plan(cli, *bundles, "--costs", costs, "--shards", "2")["include"]
    assert [(leg["args"], leg["cost"]) for leg in matrix] == [("", 80.0), ("", 600.0)] or [
        (leg["args"], leg["cost"]) for leg in matrix
    ] == [("", 600.0), ("", 80.0)]
    matrix = plan(cli, *bundles[:4], "--costs", costs, "--shards", "2")["include"]
    assert sorted(leg["cost"] for leg in matrix) == [40.0, 40.0]
    assert sorted(len(shlex.split(leg["bundles"])) for leg in matrix) == [2, 2]
    matrix = plan(cli, *bundles, "--costs", costs, "--shards", "6")["include"]
    shards = [leg for leg in matrix if leg["args"]]
    assert [leg["args"] for leg in shards] == [f"--shard {k}/5" for k in range(1, 6)]
    assert all(shlex.split(leg["bundles"]) == [str(bundles[4])] for leg in shards)  # each shard a leg of its own
    [rest] = [leg for leg in matrix if not leg["args"]]
    assert sorted(shlex.split(rest["bundles"])) == sorted(map(str, bundles[:4])) and rest["cost"] == 80.0


def test_a_path_with_a_space_survives_the_matrix(cli: Cli, tmp_path: Path) -> None:
    [bundle] = zoo(tmp_path / "a zoo", 1)
    [leg] = plan(cli, bundle)["include"]
    assert shlex.split(leg["bundles"]) == [str(bundle)] and leg["leg"] == 1


def test_with_a_store_only_the_bundles_without_a_stored_verdict_run(cli: Cli, tmp_path: Path) -> None:
    keys = key_pair(tmp_path / "keys")
    bundles, store = zoo(tmp_path / "zoo", 3), tmp_path / "store"
    trusted = ["--reuse", store, "--trusted-key", keys.public, "--gain-budget", "0"]
    signing = ["--attest", tmp_path / "a.jsonl", "--attest-key", keys.private]
    assert cli("verify", *bundles, *trusted, *signing)[0] == 0
    change(bundles[0])
    reused = tmp_path / "reused.json"
    assert planned(cli, *bundles, *trusted, "--reused-report", reused) == [str(bundles[0])]
    report = json.loads(reused.read_text())
    validate(report, reused)
    assert [b["path"] for b in report["bundles"]] == [str(bundles[1]), str(bundles[2])]
    assert all(b["reused"]["result"] == "PASSED" for b in report["bundles"])
    # Other options make other keys: nothing is reused for a --strict matrix.
    assert planned(cli, *bundles, *trusted, "--strict") == list(map(str, bundles))
    code, _, err = cli("plan", *bundles, *trusted, *signing)
    assert code == 2 and "attests nothing" in err
