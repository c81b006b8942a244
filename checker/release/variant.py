"""`checker variant add`: record a graph made from the baseline (quantized, float16, 4-bit) as a variant.

The record is what a reviewer needs to trust it: the graph and its digest, what it derives from, the transform
that made it as far as the graph shows it (what the user states wins; a stated setting the graph contradicts is
said), and rules whose thresholds were measured on the bundle's cases, with headroom, the way `checker verify`
will judge them (`release/proposal.py`). The manifest is edited as a round-trip tree, so its comments survive;
the graph is copied into the bundle first when it lies outside, so the manifest never names a missing file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from checker.bundle.layout import locate
from checker.errors import Error, UsageError
from checker.manifest import views
from checker.manifest.load import Manifest, schema_findings, to_plain
from checker.manifest.model.build import build
from checker.manifest.model.root import Spec
from checker.manifest.model.variants import Variant
from checker.platforms.explain import is_u8s8
from checker.platforms.features import this_machine
from checker.release import traces
from checker.release.graphfacts import graph_facts, load_model
from checker.release.measure import Prepared, measure, prepare
from checker.release.placing import Placed, place
from checker.release.proposal import Planned, Proposed, plan, propose
from checker.release.tree import TODO, block, block_seq, flow_map, flow_seq, note, one_line, read_tree, write_tree

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")  # a variant's name, as the schema has it
ITEM_INDENT = 4  # the column of a variant entry's keys
TRANSFORM_INDENT = 6  # the column of its transform's keys
RULE_INDENT = 6  # the column of a rule's dash


class VariantError(Error):
    """The variant cannot be recorded as asked."""


@dataclass
class VariantSpec:
    """What the user says of the variant; everything else is read from the graph and measured."""

    graph: Path
    name: str | None = None
    tool: str | None = None
    version: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    calibration: int | list[str] | None = None  # calibration_cases: the first N cases, or their names
    derived_from: str = "baseline"
    replace: bool = False
    force: bool = False  # replace files in the way of a graph copied into the bundle
    platforms: list[str] = field(default_factory=list)  # CPU classes the thresholds must hold on too


@dataclass
class AddedVariant:
    manifest: Path
    name: str
    transform: dict[str, Any]
    shown: str  # what the graph shows, in words
    replaced: bool = False
    copied: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)  # settings read from the graph
    assumed: list[str] = field(default_factory=list)  # recorded without being shown or stated, and why
    contradictions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what else the graph shows, or does not
    proposals: list[Proposed] = field(default_factory=list)
    places: list[str] = field(default_factory=list)  # where the thresholds were measured
    hints: list[str] = field(default_factory=list)
    locked: bool = False  # the manifest holds a release.digest, which the new variant makes stale


@dataclass
class _Transform:
    block: dict[str, Any]
    read: list[str]
    assumed: list[str]
    contradictions: list[str]
    notes: list[str]


def add_variant(bundle: Path, spec: VariantSpec) -> AddedVariant:
    manifest = locate(bundle)
    if manifest is None:
        raise UsageError(f"{bundle}: no bundle.yaml, bundle.yml or bundle.json; start one with `checker init MODEL`")
    if not spec.graph.is_file():
        raise UsageError(f"--graph {spec.graph}: no such file")
    tree = read_tree(manifest)
    data = to_plain(tree)
    typed = _check_manifest(tree, data, manifest)
    baseline = typed.graph.path if typed.graph is not None else None
    if not baseline:
        raise VariantError(f"{manifest}: graph.path names no baseline graph to derive a variant from")
    root = manifest.parent
    model = load_model(spec.graph)
    facts = graph_facts(model, spec.graph.name)
    name = spec.name or default_name(spec.graph, baseline)
    variants = views.variants(typed)
    index = _index(variants, name, spec.replace)
    _check_parent(variants, index, spec.derived_from)
    _check_graph(_bundle_rel(spec.graph, root), baseline, variants, index)
    shown = traces.shown_transform(model)
    transform = _transform(spec, shown, typed)
    fresh = _fresh_files(spec.graph, root, facts.external)
    placed = place(spec.graph, root, facts.external, spec.force)
    try:
        entry = _entry(name, placed, spec.derived_from, transform.block)
        outputs = {s.name for s in facts.outputs}
        proposals, places, hints = _propose(root, data, typed, manifest.name, entry, spec, outputs)
        node = _node(entry, transform, proposals, hints)
        variant_list = _variants(tree)
        if index is None:
            variant_list.append(node)
        else:
            variant_list[index] = node
        _check_written(tree, manifest)
    except BaseException:
        for path in fresh:  # a graph copied in for a variant that is not recorded is not left behind
            path.unlink(missing_ok=True)
        raise
    write_tree(tree, manifest)
    hints += _calibration_hint(transform.block, name) + _platform_hints(spec, typed, model)
    locked = bool(typed.release is not None and typed.release.digest)
    return AddedVariant(
        manifest, name, transform.block, shown.words, index is not None, placed.copied, transform.read,
        transform.assumed, transform.contradictions, transform.notes, proposals, places, hints, locked,
    )  # fmt: skip


def default_name(graph: Path, baseline: str) -> str:
    """The graph's file name less the baseline's: model.int8.onnx beside model.onnx is `int8`."""
    stem = graph.name.removesuffix(".onnx")
    base = PurePosixPath(baseline).name.removesuffix(".onnx")
    rest = stem[len(base) :].lstrip("._-") if stem.startswith(base) and stem != base else stem
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", rest).lstrip("._-")[:64]
    return slug if slug and slug != "baseline" else "variant"


def _check_manifest(tree: Any, data: Mapping[str, Any], path: Path) -> Spec:
    """The manifest as typed blocks, once the schema finds nothing wrong with it."""
    invalid = schema_findings(Manifest(dict(data), path.name, tree))
    if invalid:
        where = [f"{path}" + (f":{f.line}" if f.line else "") for f in invalid[:3]]
        raise VariantError(
            "the manifest does not match the schema; fix it first: "
            + "; ".join(f"{w}: {f.message}" for w, f in zip(where, invalid))
        )
    return build(Spec, data)


def _index(variants: list[Variant], name: str, replace: bool) -> int | None:
    if not NAME.match(name) or name == "baseline":
        raise UsageError(
            f"variant name '{name}': use letters, digits, '.', '_' and '-' (at most 64), not 'baseline' (--name)"
        )
    found = next((i for i, v in enumerate(variants) if v.name == name), None)
    if found is not None and not replace:
        raise VariantError(f"the bundle has a variant named '{name}' already; pass --replace to record it anew")
    return found


def _check_parent(variants: list[Variant], index: int | None, parent: str) -> None:
    earlier = [v.name for v in (variants if index is None else variants[:index])]
    if parent != "baseline" and parent not in earlier:
        raise UsageError(
            f"--derived-from {parent}: a variant derives from 'baseline' or an earlier variant "
            f"({', '.join(earlier) or 'there is none'})"
        )


def _check_graph(rel: str, baseline: str, variants: list[Variant], index: int | None) -> None:
    if rel == baseline:
        raise UsageError(f"--graph {rel} is the baseline graph; a variant is a graph derived from it")
    for i, other in enumerate(variants):
        if i != index and other.graph.path == rel:
            raise VariantError(f"variant '{other.name}' is recorded with {rel} already (--name it to replace)")


def _transform(spec: VariantSpec, shown: traces.Shown, typed: Spec) -> _Transform:
    """The transform block: the tool and settings the graph shows, the calibration cases, what is stated."""
    tool = traces.expand(spec.tool) if spec.tool else shown.tool
    if tool is None:
        raise UsageError(
            f"{spec.graph.name} shows {shown.words}: say what made it with --transform TOOL, --transform-version "
            "and --settings K=V"
        )
    settings: dict[str, Any] = {}
    read: list[str] = []
    assumed: list[str] = []
    if tool == shown.tool:
        settings.update(shown.settings)
        read = [k for k in shown.settings if k not in spec.settings]
        for key, value in traces.UNSHOWN_DEFAULTS.get(tool, {}).items():
            if key not in spec.settings:
                settings[key] = value
                default = f"{_short(tool)}'s default (no graph shows it; state another with --settings)"
                assumed.append(f"{key}: {value}, {default}")
    if spec.calibration is not None:
        settings["calibration_cases"] = _calibration(spec.calibration, tool, typed)
    settings.update(spec.settings)
    version = spec.version or installed_version(tool)
    if version is None:
        raise UsageError(f"--transform-version: give the version of {tool} (it is no package installed here)")
    if not spec.version:
        assumed.append(f"version: {version}, the one installed here (state another with --transform-version)")
    block = {"tool": tool, "version": version, "settings": settings}
    return _Transform(block, read, assumed, traces.contradictions(tool, spec.settings, shown), shown.also)


def _short(tool: str) -> str:
    return tool.rsplit(".", 1)[-1]


def _calibration(declared: int | list[str], tool: str, typed: Spec) -> int | list[str]:
    if tool != traces.STATIC:
        raise UsageError(f"--calibration-cases: {_short(tool)} does not calibrate on cases (quantize_static does)")
    names = [c.name for c in views.cases(typed) if c.name]
    if isinstance(declared, int):
        if not 1 <= declared <= len(names):
            raise UsageError(
                f"--calibration-cases {declared}: a count of the bundle's first cases, from 1 to {len(names)}"
            )
        return declared
    unknown = [n for n in declared if n not in names]
    if unknown:
        raise UsageError(f"--calibration-cases: the bundle has no case {', '.join(unknown)} (it has {len(names)})")
    return list(dict.fromkeys(declared))


def installed_version(tool: str) -> str | None:
    """The version of the installed distribution that holds the tool's top-level module (read from its
    metadata: nothing is imported)."""
    from importlib.metadata import PackageNotFoundError, packages_distributions, version

    top = tool.split(".", 1)[0]
    for dist in [top, *packages_distributions().get(top, [])]:
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return None


def _bundle_rel(graph: Path, root: Path) -> str:
    """Where the graph sits in the bundle: where it is, or its name once copied in (placing.place)."""
    real = graph.resolve()
    return real.relative_to(root.resolve()).as_posix() if root.resolve() in real.parents else graph.name


def _fresh_files(graph: Path, root: Path, external: list[str]) -> list[Path]:
    """The files a copy into the bundle would create (none when the graph is inside it already)."""
    if root.resolve() in graph.resolve().parents:
        return []
    return [p for p in (root / graph.name, *(root / rel for rel in external)) if not p.exists()]


def _entry(name: str, placed: Placed, parent: str, transform: dict[str, Any]) -> dict[str, Any]:
    graph: dict[str, Any] = {"path": placed.graph, "sha256": placed.digests[placed.graph]}
    if placed.external:
        graph["external_data"] = [{"path": rel, "sha256": placed.digests[rel]} for rel in placed.external]
    return {"name": name, "graph": graph, "derived_from": parent, "transform": transform}


def _propose(
    root: Path,
    data: Mapping[str, Any],
    typed: Spec,
    file: str,
    entry: dict[str, Any],
    spec: VariantSpec,
    outputs: set[str],
) -> tuple[list[Proposed], list[str], list[str]]:
    """Each planned rule with its measured threshold, where they were measured, and what is left to do."""
    if not views.cases(typed):
        return [], [], ["no rules are proposed: the bundle has no cases yet (`checker case add`, then --replace)"]
    prepared = prepare(root, data, file, entry, spec.platforms)
    expected = _expected_everywhere(prepared)
    planned = plan(views.outputs(typed), expected, outputs, typed.answers or ())
    if not planned:
        return [], [], ["no rules are proposed: no declared output is one the variant's graph has"]
    groups: dict[str, list[Planned]] = {"rules": [], "drift_rules": []}
    for p in planned:
        groups[p.group].append(p)
    measured = measure(
        prepared, [p.measuring() for p in groups["rules"]], [p.measuring() for p in groups["drift_rules"]]
    )
    proposals = [propose(p, measured.figures.get((g, i), [])) for g in groups for i, p in enumerate(groups[g])]
    return proposals, measured.places, []


def _expected_everywhere(prepared: Prepared) -> set[str]:
    cases = prepared.cases
    return set.intersection(*(set(c.expected) for c in cases)) if cases else set()


def _variants(tree: Any) -> Any:
    variants = tree.get("variants")
    if not isinstance(variants, list):
        variants = block_seq()
        tree["variants"] = variants
    if variants.fa.flow_style():
        variants.fa.set_block_style()
    return variants


def _node(entry: dict[str, Any], transform: _Transform, proposals: list[Proposed], hints: list[str]) -> Any:
    """The variant as the manifest writes it, each proposed rule with a comment saying how it was measured."""
    node = block({"name": entry["name"]})
    graph = entry["graph"]
    if "external_data" in graph:
        node["graph"] = block({**graph, "external_data": block_seq(flow_map(e) for e in graph["external_data"])})
    else:
        node["graph"] = flow_map(graph)
    node["derived_from"] = entry["derived_from"]
    shape = block({k: v for k, v in transform.block.items() if k != "settings"})
    shape["settings"] = flow_map(transform.block["settings"])
    for key in ("version", "settings"):
        said = [f"assumed: {a}" for a in transform.assumed if a.startswith("version: ") == (key == "version")]
        if key == "settings":
            said = ([f"read from the graph: {', '.join(transform.read)}"] if transform.read else []) + said
            said += [f"said: {c}" for c in transform.contradictions] + [f"note: {n}" for n in transform.notes]
        if said:
            lines = "\n".join(one_line(line) for line in said)
            shape.yaml_set_comment_before_after_key(key, before=lines, indent=TRANSFORM_INDENT)
    node["transform"] = shape
    for group in ("rules", "drift_rules"):
        mine = [p for p in proposals if p.group == group]
        kept = [p for p in mine if p.rule is not None]
        if kept:
            node[group] = _rules(kept)
        elif group == "rules":  # the schema asks for the list: an empty one, with what is left to do
            node[group] = flow_seq([])
            todo = [p.note for p in mine] or hints or ["at least one rule"]
            note(node, group, *(TODO + line for line in todo), indent=ITEM_INDENT)
    return node


def _rules(proposals: list[Proposed]) -> Any:
    seq = block_seq()
    for proposed in proposals:
        if proposed.rule is None:
            continue
        seq.append(flow_map(proposed.rule))
        seq.yaml_set_comment_before_after_key(len(seq) - 1, before=one_line(proposed.note), indent=RULE_INDENT)
    return seq


def _check_written(tree: Any, manifest: Path) -> None:
    """The manifest with the variant still matches the schema (a graph's names could break it)."""
    invalid = schema_findings(Manifest(to_plain(tree), manifest.name, tree))
    if invalid:
        raise VariantError(
            "the manifest with the variant would not match the schema: " + "; ".join(f.message for f in invalid[:3])
        )


def _calibration_hint(transform: Mapping[str, Any], name: str) -> list[str]:
    if transform["tool"] != traces.STATIC or "calibration_cases" in transform["settings"]:
        return []
    return [
        "calibration_cases is not recorded: give --calibration-cases N (the bundle's first N cases) or their names, "
        f"with --replace, so that `checker diagnose --reproduce {name}` can re-run the transform"
    ]


def _platform_hints(spec: VariantSpec, typed: Spec, model: Any) -> list[str]:
    """Where the thresholds were not measured but may not hold: the declared platforms, or the CPUs whose int8
    kernels compute this graph otherwise."""
    if spec.platforms:
        return []
    if views.platforms(typed.runtime):
        return ["the thresholds were measured here only: add --platform target so they hold on the declared platforms"]
    here, _ = this_machine()
    if is_u8s8(model) and not (here.startswith("x86-64") and "vnni" not in here):
        return [
            "this graph pairs uint8 activations with int8 weights, which x86 CPUs without VNNI compute otherwise: "
            "add --platform x86-64-v3 so the thresholds hold there too"
        ]
    return []
