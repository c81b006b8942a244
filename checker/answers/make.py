"""An answer made from one case's arrays: its `from` outputs through its steps, then its kind's decoder."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from checker.answers.errors import AnswerError
from checker.answers.items import Item
from checker.answers.kind import Env, Kind
from checker.answers.kinds import KINDS
from checker.answers.tensors import run_steps
from checker.manifest import views
from checker.preprocess.errors import CannotReproduce, PreprocessError


def sources(answer: Any) -> list[str]:
    """The graph outputs an answer reads, in order."""
    found = answer.from_
    return [found] if isinstance(found, str) else list(found)


def kind_of(answer: Any) -> Kind:
    return KINDS[answer.kind]


def make(answer: Any, outputs: Mapping[str, np.ndarray], env: Env, tweak: Any = None) -> list[Item]:
    """The answer of one case, one entry per batch item; AnswerError when the outputs do not fit the declaration."""
    names = sources(answer)
    missing = [n for n in names if n not in outputs]
    if missing:
        raise AnswerError(f"answer '{answer.name}': no output '{missing[0]}' to read")
    tensors = {n: np.asarray(outputs[n]) for n in names}
    for name, x in tensors.items():
        if x.dtype.kind not in "biuf":
            raise AnswerError(f"answer '{answer.name}': output '{name}' holds {x.dtype}, not numbers")
    try:
        with np.errstate(all="ignore"):
            stepped = run_steps(views.answer_steps(answer), tensors, names[0], env.inputs)
            return kind_of(answer).decode(answer, [stepped[n] for n in names], env, tweak)
    except CannotReproduce:
        raise  # a library missing here (tokenizers, Pillow): the answer is not run, which is not its fault
    except PreprocessError as exc:  # a tokenizer or an image the decoder reads
        raise AnswerError(f"answer '{answer.name}': {exc}") from exc
    except (ValueError, IndexError, MemoryError) as exc:
        if isinstance(exc, AnswerError):
            raise
        raise AnswerError(f"answer '{answer.name}' cannot be made from the outputs: {exc}") from exc
