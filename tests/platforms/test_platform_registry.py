"""The CPU classes' registry (`catalog.CLASSES`, one entry per class) held to every other table a class needs:
NumPy's names for its level and features, its qemu model's /proc/cpuinfo in the aarch64 userland, the target
names that imply it, the manifest schema's enums and docs/manifest.md. A class missing from any of them, or an
entry of them naming no class, is reported; the tests below remove one of each to show it is."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checker.manifest.model.build import build
from checker.manifest.model.runtime import Platform as DeclaredPlatform
from checker.manifest.schema import load
from checker.platforms import catalog, features, launch, userland
from checker.platforms.catalog import ARM, CLASSES, CpuClass, Platform, from_manifest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "manifest.md"


def subschemas(schema: dict[str, Any], node: Any, seen: set[int] | None = None) -> Iterator[dict[str, Any]]:
    """Every subschema under `node`, local `$ref`s followed: the enums sit wherever the schema puts them."""
    seen = set() if seen is None else seen
    if isinstance(node, dict):
        if id(node) in seen:
            return
        seen.add(id(node))
        yield node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = schema
            for part in ref[2:].split("/"):
                target = target[part]
            yield from subschemas(schema, target, seen)
        for value in node.values():
            yield from subschemas(schema, value, seen)
    elif isinstance(node, list):
        for value in node:
            yield from subschemas(schema, value, seen)


def platform_enums(schema: dict[str, Any]) -> dict[str, set[str]]:
    """The values the schema allows for a platform's `arch`, `cpu` and `features`, in any branch."""
    platforms = [
        s["properties"]["platforms"] for s in subschemas(schema, schema) if "platforms" in s.get("properties", {})
    ]
    assert platforms, "the schema has no `platforms` property"
    out: dict[str, set[str]] = {"arch": set(), "cpu": set(), "features": set()}
    for node in subschemas(schema, platforms):
        for field, values in out.items():
            prop = node.get("properties", {}).get(field)
            for sub in subschemas(schema, prop) if isinstance(prop, dict) else ():
                values.update(v for v in sub.get("enum", []) if isinstance(v, str))
    return out


def registry_gaps(schema: dict[str, Any] | None = None) -> list[str]:
    """What the classes' registry and the tables beside it disagree on."""
    schema = load("manifest") if schema is None else schema
    classes = catalog.CLASSES
    names = {c.name for c in classes}
    gaps = []
    for c in classes:
        if not c.qemu and not c.unemulated:
            gaps.append(f"{c.name}: neither a qemu model nor why none emulates it")
        if c.arch == ARM and c.qemu and c.qemu not in userland.CPUINFO:
            gaps.append(f"{c.name}: no /proc/cpuinfo for qemu's {c.qemu} in userland.CPUINFO")
        if features.class_of(c.arch, numpy_view(c)) != c.name:
            gaps.append(f"{c.name}: NumPy's names for its level and features make another class")
    gaps += [
        f"{f}: a feature without NumPy's names"
        for f in {f for c in classes for f in c.features} - set(features.FEATURE_NAMES)
    ]
    for _, entry in catalog._TARGETS:
        implied = from_manifest(build(DeclaredPlatform, entry)).cpu_class
        if implied not in names:
            gaps.append(f"target names imply {implied}, which is no class")
    enums = platform_enums(schema)
    mine = {
        "arch": {c.arch for c in classes},
        "cpu": {c.level for c in classes if c.level},
        "features": {f for c in classes for f in c.features},
    }
    for field, values in mine.items():
        gaps += [f"the schema's platform {field} has no '{v}'" for v in sorted(values - enums[field])]
        gaps += [f"the schema's platform {field} '{v}' is in no class" for v in sorted(enums[field] - values)]
    docs = DOCS.read_text(encoding="utf-8")
    gaps += [
        f"docs/manifest.md does not name '{v}'" for v in sorted(set().union(*mine.values())) if f"`{v}`" not in docs
    ]
    return gaps


def numpy_view(c: CpuClass) -> list[str]:
    """The feature names NumPy reports on a CPU of the class (each level includes those below it)."""
    levels = catalog.X86_LEVELS
    seen = [features.LEVEL_NAMES.get(lv, "") for lv in levels[: levels.index(c.level) + 1]] if c.level else []
    return seen + [features.FEATURE_NAMES.get(f, ("",))[0] for f in c.features]


def test_every_class_has_its_entry_in_every_table() -> None:
    assert registry_gaps() == []
    cpu_classes = [p for p in catalog.known_classes() if p.engine is None]  # the engines are no CPU class
    assert len(cpu_classes) == len(CLASSES) == len({c.name for c in CLASSES})


def test_every_class_runs_natively_or_emulated_or_says_why_not() -> None:
    for c in CLASSES:
        chosen = launch.plan(Platform(c.name, c.arch, c.level, c.features), "elsewhere")
        if c.qemu and isinstance(chosen, str):
            assert "not installed" in chosen or "only on an x86-64 machine" in chosen  # no qemu here
        elif c.qemu:
            assert chosen.how.endswith(f"-cpu {c.qemu}")
        else:
            assert chosen == f"{c.name} cannot be emulated: {c.unemulated}"


def without(table: tuple[CpuClass, ...], name: str) -> tuple[CpuClass, ...]:
    return tuple(c for c in table if c.name != name)


def test_a_class_left_out_of_the_registry_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "CLASSES", without(CLASSES, "aarch64-dotprod"))
    assert "target names imply aarch64-dotprod, which is no class" in registry_gaps()
    monkeypatch.setattr(catalog, "CLASSES", without(CLASSES, "x86-64-v4-vnni"))
    assert "target names imply x86-64-v4-vnni, which is no class" in registry_gaps()


def test_a_class_left_out_of_another_table_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    cpuinfo = {k: v for k, v in userland.CPUINFO.items() if k != "cortex-a76"}
    monkeypatch.setattr(userland, "CPUINFO", cpuinfo)
    assert registry_gaps() == ["aarch64-dotprod: no /proc/cpuinfo for qemu's cortex-a76 in userland.CPUINFO"]
    monkeypatch.undo()
    monkeypatch.setattr(features, "FEATURE_NAMES", {k: v for k, v in features.FEATURE_NAMES.items() if k != "i8mm"})
    assert "aarch64-dotprod-i8mm: NumPy's names for its level and features make another class" in registry_gaps()
    assert "i8mm: a feature without NumPy's names" in registry_gaps()
    monkeypatch.undo()
    monkeypatch.setattr(features, "LEVEL_NAMES", {k: v for k, v in features.LEVEL_NAMES.items() if k != "x86-64-v4"})
    assert "x86-64-v4: NumPy's names for its level and features make another class" in registry_gaps()


def test_a_class_left_out_of_the_schema_is_reported() -> None:
    schema = copy.deepcopy(load("manifest"))
    for node in subschemas(schema, schema):
        cpu = node.get("properties", {}).get("cpu")
        if isinstance(cpu, dict) and "x86-64-v4" in cpu.get("enum", []):
            cpu["enum"].remove("x86-64-v4")
    assert registry_gaps(schema) == ["the schema's platform cpu has no 'x86-64-v4'"]


def test_a_new_class_in_the_registry_alone_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    riscv = CpuClass("riscv64", None, ("rvv",), qemu="rv64")
    monkeypatch.setattr(catalog, "CLASSES", (*CLASSES, riscv))
    gaps = registry_gaps()
    assert "riscv64-rvv: NumPy's names for its level and features make another class" in gaps
    assert "the schema's platform arch has no 'riscv64'" in gaps and "rvv: a feature without NumPy's names" in gaps
    assert "docs/manifest.md does not name 'rvv'" in gaps
