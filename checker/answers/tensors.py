"""The tensor steps of an answer, run in order on its `from` outputs: one kernel per step type, registered to the
step's block (checker/manifest/model/answers.py), and the one-edit changes answer fidelity tries for it.

Every step computes in float64 (a reduction or a softmax in float32 would differ from the application's by more
than the figures resolve); an axis that does not exist, or a mask of the wrong shape, is an AnswerError naming
the step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from checker.answers.errors import AnswerError
from checker.manifest.model.answers import STEPS, Affine, Apply, Function, Normalize, Pool, Select, Squeeze, Transpose
from checker.manifest.model.core import Block
from checker.preprocess.registry import NO_CHANGES, Registry

REGISTRY: Registry[Block] = Registry("answer", STEPS)
Arrays = Mapping[str, np.ndarray]
Kernel = Callable[[Any, np.ndarray, Arrays], np.ndarray]
# sentence-transformers' Pooling divides by the mask's sum clamped to this, and Normalize by the norm clamped to
# 1e-12 (torch.nn.functional.normalize): a zero vector stays zero.
MASK_FLOOR = 1e-9
NORM_FLOOR = 1e-12


def step_name(step: Block) -> str:
    return step.TAG


def words(step: Block) -> str:
    """The step as the manifest writes it: `pool: {mode: mean, axis: 1, mask: attention_mask}`."""
    params = {
        f.name: getattr(step, f.name)
        for f in step.manifest_fields()
        if getattr(step, f.name) is not None and getattr(step, f.name) != f.default
    }
    shown = ", ".join(f"{k}: {v}" for k, v in params.items())
    return f"{step.TAG}: {{{shown}}}"


def _axis(axis: int, x: np.ndarray, step: Block) -> int:
    if not -x.ndim <= axis < x.ndim:
        raise AnswerError(f"step {words(step)}: axis {axis} does not exist in shape {list(x.shape)}")
    return axis % x.ndim


@REGISTRY.register_kernel(Select)
def _select(step: Select, x: np.ndarray, inputs: Arrays) -> np.ndarray:
    axis = _axis(step.axis, x, step)
    if step.index is not None:
        if not -x.shape[axis] <= step.index < x.shape[axis]:
            raise AnswerError(f"step {words(step)}: index {step.index} is outside axis {axis} of size {x.shape[axis]}")
        result1: np.ndarray = np.take(x, step.index, axis=axis)
        return result1
    return np.take(x, np.arange(x.shape[axis])[step.start : step.stop], axis=axis)


@REGISTRY.register_kernel(Transpose)
def _transpose(step: Transpose, x: np.ndarray, inputs: Arrays) -> np.ndarray:
    if sorted(step.perm) != list(range(x.ndim)):
        raise AnswerError(
            f"step {words(step)}: {step.perm} is not a permutation of the {x.ndim} axes of {list(x.shape)}"
        )
    return np.transpose(x, step.perm)


@REGISTRY.register_kernel(Squeeze)
def _squeeze(step: Squeeze, x: np.ndarray, inputs: Arrays) -> np.ndarray:
    axis = _axis(step.axis, x, step)
    if x.shape[axis] != 1:
        raise AnswerError(f"step {words(step)}: axis {axis} of {list(x.shape)} has size {x.shape[axis]}, not 1")
    return np.squeeze(x, axis=axis)


def apply_function(function: str, x: np.ndarray, axis: int) -> np.ndarray:
    """softmax, sigmoid, exp or log_softmax, computed so that no intermediate overflows."""
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", under="ignore"):
        if function == "sigmoid":
            z = np.exp(-np.abs(x))
            out: np.ndarray = np.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z))
            return out
        if function == "exp":
            result2: np.ndarray = np.exp(x)
            return result2
        shifted = x - x.max(axis=axis, keepdims=True)
        if function == "softmax":
            z = np.exp(shifted)
            soft: np.ndarray = z / z.sum(axis=axis, keepdims=True)
            return soft
        logs: np.ndarray = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        return logs


@REGISTRY.register_kernel(Apply)
def _apply(step: Apply, x: np.ndarray, inputs: Arrays) -> np.ndarray:
    axis = _axis(step.axis, x, step) if step.function in ("softmax", "log_softmax") else -1
    if x.size == 0:
        return np.asarray(x, np.float64)
    return apply_function(step.function, x, axis)


@REGISTRY.register_kernel(Affine)
def _affine(step: Affine, x: np.ndarray, inputs: Arrays) -> np.ndarray:
    with np.errstate(over="ignore"):
        out: np.ndarray = np.asarray(x, np.float64) * step.scale + step.offset
    return out


def _mask(step: Pool, x: np.ndarray, axis: int, inputs: Arrays) -> np.ndarray | None:
    """The mask broadcast over `x`: its shape must be x's up to and including the pooled axis."""
    if step.mask is None:
        return None
    mask = inputs.get(step.mask)
    if mask is None:
        raise AnswerError(f"step {words(step)}: the case has no input '{step.mask}' to pool by")
    lead = x.shape[: axis + 1]
    if tuple(mask.shape) != tuple(lead):
        raise AnswerError(
            f"step {words(step)}: mask '{step.mask}' has shape {list(mask.shape)}; pooling {list(x.shape)} over axis "
            f"{axis} needs {list(lead)}"
        )
    m: np.ndarray = np.asarray(mask, np.float64).reshape(lead + (1,) * (x.ndim - axis - 1))
    return m


@REGISTRY.register_kernel(Pool)
def _pool(step: Pool, x: np.ndarray, inputs: Arrays) -> np.ndarray:
    axis = _axis(step.axis, x, step)
    x = np.asarray(x, np.float64)
    mask = _mask(step, x, axis, inputs)
    if step.mode == "first":
        if mask is None:
            result3: np.ndarray = np.take(x, 0, axis=axis)
            return result3
        # The first position the mask keeps (sentence-transformers' cls pooling: left padding is skipped).
        first = np.argmax(np.broadcast_to(mask, x.shape) > 0, axis=axis)
        firsts: np.ndarray = np.take_along_axis(x, np.expand_dims(first, axis), axis=axis).squeeze(axis)
        return firsts
    if step.mode == "last":
        if mask is None:
            result4: np.ndarray = np.take(x, -1, axis=axis)
            return result4
        # The last position the mask keeps, per item (sentence-transformers' lasttoken).
        keep = np.broadcast_to(mask, x.shape) > 0
        positions = np.arange(x.shape[axis]).reshape((-1,) + (1,) * (x.ndim - axis - 1))
        last = np.where(keep, positions, 0).max(axis=axis, keepdims=True)
        return np.take_along_axis(x, last, axis=axis).squeeze(axis)
    if step.mode == "max":
        if mask is not None:
            x = np.where(mask > 0, x, -1e9)  # as sentence-transformers: masked positions never win
        result5: np.ndarray = x.max(axis=axis)
        return result5
    if mask is None:
        result6: np.ndarray = x.mean(axis=axis)
        return result6
    weights = np.broadcast_to(mask, x.shape)
    summed: np.ndarray = (x * weights).sum(axis=axis) / np.maximum(weights.sum(axis=axis), MASK_FLOOR)
    return summed


@REGISTRY.register_kernel(Normalize)
def _normalize(step: Normalize, x: np.ndarray, inputs: Arrays) -> np.ndarray:
    axis = _axis(step.axis, x, step)
    x = np.asarray(x, np.float64)
    order = 2 if step.norm == "l2" else 1
    scale = np.abs(x).max(axis=axis, keepdims=True, initial=0.0)  # keeps the squares finite for huge values
    safe = np.where(scale > 0, scale, 1.0)
    norm = np.linalg.norm(x / safe, ord=order, axis=axis, keepdims=True) * safe
    out: np.ndarray = x / np.maximum(norm, NORM_FLOOR)
    return out


def run_steps(
    steps: Sequence[Block], tensors: dict[str, np.ndarray], first: str, inputs: Arrays
) -> dict[str, np.ndarray]:
    """`tensors` (the `from` outputs by name) after every step, each on its `output` (absent: `first`)."""
    out = dict(tensors)
    for step in steps:
        target = getattr(step, "output", None) or first
        if target not in out:
            raise AnswerError(
                f"step {words(step)} names output '{target}', which is not among `from`: {', '.join(out)}"
            )
        kernel: Kernel = REGISTRY.kernel(type(step))
        out[target] = kernel(step, out[target], inputs)
    return out


# One-edit changes: what answer fidelity tries in place of each declared step, with the words that name the edit.


@dataclass(frozen=True)
class StepEdit:
    steps: tuple[Block, ...] | None  # the replacement for the step (empty: removed); None: the step twice
    words: str


Changes = Callable[[Any], Iterator[StepEdit]]


@REGISTRY.register_changes(Apply)
def _apply_changes(step: Apply) -> Iterator[StepEdit]:
    yield StepEdit((), f"without the declared {step.function} (the application does not apply it)")
    yield StepEdit((step, step), f"{step.function} applied twice")
    if step.function in ("sigmoid", "softmax"):
        other: Function = "softmax" if step.function == "sigmoid" else "sigmoid"
        yield StepEdit((dataclasses.replace(step, function=other),), f"{other} for {step.function}")


@REGISTRY.register_changes(Pool)
def _pool_changes(step: Pool) -> Iterator[StepEdit]:
    if step.mask is not None:
        yield StepEdit((dataclasses.replace(step, mask=None),), f"pooling {step.mode} without the mask '{step.mask}'")
    modes: tuple[Literal["mean", "first", "max", "last"], ...] = ("mean", "first", "max", "last")
    for mode in modes:
        if mode != step.mode:
            yield StepEdit((dataclasses.replace(step, mode=mode),), f"pooling '{mode}' for '{step.mode}'")


@REGISTRY.register_changes(Normalize)
def _normalize_changes(step: Normalize) -> Iterator[StepEdit]:
    yield StepEdit((), "without the declared normalize (the application does not normalise)")
    other: Literal["l1", "l2"] = "l1" if step.norm == "l2" else "l2"
    yield StepEdit((dataclasses.replace(step, norm=other),), f"normalize {other} for {step.norm}")


@REGISTRY.register_changes(Affine)
def _affine_changes(step: Affine) -> Iterator[StepEdit]:
    yield StepEdit((), f"without the declared affine (x * {step.scale:g} + {step.offset:g})")


REGISTRY.register_changes(Select)(NO_CHANGES)
REGISTRY.register_changes(Transpose)(NO_CHANGES)
REGISTRY.register_changes(Squeeze)(NO_CHANGES)


def step_changes(step: Block) -> Iterator[StepEdit]:
    changes: Changes = REGISTRY.changes_of(type(step))
    return iter(changes(step))
