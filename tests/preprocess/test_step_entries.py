"""Every registered step is a whole entry: a kernel, a one-edit entry (or an explicit none), a definition in
the manifest schema and a row in its kind's step table in docs/preprocessing.md (as Albumentations'
check_all_augs_exists holds each transform to its tables). The check is shown to fail for each table."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from checker.preprocess import KIND_NAMES
from checker.preprocess.audio import steps as audio_steps
from checker.preprocess.errors import PreprocessError
from checker.preprocess.image import steps as image_steps
from checker.preprocess.kinds import KINDS
from checker.preprocess.registry import NO_CHANGES, Registry

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "schemas" / "manifest.schema.json").read_text())
DOCS = (REPO / "docs" / "preprocessing.md").read_text()
SECTIONS = {"image": "## Images as ordered steps", "audio": "## Audio"}
# The kinds with step lists. Importing the kind table imports every kind's pipeline and explanations, which
# register their kernels and one-edit changes: what a run has registered, no more.
REGISTRIES: dict[str, Registry[Any]] = {"image": image_steps.REGISTRY, "audio": audio_steps.REGISTRY}
assert set(REGISTRIES) <= set(KINDS)


@dataclass(frozen=True)
class Tables:
    """What a kind's steps are checked against: its registry, its schema steps and its documented steps."""

    registry: Registry[Any]
    schema: dict[str, Any]  # step name -> its schema definition
    documented: set[str]  # the step names of its table in docs/preprocessing.md


def schema_steps(kind: str) -> dict[str, Any]:
    blocks = SCHEMA["properties"]["inputs"]["items"]["properties"]["preprocessing"]["allOf"]
    block = next(b for b in blocks if b["if"]["properties"]["kind"].get("const") == kind)
    found: dict[str, Any] = block["then"]["properties"]["steps"]["items"]["properties"]
    return found


def documented_steps(kind: str) -> set[str]:
    """The first column of the step table in the kind's section (up to the next `## ` heading)."""
    start = DOCS.index(SECTIONS[kind] + "\n")
    end = DOCS.find("\n## ", start + 1)
    section = DOCS[start : end if end != -1 else None]
    return set(re.findall(r"^\| `(\w+)` \|", section, re.M))


def tables(kind: str) -> Tables:
    return Tables(REGISTRIES[kind], schema_steps(kind), documented_steps(kind))


def missing(t: Tables) -> list[str]:
    """Every step of the registry that lacks an entry in one of the tables, said as `name: what`."""
    out = []
    for step in t.registry.types:
        if step not in t.registry.kernels:
            out.append(f"{step.name}: no kernel")
        if step not in t.registry.changes:
            out.append(f"{step.name}: no one-edit entry (register NO_CHANGES for none)")
        if step.name not in t.schema:
            out.append(f"{step.name}: no schema definition")
        if step.name not in t.documented:
            out.append(f"{step.name}: no row in docs/preprocessing.md")
    out.extend(f"{name}: in the schema but not registered" for name in sorted(set(t.schema) - _names(t)))
    return out


def _names(t: Tables) -> set[str]:
    return {step.name for step in t.registry.types}


def test_the_kind_names_are_the_kind_table() -> None:
    assert tuple(KINDS) == KIND_NAMES


@pytest.mark.parametrize("kind", sorted(REGISTRIES))
def test_every_registered_step_is_a_whole_entry(kind: str) -> None:
    assert missing(tables(kind)) == []


@pytest.mark.parametrize("kind", sorted(REGISTRIES))
def test_the_check_names_a_step_missing_from_any_table(kind: str) -> None:
    whole = tables(kind)
    step = whole.registry.types[1]  # the second step: the first (decode) is special in places
    registry = copy.copy(whole.registry)
    no_kernel = replace(registry, kernels={k: v for k, v in registry.kernels.items() if k is not step})
    no_changes = replace(registry, changes={k: v for k, v in registry.changes.items() if k is not step})
    assert missing(replace(whole, registry=no_kernel)) == [f"{step.name}: no kernel"]
    assert missing(replace(whole, registry=no_changes)) == [
        f"{step.name}: no one-edit entry (register NO_CHANGES for none)"
    ]
    no_schema = {k: v for k, v in whole.schema.items() if k != step.name}
    assert missing(replace(whole, schema=no_schema)) == [f"{step.name}: no schema definition"]
    assert missing(replace(whole, documented=whole.documented - {step.name})) == [
        f"{step.name}: no row in docs/preprocessing.md"
    ]
    assert missing(replace(whole, schema={**whole.schema, "echo": {}})) == ["echo: in the schema but not registered"]


def test_an_explicit_none_counts_as_a_one_edit_entry() -> None:
    assert image_steps.REGISTRY.changes[image_steps.Layout] is NO_CHANGES
    assert audio_steps.REGISTRY.changes[audio_steps.Cast] is NO_CHANGES


def test_a_second_kernel_for_a_step_is_refused() -> None:
    with pytest.raises(TypeError, match="Resize already has a kernel"):
        image_steps.REGISTRY.register_kernel(image_steps.Resize)(lambda *_: None)


def test_a_step_without_a_kernel_names_the_supported_ones() -> None:
    @dataclass(frozen=True)
    class Blur(image_steps.Step):
        name = "blur"

    registry: Registry[image_steps.Step] = Registry("image", (*image_steps.STEPS, Blur))
    registry.kernels.update(image_steps.REGISTRY.kernels)
    with pytest.raises(PreprocessError, match="no image kernel runs Blur; the supported steps are Decode, Convert"):
        registry.kernel(Blur)
    with pytest.raises(TypeError, match="Blur is not one of the image steps: Decode, Convert"):
        image_steps.REGISTRY.register_kernel(Blur)


# ----- what an image step does to the size and to each band: said by every step class, none by default

PROPERTIES = ("size_after", "per_band")


def unsaid(steps: tuple[type[Any], ...]) -> list[str]:
    """Every image step class that leaves its size or its bands to the base class, said as `name: what`."""
    return [f"{step.name}: no {prop}" for step in steps for prop in PROPERTIES if prop not in vars(step)]


def test_every_image_step_says_its_size_and_its_bands() -> None:
    assert unsaid(image_steps.STEPS) == []


def test_a_step_that_says_neither_is_named_and_never_taken_to_keep_the_size() -> None:
    @dataclass(frozen=True)
    class Rotate(image_steps.Step):
        name = "rotate"

    assert unsaid((*image_steps.STEPS, Rotate)) == ["rotate: no size_after", "rotate: no per_band"]
    from checker.preprocess.image.geometry import planned_size

    with pytest.raises(NotImplementedError, match="Rotate says nothing of the size"):
        planned_size((Rotate(),), 40, 60)
    crop = image_steps.Crop(center=(24, 32))
    assert planned_size((crop,), 40, 60) == (24, 32)
