"""Silent failures, caught without a reference: outputs that are all zero, one constant value, NaN or infinite,
or whose cosine to another platform's outputs for the same case is near zero.

Backends fail this way with no error and at normal speed (a WebGPU kernel that writes nothing, a q4 graph whose
scores are noise, NaN from a float16 overflow). A rule may miss it (a top-k rule over a constant output, a
variant judged only against a baseline that a device also broke), and a case may have no reference at all (an
input size of the envelope). A sentinel is reported only when what it is compared with does not share it: the
reference output of the case, and on another platform also the checker's own run of the same case.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from checker import findings as F
from checker.findings import Finding

if TYPE_CHECKING:
    from checker.context import Case

ALL_ZERO = "all_zero"
CONSTANT = "constant"
NON_FINITE = "non_finite"
UNRELATED = "unrelated"
UNRELATED_COSINE = 0.1  # |cosine| at or below this: the two outputs have nothing to do with each other
_WORDS = {
    ALL_ZERO: "is all zero",
    CONSTANT: "holds one value throughout",
    NON_FINITE: "holds NaN or infinity",
}
_SHOWN = 5


def kinds(array: np.ndarray) -> set[str]:
    """The sentinels an output trips on its own (an output of fewer than two numbers trips none)."""
    if array.dtype.kind not in "fiub" or array.size < 2:
        return set()
    found = set()
    flat = array.reshape(-1)
    if array.dtype.kind == "f" and not np.isfinite(flat).all():
        found.add(NON_FINITE)
        flat = flat[np.isfinite(flat)]
        if flat.size < 2:
            return found
    if not flat.any():
        found.add(ALL_ZERO)
    elif (flat == flat[0]).all():
        found.add(CONSTANT)
    return found


def cosine(a: np.ndarray, b: np.ndarray) -> float | None:
    """The cosine of two outputs of the same shape, flattened; None when it means nothing (a zero, a NaN)."""
    if a.shape != b.shape or a.dtype.kind not in "fiu" or b.dtype.kind not in "fiu" or a.size < 2:
        return None
    x, y = a.astype(np.float64).reshape(-1), b.astype(np.float64).reshape(-1)
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return None
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    if nx == 0.0 or ny == 0.0:
        return None
    return float(np.dot(x, y) / (nx * ny))


@dataclass
class Watch:
    """Sentinels tripped on one platform, by graph, output and sentinel: the cases, in the order seen."""

    tripped: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    cosines: dict[tuple[str, str], list[tuple[str, float]]] = field(default_factory=dict)
    counted: dict[tuple[str, str], int] = field(default_factory=dict)  # (graph, output) -> cases seen

    def observe(self, graph: str, case: Case, outputs: Mapping[str, np.ndarray] | None) -> None:
        """The checker's own run: each output against the case's reference."""
        self.judge(graph, case, outputs, None)

    def judge(
        self,
        graph: str,
        case: Case,
        outputs: Mapping[str, np.ndarray] | None,
        other: Mapping[str, np.ndarray] | None,
    ) -> None:
        """One case's outputs, against its reference and, on another platform, the checker's own outputs."""
        if outputs is None:
            return
        for name, array in outputs.items():
            self.counted[(graph, name)] = self.counted.get((graph, name), 0) + 1
            tripped = kinds(array)
            expected = case.expected.get(name)
            native = other.get(name) if other is not None else None
            for shared in (expected, native):
                if tripped and shared is not None:
                    tripped -= kinds(shared)
            for kind in sorted(tripped):
                self.tripped.setdefault((graph, name, kind), []).append(case.name)
            if native is not None:
                found = cosine(array, native)
                if found is not None and abs(found) <= UNRELATED_COSINE:
                    self.cosines.setdefault((graph, name), []).append((case.name, found))

    def findings(self, label: str | None, platform: str | None, **where: Any) -> Iterator[Finding]:
        head = f"[{label}] " if label else ""
        for (graph, output, kind), cases in self.tripped.items():
            seen = self.counted.get((graph, output), len(cases))
            yield F.error(
                F.COMPARISON_SENTINEL,
                f"{head}{graph}: output '{output}' {_WORDS[kind]} in {len(cases)} of {seen} case(s) ({_named(cases)}), "
                "where the reference does not: the graph ran without an error and its outputs are wrong",
                **where, platform=platform, graph=graph, output=output, sentinel=kind, cases=cases[:100],
            )  # fmt: skip
        for (graph, output), pairs in self.cosines.items():
            cases = [c for c, _ in pairs]
            worst = min(pairs, key=lambda p: abs(p[1]))
            yield F.error(
                F.COMPARISON_SENTINEL,
                f"{head}{graph}: output '{output}' is unrelated to the checker's own run of the same inputs in "
                f"{len(cases)} case(s) ({_named(cases)}): cosine {worst[1]:.3g} in case '{worst[0]}' (near zero "
                f"is at most {UNRELATED_COSINE:g})",
                **where, platform=platform, graph=graph, output=output, sentinel=UNRELATED, cases=cases[:100],
                cosine=worst[1],
            )  # fmt: skip


def _named(cases: list[str]) -> str:
    shown = ", ".join(f"'{c}'" for c in cases[:_SHOWN])
    return shown + (f" and {len(cases) - _SHOWN} more" if len(cases) > _SHOWN else "")
