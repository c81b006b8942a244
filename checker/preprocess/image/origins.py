"""Where each step of an imported pipeline came from, so that an explanation of a mismatch names the imported
file's own entry and option ("when `Resize` (transform 0) in aug.json has `interpolation: 2`", "when
`do_resize` is false") rather than the step words the file was read into, which the file does not contain.

An importer gives each step it makes an Origin: the entry that made it, and how that entry's options name the
step's parameters. An edit the Origin cannot say in the file's words is left in step words, with a note.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from checker.preprocess.image.neighbours import Edit
    from checker.preprocess.image.steps import Step

Spell = Callable[[object], str]  # a step parameter's value as the entry's option writes it


@dataclass(frozen=True)
class Origin:
    entry: str  # "`LongestMaxSize` (transform 0)": the entry and where it is in the file
    file: str  # the file's bundle path, as the manifest's `import:` names it
    options: Mapping[str, tuple[str, Spell]] = field(default_factory=dict)  # parameter -> (option, spelling)
    # Whole edits said another way: "drop" (the step left out), or "<parameter>=<value>" (one change).
    phrases: Mapping[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """The entry in its file; the file alone for a flat file (a preprocessor_config.json's keys)."""
        return f"{self.entry} in {self.file}" if self.entry else self.file


def written(value: object) -> str:
    """A value as YAML or JSON writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, tuple):
        return "[" + ", ".join(written(v) for v in value) + "]"
    return str(value)


def spelled(table: Mapping[Any, object]) -> Spell:
    """A spelling through `table` (a step value to the option's value), else as written."""
    return lambda value: written(table.get(value, value))


def in_source_words(
    edit: Edit, declared: tuple[Step, ...], edited: tuple[Step, ...], origins: tuple[Origin | None, ...]
) -> str | None:
    """The edit said in the imported file's words, or None when its origins cannot say it."""
    if not 0 <= edit.at < len(origins):
        return None
    origin = origins[edit.at]
    if edit.kind == "drop":
        return None if origin is None else origin.phrases.get("drop", f"without {origin.where}")
    if edit.kind == "swap" and edit.at + 1 < len(origins):
        later = origins[edit.at + 1]
        if origin is None or later is None or origin.entry == later.entry:
            return None
        return f"when {later.entry} runs before {origin.entry} in {origin.file} (the file has it after)"
    if edit.kind == "change" and origin is not None:
        return _change(origin, declared[edit.at], edited[edit.at])
    return None


def _change(origin: Origin, old: Step, new: Step) -> str | None:
    step: Any = old  # every step is a dataclass
    changed = [f.name for f in fields(step) if getattr(old, f.name) != getattr(new, f.name)]
    if len(changed) == 1 and f"{changed[0]}={written(getattr(new, changed[0]))}" in origin.phrases:
        return origin.phrases[f"{changed[0]}={written(getattr(new, changed[0]))}"]
    if not changed or any(k not in origin.options for k in changed):
        return None
    if set(changed) <= {"mean", "std"} and all(getattr(new, k) == getattr(old, k)[::-1] for k in changed):
        shown = ", ".join(f"`{origin.options[k][0]}`" for k in changed)
        return f"when {origin.where} has {shown} in the other channel order ({_now(origin, new, changed)})"
    was = ", ".join(origin.options[k][1](getattr(old, k)) for k in changed)
    return f"when {origin.where} has {_now(origin, new, changed)} (it has {was})"


def _now(origin: Origin, step: Step, keys: list[str]) -> str:
    return ", ".join(f"`{origin.options[k][0]}: {origin.options[k][1](getattr(step, k))}`" for k in keys)
