"""Joining the reports of `checker verify --shard K/N` jobs (and of jobs per runtime) into one report.

Each rule of a shard report carries every judged case's figure and note, so the whole set's rule is judged
again here by the same function that judged it in one run (compare.rules.judge_rule): pass rate,
`min_pass_rate` outcome, worst case, measured figure and `would_pass_at` come out exactly as an unsharded
run's. The comparison.rule findings are rebuilt from the merged rules; every other finding is kept once
(the set-wide ones are the same in every shard, the case-scoped ones differ and all stay).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from checker import findings as F
from checker.compare.boundaries import sentence
from checker.compare.metrics import CHECKS
from checker.compare.rules import CaseResult, Rule, judge_rule
from checker.compare.ruleset import rule_finding
from checker.errors import Error
from checker.report import RuleResult

_EXTRA = "_boundary_sentence"  # a merged rule's boundary sentence, for its finding; removed before output
HOST = ""  # the comparison set run by the checker's own onnxruntime (the bundle's `comparisons`)
_FRESH = ("case_notes", "compared", "note", "boundaries")  # keys a merged rule sets anew


class MergeError(Error):
    """Reports that cannot be joined: shards of different splits, or of different case sets."""


Json = dict[str, Any]


def merge_reports(reports: Sequence[Mapping[str, Any]], strict: bool = False) -> Json:
    """One report from several: bundles matched by path, name, version and digest, in first-seen order."""
    if not reports:
        raise MergeError("no report to merge")
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for report in reports:
        for bundle in report.get("bundles") or []:
            groups.setdefault(_bundle_key(bundle), []).append(bundle)
    strict = strict or any(bool(r.get("strict")) for r in reports)
    try:
        bundles = [_merge_bundle(parts, strict) for parts in groups.values()]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a report that is well-formed JSON only
        raise MergeError(f"a report holds a rule or comparison that is not as the checker writes it: {exc!r}") from None
    first = reports[0]
    out: Json = {
        "report_version": 1,
        "checker_version": first.get("checker_version", ""),
        "status": "fail" if any(b["status"] == "fail" for b in bundles) else "pass",
        "strict": strict,
        "environment": dict(first.get("environment") or {}),
        "bundles": bundles,
    }
    context = next((r["context"] for r in reports if r.get("context")), None)
    if context is not None:
        out["context"] = context
    return out


def _bundle_key(bundle: Mapping[str, Any]) -> str:
    return json.dumps([bundle.get(k) for k in ("path", "name", "version", "digest")])


def _shard_of(bundle: Mapping[str, Any]) -> tuple[int, int] | None:
    shard = bundle.get("shard")
    if not isinstance(shard, Mapping):
        return None
    return int(shard.get("index", 0)), int(shard.get("count", 0))


def _merge_bundle(parts: Sequence[Mapping[str, Any]], strict: bool) -> Json:
    label = parts[0].get("name") or parts[0].get("path")
    shards = {_shard_of(p) for p in parts}
    counts = {s[1] for s in shards if s is not None}
    if len(counts) > 1 or (counts and None in shards):
        raise MergeError(f"bundle '{label}': its reports split the cases differently ({_splits(shards)})")
    order = _order(parts, label)
    found: list[Json] = []
    if counts:
        count = next(iter(counts))
        missing = sorted(set(range(1, count + 1)) - {s[0] for s in shards if s is not None})
        found += [_missing_shard(k, count) for k in missing]
    first = parts[0]
    out: Json = {k: v for k, v in first.items() if k not in ("shard", "findings", "comparisons", "runtimes")}
    manifest = first.get("manifest")
    comparisons, rebuilt = _merge_set(parts, HOST, order, manifest)
    out["comparisons"] = comparisons
    runtimes, more = _merge_runtimes(parts, order, manifest)
    if runtimes:
        out["runtimes"] = runtimes
    out["findings"] = _kept_findings(parts, rebuilt=bool(counts)) + found + rebuilt + more
    if counts or len(parts) > 1:
        out["merged_from"] = len(parts)
    out["status"] = _status(out["findings"], strict)
    return out


def _splits(shards: Iterable[tuple[int, int] | None]) -> str:
    return ", ".join(sorted("unsharded" if s is None else f"{s[0]}/{s[1]}" for s in shards))


def _order(parts: Sequence[Mapping[str, Any]], label: object) -> list[str] | None:
    """The whole set's case order, the same in every shard report (None when no part is a shard)."""
    orders = [p["shard"].get("cases") for p in parts if isinstance(p.get("shard"), Mapping)]
    if not orders:
        return None
    if any(o != orders[0] for o in orders):
        raise MergeError(f"bundle '{label}': its shard reports list different comparison cases")
    return [str(n) for n in orders[0] or []]


def _missing_shard(index: int, count: int) -> Json:
    msg = f"no report of shard {index}/{count} was merged: its cases were not judged"
    return F.error(F.REPORT_MERGE, msg).to_dict()


def _status(findings: Sequence[Mapping[str, Any]], strict: bool) -> str:
    bad = {"error", "warning"} if strict else {"error"}
    return "fail" if any(f.get("severity") in bad for f in findings) else "pass"


def _kept_findings(parts: Sequence[Mapping[str, Any]], rebuilt: bool) -> list[Json]:
    """Every finding once, in first-seen order; rule verdicts of shards are rebuilt; an empty shard says nothing."""
    seen: set[str] = set()
    kept = []
    for part in parts:
        for finding in part.get("findings") or []:
            details = finding.get("details") or {}
            if (rebuilt and finding.get("id") == F.COMPARISON_RULE) or details.get("shard_empty"):
                continue
            key = json.dumps(finding, sort_keys=True)
            if key not in seen:
                seen.add(key)
                kept.append(dict(finding))
    return kept


def _sets_by_shard(parts: Sequence[Mapping[str, Any]], label: str) -> list[tuple[int, list[Mapping[str, Any]]]]:
    """(shard index, comparisons) of one set per shard; a shard reported twice (one job per runtime) counts once."""
    chosen: dict[int, list[Mapping[str, Any]]] = {}
    for i, part in enumerate(parts):
        shard = _shard_of(part)
        index = shard[0] if shard is not None else -1 - i
        if label == HOST:
            comparisons = part.get("comparisons")
        else:
            match = [r for r in part.get("runtimes") or [] if r.get("runtime") == label]
            comparisons = match[0].get("comparisons") if match else None
        if isinstance(comparisons, list) and comparisons and index not in chosen:
            chosen[index] = comparisons
    return sorted(chosen.items())


def _merge_set(
    parts: Sequence[Mapping[str, Any]], label: str, order: list[str] | None, manifest: object
) -> tuple[list[Json], list[Json]]:
    """One comparison set merged, and the comparison.rule findings of its failed rules."""
    by_shard = _sets_by_shard(parts, label)
    if not by_shard:
        return [], []
    if order is None:  # not sharded: the same set reported by several jobs; they agree, take the first
        merged = [dict(c) for c in by_shard[0][1]]
    else:
        merged = [_merge_comparison([s[i] for _, s in by_shard if i < len(s)], order) for i in range(_width(by_shard))]
    found = [f for c in merged for f in _rule_findings(c, label, manifest)] if order is not None else []
    for comparison in merged:
        for rule in comparison.get("rules") or []:
            rule.pop(_EXTRA, None)
    return merged, found


def _width(by_shard: Sequence[tuple[int, list[Mapping[str, Any]]]]) -> int:
    return max(len(s) for _, s in by_shard)


def _merge_runtimes(
    parts: Sequence[Mapping[str, Any]], order: list[str] | None, manifest: object
) -> tuple[list[Json], list[Json]]:
    labels: dict[str, Mapping[str, Any]] = {}
    for part in parts:
        for entry in part.get("runtimes") or []:
            labels.setdefault(str(entry.get("runtime")), entry)
    out, found = [], []
    for label, entry in labels.items():
        comparisons, more = _merge_set(parts, label, order, manifest)
        errors = [r.get("error") for p in parts for r in p.get("runtimes") or [] if r.get("runtime") == label]
        error = next((e for e in errors if e), None)
        merged: Json = {k: v for k, v in entry.items() if k not in ("comparisons", "error", "status")}
        merged["comparisons"] = comparisons
        if error:
            merged["error"] = error
        merged["status"] = _set_status(comparisons, error)
        out.append(merged)
        found += more
    return out, found


def _set_status(comparisons: Sequence[Mapping[str, Any]], error: object) -> str:
    if error or any(c.get("status") != "pass" for c in comparisons):
        return "fail"
    return "pass" if comparisons else "not_assessed"


def _merge_comparison(parts: Sequence[Mapping[str, Any]], order: list[str]) -> Json:
    first = parts[0]
    out: Json = {k: v for k, v in first.items() if k not in ("rules", "skipped", "diagnosis", "status")}
    skipped = [p for p in parts if p.get("skipped")]
    if skipped:
        reason = str(skipped[0]["skipped"])
        if len(skipped) < len(parts):
            reason += f" (in {len(skipped)} of the {len(parts)} shards that held cases)"
        out.update(status="not_assessed", rules=[], skipped=reason)
        return out
    width = max(len(p.get("rules") or []) for p in parts)
    # A variant's rules against the reference say which boundary broke them (compare.boundaries).
    variant = (
        str(first.get("graph")) if first.get("graph") != "baseline" and first.get("against") == "reference" else None
    )
    rules = [
        _merge_rule([p["rules"][i] for p in parts if i < len(p.get("rules") or [])], order, variant)
        for i in range(width)
    ]
    out["status"] = "pass" if all(r.get("passed") for r in rules) else "fail"
    out["rules"] = rules
    diagnosis = _diagnosis(parts, rules)
    if diagnosis is not None and out["status"] == "fail":
        out["diagnosis"] = diagnosis
    return out


def _diagnosis(parts: Sequence[Mapping[str, Any]], rules: Sequence[Mapping[str, Any]]) -> Any:
    """The diagnosis a shard made on the merged worst case, else the first one made."""
    worst = next((r.get("worst_case") for r in rules if not r.get("passed")), None)
    for part in parts:
        diagnosis = part.get("diagnosis")
        if isinstance(diagnosis, Mapping) and worst is not None and diagnosis.get("case") == worst:
            return diagnosis
    return next((p["diagnosis"] for p in parts if p.get("diagnosis")), None)


def _merge_rule(parts: Sequence[Mapping[str, Any]], order: list[str], variant: str | None) -> Json:
    """The rule over the whole set, judged again from every shard's per-case figures."""
    first = parts[0]
    check = CHECKS.get(str(first.get("check")))
    if check is None or any(not isinstance(p.get("cases"), Mapping) for p in parts) or not first.get("params"):
        return dict(first)  # a rule that could not be judged: the same reason in every shard
    if check.task:  # judged on the whole set's counts, which per-case figures do not carry: as the shard said
        return dict(first)
    figures: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    for part in parts:
        figures.update(part["cases"])
        notes.update(part.get("case_notes") or {})
    names = [n for n in order if n in figures] + [n for n in figures if n not in set(order)]
    compared = 1 if any(p.get("compared", True) for p in parts) else 0
    params = dict(first["params"])
    rule = Rule(str(first["output"]), check, params, float(first.get("min_pass_rate", 1.0)))
    results = {
        n: CaseResult(f, f is not None and check.passes(float(f), params), notes.get(n), compared=compared)
        for n, f in ((n, figures[n]) for n in names)
    }
    line = first.get("line")
    result = judge_rule(rule, names, results, line if isinstance(line, int) else None)
    out: Json = {k: v for k, v in first.items() if k not in _FRESH}
    out.update(result.to_dict())
    if not result.passed and variant is not None:
        extra = _boundary_sentence(parts, rule, names, variant)
        if extra:
            out["note"] = f"{result.note}; {extra}" if result.note else extra
            out[_EXTRA] = extra
    return out


def _boundary_sentence(parts: Sequence[Mapping[str, Any]], rule: Rule, names: list[str], variant: str) -> str | None:
    """Which boundary broke the merged rule, from the shards' figures at each boundary."""
    sides: dict[str, dict[str, float | None]] = {"export": {}, "transform": {}}
    for part in parts:
        found = part.get("boundaries")
        if not isinstance(found, Mapping):
            return None
        for side, figures in sides.items():
            figures.update(found.get(side) or {})
    judged = []
    for figures in sides.values():
        results = {
            n: CaseResult(f, f is not None and rule.check.passes(float(f), rule.params), compared=1)
            for n, f in ((n, figures.get(n)) for n in names)
        }
        judged.append(judge_rule(rule, names, results, None))
    return sentence(variant, judged[0], judged[1])


def _rule_findings(comparison: Mapping[str, Any], label: str, manifest: object) -> list[Json]:
    out = []
    for rule in comparison.get("rules") or []:
        if rule.get("passed") or rule.get("check") not in CHECKS or not rule.get("params"):
            continue
        result = _as_result(rule)
        file = str(manifest) if manifest else None
        graph, against = str(comparison.get("graph")), str(comparison.get("against"))
        extra = rule.get(_EXTRA)
        if extra and result.note:  # the sentence is the finding's to add, as in a single run
            result.note = None if result.note == extra else result.note.removesuffix(f"; {extra}")
        finding = rule_finding(graph, against, result, extra, file, result.line)
        if label != HOST:
            finding = for_runtime(label, finding)
        out.append(finding.to_dict())
    return out


def _as_result(rule: Mapping[str, Any]) -> RuleResult:
    line = rule.get("line")
    return RuleResult(
        output=str(rule["output"]),
        check=str(rule["check"]),
        params=dict(rule["params"]),
        passed=bool(rule["passed"]),
        pass_rate=float(rule["pass_rate"]),
        min_pass_rate=float(rule.get("min_pass_rate", 1.0)),
        worst_case=rule.get("worst_case"),
        measured=rule.get("measured"),
        threshold=rule.get("threshold"),
        would_pass_at=rule.get("would_pass_at"),
        direction=str(rule.get("direction", "max")),
        cases=dict(rule.get("cases") or {}),
        note=rule.get("note"),
        line=line if isinstance(line, int) else None,
        case_notes=dict(rule.get("case_notes") or {}),
        compared=bool(rule.get("compared", True)),
    )


def for_runtime(label: str, finding: F.Finding) -> F.Finding:
    """A finding of a comparison run in another runtime: its message and details name that runtime."""
    return F.Finding(
        finding.id, finding.severity, f"[{label}] {finding.message}", finding.file, finding.line,
        {**finding.details, "runtime": label},
    )  # fmt: skip
