"""The Markdown document, top down: the verdict line, each failing bundle (its path, errors, warnings, what
changed, the rest collapsed), the passing bundles in one collapsed block, the environment and the footer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from checker.findings import Severity
from checker.render.escape import text
from checker.render.gains import gain_sentences
from checker.render.links import Links, bundle_root
from checker.render.markdown.detail import Cuts, Detail, View
from checker.render.markdown.findings import bundle_repo_path, error_list, info_list, warning_list
from checker.render.markdown.since_base import (
    changes_by_bundle,
    loosened_first,
    removed_since_base,
    since_base_line,
    since_base_section,
)
from checker.render.markdown.tables import comparison_section, key_values, validation_rows
from checker.render.markdown.words import bundle_title, count, plural, severity_count, status_mark
from checker.render.placement import native_sentences, placement_sentences, usability_sentences
from checker.render.runtimes import runtime_table
from checker.reports.model import BundleReport, Comparison, Report

TITLE = "ONNX release check"
SEVERITIES = (
    ("error", "❌", "error", "errors"),
    ("warning", "⚠️", "warning", "warnings"),
    ("info", "\N{INFORMATION SOURCE}\ufe0f", "note", "notes"),
)


ENVIRONMENT_ORDER = ("checker", "onnxruntime", "onnx", "numpy", "python", "platform")


def document(
    report: Report,
    detail: Detail,
    cuts: Cuts,
    notes: Sequence[str],
    limit_name: str,
    links: Links | None = None,
) -> str:
    bundles = report.bundles
    view = View(detail, cuts, links, changes_by_bundle(report.changes), report.strict)
    # A passing verdict reused from a verdict store stands as stored: one line each, in one fold at the end.
    # The bundles judged here, and what changed, come first (a reused failure is a failing bundle like any).
    reused = [b for b in bundles if b.reused is not None and view.status(b) != "fail"]
    judged = [b for b in bundles if not any(b is r for r in reused)]
    failing = [b for b in judged if view.status(b) == "fail"]
    parts = [_headline(report, bundles, view), *loosened_first(view, bundles)]
    if failing:
        for i, bundle in enumerate(failing):
            if detail.full_bundles is not None and i >= detail.full_bundles:
                cuts.add("bundle details")
                parts.append(_short_line(bundle, view))
                continue
            parts.append("\n".join(_failing_bundle(bundle, view)))
        passing = [b for b in judged if view.status(b) != "fail"]
        if passing:
            summary = f"✅ {count(len(passing), 'other bundle')} passed"
            parts.append("\n".join(_passing_block(passing, view, summary, nested=True)))
    elif judged:
        parts.append(_passing_line(judged, view))
        parts.extend(since_base_line(judged, view))
        summary = "Details: pieces, comparisons and environment"
        parts.append("\n".join(_passing_block(judged, view, summary, nested=len(judged) > 1)))
    if reused:
        parts.append("\n".join(_reused_block(reused, view)))
    parts.extend(removed_since_base(view))
    if failing or not bundles:
        parts.append("\n".join(_environment(report.environment)))
    elif parts[-1].endswith("</details>"):  # a passing report keeps its environment in its one collapsed block
        environment = "\n".join(_environment(report.environment, heading=True))
        parts[-1] = parts[-1].removesuffix("</details>") + (environment + "\n\n" if environment else "") + "</details>"
    parts.extend(notes)
    note = cuts.note(limit_name)
    if note:
        parts.append(note)
    parts.append(_footer(report, links))
    return "\n\n".join(p for p in parts if p) + "\n"


def _headline(report: Report, bundles: list[BundleReport], view: View) -> str:
    failed = sum(1 for b in bundles if view.status(b) == "fail")
    if not bundles:
        return f"## ⚠️ {TITLE}: no bundle was verified"
    if failed:
        line = f"## ❌ {TITLE}: {failed} of {len(bundles)} {plural(len(bundles), 'bundle')} failed"
        line += _strict_reason(report, bundles, view)
    elif resting := [b for b in bundles if (e := view.change(b)) is not None and e.passes_by_loosening]:
        # A pass that holds only because a check was loosened is not shown green.
        line = (
            f"## ⚠️ {TITLE}: {count(len(bundles), 'bundle')} passed, {len(resting)} only because a check was "
            "loosened since the base"
        )
    else:
        strict = " (warnings count as failures)" if report.strict else ""
        line = f"## ✅ {TITLE}: {count(len(bundles), 'bundle')} passed{strict}"
    return line + _not_run_suffix(bundles)


def _strict_reason(report: Report, bundles: list[BundleReport], view: View) -> str:
    """Why a bundle with no error failed: its warnings count as failures (--strict, `fail-on: warning`)."""
    if not report.strict:
        return ""
    failing = [b for b in bundles if view.status(b) == "fail"]
    by_warnings = [b for b in failing if b.count(Severity.ERROR) == 0 and b.count(Severity.WARNING) > 0]
    if not by_warnings:
        return ""
    warnings = sum(b.count(Severity.WARNING) for b in by_warnings)
    return f" because warnings count as failures ({count(warnings, 'warning')})"


def _counted(bundle: BundleReport, view: View) -> bool:
    return view.strict and view.status(bundle) == "fail"


def _not_run_suffix(bundles: list[BundleReport]) -> str:
    """Checks that could not run (a bundle's `not_run`): they belong in the verdict."""
    items = [item for b in bundles for item in b.not_run]
    if not items:
        return ""
    named = "; ".join(
        text(f"{item.check or '?'}" + (f": {item.reason}" if item.reason else ""), 120) for item in items[:2]
    )
    more = f"; {len(items) - 2} more" if len(items) > 2 else ""
    return f" — {count(len(items), 'check')} not run: {named}{more}"


def _failing_bundle(bundle: BundleReport, view: View) -> Iterator[str]:
    yield f"### ❌ {bundle_title(bundle)} — {_bundle_path(bundle, view.links)}"
    yield from error_list(bundle, view)
    yield from warning_list(bundle, view, collapsed=False, counted=_counted(bundle, view))
    yield from since_base_section(bundle, view)
    for comparison in bundle.comparisons:  # a failing rule is a reason: not folded away
        if comparison.status == "fail":
            yield from comparison_section(comparison, view.detail, view.cuts)
    yield from _collapsed_rest(bundle, view)


def _short_line(bundle: BundleReport, view: View) -> str:
    """A bundle left out for size: its verdict, path and counts."""
    errors, warnings = severity_count(bundle, Severity.ERROR), severity_count(bundle, Severity.WARNING)
    return (
        f"### {status_mark(view.status(bundle))} {bundle_title(bundle)} — {_bundle_path(bundle, view.links)}\n\n"
        f"{count(errors, 'error')}, {count(warnings, 'warning')} (details in the JSON report)"
    )


def _bundle_path(bundle: BundleReport, links: Links | None) -> str:
    """The bundle's manifest as a repository path (relative to the workspace, never the runner's absolute
    path), linked when links are on."""
    manifest = bundle.manifest_file
    shown = bundle_repo_path(bundle, manifest, links) if manifest is not None else None
    label = shown or _folder(bundle, links)
    if links is not None and shown is not None:
        return f"[{text(label, 200)}]({links.blob(shown)})"
    return text(label, 200)


def _folder(bundle: BundleReport, links: Links | None) -> str:
    """The bundle's path as the reader knows it: from the workspace's root when it lies under it."""
    return bundle_root(bundle.path, links.workspace if links else None) or bundle.path or "—"


def _collapsed_rest(bundle: BundleReport, view: View) -> Iterator[str]:
    pieces = bundle.piece_states()
    present = sum(1 for v in pieces.values() if v == "present")
    others = [c for c in bundle.comparisons if c.status != "fail"]
    verdicts = ", ".join(f"{comparison_name(c)} {status_mark(c.status)}" for c in others[:8])
    summary = f"Details: pieces ({present} of {len(pieces)} present)" + (f", {verdicts}" if verdicts else "")
    yield ""
    yield f"<details><summary>{summary}</summary>"
    yield from _inner(bundle, view, failing_shown=True)
    yield ""
    yield "</details>"


def comparison_name(comparison: Comparison) -> str:
    """A comparison by its graph and what it is compared against: a variant has two."""
    return f"{text(comparison.graph or '?', 40)} vs {text(comparison.against or '?', 20)}"


def _inner(bundle: BundleReport, view: View, failing_shown: bool = False) -> Iterator[str]:
    """The detail under a bundle's fold: identity, the seven pieces, notes, comparisons, validation."""
    yield ""
    yield _identity(bundle, view.links)
    yield from _checklist(bundle.piece_states())
    yield from info_list(bundle, view)
    for comparison in bundle.comparisons:
        if not (failing_shown and comparison.status == "fail"):
            yield from comparison_section(comparison, view.detail, view.cuts)
    gains = gain_sentences(bundle)
    if gains:
        yield ""
        yield "#### Gain over the baseline"
        yield ""
        yield from (f"- {text(line, 600)}" for line in gains)
    yield from _runtimes(bundle)
    for title, lines in (
        ("Each platform against the native run", native_sentences(bundle)),
        ("Where the nodes run", placement_sentences(bundle)),
        ("Mobile providers (onnxruntime's usability check)", usability_sentences(bundle)),
    ):
        if lines:
            yield ""
            yield f"#### {title}"
            yield ""
            yield from (f"- {text(line, 600)}" for line in lines)
    if bundle.validation is not None:
        yield from key_values("Validation command", validation_rows(bundle.validation))


def _runtimes(bundle: BundleReport) -> Iterator[str]:
    """One row per runtime (--runtime), one column per rule: its verdict and measured figure."""
    table = runtime_table(bundle)
    if table is None:
        return
    heads, rows = table
    yield ""
    yield "#### Rules in each runtime"
    yield ""
    yield "| " + " | ".join(text(h, 120) for h in heads) + " |"
    yield "|" + " --- |" * len(heads)
    for row in rows:
        yield "| " + " | ".join(text(cell, 120) for cell in row) + " |"


def _passing_line(bundles: list[BundleReport], view: View) -> str:
    if len(bundles) == 1:
        b = bundles[0]
        pieces = b.piece_states()
        present = sum(1 for v in pieces.values() if v == "present")
        comparisons = b.comparisons
        judged = sum(1 for c in comparisons if c.status == "pass")
        warnings = severity_count(b, Severity.WARNING)
        facts = [f"{present} of {len(pieces)} pieces", f"{judged} of {len(comparisons)} comparisons passed"]
        if warnings:
            facts.append(f"⚠️ {count(warnings, 'warning')}")
        return f"{bundle_title(b)} — {_bundle_path(b, view.links)} · " + " · ".join(facts)
    names = ", ".join(bundle_title(b) for b in bundles[:5])
    more = f" and {len(bundles) - 5} more" if len(bundles) > 5 else ""
    warnings = sum(severity_count(b, Severity.WARNING) for b in bundles)
    return f"{names}{more}" + (f" · ⚠️ {count(warnings, 'warning')}" if warnings else "")


def _passing_block(bundles: list[BundleReport], view: View, summary: str, nested: bool) -> Iterator[str]:
    """The passing bundles in one fold. `nested`: one click shows a line each, and a bundle's detail is a fold
    of its own (else the one bundle's detail is the fold itself)."""
    yield f"<details><summary>{summary}</summary>"
    yield ""
    if nested:
        yield _overview(bundles, view)
    for i, bundle in enumerate(bundles):
        if view.detail.full_bundles is not None and i >= view.detail.full_bundles:
            view.cuts.add("bundle details")
            continue
        if nested:
            yield ""
            where = text(_folder(bundle, view.links), 120)
            yield f"<details><summary>✅ {bundle_title(bundle)} — {where}: pieces, comparisons</summary>"
        else:
            yield ""
            yield f"#### ✅ {bundle_title(bundle)} — {_bundle_path(bundle, view.links)}"
        yield from warning_list(bundle, view, collapsed=False)
        yield from since_base_section(bundle, view)
        yield from _inner(bundle, view)
        if nested:
            yield ""
            yield "</details>"
    yield ""
    yield "</details>"


REUSED_SHOWN = 200  # reused bundles listed in their fold; the JSON report has every one


def _reused_block(bundles: list[BundleReport], view: View) -> Iterator[str]:
    """The bundles whose passing verdicts were reused from the verdict store: one line, and a fold of a line
    each (the stored verdict's date, signer and figures)."""
    records = [b.reused for b in bundles if b.reused is not None]
    dates = sorted((r.verified_at or "?")[:10] for r in records)
    when = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
    signers = sorted({r.signed_by or "?" for r in records})
    by = signers[0] if len(signers) == 1 else f"{len(signers)} signers"
    summary = (
        f"♻️ {count(len(bundles), 'bundle')} not run again: {plural(len(bundles), 'its', 'their')} "
        f"{plural(len(bundles), 'verdict')} of {text(when, 40)}, signed by {text(by, 200)}, reused"
    )
    shown = REUSED_SHOWN if view.detail.full_bundles is None else min(REUSED_SHOWN, view.detail.full_bundles)
    yield f"<details><summary>{summary}</summary>"
    yield ""
    for bundle, record in zip(bundles[:shown], records):
        said = text(record.line(signer=len(signers) > 1), view.detail.message_chars)
        where = _bundle_path(bundle, view.links)
        yield f"- {status_mark(view.status(bundle))} {bundle_title(bundle)} — {where} · {said}"
    if len(bundles) > shown:
        view.cuts.add("reused bundles", len(bundles) - shown)
        yield f"- and {len(bundles) - shown} more (the JSON report lists them)"
    yield ""
    yield "</details>"


def _overview(bundles: list[BundleReport], view: View) -> str:
    rows = ["| | bundle | path | errors | warnings | pieces |", "| --- | --- | --- | ---: | ---: | ---: |"]
    for b in bundles:
        pieces = b.piece_states()
        present = sum(1 for v in pieces.values() if v == "present")
        rows.append(
            f"| {status_mark(view.status(b))} | {bundle_title(b)} | {_bundle_path(b, view.links)} "
            f"| {severity_count(b, Severity.ERROR)} | {severity_count(b, Severity.WARNING)} | {present}/{len(pieces)} |"
        )
    return "\n".join(rows)


def _identity(bundle: BundleReport, links: Links | None) -> str:
    facts = [f"**Path:** {text(_folder(bundle, links), 200)}"]
    if bundle.manifest_file:
        facts.append(f"**Manifest:** {text(bundle.manifest_file, 120)}")
    if bundle.digest:
        facts.append(f"**Digest:** {text(bundle.digest, 80)}")
    return " · ".join(facts)


def _checklist(pieces: dict[str, str]) -> Iterator[str]:
    if not pieces:
        return
    present = sum(1 for v in pieces.values() if v == "present")
    yield ""
    yield f"**The seven pieces** ({present} of {len(pieces)} present)"
    yield ""
    for name, state in pieces.items():
        box = "x" if state == "present" else " "
        missing = "" if state == "present" else f": **{text(state, 40)}**"
        yield f"- [{box}] {text(name.replace('_', ' '), 60)}{missing}"


def _environment(environment: dict[str, str], heading: bool = False) -> Iterator[str]:
    if not environment:
        return
    keys = [k for k in ENVIRONMENT_ORDER if k in environment]
    keys += sorted(str(k) for k in environment if k not in ENVIRONMENT_ORDER)
    if heading:
        yield "#### Environment"
    else:
        yield "<details><summary>Environment</summary>"
    yield ""
    yield "| component | version |"
    yield "| --- | --- |"
    for key in keys[:30]:
        yield f"| {text(key, 60)} | {text(environment[key], 200)} |"
    if not heading:
        yield ""
        yield "</details>"


FOOTER_MARK = "<!-- onnx-release-checker:footer -->"
_TIME = re.compile(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(:\d\d)?(\.\d+)?Z$")


def _footer(report: Report, links: Links | None) -> str:
    """Commit and run (linked), the checker's version, and when it ran; hidden-marked, so that a comment
    whose only change is its footer is not sent again."""
    version = text(report.checker_version or "?", 40)
    facts = []
    if links is not None:
        facts.append(f"commit [`{links.sha[:7]}`]({links.commit()})")
        run = links.run()
        if run is not None:
            facts.append(f"[run {links.run_id}]({run})")
    facts.append(f"onnx-release-checker {version}")
    created = report.created_at
    found = _TIME.match(created) if created is not None else None
    if found:
        facts.append(f"{found.group(1)} {found.group(2)} UTC")
    if links is None:
        facts.append("`checker verify --format markdown` shows this report locally")
    return f"{FOOTER_MARK}\n<sub>{' · '.join(facts)}.</sub>"
