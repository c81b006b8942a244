"""Joining the reports of `checker verify --shard K/N` jobs (and of jobs per runtime) into one report.

Each rule of a shard report carries every judged case's figure and note, so the whole set's rule is judged
again here by the same function that judged it in one run (compare.rules.judge_rule): pass rate,
`min_pass_rate` outcome, worst case, measured figure and `would_pass_at` come out exactly as an unsharded
run's; a task rule (accuracy, accuracy_drop) is judged again from every case's counts. The comparison.rule
and comparison.too_few_cases findings are rebuilt from the merged rules; every other finding is kept once
(the set-wide ones are the same in every shard, the case-scoped ones differ and all stay).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Sequence

from checker import findings as F
from checker.compare.answering import MAX_CHANGES, answer_finding
from checker.compare.boundaries import sentence
from checker.compare.intervals import Interval
from checker.compare.metrics import CHECKS
from checker.compare.rules import CaseResult, Rule, judge_rule
from checker.compare.ruleset import rule_finding
from checker.compare.task import judge_task, tally_of, too_few_finding
from checker.errors import Error
from checker.findings import Finding
from checker.reports.model import BundleReport, Comparison, Report, RuleResult, RuntimeSet, for_runtime
from checker.reports.parts.judged import Diagnosis

_REBUILT = (F.COMPARISON_RULE, F.COMPARISON_TOO_FEW_CASES)  # findings the merged rules make again
HOST = ""  # the comparison set run by the checker's own onnxruntime (the bundle's `comparisons`)


class MergeError(Error):
    """Reports that cannot be joined: shards of different splits, or of different case sets."""


def merge_reports(reports: Sequence[Report], strict: bool = False, names: Sequence[str] | None = None) -> Report:
    """One report from several: bundles matched by path, name, version and digest, in first-seen order.
    `names` are the reports' files, for an error to name."""
    if not reports:
        raise MergeError("no report to merge")
    refuse_other_releases(reports, names or [f"report {i}" for i in range(1, len(reports) + 1)])
    groups: dict[str, list[BundleReport]] = {}
    for report in reports:
        for bundle in report.bundles:
            groups.setdefault(_bundle_key(bundle), []).append(bundle)
    strict = strict or any(r.strict for r in reports)
    try:
        bundles = [_merge_bundle(parts) for parts in groups.values()]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a report that is well-formed JSON only
        raise MergeError(f"a report holds a rule or comparison that is not as the checker writes it: {exc!r}") from None
    first = reports[0]
    context = next((r.context for r in reports if r.context), {})
    return Report(
        checker_version=first.checker_version,
        bundles=bundles,
        strict=strict,
        environment=dict(first.environment),
        context=dict(context),
        created_at=None,
    )


def refuse_other_releases(reports: Sequence[Report], names: Sequence[str]) -> None:
    """Reports of one bundle path must judge one release: the same bundle digest and the same manifest. Shards
    made from different manifests (a rule's threshold edited between jobs) would otherwise join into a verdict
    that no manifest gives."""
    seen: dict[str, dict[tuple[str | None, str | None], list[str]]] = {}
    for report, name in zip(reports, names):
        for bundle in report.bundles:
            identity = (bundle.digest, bundle.manifest_digest)
            seen.setdefault(bundle.path, {}).setdefault(identity, []).append(name)
    for path, identities in seen.items():
        if len(identities) > 1:
            kind = "bundle digests" if len({d for d, _ in identities}) > 1 else "manifests"
            groups = "; ".join(f"{', '.join(files)} (digest {d}, manifest {m})" for (d, m), files in identities.items())
            raise MergeError(f"bundle '{path}': the reports judged different {kind}, not shards of one run: {groups}")


def _bundle_key(bundle: BundleReport) -> str:
    return json.dumps([bundle.path, bundle.name, bundle.version, bundle.digest])


def _shard_of(bundle: BundleReport) -> tuple[int, int] | None:
    if bundle.shard is None:
        return None
    return bundle.shard.index, bundle.shard.count


def _merge_bundle(parts: Sequence[BundleReport]) -> BundleReport:
    label = parts[0].name or parts[0].path
    shards = {_shard_of(p) for p in parts}
    counts = {s[1] for s in shards if s is not None}
    if len(counts) > 1 or (counts and None in shards):
        raise MergeError(f"bundle '{label}': its reports split the cases differently ({_splits(shards)})")
    order = _order(parts, label)
    found: list[Finding] = []
    if counts:
        count = next(iter(counts))
        missing = sorted(set(range(1, count + 1)) - {s[0] for s in shards if s is not None})
        found += [_missing_shard(k, count) for k in missing]
    first = parts[0]
    manifest = first.manifest_file
    comparisons, rebuilt = _merge_set(parts, HOST, order, manifest)
    runtimes, more = _merge_runtimes(parts, order, manifest)
    return dataclasses.replace(
        first,
        shard=None,
        comparisons=comparisons,
        runtimes=runtimes,
        findings=_one_diagnosis_each(_kept_findings(parts, rebuilt=bool(counts)), comparisons, bool(counts))
        + found
        + rebuilt
        + more,
        merged_from=len(parts) if counts or len(parts) > 1 else first.merged_from,
    )


def _splits(shards: Iterable[tuple[int, int] | None]) -> str:
    return ", ".join(sorted("unsharded" if s is None else f"{s[0]}/{s[1]}" for s in shards))


def _order(parts: Sequence[BundleReport], label: object) -> list[str] | None:
    """The whole set's case order, the same in every shard report (None when no part is a shard)."""
    orders = [p.shard.cases for p in parts if p.shard is not None]
    if not orders:
        return None
    if any(o != orders[0] for o in orders):
        raise MergeError(f"bundle '{label}': its shard reports list different comparison cases")
    return list(orders[0])


def _missing_shard(index: int, count: int) -> Finding:
    return F.error(F.REPORT_MERGE, f"no report of shard {index}/{count} was merged: its cases were not judged")


def _one_diagnosis_each(findings: list[Finding], comparisons: Sequence[Comparison], sharded: bool) -> list[Finding]:
    """Each failing shard diagnosed its variant on its own worst case; the whole set makes one diagnosis, on
    the case the merged comparison's diagnosis names. Keep that variant.diagnosis finding alone (none when the
    merged variant passes)."""
    if not sharded:
        return findings
    chosen: dict[str, object] = {}
    for comparison in comparisons:
        if comparison.diagnosis is not None:
            chosen.setdefault(comparison.graph, comparison.diagnosis.case)
    out, kept = [], set()
    for finding in findings:
        if finding.id == F.VARIANT_DIAGNOSIS and "case" in finding.details:
            variant = str(finding.details.get("variant"))
            if variant in kept or variant not in chosen or finding.details["case"] != chosen[variant]:
                continue
            kept.add(variant)
        out.append(finding)
    return out


def _kept_findings(parts: Sequence[BundleReport], rebuilt: bool) -> list[Finding]:
    """Every finding once, in first-seen order; rule verdicts of shards are rebuilt; an empty shard says nothing."""
    seen: set[str] = set()
    kept = []
    for part in parts:
        for finding in part.findings:
            if (rebuilt and finding.id in _REBUILT) or finding.details.get("shard_empty"):
                continue
            key = json.dumps(finding.to_dict(), sort_keys=True)
            if key not in seen:
                seen.add(key)
                kept.append(finding)
    return kept


def _sets_by_shard(parts: Sequence[BundleReport], label: str) -> list[tuple[int, list[Comparison]]]:
    """(shard index, comparisons) of one set per shard; a shard reported twice (one job per runtime) counts once."""
    chosen: dict[int, list[Comparison]] = {}
    for i, part in enumerate(parts):
        shard = _shard_of(part)
        index = shard[0] if shard is not None else -1 - i
        if label == HOST:
            comparisons = part.comparisons
        else:
            match = [r for r in part.runtimes if r.runtime == label]
            comparisons = match[0].comparisons if match else []
        if comparisons and index not in chosen:
            chosen[index] = comparisons
    return sorted(chosen.items())


def _merge_set(
    parts: Sequence[BundleReport], label: str, order: list[str] | None, manifest: str | None
) -> tuple[list[Comparison], list[Finding]]:
    """One comparison set merged, and the comparison.rule findings of its failed rules."""
    by_shard = _sets_by_shard(parts, label)
    if not by_shard:
        return [], []
    if order is None:  # not sharded: the same set reported by several jobs; they agree, take the first
        return list(by_shard[0][1]), []
    merged = [_merge_comparison([s[i] for _, s in by_shard if i < len(s)], order) for i in range(_width(by_shard))]
    found = [f for comparison, extras in merged for f in _rule_findings(comparison, extras, label, manifest)]
    return [comparison for comparison, _ in merged], found


def _width(by_shard: Sequence[tuple[int, list[Comparison]]]) -> int:
    return max(len(s) for _, s in by_shard)


def _merge_runtimes(
    parts: Sequence[BundleReport], order: list[str] | None, manifest: str | None
) -> tuple[list[RuntimeSet], list[Finding]]:
    labels: dict[str, RuntimeSet] = {}
    for part in parts:
        for entry in part.runtimes:
            labels.setdefault(entry.runtime, entry)
    out, found = [], []
    for label, entry in labels.items():
        comparisons, more = _merge_set(parts, label, order, manifest)
        errors = [r.error for p in parts for r in p.runtimes if r.runtime == label]
        error = next((e for e in errors if e), None)
        out.append(dataclasses.replace(entry, comparisons=comparisons, error=error))
        found += more
    return out, found


def _merge_comparison(parts: Sequence[Comparison], order: list[str]) -> tuple[Comparison, list[str | None]]:
    """The comparison over the whole set, and per rule the boundary sentence its finding adds (or None)."""
    first = parts[0]
    out = Comparison(first.graph, first.against, case_errors=list(first.case_errors))
    skipped = [p for p in parts if p.skipped]
    if skipped:
        reason = str(skipped[0].skipped)
        if len(skipped) < len(parts):
            reason += f" (in {len(skipped)} of the {len(parts)} shards that held cases)"
        out.skipped = reason
        return out, []
    width = max(len(p.rules) for p in parts)
    # A variant's rules against the reference say which boundary broke them (compare.boundaries).
    variant = first.graph if first.graph != "baseline" and first.against == "reference" else None
    judged = [_merge_rule([p.rules[i] for p in parts if i < len(p.rules)], order, variant) for i in range(width)]
    out.rules = [rule for rule, _ in judged]
    for part in parts:  # the answers that changed, in shard order, bounded as one run bounds them
        out.changes.extend(c for c in part.changes if len(out.changes) < MAX_CHANGES and c not in out.changes)
    diagnosis = _diagnosis(parts, out.rules)
    if diagnosis is not None and out.status == "fail":
        out.diagnosis = diagnosis
    return out, [extra for _, extra in judged]


def _diagnosis(parts: Sequence[Comparison], rules: Sequence[RuleResult]) -> Diagnosis | None:
    """The diagnosis a shard made on the merged worst case, else the first one made."""
    worst = next((r.worst_case for r in rules if not r.passed), None)
    for part in parts:
        if part.diagnosis is not None and worst is not None and part.diagnosis.case == worst:
            return part.diagnosis
    return next((p.diagnosis for p in parts if p.diagnosis), None)


def _merge_rule(parts: Sequence[RuleResult], order: list[str], variant: str | None) -> tuple[RuleResult, str | None]:
    """The rule over the whole set, judged again from every shard's per-case figures, and the sentence saying
    which boundary broke it (a variant's failed rule against the reference), which its finding adds."""
    first = parts[0]
    if first.answer is not None and first.params:
        return _merge_answer_rule(parts, order), None
    check = CHECKS.get(first.check)
    if check is None or not first.params:
        return first, None  # a rule that could not be judged: the same reason in every shard
    if check.task:  # judged on the whole set's counts: summed from each case's, where the shards kept them
        return _merge_task_rule(parts, order), None
    figures: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    for part in parts:
        figures.update(part.cases)
        notes.update(part.case_notes)
    names = [n for n in order if n in figures] + [n for n in figures if n not in set(order)]
    compared = 1 if any(p.compared for p in parts) else 0
    params = dict(first.params)
    rule = Rule(first.output, check, params, float(first.min_pass_rate))
    results = {
        n: CaseResult(f, f is not None and check.passes(float(f), params), notes.get(n), compared=compared)
        for n, f in ((n, figures[n]) for n in names)
    }
    result = judge_rule(rule, names, results, first.line)
    extra = None
    if not result.passed and variant is not None:
        extra = _boundary_sentence(parts, rule, names, variant)
        if extra:
            result.note = f"{result.note}; {extra}" if result.note else extra
    return result, extra


def _merge_answer_rule(parts: Sequence[RuleResult], order: list[str]) -> RuleResult:
    """A rule on an answer over the whole set, from every shard's per-case figures: a case passed where it has a
    figure and no note; a decision rule counts the flips of every shard. Nearest-neighbour agreement needs every
    item's vector at once, which no shard keeps: each shard's own verdict is kept, and the note says so."""
    first = parts[0]
    figures: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    for part in parts:
        figures.update(part.cases)
        notes.update(part.case_notes)
    names = [n for n in order if n in figures] + [n for n in figures if n not in set(order)]
    passing = sum(1 for n in names if figures[n] is not None and n not in notes)
    rate = passing / len(names) if names else 0.0
    merged = dataclasses.replace(first, cases={n: figures[n] for n in names}, case_notes=notes, pass_rate=rate)
    if first.check == "decision":
        total = sum(f or 0.0 for f in figures.values())
        merged.measured, merged.would_pass_at = total, total
        merged.passed = (
            bool(names) and total <= (first.threshold or 0.0) and not any(f is None for f in figures.values())
        )
        merged.worst_case = max(names, key=lambda n: figures[n] or 0.0, default=None)
        return merged
    if "neighbours" in first.params:
        merged.passed = all(p.passed for p in parts)
        merged.measured = min((p.measured for p in parts if p.measured is not None), default=None)
        merged.note = "nearest-neighbour agreement judged within each shard (a shard keeps no other's vectors)"
        return merged
    merged.passed = bool(names) and rate >= first.min_pass_rate - 1e-12
    direction = 1.0 if first.direction == "max" else -1.0
    worst = max(
        names, key=lambda n: math.inf if figures[n] is None else direction * float(figures[n] or 0.0), default=None
    )
    merged.worst_case, merged.measured = worst, figures.get(worst) if worst is not None else None
    return merged


def _merge_task_rule(parts: Sequence[RuleResult], order: list[str]) -> RuleResult:
    """A task rule over the whole set, judged again by compare.task from every case's counts (a report made
    before the counts were kept is taken as its first shard said)."""
    first = parts[0]
    if any(p.tallies is None for p in parts):
        return first
    figures: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    tallies: dict[str, list[int]] = {}
    for part in parts:
        figures.update(part.cases)
        notes.update(part.case_notes)
        tallies.update(part.tallies or {})
    names = [n for n in order if n in figures] + [n for n in figures if n not in set(order)]
    rule = Rule(
        first.output, CHECKS[first.check], dict(first.params), float(first.min_pass_rate), tags=tuple(first.tags)
    )
    results = {
        n: CaseResult(
            figures[n], figures[n] is not None, notes.get(n), tally=tally_of(t) if (t := tallies.get(n)) else None
        )
        for n in names
    }
    result, _ = judge_task(rule, names, results, first.line)
    return result


def _too_few(comparison: Comparison, rule: RuleResult, manifest: str | None) -> Finding | None:
    """The merged task rule's comparison.too_few_cases, from the interval it was judged with."""
    if rule.statistics is None or rule.measured is None:
        return None
    said = rule.statistics.interval
    interval = Interval(float(said.low), float(said.high), said.method)
    return too_few_finding(comparison.graph, rule, interval, {"file": manifest or None, "line": rule.line})


def _boundary_sentence(parts: Sequence[RuleResult], rule: Rule, names: list[str], variant: str) -> str | None:
    """Which boundary broke the merged rule, from the shards' figures at each boundary."""
    sides: dict[str, dict[str, float | None]] = {"export": {}, "transform": {}}
    for part in parts:
        if part.boundaries is None:
            return None
        for side, figures in sides.items():
            figures.update(part.boundaries.get(side) or {})
    judged = []
    for figures in sides.values():
        results = {
            n: CaseResult(f, f is not None and rule.check.passes(float(f), rule.params), compared=1)
            for n, f in ((n, figures.get(n)) for n in names)
        }
        judged.append(judge_rule(rule, names, results, None))
    return sentence(variant, judged[0], judged[1])


def _rule_findings(
    comparison: Comparison, extras: Sequence[str | None], label: str, manifest: str | None
) -> list[Finding]:
    out = []
    for rule, extra in zip(comparison.rules, extras):
        check = CHECKS.get(rule.check)
        few = _too_few(comparison, rule, manifest) if check is not None and check.task else None
        if few is not None:
            out.append(few if label == HOST else for_runtime(label, few))
        if rule.passed or (check is None and rule.answer is None) or not rule.params:
            continue
        result = dataclasses.replace(rule)
        if extra and result.note:  # the sentence is the finding's to add, as in a single run
            result.note = None if result.note == extra else result.note.removesuffix(f"; {extra}")
        if rule.answer is not None:
            changes = [c for c in comparison.changes if c.answer == rule.answer]
            finding = answer_finding(
                comparison.graph, comparison.against, result, changes, manifest or None, result.line
            )
        else:
            finding = rule_finding(comparison.graph, comparison.against, result, extra, manifest or None, result.line)
        out.append(finding if label == HOST else for_runtime(label, finding))
    return out
