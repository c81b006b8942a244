"""What a judged rule or comparison carries beside its figures: a task rule's counts and confidence interval
(compare.task), and a failed variant's diagnosis (compare.divergence)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checker.reports.parts.values import integer, number, number_or, strings, text


@dataclass
class Interval:
    """A 95 % confidence interval and how it was computed."""

    low: float
    high: float
    method: str
    confidence: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "method": self.method, "confidence": self.confidence}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Interval:
        return cls(
            low=number_or(data["low"], 0.0),
            high=number_or(data["high"], 0.0),
            method=str(data.get("method", "")),
            confidence=float(data.get("confidence", 0.95)),
        )


@dataclass
class TaskStatistics:
    """A task rule's counts over its slice of cases and the interval of its figure; a drop (accuracy_drop) also
    counts the other side's hits, the items lost and gained, and McNemar's p-value."""

    items: int
    hits: int
    interval: Interval
    other_hits: int | None = None
    lost: int | None = None
    gained: int | None = None
    mcnemar_p: float | None = None

    @property
    def paired(self) -> bool:
        """Judged against the other side item by item (a drop), not against the labels alone."""
        return self.lost is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"items": self.items, "hits": self.hits}
        if self.paired:
            out.update(other_hits=self.other_hits, lost=self.lost, gained=self.gained, mcnemar_p=self.mcnemar_p)
        out["interval"] = self.interval.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskStatistics:
        return cls(
            items=int(data["items"]),
            hits=int(data["hits"]),
            interval=Interval.from_dict(data["interval"]),
            other_hits=integer(data.get("other_hits")),
            lost=integer(data.get("lost")),
            gained=integer(data.get("gained")),
            mcnemar_p=number(data.get("mcnemar_p")),
        )


@dataclass
class TensorScore:
    """One baseline tensor and its variant counterpart, scored by SQNR (a drop: worse than its node's inputs)."""

    tensor: str
    variant_tensor: str
    node: str | None  # the producing baseline node; None for a graph input or an unnamed node
    op_type: str
    exclude: list[str]  # baseline node names that keep it in float when left unquantized
    sqnr_db: float
    drop_db: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "tensor": self.tensor,
            "variant_tensor": self.variant_tensor,
            "node": self.node,
            "op_type": self.op_type,
            "exclude": self.exclude,
            "sqnr_db": self.sqnr_db,
            "drop_db": self.drop_db,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TensorScore:
        return cls(
            tensor=str(data.get("tensor", "")),
            variant_tensor=str(data.get("variant_tensor", "")),
            node=text(data.get("node")),
            op_type=str(data.get("op_type", "")),
            exclude=strings(data.get("exclude")),
            sqnr_db=number_or(data.get("sqnr_db"), 0.0),
            drop_db=number_or(data.get("drop_db"), 0.0),
        )


def _score(value: object) -> TensorScore | None:
    return TensorScore.from_dict(value) if isinstance(value, Mapping) else None


@dataclass
class Diagnosis:
    """Where a failing variant's intermediate tensors first and most leave the baseline's, on one case."""

    variant: str
    case: str
    min_db: float  # below it a tensor counts as diverging
    compared: int  # tensors matched and scored
    unmatched: int
    groups: int  # runs it took, tensors being exposed in bounded groups
    first: TensorScore | None  # the first tensor below min_db, in the baseline's order
    worst: TensorScore | None
    largest_drops: list[TensorScore] = field(default_factory=list)
    nodes_to_exclude: list[str] = field(default_factory=list)
    summary: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "case": self.case,
            "min_db": self.min_db,
            "compared": self.compared,
            "unmatched": self.unmatched,
            "groups": self.groups,
            "first": self.first.to_dict() if self.first else None,
            "worst": self.worst.to_dict() if self.worst else None,
            "largest_drops": [s.to_dict() for s in self.largest_drops],
            "nodes_to_exclude": self.nodes_to_exclude,
            "summary": self.summary,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Diagnosis:
        """The schema leaves a diagnosis open (its shape is this checker's): what is missing reads as none."""
        return cls(
            variant=str(data.get("variant", "")),
            case=str(data.get("case", "")),
            min_db=number_or(data.get("min_db"), 0.0),
            compared=int(data.get("compared") or 0),
            unmatched=integer(data.get("unmatched")) or 0,
            groups=integer(data.get("groups")) or 0,
            first=_score(data.get("first")),
            worst=_score(data.get("worst")),
            largest_drops=[TensorScore.from_dict(s) for s in data.get("largest_drops") or [] if isinstance(s, Mapping)],
            nodes_to_exclude=strings(data.get("nodes_to_exclude")),
            summary=str(data.get("summary", "")),
        )
