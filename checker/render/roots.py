"""One mistake, one entry, in every renderer: the findings that follow from a root (a case whose tensors do not
fit the graph: its rules, its onnxruntime failure, a variant not judged because of it) carry
`details.consequence_of` (`checks/roots.py`), and are shown folded under that root rather than as entries of
their own, each with a fix that repeats the root's."""

from __future__ import annotations

from checker.findings import COMPARISON_CASE, Finding


def root_name(finding: Finding) -> str | None:
    """The name a consequence gives its root ("case 'dusk'"), when `finding` is a root."""
    case = finding.details.get("case")
    return f"case '{case}'" if finding.id == COMPARISON_CASE and isinstance(case, str) else None


def consequences(found: list[Finding]) -> dict[str, list[Finding]]:
    """Root name -> the findings of `found` that follow from it, for each root `found` holds."""
    roots = {name for f in found if (name := root_name(f)) is not None}
    out: dict[str, list[Finding]] = {}
    for finding in found:
        root = finding.details.get("consequence_of")
        if isinstance(root, str) and root in roots:
            out.setdefault(root, []).append(finding)
    return out
