"""The JUnit XML report: one test suite per bundle, one test case per check and per rule.

The checks are the families of finding ids (`manifest`, `paths`, `graph`, ...) plus one case per
piece of the seven; a check with an error fails, a check with only warnings passes (or fails under
`--strict`) and carries the warnings as output. Each rule of each judged graph is its own case.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from checker.findings import Finding, Severity
from checker.remedies import remedy
from checker.render.answered import change_lines, changes_of, subject
from checker.reports.model import BundleReport, Comparison, Report, RuleResult

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from checker.render import RenderOptions


# The order a reader meets the checks in, as `checker verify` runs them.
CHECKS = (
    "manifest",
    "paths",
    "digests",
    "graph",
    "labels",
    "runtime",
    "inputs",
    "comparison",
    "variants",
    "validation",
)
# Finding ids whose family is not their prefix.
FAMILY = {
    "bundle.digest": "digests",
    "bundle.missing_piece": "pieces",
    "comparison.rule": "rules",
    "variant.not_assessed": "variants",
    "variant.transform": "variants",
}
PREFIX_FAMILY = {"bundle": "paths", "variant": "variants", "check": "stages"}
# XML 1.0 cannot carry most control characters, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass
class Case:
    classname: str
    name: str
    failures: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    skipped: str | None = None


def render(report: Report, **options: Unpack[RenderOptions]) -> str:
    """The JUnit XML document; it has no use for the options."""
    report = report.printable()
    root = ET.Element("testsuites", name="onnx-release-checker")
    totals = {"tests": 0, "failures": 0, "skipped": 0}  # skipped is counted per suite (the schema has it there)
    for bundle in report.bundles:
        suite = _suite(bundle, strict=report.strict)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key in ("tests", "failures"):
        root.set(key, str(totals[key]))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(bundle: BundleReport, strict: bool) -> ET.Element:
    name = _clean(bundle.name or bundle.path or "bundle")
    cases = [
        *_check_cases(bundle, name, strict, bundle.path),
        *_rule_cases(bundle, name),
        *_reused_cases(bundle, name),
        *_not_run_cases(bundle, name, strict),
    ]
    suite = ET.Element("testsuite", name=name)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.failures)))
    suite.set("skipped", str(sum(1 for c in cases if c.skipped is not None and not c.failures)))
    suite.set("errors", "0")
    props = ET.SubElement(suite, "properties")
    for key, value in (("version", bundle.version), ("path", bundle.path), ("digest", bundle.digest)):
        if value is not None:
            ET.SubElement(props, "property", name=key, value=_clean(value))
    ET.SubElement(props, "property", name="status", value=bundle.status(strict))
    if bundle.reused is not None:
        ET.SubElement(props, "property", name="reused", value=_clean(bundle.reused.line()))
    for case in cases:
        suite.append(_case_element(case))
    return suite


def _case_element(case: Case) -> ET.Element:
    element = ET.Element("testcase", classname=case.classname, name=case.name, time="0")
    if case.failures:
        failure = ET.SubElement(element, "failure", message=_clean(case.failures[0])[:500])
        failure.text = _clean_block("\n".join(case.failures))
    elif case.skipped is not None:
        ET.SubElement(element, "skipped", message=_clean(case.skipped)[:500])
    if case.output:
        ET.SubElement(element, "system-out").text = _clean_block("\n".join(case.output))
    return element


# ----- checks: the seven pieces, then one case per family of findings


def _not_run_cases(bundle: BundleReport, suite: str, strict: bool) -> Iterator[Case]:
    """A check that could not run here: skipped, or failed under --strict (as the verdict is)."""
    for entry in bundle.not_run:
        reason = f"not run: {_clean(entry.reason)}"
        case = Case(f"{suite}.not_run", _clean(entry.check))
        if strict:
            case.failures.append(reason)
        else:
            case.skipped = reason
        yield case


def _check_cases(bundle: BundleReport, suite: str, strict: bool, path: str = "") -> Iterator[Case]:
    by_family: dict[str, list[Finding]] = {}
    for f in bundle.findings:
        by_family.setdefault(_family(f.id), []).append(f)
    yield from _piece_cases(bundle, suite, by_family.pop("pieces", []), path)
    by_family.pop("rules", None)  # the rule cases below say it with their figures
    families = [*CHECKS, *sorted(k for k in by_family if k not in CHECKS)]
    for family in families:
        yield _family_case(suite, family, by_family.get(family, []), strict, path)


def _family(fid: str) -> str:
    if fid in FAMILY:
        return FAMILY[fid]
    prefix = fid.split(".", 1)[0] or "other"
    return PREFIX_FAMILY.get(prefix, prefix)


def _piece_cases(bundle: BundleReport, suite: str, findings: list[Finding], path: str = "") -> Iterator[Case]:
    for piece, state in bundle.piece_states().items():
        case = Case(f"{suite}.pieces", _clean(piece))
        if state != "present":
            said = [_line(f, path) for f in findings if _names_piece(f, piece)]
            case.failures = said or [f"the {piece} piece is {state}"]
        yield case


def _names_piece(finding: Finding, piece: str) -> bool:
    named = finding.details.get("piece")
    if named is not None:
        return bool(named == piece)
    return piece in finding.message or piece.replace("_", " ") in finding.message


def _family_case(suite: str, family: str, findings: list[Finding], strict: bool, path: str = "") -> Case:
    case = Case(f"{suite}.checks", _clean(family))
    for f in findings:
        fails = f.severity is Severity.ERROR or (strict and f.severity is Severity.WARNING)
        (case.failures if fails else case.output).append(_line(f, path))
    skips = [f for f in findings if f.id in ("check.skipped", "comparison.not_run")]
    if skips and len(skips) == len(findings):
        case.skipped = _line(skips[0])
    return case


def _line(finding: Finding, path: str = "") -> str:
    """The finding on one line; an error or a warning ends with its fix (checker/remedies.py)."""
    where = finding.file or ""
    if where and finding.line is not None:
        where += f":{finding.line}"
    prefix = f"{where}: " if where else ""
    said = f"{prefix}{finding.severity.value} {finding.id}: {finding.message}"
    if finding.severity in (Severity.ERROR, Severity.WARNING):
        said += f" (fix: {remedy(finding, path)})"
    return said


# ----- a reused verdict: one case per comparison its attestation records


def _reused_cases(bundle: BundleReport, suite: str) -> Iterator[Case]:
    """A verdict read from a verdict store (`--reuse`): each comparison as the stored attestation records it,
    failed when it did not pass there; its rules were not judged again here."""
    reused = bundle.reused
    if reused is None:
        return
    said = reused.line()
    for comparison in reused.comparisons:
        name = _clean(f"{comparison.get('graph') or '?'} vs {comparison.get('against') or '?'}")
        runtime = _clean(comparison.get("runtime") or "")
        case = Case(f"{suite}.reused", f"{name} ({runtime})" if runtime else name, output=[said])
        if comparison.get("status") != "pass":
            case.failures = [f"{name}: {comparison.get('status')} in the stored verdict ({said})"]
        yield case


# ----- rules: one case per rule of each judged graph


def _rule_cases(bundle: BundleReport, suite: str) -> Iterator[Case]:
    """The checker's own comparisons, then each runtime set's (--runtime, --platform, optimization levels) under
    its label: a rule that fails only on a platform is a failed case of its own."""
    sets = [(suite, bundle.comparisons)]
    for entry in bundle.runtimes:
        label = _clean(entry.runtime or "runtime").replace(" ", "-")
        sets.append((f"{suite}.{label}", entry.comparisons))
    for prefix, comparisons in sets:
        yield from _set_rule_cases(comparisons, prefix)


def _set_rule_cases(comparisons: list[Comparison], prefix: str) -> Iterator[Case]:
    for comparison in comparisons:
        graph = _clean(comparison.graph or "?")
        classname = f"{prefix}.{graph}.vs-{_clean(comparison.against or '?')}"
        if comparison.skipped and not comparison.rules:
            yield Case(classname, "(not assessed)", skipped=comparison.skipped)
        seen: dict[str, int] = {}
        for rule in comparison.rules:
            name = _clean(f"{subject(rule)} {rule.check}")
            seen[name] = seen.get(name, 0) + 1
            case = _rule_case(classname, name if seen[name] == 1 else f"{name} #{seen[name]}", rule)
            changed = change_lines(comparison.graph, changes_of(comparison, rule))
            if case.failures and changed:  # the product's words first, then the figures
                case.failures = ["; ".join(changed) + ": " + case.failures[0], *case.failures[1:]]
            yield case


def _rule_case(classname: str, name: str, rule: RuleResult) -> Case:
    named = (("measured", rule.measured), ("threshold", rule.threshold), ("worst case", rule.worst_case))
    figures = ", ".join(f"{key} {value}" for key, value in (*named, ("pass rate", rule.pass_rate)) if value is not None)
    case = Case(classname, name)
    if rule.passed:
        case.output = [figures] if figures else []
    else:
        case.failures = [f"{name} failed: {figures or 'no figures'}" + (f" ({rule.note})" if rule.note else "")]
    return case


# ----- helpers


def _clean(value: object) -> str:
    """One line of XML-safe text (attributes)."""
    return " ".join(_NOT_XML.sub(" ", str(value)).split())


def _clean_block(value: str) -> str:
    return _NOT_XML.sub(" ", value)
