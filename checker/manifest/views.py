"""Views of the typed manifest: its rules, variants and runtime walked once, each part that may be absent read as
empty.

The stages read these rather than each deciding what an absent list means. Each rule is its typed block
(manifest.model.rules), whose `at` is its place in the manifest.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from checker.manifest.model.answers import AnswerRule, AnyAnswer, Step
from checker.manifest.model.comparison import Case, Comparison, DimSizes
from checker.manifest.model.core import Keys
from checker.manifest.model.inputs import Input
from checker.manifest.model.root import Spec
from checker.manifest.model.rules import RuleBase
from checker.manifest.model.runtime import Platform, Runtime
from checker.manifest.model.tensors import Output
from checker.manifest.model.variants import Variant


@dataclass(frozen=True)
class RulePlace:
    """One rule, and what it judges: a graph output (RuleBase) or an answer (AnswerRule)."""

    rule: RuleBase | AnswerRule
    graph: str  # "baseline" or the variant's name
    against: str  # "reference" (expected outputs) or "baseline" (the baseline's own outputs: drift rules)

    @property
    def keys(self) -> Keys:
        """Where it stands: ("comparison", "rules", 0) or ("variants", 1, "drift_rules", 0)."""
        return self.rule.at


def inputs(spec: Spec) -> list[Input]:
    """`inputs`: the graph inputs the manifest declares."""
    return list(spec.inputs or [])


def outputs(spec: Spec) -> list[Output]:
    """`outputs`: the graph outputs the manifest declares."""
    return list(spec.outputs or [])


def output_rules(rules: Sequence[RuleBase | AnswerRule] | None) -> list[RuleBase]:
    """The rules on graph outputs among `rules` (compare.answering judges the rules on answers)."""
    return [rule for rule in rules or [] if isinstance(rule, RuleBase)]


def baseline_rules(spec: Spec) -> list[RuleBase]:
    """`comparison.rules` on graph outputs: the baseline's rules against the reference outputs."""
    return output_rules(spec.comparison.rules) if spec.comparison is not None else []


def variants(spec: Spec) -> list[Variant]:
    return list(spec.variants or [])


def drift_rules(variant: Variant) -> list[RuleBase]:
    """A variant's rules on graph outputs against the baseline's own outputs."""
    return output_rules(variant.drift_rules)


def variant(spec: Spec, name: str) -> Variant | None:
    """The variant of that name, or None."""
    return next((v for v in variants(spec) if v.name == name), None)


def reference_rules(spec: Spec) -> dict[str, list[RuleBase]]:
    """Each graph's rules against the reference outputs: the baseline's, then each variant's."""
    out: dict[str, list[RuleBase]] = {"baseline": baseline_rules(spec)}
    for v in variants(spec):
        out[v.name] = output_rules(v.rules)
    return out


def rules(spec: Spec) -> Iterator[RulePlace]:
    """Every rule, on an output or an answer: the baseline's, then each variant's rules and drift rules, in
    manifest order."""
    for rule in (spec.comparison.rules or []) if spec.comparison is not None else []:
        yield RulePlace(rule, "baseline", "reference")
    for v in variants(spec):
        yield from (RulePlace(r, v.name, "reference") for r in v.rules)
        yield from (RulePlace(r, v.name, "baseline") for r in v.drift_rules or [])


def variant_rules(variant: Variant) -> list[RuleBase | AnswerRule]:
    """A variant's every rule: against the reference outputs, then against the baseline's (drift rules)."""
    return [*variant.rules, *(variant.drift_rules or [])]


def rule_tags(rule: RuleBase | AnswerRule) -> list[str]:
    """A rule's `tags`: the cases it judges are those with one of them (none: every case)."""
    return list(rule.tags or [])


def answer_steps(answer: AnyAnswer) -> list[Step]:
    """An answer's tensor steps, in order (none: the graph output as it is)."""
    return list(answer.steps or [])


def case_tags(case: Case) -> list[str]:
    return list(case.tags or [])


def case_raw(case: Case) -> dict[str, str]:
    """A case's `raw`: input name -> the application input its tensor was made from."""
    return dict(case.raw or {})


def case_answers(case: Case) -> dict[str, str]:
    """A case's `expected_answers`: answer name -> the file of its expected answer."""
    return dict(case.expected_answers or {})


def shape(entry: Input | Output) -> list[int | str]:
    """A declared tensor's `shape` (none declared: no dim is fixed or named)."""
    return list(entry.shape or [])


def envelope(comparison: Comparison | None) -> dict[str, DimSizes]:
    """`comparison.envelope`: dim name -> its sizes (empty when none is declared)."""
    return dict(comparison.envelope or {}) if comparison is not None else {}


def answer_sources(spec: Spec) -> dict[str, list[str]]:
    """Each declared answer's name -> the graph outputs it reads (`from`)."""
    return {a.name: [a.from_] if isinstance(a.from_, str) else list(a.from_) for a in spec.answers or []}


def cases(spec: Spec) -> list[Case]:
    """`comparison.cases`, as the manifest states them."""
    return list(spec.comparison.cases or []) if spec.comparison is not None else []


def providers(runtime: Runtime | None) -> list[str]:
    """`runtime.execution_providers`, in preference order."""
    return list(runtime.execution_providers or []) if runtime is not None else []


def session_options(runtime: Runtime | None) -> dict[str, Any]:
    """`runtime.session_options` as onnxruntime's option names and values: those the manifest states."""
    stated = runtime.session_options if runtime is not None else None
    if stated is None:
        return {}
    values = ((f.name, getattr(stated, f.name)) for f in stated.manifest_fields())
    return {name: value for name, value in values if value is not None}


def optimization_levels(runtime: Runtime | None) -> list[str]:
    """`runtime.optimization_levels`: every level the application may open its sessions at."""
    return list(runtime.optimization_levels or []) if runtime is not None else []


def platforms(runtime: Runtime | None) -> list[Platform]:
    """`runtime.platforms`: the CPU classes the release must hold on."""
    return list(runtime.platforms or []) if runtime is not None else []


def streamed_inputs(spec: Spec) -> set[str]:
    """The inputs a streaming application feeds one chunk at a time (`preprocessing.stream` of an audio input):
    a case that feeds one stores every tensor with one entry per call on a leading axis."""
    return {e.name for e in inputs(spec) if getattr(e.preprocessing, "stream", None) is not None}
