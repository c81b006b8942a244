"""The manifest `checker init` writes: everything the graph says, and a marked placeholder for the rest.

A placeholder is a field left empty (or absent) with a TODO comment beside it, so the file is valid against the
schema and `checker verify` reports each placeholder as a missing piece: the path to a release is a checklist.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, get_args

from checker.manifest import written
from checker.manifest.model.common import DType
from checker.platforms.catalog import class_name, platform_of_target
from checker.readers.graphinfo import TensorSpec
from checker.readers.support import oldest_loading
from checker.release.graphfacts import GraphFacts, GraphReadError
from checker.release.guess import Guess, input_guess, named_shape, output_guess
from checker.release.tree import TODO, block, block_seq, flow_map, flow_seq, flowed, note, one_line, schema_comment

LABELLED = ("logits", "probabilities", "scores")
INPUT_MEANINGS = "image | text | audio | tabular | state | tensor"
OUTPUT_MEANINGS = "logits | probabilities | scores | embedding | boxes | mask | tokens | state | regression | other"
ITEM_INDENT = 4  # the column of the keys of an `inputs:` or `outputs:` entry


@dataclass
class Draft:
    tree: Any
    placeholders: list[str] = field(default_factory=list)  # what is left to fill in, in manifest order
    guesses: list[str] = field(default_factory=list)  # fields guessed from hints, to be checked


@dataclass(frozen=True)
class Source:
    """Where the graph sits in the bundle and the digests of its files."""

    graph: str  # bundle-relative path of the .onnx file
    external: list[str]  # bundle-relative paths of its external-data files
    digests: dict[str, str]


def draft_manifest(
    facts: GraphFacts, source: Source, release: Any, carried: Any | None, target: str | None = None
) -> Draft:
    """The whole manifest; `release` is the release section, `carried` an earlier comparison section or None."""
    draft = Draft(block())
    doc = draft.tree
    doc.yaml_set_start_comment(_head(source.graph))
    doc["manifest_version"] = 1
    doc["release"] = release
    doc["graph"] = _graph(facts, source, draft)
    used = {d for s in facts.inputs + facts.outputs for d in (s.shape or ()) if isinstance(d, str)}
    doc["inputs"] = block_seq(_input(spec, i, used, draft) for i, spec in enumerate(facts.inputs))
    doc["outputs"] = block_seq(_output(spec, i, facts, used, draft) for i, spec in enumerate(facts.outputs))
    _answers(doc, facts, draft)
    doc["runtime"] = _runtime(facts, draft)
    if target:
        _target(doc["runtime"], target, draft)
    doc["validation"] = flow_map({})
    note(
        doc,
        "validation",
        TODO + "command: the command that validates the bundle on the device, e.g. "
        "checker verify bundle.yaml (and timeout_s, default 600)",
    )
    draft.placeholders.append("validation.command")
    doc["comparison"] = _comparison(carried, facts, draft)
    return draft


def _answers(doc: Any, facts: GraphFacts, draft: Draft) -> None:
    """The answers the graph says enough about (release/answersguess.py), each with its reason beside it."""
    from checker.release.answersguess import propose

    proposals = propose(facts)
    if not proposals:
        return
    entries = []
    for proposal in proposals:
        entry = block({k: flowed(v) for k, v in proposal.answer.items()})
        note(entry, "kind", f"proposed: {proposal.why}", indent=ITEM_INDENT)
        entries.append(entry)
        draft.guesses.append(f"answers '{proposal.answer['name']}': {proposal.answer['kind']}")
    doc["answers"] = block_seq(entries)


def _head(graph: str) -> str:
    return (
        f"{schema_comment()}\nWritten by `checker init` from {one_line(graph)}. Fields marked TODO are "
        "placeholders: `checker verify`\nreports each as a missing piece until it is filled in. Fields "
        "marked 'guessed' come from hints: check them."
    )


def _graph(facts: GraphFacts, source: Source, draft: Draft) -> Any:
    graph = block({"path": source.graph, "sha256": source.digests[source.graph]})
    if source.external:
        graph["external_data"] = block_seq(
            flow_map({"path": rel, "sha256": source.digests[rel]}) for rel in source.external
        )
    settings = _settings(facts)
    if facts.producer_name:
        producer = block({"tool": facts.producer_name})
        if facts.producer_version:
            producer["version"] = facts.producer_version
        producer["settings"] = settings
        graph["producer"] = producer
    else:
        graph.yaml_set_comment_before_after_key(
            "path",
            before=(
                f"{TODO}producer: the graph does not record its exporter; give the tool, its version and its\n"
                f'  settings, e.g. producer: {{tool: torch.onnx, version: "2.5.1", settings: {_flow(settings)}}}'
            ),
            indent=2,
        )
        draft.placeholders.append("graph.producer")
    return graph


def _settings(facts: GraphFacts) -> Any:
    settings: dict[str, Any] = {"ir_version": facts.ir_version}
    if "ai.onnx" in facts.opsets:
        settings["opset"] = facts.opsets["ai.onnx"]
    others = {k: v for k, v in sorted(facts.opsets.items()) if k != "ai.onnx"}
    if others:
        settings["other_opsets"] = flow_map(others)
    return flow_map(settings)


def _flow(mapping: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {_flow(v) if isinstance(v, dict) else v}" for k, v in mapping.items()) + "}"


def _tensor(spec: TensorSpec, used: set[str]) -> Any:
    entry = block({"name": spec.name})
    if spec.dtype in _dtypes():
        entry["dtype"] = spec.dtype
    shape = named_shape(spec, used)
    if shape is not None:
        entry["shape"] = flow_seq(shape)
    return entry


def _dtypes() -> tuple[str, ...]:
    return get_args(DType)


def _input(spec: TensorSpec, index: int, used: set[str], draft: Draft) -> Any:
    if spec.dtype not in _dtypes():
        raise GraphReadError(
            f"input '{spec.name}' is of type {spec.dtype}; a release describes tensor inputs ({', '.join(_dtypes())})"
        )
    entry = _tensor(spec, used)
    guess = input_guess(spec)
    if guess.layout:
        entry["layout"] = guess.layout
    entry["meaning"] = guess.meaning
    lines = [_guessed(guess, INPUT_MEANINGS), *_preprocessing_todo(guess.meaning)]
    note(entry, "meaning", *lines, indent=ITEM_INDENT)
    draft.guesses.append(f"inputs[{index}] '{spec.name}': meaning {guess.meaning}")
    draft.placeholders.append(f"inputs[{index}] '{spec.name}': preprocessing")
    return entry


def _guessed(guess: Guess, choices: str) -> str:
    said = f"guessed {guess.why}" if guess.why else "a default (the graph gives no hint)"
    return f"{said}: check it ({choices})"


def _preprocessing_todo(meaning: str) -> list[str]:
    examples = {
        "image": "{kind: image, color: RGB, resize: {mode: shorter_side, size: 256, interpolation: bilinear}, "
        "crop: {mode: center, size: [224, 224]}, scale: 0.00392156862745098, mean: [...], std: [...]}",
        "text": "{kind: text, tokenizer: tokenizer.json, max_length: 128, padding: max_length, truncation: true}",
        "audio": "{kind: audio, sample_rate: 16000, channels: 1, steps: [{decode: {library: soundfile}}, "
        "{mix: mono}, {resample: {rate: 16000}}]}",
        "tabular": "{kind: tabular, columns: [{name: age, dtype: float64, standard: {mean: 41.2, std: 12.9}}, "
        "{name: colour, dtype: string, one_hot: {categories: [red, green]}}]}  (or: checker preprocess --import "
        "skops FILE)",
    }
    example = examples.get(meaning, "{kind: custom, description: how the application makes this tensor}")
    lines = [f"{TODO}preprocessing: how an application input becomes this tensor, e.g.", f"  preprocessing: {example}"]
    if meaning == "image":
        # The fixed-order fields above are shorthand; an application with its own order declares its steps.
        lines += [
            "  or, in the application's own order (docs/preprocessing.md):",
            "  preprocessing: {kind: image, steps: [{decode: {mode: RGB}}, {resize: {height: 64, rounding: floor}}, "
            "{convert: {to: L}}, {scale: 0.00392156862745098}]}",
        ]
    return lines


def _output(spec: TensorSpec, index: int, facts: GraphFacts, used: set[str], draft: Draft) -> Any:
    entry = _tensor(spec, used)
    axis = _label_axis(spec, facts)
    guess = output_guess(spec, labelled=axis is not None)
    entry["meaning"] = guess.meaning
    lines = [_guessed(guess, OUTPUT_MEANINGS)]
    draft.guesses.append(f"outputs[{index}] '{spec.name}': meaning {guess.meaning}")
    if axis is not None and facts.labels is not None:
        note(entry, "meaning", *lines, indent=ITEM_INDENT)
        entry["labels"] = flow_map({"metadata_key": facts.labels.key, "axis": axis})
        return entry
    if guess.meaning in LABELLED:
        lines += [f"{TODO}labels: the class names, e.g. labels: {{path: labels.txt, axis: -1}} (one per line)"]
        draft.placeholders.append(f"outputs[{index}] '{spec.name}': labels")
    note(entry, "meaning", *lines, indent=ITEM_INDENT)
    return entry


def _label_axis(spec: TensorSpec, facts: GraphFacts) -> int | None:
    """The axis the metadata's class names index: the last one of their count, else another one."""
    if facts.labels is None or not spec.shape:
        return None
    count = len(facts.labels.labels)
    if spec.shape[-1] == count:
        return -1
    return next((axis for axis, dim in enumerate(spec.shape) if dim == count), None)


def _runtime(facts: GraphFacts, draft: Draft) -> Any:
    runtime = block({"name": "onnxruntime"})
    opset, ml = facts.opsets.get("ai.onnx"), facts.opsets.get("ai.onnx.ml")
    needs = f"IR {facts.ir_version}" + (f", opset {opset}" if opset else "") + (f", ai.onnx.ml {ml}" if ml else "")
    oldest = oldest_loading(facts.ir_version, opset, ml)
    if oldest is None:
        note(
            runtime,
            "name",
            f"{TODO}version: no onnxruntime release this checker knows loads {needs}; give "
            'the specifier of the runtime on the device, e.g. version: ">=1.22"',
        )
        draft.placeholders.append("runtime.version")
        return runtime
    runtime["version"] = f">={oldest.minor}"
    note(runtime, "version", f"the oldest onnxruntime that loads {needs} (the checker's support table)")
    return runtime


def _target(runtime: Any, target: str, draft: Draft) -> None:
    """runtime.target as given, and the platform a known device name implies, marked as a guess to check."""
    runtime["target"] = target
    entry = platform_of_target(target)
    if entry is None:
        return
    runtime["platforms"] = block_seq([flow_map(entry)])
    note(runtime, "platforms", "guessed from the target name: check the CPU class (`checker verify --platform target`)")
    proposed = class_name(entry["arch"], entry.get("cpu"), entry.get("features", []))
    draft.guesses.append(f"runtime.platforms: {proposed}")


def _comparison(carried: Any | None, facts: GraphFacts, draft: Draft) -> Any:
    comparison = carried if carried is not None else block()
    reference = comparison.get("reference")
    if not written.block(comparison, "reference").get("description"):
        # Where an export script's cases were stored (produced_on) is kept; the description is still to say.
        kept = reference if isinstance(reference, dict) and reference.get("produced_on") else None
        comparison["reference"] = kept if kept is not None else flow_map({})
        note(
            comparison,
            "reference",
            f"{TODO}what produced the expected outputs, e.g. "
            'reference: {description: "PyTorch 2.5.1 eager, float32, x86_64"}',
        )
        draft.placeholders.append("comparison.reference")
    if not comparison.get("cases"):
        comparison["cases"] = flow_seq([])
        note(
            comparison,
            "cases",
            f"{TODO}the inputs and the reference's outputs: add them with "
            "`checker case add` (tag the awkward ones `edge`)",
        )
        draft.placeholders.append("comparison.cases")
    if not comparison.get("rules"):
        comparison["rules"] = flow_seq([])
        note(comparison, "rules", f"{TODO}at least one, e.g. {_rule_example(facts)}")
        draft.placeholders.append("comparison.rules")
    return comparison


def _rule_example(facts: GraphFacts) -> str:
    if not facts.outputs:
        return "{output: NAME, check: allclose, atol: 1.0e-4, rtol: 1.0e-3}"
    spec = facts.outputs[0]
    name = spec.name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", spec.name) else json.dumps(spec.name)
    if spec.dtype in ("int64", "int32"):
        return f"{{output: {name}, check: exact}}"
    return f"{{output: {name}, check: allclose, atol: 1.0e-4, rtol: 1.0e-3}}"
