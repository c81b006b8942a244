"""One mistake, one finding: the findings that follow from a case whose tensors do not fit the graph are marked
as its consequences (`details.consequence_of`), so a renderer folds them under the root instead of listing each
as a mistake of its own with a fix of its own ("re-export the graph" for a rule that failed on a wrong-rank case).
They stay errors: the verdict does not change, only where they are read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from checker import findings as F
from checker.findings import Finding


def root_of(case: str) -> str:
    return f"case '{case}'"


def with_roots(findings: Sequence[Finding]) -> list[Finding]:
    """The findings, each that follows from a comparison.case error marked with that case as its root."""
    broken = {c for f in findings if f.id == F.COMPARISON_CASE and isinstance(c := f.details.get("case"), str)}
    if not broken:
        return list(findings)
    return [_marked(f, root) if (root := _root(f, broken)) else f for f in findings]


def _root(finding: Finding, broken: set[str]) -> str | None:
    details = finding.details
    if finding.id == F.INPUTS_FIDELITY and details.get("case") in broken and "stored_shape" in details:
        return root_of(str(details["case"]))  # the tensor's shape, not its values: the case's own error says it
    if finding.id == F.COMPARISON_RUNTIME:
        cases = details.get("cases")
        if isinstance(cases, list) and cases and all(c in broken for c in cases):
            return root_of(str(cases[0]))
    if finding.id == F.COMPARISON_RULE and details.get("worst_case") in broken:
        return root_of(str(details["worst_case"]))
    if finding.id == F.VARIANT_NOT_ASSESSED and "comparison.case errors" in finding.message:
        return root_of(sorted(broken)[0])
    return None


def _marked(finding: Finding, root: str) -> Finding:
    return dataclasses.replace(finding, details={**finding.details, "consequence_of": root})
