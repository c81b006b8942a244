"""Each step type of an input kind as one entry: its kernel and its one-edit changes, registered to the type.

A step class carries its own parsing, units and bounds; what runs it (the kernel, in the kind's pipeline) and
how an explanation varies it (its changes, in the kind's neighbours) are registered here against the class,
as torchvision registers a kernel per input type. A second kernel for a type is refused, and a step without
one names the types that have one, so a new step cannot half-land.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from checker.preprocess.errors import PreprocessError

S = TypeVar("S")
F = TypeVar("F", bound=Callable[..., Any])


def _no_changes(*_: Any) -> tuple[()]:
    return ()


# Registered as the changes of a step that has no parameter worth varying: said, not forgotten.
NO_CHANGES: Callable[..., Any] = _no_changes


@dataclass
class Registry(Generic[S]):
    """The step types of one kind, in the order its docs list them, and what is registered to each."""

    kind: str
    types: tuple[type[S], ...]
    kernels: dict[type[S], Callable[..., Any]] = field(default_factory=dict)
    changes: dict[type[S], Callable[..., Any]] = field(default_factory=dict)

    def register_kernel(self, step_type: type[S]) -> Callable[[F], F]:
        """Decorator: `fn` runs steps of `step_type`; a second kernel for the same type is an error."""
        return self._register(self.kernels, step_type, "kernel")

    def register_changes(self, step_type: type[S]) -> Callable[[F], F]:
        """Decorator: `fn` yields the one-edit changes of a step of `step_type`; register NO_CHANGES for none."""
        return self._register(self.changes, step_type, "one-edit entry")

    def kernel(self, step_type: type[S]) -> Callable[..., Any]:
        found = self.kernels.get(step_type)
        if found is None:
            raise PreprocessError(
                f"no {self.kind} kernel runs {step_type.__name__}; the supported steps are {self._supported()}"
            )
        return found

    def changes_of(self, step_type: type[S]) -> Callable[..., Any]:
        # A step without an entry (tests/preprocess/test_step_entries.py fails for it) is varied in no parameter.
        return self.changes.get(step_type, NO_CHANGES)

    def _register(self, table: dict[type[S], Callable[..., Any]], step_type: type[S], what: str) -> Callable[[F], F]:
        if step_type not in self.types:
            raise TypeError(f"{step_type.__name__} is not one of the {self.kind} steps: {self._all()}")
        if step_type in table:
            raise TypeError(f"{step_type.__name__} already has a {what}: {table[step_type].__qualname__}")

        def register(fn: F) -> F:
            table[step_type] = fn
            return fn

        return register

    def _all(self) -> str:
        return ", ".join(t.__name__ for t in self.types)

    def _supported(self) -> str:
        return ", ".join(t.__name__ for t in self.types if t in self.kernels)
