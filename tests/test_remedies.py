"""Every finding id has a remedy, documented; no remedy suggests loosening a threshold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from checker.findings import Finding, Severity
from checker.remedies import REMEDIES, finding_ids, remedy

DOCS = Path(__file__).resolve().parents[1] / "docs" / "findings.md"


def finding(fid: str, **details: object) -> Finding:
    """A finding of the id with these details, as a report holds it."""
    return Finding(fid, Severity.ERROR, "", details=dict(details))


def test_every_finding_id_has_a_remedy() -> None:
    ids = finding_ids()
    assert len(ids) >= 30  # the constants of checker/findings.py were found
    assert sorted(set(ids) - set(REMEDIES)) == []
    assert sorted(set(REMEDIES) - set(ids)) == []  # and none for an id that does not exist


def test_every_finding_id_is_documented_with_its_remedy() -> None:
    documented = dict(re.findall(r"^\| `([a-z_]+\.[a-z_]+)` \| (.+) \|$", DOCS.read_text(encoding="utf-8"), re.M))
    assert sorted(documented) == finding_ids()
    for fid in finding_ids():
        if "*" not in documented[fid]:  # a fixed remedy is documented word for word
            assert documented[fid] == remedy(finding(fid), "models/m"), fid


@pytest.mark.parametrize("fid", finding_ids())
def test_no_remedy_suggests_loosening_a_threshold(fid: str) -> None:
    details = {"graph": "int8", "worst_case": "dusk", "expected": 10, "actual": 8, "path": "model.onnx"}
    said = remedy(finding(fid, **details), "models/m").lower()
    assert said and not re.search(r"\b(loosen|raise the (threshold|tolerance|atol)|increase (atol|rtol|max))", said)
    assert "would pass" not in said


def test_the_remedies_named_by_the_contract() -> None:
    digest = remedy(finding("bundle.digest", path="model.onnx"), "models/mobilenet")
    assert digest == "restore model.onnx, or, if the change is intended, run `checker lock models/mobilenet`"
    labels = remedy(finding("labels.count", expected=1000, actual=998), "m")
    assert labels.startswith("add the 2 missing labels")
    rule = remedy(finding("comparison.rule", graph="int8", worst_case="dusk"), "models/m")
    assert "'dusk'" in rule and "`checker diagnose models/m --variant int8`" in rule
    assert "diagnose" not in remedy(finding("comparison.rule", graph="baseline"), "m")
    assert remedy(finding("bundle.digest"), "a path with space").endswith("run `checker lock 'a path with space'`")
