"""The class order: each case's `label` read through the labels file at the class its reference output picks.

A reference that disagrees with a label on one case is a reference that is wrong there (task rules judge the
graph's own answers). A labels file in the wrong order shows differently: the cases of one class all land on
one other index. So an index is called misplaced only when

- most of the labelled items whose reference picks it (more than half) expect one same label, which the file
  puts elsewhere;
- that label is not also the majority at another index (one class, two places, is a wrong reference);
- and it is corroborated: two items or more say so, or the name the file puts at this index is the majority
  label of another index (the two halves of a swap).

Anything short of that is left to the task rules. The stage runs on the whole set of cases, before a shard keeps
its share, so every shard reports the same order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from checker import findings as F
from checker.compare.metrics import class_rows
from checker.context import Case, Context
from checker.findings import Finding
from checker.manifest import views
from checker.manifest.model.tensors import Output

SHOWN = 5  # misplaced indices named in one message
LISTED = 20  # labels long enough to spell the whole implied order


@dataclass
class Evidence:
    """The labelled items of one output: per class index the reference picks, the labels the cases expect."""

    names: dict[int, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    cases: dict[tuple[int, str], list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, index: int, label: str, case: str) -> None:
        self.names[index][label] += 1
        if case not in self.cases[index, label]:
            self.cases[index, label].append(case)


@dataclass(frozen=True)
class Misplaced:
    index: int  # where the reference puts the class
    label: str  # the label the cases there expect
    items: int


def label_order_stage(ctx: Context) -> Iterator[Finding]:
    outputs = [o for o in views.outputs(ctx.spec) if o.name in ctx.labels and o.labels is not None]
    cases = [c for c in ctx.loaded_cases if c.label is not None and c.name not in ctx.faulty_cases]
    if not outputs or not cases:
        return
    told: set[str] = set()
    for output in outputs:
        labels = ctx.labels[output.name]
        evidence = Evidence()
        for case in cases:
            yield from _collect(ctx, case, output, labels, evidence, told)
        yield from _judge(ctx, output, labels, evidence)


def _collect(
    ctx: Context, case: Case, output: Output, labels: list[str], evidence: Evidence, told: set[str]
) -> Iterator[Finding]:
    """One case's labelled items into the evidence; a label the file cannot read is said once per case."""
    name = output.name
    reference = case.expected.get(name)
    if reference is None:
        return
    where = ctx.where(*case.where, "label")
    axis = output.labels.axis if output.labels is not None and output.labels.axis is not None else -1
    picked = _picked(reference, name in ctx.index_outputs, axis)
    if isinstance(picked, str):
        if case.name not in told:
            told.add(case.name)
            yield F.error(F.LABELS_INVALID, f"case '{case.name}': {picked}", **where)
        return
    if name in ctx.index_outputs:
        outside = sorted({int(v) for v in picked if not 0 <= v < len(labels)})
        if outside:
            yield F.error(
                F.LABELS_COUNT,
                f"case '{case.name}': '{name}' holds class index {outside[0]}, "
                f"but its label mapping has {len(labels)} labels",
                **where,
                expected=outside[-1] + 1,
                actual=len(labels),
            )
            return
    values = case.label if isinstance(case.label, list) else [case.label]
    if len(values) != len(picked):
        if case.name not in told:
            told.add(case.name)
            yield F.error(
                F.LABELS_INVALID,
                f"case '{case.name}': its label names {len(values)} item(s), '{name}' holds {len(picked)}",
                **where,
            )
        return
    unknown = [v for v in values if isinstance(v, str) and v not in labels]
    if unknown and case.name not in told:
        told.add(case.name)
        yield F.error(F.LABELS_INVALID, f"case '{case.name}': label {unknown[0]!r} is not in '{name}' labels", **where)
    for index, value in zip(picked, values, strict=True):
        # An index label names no class through the file, and a tie picks no class: neither says anything
        # about the file's order.
        if isinstance(value, str) and value in labels and index >= 0:
            evidence.add(int(index), value, case.name)


def _picked(reference: np.ndarray, index_valued: bool, axis: int) -> list[int] | str:
    """The class index each item of a reference output picks (-1 for a tie at the top), or why none."""
    if index_valued:
        if not np.issubdtype(reference.dtype, np.integer):
            return f"an index-valued output holds integers, the reference output is {reference.dtype}"
        return [int(v) for v in reference.reshape(-1)]
    if not -reference.ndim <= axis < reference.ndim or reference.shape[axis] == 0:
        return f"the reference output of shape {list(reference.shape)} has no labelled axis {axis}"
    rows = class_rows(reference, axis)
    top = rows.argmax(axis=1)
    tied = (rows == rows[np.arange(len(rows)), top][:, None]).sum(axis=1) > 1
    return [-1 if t else int(i) for i, t in zip(top, tied, strict=True)]


def misplaced(labels: Sequence[str], evidence: Evidence) -> list[Misplaced]:
    """The indices whose cases consistently expect a label the file puts elsewhere (the module's rule)."""
    majority: dict[int, tuple[str, int]] = {}
    for index, names in evidence.names.items():
        label, count = names.most_common(1)[0]
        if 2 * count > sum(names.values()):
            majority[index] = (label, count)
    places = Counter(label for label, _ in majority.values())
    found = []
    for index, (label, count) in sorted(majority.items()):
        if (index < len(labels) and labels[index] == label) or places[label] > 1:
            continue
        swapped = index < len(labels) and any(
            other == labels[index] for j, (other, _) in majority.items() if j != index
        )
        if count >= 2 or swapped:
            found.append(Misplaced(index, label, count))
    return found


def implied_order(labels: Sequence[str], moved: Sequence[Misplaced]) -> list[str] | None:
    """The file with each misplaced label put where the cases put it, when that is a reordering of the file:
    one displaced label left over and one index left free take each other."""
    order = list(labels)
    for m in moved:
        order[m.index] = m.label
    free = [i for i in range(len(order)) if i not in {m.index for m in moved} and order[i] in {m.label for m in moved}]
    displaced = sorted(set(labels[m.index] for m in moved) - {m.label for m in moved})
    if len(free) == 1 and len(displaced) == 1:
        order[free[0]] = displaced[0]
    return order if sorted(order) == sorted(labels) else None


def checked(labels: Sequence[str], order: list[str] | None, evidence: Evidence) -> list[str] | None:
    """The implied order, checked against the cases before it is suggested: under it no index is misplaced, and
    every index it changes is one the cases show, but for the one index a swap seen from one side frees. A longer
    cycle closed by a guess (a rotated file whose cases pick two classes) is no order to suggest: written that
    way, the file passed with 8 of 10 names in the wrong place."""
    if order is None or misplaced(order, evidence):
        return None
    changed = [i for i in range(len(order)) if order[i] != labels[i]]
    shown = {m.index: m.label for m in misplaced(labels, evidence)}
    guessed = [i for i in changed if shown.get(i) != order[i]]
    return order if not guessed or (len(guessed) == 1 and len(changed) == 2) else None


def _judge(ctx: Context, output: Output, labels: list[str], evidence: Evidence) -> Iterator[Finding]:
    moved = misplaced(labels, evidence)
    if not moved or output.labels is None:
        return
    name, where = output.name, ctx.where(*output.labels.at)
    file = output.labels.path or "the labels"
    said = []
    for m in moved[:SHOWN]:
        cases = evidence.cases[m.index, m.label]
        shown = ", ".join(f"'{c}'" for c in cases[:3]) + (f" and {len(cases) - 3} more" if len(cases) > 3 else "")
        said.append(
            f"the reference says index {m.index} (`{labels[m.index]}`) where case(s) {shown} expect "
            f"`{m.label}` (index {labels.index(m.label)})"
        )
    more = f"; and {len(moved) - SHOWN} more" if len(moved) > SHOWN else ""
    order = checked(labels, implied_order(labels, moved), evidence)
    unseen = len(labels) - len(set(evidence.names) & set(range(len(labels))))  # indices no case picks
    implied = ""
    if order is not None:
        changed = [f"{i}: {order[i]}" for i in range(len(order)) if order[i] != labels[i]]
        implied = "; the cases imply " + (", ".join(order) if len(order) <= LISTED else ", ".join(changed))
    elif unseen:
        implied = f"; no case picks the {unseen} other index(es), so the cases imply no whole order"
    yield F.error(
        F.LABELS_ORDER,
        f"'{name}': {file} is not in the order of the reference output: " + "; ".join(said) + more + implied,
        **where,
        output=name,
        misplaced=[{"index": m.index, "label": m.label, "items": m.items} for m in moved],
        implied=order,
        unseen=unseen if order is None else 0,
    )
