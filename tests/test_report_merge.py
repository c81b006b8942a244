"""`checker verify --shard K/N` and `checker report merge`: the joined report is the unsharded one.

On the example bundle (a real float model and its real int8 quantization), with rules tightened so that
`min_pass_rate` decides, and so that single shards pass or fail where the whole set does not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from checker.reports.files import validate

EXACT = ("passed", "pass_rate", "min_pass_rate", "worst_case", "measured", "would_pass_at", "threshold", "cases")

Cli = Callable[..., tuple[int, str, str]]


def _between(figures: list[float], passing: int, direction: str) -> float:
    """A threshold that exactly `passing` of these per-case figures meet, midway between two of them.

    The int8 variant's figures depend on the CPU's int8 kernels (VNNI or not), so the thresholds are taken
    from what this machine measured, never written down: the verdicts below then hold on every CPU."""
    ordered = sorted(figures, reverse=direction == "min")  # best first
    assert ordered[passing - 1] != ordered[passing], f"two cases share the figure {ordered[passing]}"
    return (ordered[passing - 1] + ordered[passing]) / 2


def _tighten(cli: Cli, bundle: Path, out: Path) -> None:
    """Rules on which `min_pass_rate` decides: 4 of 8 cases meet the drift (0.5 < 0.6 asked: fail), 6 of 8 meet
    the cosine (0.75 >= 0.7: pass), so that single shards pass or fail where the whole set does not."""
    figures = {r["check"]: list(r["cases"].values()) for _, _, r in _rules(_verify(cli, bundle, out)["bundles"][0])}
    drift = _between(figures["score_drift"], 4, "max")
    cosine = _between(figures["cosine"], 6, "min")
    rules = f"""    rules:
      - {{output: logits, check: topk, k: 1, min_agreement: 1.0}}
      - {{output: logits, check: score_drift, max: {drift!r}, apply: softmax, min_pass_rate: 0.6}}
    drift_rules:
      - {{output: logits, check: cosine, min: {cosine!r}, min_pass_rate: 0.7}}
"""
    manifest = bundle / "bundle.yaml"
    text = manifest.read_text()
    start = text.index("    rules:\n      - {output: logits, check: topk, k: 1")
    last = "      - {output: logits, check: cosine, min: 0.99}\n"
    end = text.index(last) + len(last)
    manifest.write_text(text[:start] + rules + text[end:])
    code, _, err = cli("lock", bundle)  # a new release: its digest covers the rules
    assert code == 0, err


def _verify(cli: Cli, bundle: Path, out: Path, *extra: str) -> dict:
    code, _, err = cli("verify", bundle, "--format", "json", "-o", out, *extra)
    assert code in (0, 1), err
    return json.loads(out.read_text())


def _rules(bundle: dict) -> list[tuple[str, str, dict]]:
    return [(c["graph"], c["against"], r) for c in bundle["comparisons"] for r in c["rules"]]


@pytest.fixture
def tightened(cli: Cli, example: Path, tmp_path: Path) -> Path:
    _tighten(cli, example, tmp_path / "measured.json")
    return example


@pytest.mark.parametrize("count", [2, 3, 8])
def test_merged_shards_equal_the_unsharded_run(cli: Cli, tightened: Path, tmp_path: Path, count: int) -> None:
    whole = _verify(cli, tightened, tmp_path / "whole.json")["bundles"][0]
    assert not [f for f in whole["findings"] if f["id"].startswith("bundle.")]  # it fails on its rules alone
    shards = [_verify(cli, tightened, tmp_path / f"s{k}.json", "--shard", f"{k}/{count}") for k in range(1, count + 1)]
    parts = [s["bundles"][0] for s in shards]
    assert sorted(
        n for p in parts for n in (p["comparisons"] or [{"rules": [{"cases": {}}]}])[0]["rules"][0]["cases"]
    ) == sorted(whole["comparisons"][0]["rules"][0]["cases"])
    code, _, err = cli("report", "merge", *[tmp_path / f"s{k}.json" for k in range(1, count + 1)],
                       "--format", "json", "-o", tmp_path / "merged.json")  # fmt: skip
    document = json.loads((tmp_path / "merged.json").read_text())
    validate(document, tmp_path / "merged.json")  # the merged report is a report
    merged = document["bundles"][0]
    assert code == 1 and merged["status"] == whole["status"] == "fail", err

    assert [c["status"] for c in merged["comparisons"]] == [c["status"] for c in whole["comparisons"]]
    for (g1, a1, mine), (g2, a2, theirs) in zip(_rules(merged), _rules(whole), strict=True):
        assert (g1, a1) == (g2, a2)
        for key in EXACT:
            assert mine[key] == theirs[key], (g1, a1, mine["check"], key)
        assert list(mine["cases"]) == list(theirs["cases"])  # the manifest's case order

    # min_pass_rate decides here, and the shards alone decide otherwise.
    drift = next(r for g, a, r in _rules(whole) if r["check"] == "score_drift")
    cosine = next(r for g, a, r in _rules(whole) if r["check"] == "cosine")
    assert (drift["passed"], cosine["passed"]) == (False, True)
    assert (drift["pass_rate"], cosine["pass_rate"]) == (0.5, 0.75)

    def rule_findings(bundle: dict) -> list[str]:
        return sorted(f["message"] for f in bundle["findings"] if f["id"] == "comparison.rule")

    assert rule_findings(merged) == rule_findings(whole)
    ids = {f["id"] for f in merged["findings"]}
    assert not any(f.get("details", {}).get("shard_empty") for f in merged["findings"])
    assert "report.merge" not in ids
    assert "shard" not in merged and merged["merged_from"] == count


def test_a_missing_shard_fails_the_merged_report(cli: Cli, example: Path, tmp_path: Path) -> None:
    _verify(cli, example, tmp_path / "s1.json", "--shard", "1/3")
    _verify(cli, example, tmp_path / "s3.json", "--shard", "3/3")
    code, _, _ = cli("report", "merge", tmp_path / "s1.json", tmp_path / "s3.json", "-o", tmp_path / "m.txt")
    assert code == 1
    assert "no report of shard 2/3 was merged" in (tmp_path / "m.txt").read_text()


def test_shards_of_different_splits_do_not_merge(cli: Cli, example: Path, tmp_path: Path) -> None:
    _verify(cli, example, tmp_path / "a.json", "--shard", "1/2")
    _verify(cli, example, tmp_path / "b.json", "--shard", "2/3")
    code, _, err = cli("report", "merge", tmp_path / "a.json", tmp_path / "b.json")
    assert code == 2 and "split the cases differently" in err


def test_a_report_that_is_not_one_is_refused(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"bundles": "no"}')
    code, _, err = cli("report", "merge", bad)
    assert code == 2 and "report schema" in err


def test_bad_shard_option_is_a_usage_error(cli: Cli, example: Path) -> None:
    code, _, err = cli("verify", example, "--shard", "3/2")
    assert code == 2 and "K must lie between 1 and N" in err


def test_unsharded_reports_of_the_same_bundle_join_without_repeating_themselves(
    cli: Cli, example: Path, tmp_path: Path
) -> None:
    whole = _verify(cli, example, tmp_path / "a.json")["bundles"][0]
    _verify(cli, example, tmp_path / "b.json")
    code, _, err = cli("report", "merge", tmp_path / "a.json", tmp_path / "b.json", "--format", "json",
                       "-o", tmp_path / "m.json")  # fmt: skip
    merged = json.loads((tmp_path / "m.json").read_text())["bundles"][0]
    assert code == 0, err
    assert merged["comparisons"] == whole["comparisons"]
    assert merged["findings"] == whole["findings"] and merged["merged_from"] == 2


def test_a_shard_report_with_a_forged_rule_is_refused_not_a_crash(cli: Cli, example: Path, tmp_path: Path) -> None:
    for k in (1, 2):
        _verify(cli, example, tmp_path / f"s{k}.json", "--shard", f"{k}/2")
    forged = json.loads((tmp_path / "s1.json").read_text())
    forged["bundles"][0]["comparisons"][0]["rules"][0]["params"] = {"rtol": 0.001}  # no atol: schema-valid
    (tmp_path / "s1.json").write_text(json.dumps(forged))
    code, _, err = cli("report", "merge", tmp_path / "s1.json", tmp_path / "s2.json")
    assert code == 2 and "not as the checker writes it" in err
