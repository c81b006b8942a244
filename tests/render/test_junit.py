"""The JUnit report: one test case per check and per rule, valid XML whatever the bundle holds."""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from checker.cli import main
from checker.findings import error, info, warning
from checker.render.junit import render
from checker.reports.model import BundleReport, Comparison, Report, RuleResult

PIECES = ("graph", "external_weights", "preprocessing", "labels", "comparison_inputs", "runtime", "validation_command")


def rule(output: str, check: str, passed: bool, measured: float, threshold: float) -> RuleResult:
    return RuleResult(output, check, {}, passed, 1.0 if passed else 0.0, 1.0, "cat", measured, threshold, measured)


def sample(name: str = "mobilenet", strict: bool = False) -> Report:
    b = BundleReport(
        path="models/m", manifest_file="bundle.yaml", name=name, version="1.0", pieces={p: True for p in PIECES}
    )
    b.pieces["labels"] = False
    b.add([error("bundle.missing_piece", "missing piece 'labels': outputs[0].labels is not given", "bundle.yaml", 20,
                 piece="labels"),
           warning("graph.producer", "graph.producer is absent", "bundle.yaml", 4),
           info("validation.not_run", "not run"),
           error("comparison.rule", "baseline logits allclose failed")])  # fmt: skip
    b.comparisons = [
        Comparison(
            "baseline", "reference", [rule("logits", "allclose", False, 3e-4, 1e-4), rule("logits", "topk", True, 1, 1)]
        ),
        Comparison("int8", "reference", skipped="the baseline failed"),
    ]
    return Report("0.1.0", [b], strict=strict)


def through_json(report: Report) -> Report:
    """The report as a report file holds it, read back."""
    return Report.from_dict(json.loads(json.dumps(report.to_dict())))


def cases(xml: str) -> dict[str, ET.Element]:
    root = ET.fromstring(xml)
    return {f"{c.get('classname')}/{c.get('name')}": c for c in root.iter("testcase")}


def test_one_case_per_piece_check_and_rule() -> None:
    xml = render(sample())
    found = cases(xml)
    assert {f"mobilenet.pieces/{p}" for p in PIECES} <= set(found)
    assert {"mobilenet.checks/manifest", "mobilenet.checks/graph", "mobilenet.checks/validation"} <= set(found)
    assert {"mobilenet.baseline.vs-reference/logits allclose", "mobilenet.baseline.vs-reference/logits topk"} <= set(
        found
    )
    assert found["mobilenet.int8.vs-reference/(not assessed)"].find("skipped") is not None
    root = ET.fromstring(xml)
    assert root.get("tests") == str(len(found))
    assert root.get("failures") == "2"


def test_failures_say_why_and_warnings_are_output() -> None:
    found = cases(render(sample()))
    labels = found["mobilenet.pieces/labels"].find("failure")
    assert labels is not None and "bundle.yaml:20: error bundle.missing_piece" in labels.get("message", "")
    allclose = found["mobilenet.baseline.vs-reference/logits allclose"].find("failure")
    assert allclose is not None and "measured 0.0003, threshold 0.0001" in allclose.get("message", "")
    graph = found["mobilenet.checks/graph"]
    assert graph.find("failure") is None
    assert "graph.producer is absent" in (graph.findtext("system-out") or "")
    assert found["mobilenet.pieces/graph"].find("failure") is None


def test_under_strict_a_warning_fails_its_check() -> None:
    graph = cases(render(sample(strict=True)))["mobilenet.checks/graph"]
    assert graph.find("failure") is not None


def test_hostile_text_stays_valid_xml() -> None:
    report = sample(name='a"<b>&\x00\x1b]0;x\x07 </testsuite>')
    findings = report.bundles[0].findings
    findings[0] = dataclasses.replace(findings[0], message="\x00\x08 ]]> <![CDATA[ & \ud7ff")
    xml = render(through_json(report))
    root = ET.fromstring(xml)  # parses: nothing broke out
    assert root.find("testsuite").get("name") == 'a"<b>& ]0;x </testsuite>'  # type: ignore[union-attr]
    assert len(list(root.iter("testsuite"))) == 1


def test_an_empty_report_is_an_empty_suite_list() -> None:
    root = ET.fromstring(render(Report("0.1.0")))
    assert root.tag == "testsuites" and root.get("tests") == "0"


XSD = Path(__file__).resolve().parents[1] / "fixtures" / "junit" / "junit-10.xsd"


def test_the_report_is_valid_against_the_published_junit_schema(tmp_path: Path) -> None:
    import xmlschema

    schema = xmlschema.XMLSchema(str(XSD))
    for report in (sample(), sample(strict=True), sample(name='a"<b>&\x00 </testsuite>')):
        schema.validate(render(through_json(report)))
    # The real thing: the example bundle, through the command line.
    example = Path(__file__).resolve().parents[2] / "examples" / "mobilenet-tiny"
    out = tmp_path / "report.xml"
    assert main(["verify", str(example), "--format", "junit", "--output", str(out)]) == 0
    assert schema.is_valid(str(out))
    # The schema is strict enough to catch a slip: a test case without its name is refused.
    broken = out.read_text(encoding="utf-8").replace("<testcase classname=", '<testcase nameless="" classname=', 1)
    broken = re.sub(r'(<testcase nameless="" classname="[^"]*") name="[^"]*"', r"\1", broken, count=1)
    assert not schema.is_valid(broken)


def test_each_failing_finding_carries_its_fix() -> None:
    found = cases(render(sample()))
    labels = found["mobilenet.pieces/labels"].find("failure")
    assert labels is not None and "(fix: add the labels piece to the manifest" in (labels.text or "")
