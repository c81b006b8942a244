"""The acceptance rules: one block per rule kind (`check: allclose`, `check: topk`, ...), holding its parameters'
types, bounds, defaults and words.

Baseline rules, variant rules and drift rules are all `Rule`. `compare.metrics.CHECKS` holds what a kind does
with its parameters (its figure, threshold and wording) and takes the parameters themselves from here: adding a
rule kind is one block below, listed in `AnyRule`, and one entry there (tests/compare/test_rule_registry.py holds
the two together).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from checker.manifest.model.answers import ANSWER_RULES, AnswerRule, RuleAnswer
from checker.manifest.model.core import Block, S, Tagged
from checker.manifest.model.generate import hints, members, merged, unwrap

MAX_RULES = 256  # rules of one graph against one side
MAX_TAGS = 32
MAX_TAG = 64  # a tag's length
MAX_FIGURE = 1e30  # a tolerance or a largest difference
MAX_K = 2**20
MAX_AXIS = 64

Tag = Annotated[str, S(min_length=1, max_length=MAX_TAG)]
Axis = Annotated[int, S("Axis", "The class axis (default -1).", minimum=-MAX_AXIS, maximum=MAX_AXIS)]
BatchAxis = Annotated[
    int,
    S(
        "Batch axis",
        "The axis whose positions are the items judged one by one (default 0); 1 for a CTC recogniser's [T, N, C] "
        "output.",
        minimum=-MAX_FIGURE,
        maximum=2**24,
    ),
]
Share = Annotated[float, S(minimum=0, maximum=1)]
Apply = Literal["none", "softmax", "sigmoid"]


RuleOutput = Annotated[str, S("Output", "The graph output the rule judges.", min_length=1)]
PassRate = Annotated[
    float, S("Minimum pass rate", "The share of cases that must pass (default 1.0).", minimum=0, maximum=1)
]
RuleTags = Annotated[
    list[Tag] | None,
    S(
        "Tags",
        "Judge only the cases carrying any of these tags (a slice), each slice on its own; none: every case.",
        min_items=1,
        max_items=MAX_TAGS,
    ),
]


class RuleHead(Block):
    """What the rule union states beside `check`, for every kind: a rule on a graph output names `output:`, a
    rule on an answer `answer:` (docs/answers.md); each kind's branch requires its own."""

    WORDS = S(
        "Rule",
        "An acceptance rule on a graph output (`output:`) or on an answer (`answer:`, docs/answers.md): evaluated "
        "on every case; passes when the share of passing cases reaches min_pass_rate.",
    )

    output: RuleOutput | None = None
    answer: RuleAnswer | None = None
    min_pass_rate: PassRate | None = None
    tags: RuleTags = None


class RuleBase(Block):
    """What every rule states besides its kind's parameters: the output it judges, the share of cases that must
    pass, and the slice of cases it judges. Its kind is its `check` (the block's TAG)."""

    WORDS = S(
        "Rule",
        "An acceptance rule: evaluated on every case; passes when the share of passing cases reaches min_pass_rate.",
    )

    output: RuleOutput
    min_pass_rate: PassRate = 1.0
    tags: RuleTags = None

    @property
    def check(self) -> str:
        """The rule's kind, as the manifest's `check:` names it."""
        return self.TAG


class TaskRule(RuleBase):
    """A rule on the application's answer (each case's `label`) over the whole slice: its figure is the slice's,
    so it takes no `min_pass_rate`."""

    EXTRA = {"not": {"required": ["min_pass_rate"]}}


class AllClose(RuleBase):
    TAG = "allclose"
    atol: Annotated[float, S("Absolute tolerance", "The rule's `atol` parameter.", minimum=0, maximum=MAX_FIGURE)] = (
        1e-5
    )
    rtol: Annotated[float, S("Relative tolerance", "The rule's `rtol` parameter.", minimum=0, maximum=MAX_FIGURE)] = (
        1e-3
    )


class MaxAbs(RuleBase):
    TAG = "max_abs"
    max: Annotated[float, S("Maximum", "The rule's `max` parameter.", minimum=0, maximum=MAX_FIGURE)]


class MeanAbs(RuleBase):
    TAG = "mean_abs"
    max: Annotated[float, S("Maximum", "The rule's `max` parameter.", minimum=0, maximum=MAX_FIGURE)]


class Cosine(RuleBase):
    TAG = "cosine"
    min: Annotated[float, S("Minimum cosine similarity", "The rule's `min` parameter.", minimum=-1, maximum=1)] = 0.999
    batch_axis: BatchAxis | None = None


class Sqnr(RuleBase):
    TAG = "sqnr"
    min_db: Annotated[float, S("Minimum SQNR in dB", "The rule's `min_db` parameter.", minimum=-1000, maximum=1000)] = (
        30.0
    )


class TopK(RuleBase):
    TAG = "topk"
    k: Annotated[int, S("k", "How many top entries must agree.", minimum=1, maximum=MAX_K)] = 1
    axis: Axis = -1
    min_agreement: Annotated[Share, S("Minimum agreement", "The rule's `min_agreement` parameter.")] = 1.0
    batch_axis: BatchAxis | None = None


class ScoreDrift(RuleBase):
    TAG = "score_drift"
    max: Annotated[
        float,
        S("Maximum change of the expected top score", "The rule's `max` parameter.", minimum=0, maximum=MAX_FIGURE),
    ]
    axis: Axis = -1
    apply: Annotated[Apply, S("Apply", "Applied to the scores before comparing: none | softmax | sigmoid.")] = "none"
    batch_axis: BatchAxis | None = None


TopOfK = Annotated[int, S("k", "The label must be among the k highest entries (default 1).", minimum=1, maximum=MAX_K)]


class Accuracy(TaskRule):
    TAG = "accuracy"
    k: TopOfK = 1
    axis: Axis = -1
    min: Annotated[
        Share,
        S("Minimum accuracy", "The share of labelled items whose label is among the top k, over the rule's cases."),
    ]


class AccuracyDrop(TaskRule):
    TAG = "accuracy_drop"
    k: TopOfK = 1
    axis: Axis = -1
    max: Annotated[
        Share,
        S(
            "Maximum drop",
            "The largest loss of top-k accuracy against the other side (0.01: one point; with relative, a share of "
            "its accuracy).",
        ),
    ]
    relative: Annotated[
        bool,
        S("Relative", "The drop as a share of the other side's accuracy (default false: in points of accuracy)."),
    ] = False


class Exact(RuleBase):
    TAG = "exact"


# Every rule kind on a graph output, in the order the schema lists them; `check:` picks one. The rules on
# answers (answers.ANSWER_RULES) follow them in the one union.
AnyRule = AllClose | MaxAbs | MeanAbs | Cosine | Sqnr | TopK | ScoreDrift | Accuracy | AccuracyDrop | Exact
RULE_KINDS: tuple[type[RuleBase], ...] = typing.get_args(AnyRule)
EVERY_CHECK = tuple(kind.TAG for kind in (*RULE_KINDS, *ANSWER_RULES))
Rule = Annotated[
    AnyRule | AnswerRule,
    Tagged("check", S("Check", " | ".join(EVERY_CHECK)), shared=RuleHead),
    RuleHead.WORDS,
]
Rules = Annotated[list[Rule], S(max_items=MAX_RULES)]


@dataclass(frozen=True)
class Param:
    """One parameter of a rule kind as its block states it: `compare.metrics.Check` takes its defaults and
    required names from these, and `compare.rules.parse_rule` checks a rule written by hand against them."""

    name: str
    type: type  # int, float, bool or str
    required: bool
    default: Any  # None: taken only when stated (absent from the rule's parameters otherwise)
    choices: tuple[Any, ...] | None = None  # the values an enum allows
    minimum: float | None = None
    maximum: float | None = None

    BASE: ClassVar[tuple[str, ...]] = tuple(f.name for f in RuleBase.manifest_fields())


_PARAMETERS: dict[type, dict[str, Param]] = {}


def parameters(kind: type[RuleBase]) -> dict[str, Param]:
    """A rule kind's own parameters (not those every rule shares), in the order its block states them."""
    if kind not in _PARAMETERS:
        _PARAMETERS[kind] = {f.name: param(kind, f.name) for f in kind.manifest_fields() if f.name not in Param.BASE}
    return _PARAMETERS[kind]


def param(kind: type[RuleBase], name: str) -> Param:
    """One field of a rule kind, shared ones (`min_pass_rate`) included: its type, default and bounds."""
    field = next(f for f in kind.manifest_fields() if f.name == name)
    tp: Any = hints(kind)[name]
    words: list[S] = []
    while True:  # `Named | None`: the named type, with the field's words over its own
        tp, meta = unwrap(tp)
        words = [*(m for m in meta if isinstance(m, S)), *words]
        options = members(tp)
        if len(options) != 1 or typing.get_origin(options[0]) is not typing.Annotated:
            break
        tp = options[0]
    bare = options[0]
    choices = typing.get_args(bare) if typing.get_origin(bare) is Literal else None
    said = merged(words)
    required = field.default is dataclasses.MISSING
    default = None if required else field.default
    kind_of = type(choices[0]) if choices else typing.get_origin(bare) or bare
    return Param(name, kind_of, required, default, choices, said.minimum, said.maximum)


def rule_kind(check: str) -> type[RuleBase] | None:
    """The block a `check:` names, or None."""
    return _BY_CHECK.get(check)


_BY_CHECK = {kind.TAG: kind for kind in RULE_KINDS}
