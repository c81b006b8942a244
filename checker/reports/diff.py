"""What changed between two reports of the same bundles: the base branch's and this one's.

Both reports are typed (`Report`; a base report read from a file went through `reports.files.load_report`).
Bundles are matched by path, then by release name; rules by identity (graph, side, output, check and slice,
not their parameters: an edited threshold is one rule whose `edits` say loosened or tightened); findings by id,
file and message (not line: an edit above a field moves it); cases by name. The result is the report's
`changes` (`Changes`, written as schemas/report.schema.json describes it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from checker.compare.metrics import CHECKS, RULE_LOOSER
from checker.findings import PIECES, RULES_LOOSENED, Finding, Severity
from checker.manifest.pieces import RULES, VARIANT
from checker.manifest.strength import PRESENT, weaker
from checker.reports.model import BundleReport, Comparison, Report, RuleResult
from checker.reports.parts.changes import (
    PASSES_ONLY,
    Base,
    BundleChange,
    Cases,
    Changes,
    Compared,
    Edit,
    Findings,
    FoundChange,
    RuleChange,
    Verdicts,
)
from checker.reports.parts.settings import DeclaredSetting
from checker.reports.parts.values import JsonValue

MAX_LISTED = 200  # findings or cases listed per kind and bundle; the rest are counted
PRINT_DIGITS = 6  # the most significant digits any rendering prints a figure with (a cosine's wording)


def diff(base: Report, head: Report) -> Changes:
    """The `changes` of `head` against `base`, one entry per bundle of either, head's order first."""
    matched = _match(base.bundles, head.bundles)
    entries = [_bundle(base, matched.get(i), head, b) for i, b in enumerate(head.bundles)]
    used = {id(b) for b in matched.values()}
    entries += [_removed(b, base.strict) for b in base.bundles if id(b) not in used]
    commit = base.context.get("head_sha")
    version = base.checker_version or None  # a base with no bundle (none existed there) names no checker
    found = Base(version, base.status, base.created_at, commit if isinstance(commit, str) else None)
    return Changes(found, entries)


def _match(base: list[BundleReport], head: list[BundleReport]) -> dict[int, BundleReport]:
    """head index -> its base bundle: same path first, then same release name among the rest."""
    found: dict[int, BundleReport] = {}
    free = list(base)
    for key in ("path", "name"):
        for i, bundle in enumerate(head):
            value = bundle.path if key == "path" else bundle.name
            if i in found or value is None:
                continue
            twin = next((b for b in free if (b.path if key == "path" else b.name) == value), None)
            if twin is not None:
                found[i] = twin
                free.remove(twin)
    return found


def _bundle(base_report: Report, base: BundleReport | None, head_report: Report, head: BundleReport) -> BundleChange:
    was = base.status(base_report.strict) if base is not None else None
    entry = BundleChange(head.path, head.name, "new", Verdicts(was, head.status(head_report.strict)))
    if base is None:
        return entry
    paired = _rules(base, head)
    rules = [change for change, _, _ in paired]
    cases = _cases(base, head)
    passes_only = [said for change, was, now in paired if (said := _passes_only(change, was, now))]
    settings = setting_loosenings(base, head)
    passes_only += settings_passes_only(base, head, settings)
    loosened = passes_only + loosenings(rules, cases) + [said for said, _, _ in settings]
    entry.compared = Compared(_pieces(base, head), rules, _findings(base, head), cases, loosened)
    entry.state = "changed" if _changed(entry, entry.compared) else "unchanged"
    return entry


def _removed(base: BundleReport, strict: bool) -> BundleChange:
    return BundleChange(base.path, base.name, "removed", Verdicts(base.status(strict), None))


def _changed(entry: BundleChange, compared: Compared) -> bool:
    return bool(
        entry.status.base != entry.status.head
        or compared.pieces
        or any(r.moved or r.crossed or r.rule for r in compared.rules)
        or compared.findings.new
        or compared.findings.resolved
        or compared.cases.added
        or compared.cases.removed
    )


# ----- pieces


def _pieces(base: BundleReport, head: BundleReport) -> list[str]:
    """The pieces (and `rules`) whose digest differs; a report without piece digests (an older checker's)
    tells nothing. An older checker counted the rules in `graph` and `comparison_inputs`: against its report
    those two and `rules` are not compared, rather than credit a rule's edit to the graph."""
    old, new = base.piece_digests, head.piece_digests
    if not (old and new):
        return []
    variants = sorted({p for p in (*old, *new) if p.startswith(VARIANT)})
    names: tuple[str, ...] = (*PIECES, RULES, *variants)
    if (RULES in old) != (RULES in new):
        names = tuple(p for p in names if p not in ("graph", "comparison_inputs", RULES))
    if any(p.startswith(VARIANT) for p in old) != any(p.startswith(VARIANT) for p in new):
        # An older checker counted the variants in `graph`: against its report neither is compared.
        names = tuple(p for p in names if p != "graph" and not p.startswith(VARIANT))
    return [p for p in names if (p in old or p in new) and old.get(p) != new.get(p)]


# ----- rules


RuleKey = tuple[str, str, str, str, str]
RuleItem = tuple[RuleKey, tuple[Comparison, RuleResult]]


Paired = tuple[RuleChange, RuleResult | None, RuleResult | None]  # the change, the base's rule, the head's


def _rules(base: BundleReport, head: BundleReport) -> list[Paired]:
    """Rules paired by identity (graph, side, output, check, slice), so an edited parameter is one rule that
    changed, not one removed and one added. Among rules of one identity, a rule whose parameters are unchanged
    pairs with its own first (two rules merely written in another order changed nothing); the rest pair in the
    order they are written."""
    heads, bases = _rule_items(head), _rule_items(base)
    paired: dict[int, int] = {}
    for exact in (True, False):
        taken = set(paired.values())
        for h, (key, (_, rule)) in enumerate(heads):
            if h in paired:
                continue
            for b, (other, (_, was)) in enumerate(bases):
                if b not in taken and other == key and (not exact or was.params == rule.params):
                    paired[h] = b
                    taken.add(b)
                    break
    out: list[Paired] = [
        (_rule(comparison, was, rule), was, rule)
        for h, (_, (comparison, rule)) in enumerate(heads)
        for was in [bases[paired[h]][1][1] if h in paired else None]
    ]
    used = set(paired.values())
    out += [
        (_rule(comparison, rule, None), rule, None) for b, (_, (comparison, rule)) in enumerate(bases) if b not in used
    ]
    return out


def _rule_items(bundle: BundleReport) -> list[RuleItem]:
    items = []
    for comparison in bundle.comparisons:
        for rule in comparison.rules:
            slice_ = json.dumps(sorted(rule.tags))
            identity = (comparison.graph, comparison.against, rule.output, rule.check, slice_)
            items.append((identity, (comparison, rule)))
    return items


def _rule(comparison: Comparison, old: RuleResult | None, new: RuleResult | None) -> RuleChange:
    either = new if new is not None else old
    assert either is not None
    before = _finite(old.measured) if old else None
    after = _finite(new.measured) if new else None
    was, now = (old.passed if old else None), (new.passed if new else None)
    crossed = None
    if was is True and now is False:
        crossed = "now fails"
    elif was is False and now is True:
        crossed = "now passes"
    delta = (after - before) if before is not None and after is not None else None
    out = RuleChange(
        graph=comparison.graph,
        against=comparison.against,
        output=either.output,
        check=either.check,
        base=before,
        head=after,
        delta=delta,
        crossed=crossed,
        params=dict(either.params),
        direction="min" if either.direction == "min" else "max",
        threshold=_finite(either.threshold),
        base_threshold=_finite(old.threshold) if old else None,
        moved=delta is not None and not same_figure(before, after),
        base_passed=was,
        head_passed=now,
        tags=list(either.tags),
        line=either.line,
    )
    if old is None or new is None:
        out.rule = "added" if old is None else "removed"
        out.effect = "tightened" if old is None else "loosened"
        return out
    edits = edited_params(either.check, old, new)
    if edits:
        out.rule, out.edits, out.effect = "edited", edits, _overall({e.effect for e in edits})
    return out


def same_figure(a: float | None, b: float | None) -> bool:
    """Equal as printed: a change below the figure's printing precision (cosine 0.99990368 against
    0.99990368 - 1.3e-10) is floating-point jitter, not a change since the base."""
    if a is None or b is None:
        return a is b
    return a == b or f"{a:.{PRINT_DIGITS}g}" == f"{b:.{PRINT_DIGITS}g}"


def edited_params(check: str, old: RuleResult, new: RuleResult) -> list[Edit]:
    """Each parameter whose value differs, with whether the change made the rule easier to pass.

    The way a parameter loosens is declared with its rule kind (compare.metrics.Check.looser); a kind or
    parameter the registry does not know (a report of another checker) is "changed", never a guess.
    """
    kind = CHECKS.get(check)
    ways = {**(kind.looser if kind else {}), **RULE_LOOSER}
    was: dict[str, JsonValue] = {**old.params, "min_pass_rate": old.min_pass_rate}
    now: dict[str, JsonValue] = {**new.params, "min_pass_rate": new.min_pass_rate}
    edits = []
    for name in [*was, *(k for k in now if k not in was)]:
        before, after = was.get(name), now.get(name)
        if before == after:
            continue
        edits.append(Edit(name, _plain(before), _plain(after), _effect(ways.get(name), before, after)))
    return edits


def _effect(way: str | None, before: object, after: object) -> str:
    old, new = _finite(before), _finite(after)
    if way is None or old is None or new is None:
        return "changed"
    looser = new > old if way == "higher" else new < old
    return "loosened" if looser else "tightened"


def _overall(effects: set[str]) -> str:
    if "loosened" in effects:
        return "loosened"  # a rule loosened in one parameter is looser, whatever else tightened
    return "tightened" if effects == {"tightened"} else "changed"


def _plain(value: JsonValue) -> JsonValue:
    """A parameter's value as one JSON scalar (a report from a file may hold anything)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


# ----- loosening


def loosenings(rules: list[RuleChange], cases: Cases) -> list[str]:
    """Every way the head's rules got easier to pass than the base's, one sentence each, for every renderer:
    an edited parameter (`int8 logits score_drift max 0.005 → 0.05 (loosened)`), a removed rule, a removed case
    (fewer cases to pass); a renderer links each to its rule's line (`RuleChange.line`)."""
    out = []
    for rule in rules:
        if rule.rule == "removed":
            out.append(f"{rule.name} removed (loosened)")
            continue
        for edit in rule.edits:
            if edit.effect == "loosened":
                out.append(f"{rule.name} {edit.param} {_value(edit.base)} → {_value(edit.head)} (loosened)")
    removed = cases.removed
    if removed:
        shown = ", ".join(removed[:5]) + (f" and {len(removed) - 5} more" if len(removed) > 5 else "")
        out.append(f"{'case' if len(removed) == 1 else 'cases'} {shown} removed (loosened)")
    return out


def _passes_only(rule: RuleChange, old: RuleResult | None, new: RuleResult | None) -> str | None:
    """A loosened rule the head passes and the base's rule would fail: the pass rests on the loosening. The
    head's per-case figures are judged by the base's threshold and `min_pass_rate` (a lowered pass rate is a
    loosening as a raised threshold is); a task rule, judged on its counts, by its figure alone."""
    if rule.effect != "loosened" or rule.rule != "edited" or rule.head_passed is not True:
        return None
    if old is None or new is None:
        return None
    head, was = rule.head, rule.base_threshold
    if new.statistics is None and new.cases and was is not None:
        passing = sum(1 for f in new.cases.values() if f is not None and _within(f, was, rule.direction))
        if passing / len(new.cases) >= old.min_pass_rate - 1e-12:
            return None
        if old.min_pass_rate >= 1 and head is not None:
            return (
                f"{PASSES_ONLY} {rule.name} was loosened: the head's {head:.4g} fails the base's rule "
                f"({rule.direction} {_value(was)})"
            )
        return (
            f"{PASSES_ONLY} {rule.name} was loosened: {passing} of {len(new.cases)} cases pass the base's "
            f"rule ({rule.direction} {_value(was)}), which needs {_rate(old.min_pass_rate)} of them"
        )
    if head is None or was is None or _within(head, was, rule.direction):
        return None
    return (
        f"{PASSES_ONLY} {rule.name} was loosened: the head's {head:.4g} fails the base's rule "
        f"({rule.direction} {_value(was)})"
    )


def _within(figure: float, threshold: float, direction: str) -> bool:
    return figure <= threshold if direction == "max" else figure >= threshold


def _rate(rate: float) -> str:
    return f"{rate:.0%}" if rate * 100 == round(rate * 100) else f"{rate:.4g}"


# What each weakened setting's kind switches off: a base error of these ids gone at the head rests on it.
_SWITCHED_OFF = {
    "tolerance": ("inputs.fidelity",),
    "raw": ("inputs.fidelity", "inputs.range"),
    "label": ("comparison.rule", "labels.order"),
    "tag": ("comparison.rule",),
    "runtime.platforms": (
        "platform.kernel",
        "platform.divergence",
        "platform.fallback",
        "comparison.sentinel",
        "comparison.envelope",
        "comparison.rule",
    ),
    "runtime.optimization_levels": ("runtime.opt_level",),
    "runtime.execution_providers": ("runtime.fallback", "runtime.provider", "runtime.usability"),
    "runtime.fallback": ("runtime.fallback", "platform.fallback"),
    "expect": ("variant.no_gain",),
}


def settings_passes_only(
    base: BundleReport, head: BundleReport, settings: list[tuple[str, int | None, str]]
) -> list[str]:
    """A head that passes where the base failed, with a base error gone that the weakened setting switched off
    (a fidelity error gone with the `raw:` inputs, a platform's error gone with the platform): the pass rests
    on the loosening, so it is said as "passes only because"."""
    if head.status() != "pass" or base.status() != "fail":
        return []
    now = {(f.id, f.message) for f in head.findings}
    gone = [f for f in base.findings if f.severity is Severity.ERROR and (f.id, f.message) not in now]
    out = []
    for said, line, kind in settings:
        lost = [f for f in gone if f.id in _SWITCHED_OFF.get(kind, ())]
        if lost:
            # A removal is named by its kind alone (its list of places is the loosening's own sentence).
            what = said if line is not None else f"{_WHAT.get(kind, kind)} removed"
            errors = f"error and {len(lost) - 1} more are" if len(lost) > 1 else "error is"
            out.append(f"{PASSES_ONLY} {what}: the base's {lost[0].id} {errors} gone with it")
    return out


def setting_loosenings(base: BundleReport, head: BundleReport) -> list[tuple[str, int | None, str]]:
    """Every manifest setting beside the rules (manifest.strength) that the head weakens, one sentence each with
    where it is: the head's line for a value made weaker, the base's for a setting removed. Many removals of one
    kind (every `raw:` deleted) are one sentence that counts them."""
    old = {s.key: s for s in base.settings}
    new = {s.key: s for s in head.settings}
    out: list[tuple[str, int | None, str]] = []  # the sentence, the head's line, the setting's kind
    removed: dict[str, list[DeclaredSetting]] = {}
    for key, was in old.items():
        now = new.get(key)
        if now is None:
            if was.way == PRESENT:
                removed.setdefault(_kind(key), []).append(was)
            continue
        if weaker(was.way, was.value, now.value):
            said = f"{key} {_value(was.value)} → {_value(now.value)} (loosened{_at(now.line)})"
            out.append((said, now.line, _weakened_kind(key)))
    for kind, gone in removed.items():
        shown = ", ".join(_named(s.key) for s in gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
        first = gone[0].line
        out.append((f"{_WHAT.get(kind, kind)} removed: {shown} (loosened{_at(first, 'the base')})", None, kind))
    return out


def _weakened_kind(key: str) -> str:
    """A value's kind for _SWITCHED_OFF: "inputs.x.tolerance" -> tolerance, "variant v expect.smaller" -> expect."""
    last = key.split(" ")[-1]
    if key.startswith("runtime."):
        return key.split(" ")[0]
    return "expect" if last.startswith("expect.") else last.rsplit(".", 1)[-1]


# A removed setting's kind (its key's words without the case's name) and what removing it switches off.
_WHAT = {
    "raw": "raw inputs (input fidelity no longer checks them)",
    "label": "case labels (the task rules judge fewer cases)",
    "tag": "case tags (the tagged rules' slices are narrower)",
    "runtime.platforms": "platforms (the release is no longer judged there)",
    "runtime.optimization_levels": "optimization levels (no longer judged)",
    "runtime.execution_providers": "execution providers (no longer judged)",
}


def _kind(key: str) -> str:
    words = key.split(" ")
    if words[0] == "case" and len(words) >= 3:
        return words[2]
    return words[0]


def _named(key: str) -> str:
    words = key.split(" ")
    if words[0] == "case" and len(words) >= 3:
        return f"case {words[1]}" + (f" {' '.join(words[3:])}" if len(words) > 3 else "")
    return " ".join(words[1:]) or key


def _at(line: int | None, where: str = "") -> str:
    if line is None:
        return ""
    return f", {where} line {line}" if where else f", line {line}"


def _value(value: JsonValue) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return json.dumps(value) if not isinstance(value, str) else value


# ----- findings and cases


def _findings(base: BundleReport, head: BundleReport) -> Findings:
    old = {_finding_key(f): f for f in base.findings}
    new = {_finding_key(f): f for f in head.findings}
    added = [_found(f) for k, f in new.items() if k not in old]
    resolved = [_found(f) for k, f in old.items() if k not in new]
    return Findings(added[:MAX_LISTED], resolved[:MAX_LISTED])


def _finding_key(finding: Finding) -> tuple[str, str, str]:
    return finding.id, str(finding.file), finding.message


def _found(finding: Finding) -> FoundChange:
    return FoundChange(finding.id, finding.severity.value, finding.message, finding.file, finding.line)


def _cases(base: BundleReport, head: BundleReport) -> Cases:
    old, new = _case_names(base), _case_names(head)
    return Cases([c for c in new if c not in old][:MAX_LISTED], [c for c in old if c not in new][:MAX_LISTED])


def _case_names(bundle: BundleReport) -> list[str]:
    """Every case a rule measured, in first-seen order."""
    seen: dict[str, None] = {}
    for comparison in bundle.comparisons:
        for rule in comparison.rules:
            seen.update(dict.fromkeys(rule.cases))
    return list(seen)


# ----- small helpers


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def loosened_finding(entry: BundleChange, manifest: str | None) -> Finding | None:
    """With --fail-on-loosened (`fail-on: loosened`): one error for a bundle whose checks (its rules, or a
    setting beside them: manifest.strength) were loosened since the base, so that loosening a check to get
    green cannot pass unseen: a reviewer must accept the red check."""
    said = entry.loosened
    if not said or entry.compared is None:
        return None
    lines = [r.line for r in entry.compared.rules if r.effect == "loosened" and r.line is not None]
    shown = "; ".join(said[:5]) + (f"; and {len(said) - 5} more" if len(said) > 5 else "")
    return Finding(
        RULES_LOOSENED,
        Severity.ERROR,
        f"checks were loosened since the base: {shown}; --fail-on-loosened fails the check while they stay loosened",
        file=manifest,
        line=min(lines) if lines else None,
    )


def fail_on_loosened(report: Report) -> None:
    """A `rules.loosened` error on each bundle whose rules its `changes` say were loosened since the base, its
    verdict (and the change entry's head verdict) failing with it (`--fail-on-loosened`, the action's
    `fail-on: loosened`)."""
    entries: Mapping[str, BundleChange] = report.changes.by_path() if report.changes is not None else {}
    for bundle in report.bundles:
        entry = entries.get(bundle.path)
        if entry is None or (found := loosened_finding(entry, bundle.manifest_file)) is None:
            continue
        bundle.add([found])
        entry.status.head = "fail"
