"""The next step for each finding id: one table, read by every renderer (text, Markdown, JUnit).

A remedy says what to change so the finding goes away. It never suggests loosening a threshold: a
rule that fails is answered by looking at its worst case and at where the variant diverges, since a
wider tolerance would only hide the change the rule exists to catch. docs/findings.md lists the same
table; a test keeps the two, and `checker/findings.py`, in step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checker import findings as F


@dataclass(frozen=True)
class Facts:
    """What a remedy reads: the finding as in the report, the bundle's path, and the bundle's other findings
    (a failed rule's fix reads the diagnosis the same run already made)."""

    finding: Mapping[str, Any]
    bundle: str = ""
    others: Sequence[Mapping[str, Any]] = ()

    @property
    def details(self) -> Mapping[str, Any]:
        found = self.finding.get("details")
        return found if isinstance(found, Mapping) else {}

    def word(self, key: str) -> str | None:
        """A string fact of the finding, made safe to place in a sentence; None when absent or empty."""
        value = self.details.get(key)
        return _plain(value) if isinstance(value, str) and value else None

    def diagnosis(self, variant: str) -> Mapping[str, Any] | None:
        """The details of the diagnosis this run made of `variant`, when it made one."""
        for other in self.others:  # read as given (a report's list may hold anything): checked one by one
            if not isinstance(other, Mapping):
                continue
            details = other.get("details")
            if (
                other.get("id") == F.VARIANT_DIAGNOSIS
                and isinstance(details, Mapping)
                and details.get("variant") == variant
            ):
                return details
        return None


Remedy = Callable[[Facts], str]
"""The facts of one finding -> one sentence."""


def _fixed(sentence: str) -> Remedy:
    return lambda _facts: sentence


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _plain(value: str) -> str:
    """A value from a report, placed in a remedy: no backtick, so a renderer can tell code spans apart."""
    return value.replace("`", "'")[:200]


def _quoted(path: str) -> str:
    """A path for a command line the reader copies: quoted only when it needs to be."""
    path = _plain(path)
    return path if path and all(c.isalnum() or c in "/._-+" for c in path) else "'" + path.replace("'", "") + "'"


def _digest(facts: Facts) -> str:
    what = facts.word("path")
    restore = f"restore {what}" if what else "restore the file"
    return f"{restore}, or, if the change is intended, run `checker lock {_quoted(facts.bundle or '.')}`"


def _labels_count(facts: Facts) -> str:
    expected, actual = _int(facts.details.get("expected")), _int(facts.details.get("actual"))
    if expected is None or actual is None:
        return "make the label mapping hold one label per entry of the labelled axis"
    if actual < expected:
        return f"add the {expected - actual} missing labels: the output has {expected} entries, the mapping {actual}"
    return f"remove the {actual - expected} extra labels: the output has {expected} entries, the mapping {actual}"


def _labels_order(facts: Facts) -> str:
    implied = facts.details.get("implied")
    if isinstance(implied, list) and implied and all(isinstance(x, str) for x in implied):
        return "write the labels in the order the cases imply: " + _plain(", ".join(implied[:20]))
    return "put each label at the index the reference output gives its class (the finding names the swapped ones)"


def _excluded(diagnosis: Mapping[str, Any]) -> list[str]:
    nodes = diagnosis.get("nodes_to_exclude")
    return [_plain(n) for n in nodes if isinstance(n, str)][:20] if isinstance(nodes, list) else []


def _rule(facts: Facts) -> str:
    graph, worst = facts.word("graph"), facts.word("worst_case")
    if graph is not None and graph != "baseline":
        diagnosis = facts.diagnosis(graph)
        nodes = _excluded(diagnosis) if diagnosis is not None else []
        if nodes:  # the diagnosis already ran: its answer is the fix, not a command that repeats it
            return _exclude(nodes, diagnosis or {})
        if diagnosis is not None:  # it ran and no node stands out: the error is spread over the graph
            search = f"`checker diagnose {_quoted(facts.bundle or '.')} --variant {_quoted(graph)} --requantize`"
            return (
                "the diagnosis found no node to keep in float (the error is spread over the graph): "
                f"{search} re-runs the transform with the settings onnxruntime offers (16-bit activations, "
                "per-channel weights, another calibration) and reports the change that passes"
            )
        look = f"look at the worst case '{worst}'" if worst else "look at the worst case"
        where = f"`checker diagnose {_quoted(facts.bundle or '.')} --variant {_quoted(graph)}`"
        return f"{look}; {where} names the node where the variant starts to diverge: change the conversion there"
    look = f"look at the worst case '{worst}'" if worst else "look at the worst case"
    return f"{look}: the graph or its reference outputs changed; re-export the graph or regenerate the references"


def _exclude(nodes: list[str], diagnosis: Mapping[str, Any]) -> str:
    case = diagnosis.get("case")
    on = f" on case '{_plain(case)}'" if isinstance(case, str) else ""
    listed = "[" + ", ".join(repr(n) for n in nodes) + "]"
    return (
        f"re-quantize with `nodes_to_exclude={listed}`: the diagnosis{on} found the variant leaving the baseline "
        "there (or change the conversion of those nodes)"
    )


def _diagnosis(facts: Facts) -> str:
    nodes = _excluded(facts.details)
    if nodes:
        return _exclude(nodes, facts.details)
    return "change the conversion at the node named (or exclude it from quantization)"


def _fidelity(facts: Facts) -> str:
    explanation = facts.word("explanation")
    if explanation is None:
        return "correct the preprocessing fields if they differ from the model's, or regenerate the tensor from its raw input with `checker preprocess`"  # noqa: E501
    # The explanation says the two sides differ by one edit; which side is wrong only the author knows, and a
    # raw file that is itself the edited one (a photo saved with its channels swapped) would carry the edit
    # into a regenerated tensor, so rebuilding is the last step, not the first.
    return (
        f"the stored tensor was made {explanation}: if the model was trained that way, declare it in the "
        "manifest's preprocessing; if not, check that the raw file is the original (not itself the edited one), "
        "then rebuild the stored tensor from it with `checker preprocess`"
    )


def _bundle_path(facts: Facts) -> str:
    if facts.word("archive") is not None and facts.details.get("unreadable") is True:
        return "the archive is damaged or cut short: pack the bundle again (`checker pack`) and upload the whole file"
    if facts.word("archive") is not None:
        return "pack the bundle again from its folder with `checker pack`: it holds only files, none leaving it"
    return "name the file by a path inside the bundle: relative, no `..`, no link leaving it"


def _dynamic_axes(facts: Facts) -> str:
    node = facts.word("node")
    fix = "or fix the axis in the manifest with an int"
    if node is not None:
        return f"re-export so that {node} keeps the batch dynamic (reshape with 0 or -1 there), {fix}"
    return f"re-export so that no node mixes the items of a batch (each item's output must depend on it alone), {fix}"


def _missing_piece(facts: Facts) -> str:
    piece = facts.word("piece")
    named = f"the {piece.replace('_', ' ')} piece" if piece else "the missing piece"
    return f"add {named} to the manifest (`checker schema` prints its fields; `checker init` drafts one from a graph)"


REMEDIES: dict[str, Remedy] = {
    F.MANIFEST_PARSE: _fixed("fix the syntax at the line named; `checker schema` prints the expected structure"),
    F.MANIFEST_SCHEMA: _fixed("correct the field as the message says; `checker schema` prints every field"),
    F.MANIFEST_VERSION: _fixed("write `manifest_version: 1` as an integer, or upgrade the checker"),
    F.MISSING_PIECE: _missing_piece,
    F.BUNDLE_PATH: _bundle_path,
    F.FILE_MISSING: _fixed("add the file to the bundle, or correct its path in the manifest"),
    F.DIGEST: _digest,
    F.UNLISTED: _fixed("name the file in the manifest, or remove it from the bundle folder"),
    F.BUNDLE_LIMIT: _fixed("bring the bundle under the limit named (fewer or smaller files)"),
    F.GRAPH_INVALID: _fixed("re-export or repair the graph until the ONNX checker accepts it"),
    F.GRAPH_EXTERNAL_DATA: _fixed(
        "list every external-data file in graph.external_data and re-save the graph so each reference fits its file"
    ),
    F.GRAPH_IO: _fixed("make inputs and outputs match the graph's names, dtypes and shapes"),
    F.GRAPH_DYNAMIC_AXES: _dynamic_axes,
    F.GRAPH_PRODUCER: _fixed("add graph.producer (tool, version, settings) so the export can be repeated"),
    F.LABELS_COUNT: _labels_count,
    F.LABELS_DUPLICATE: _fixed("make every label unique"),
    F.LABELS_INVALID: _fixed("write the labels as text (one a line) or as a JSON list or mapping"),
    F.LABELS_ORDER: _labels_order,
    F.RUNTIME_OPSET: _fixed(
        "raise runtime.version's lower bound to an onnxruntime that loads this IR and opset, or export at a lower opset"
    ),
    F.RUNTIME_VERSION: _fixed(
        'write runtime.version as a PEP 440 specifier (e.g. ">=1.17,<2") and verify with an onnxruntime it admits'
    ),
    F.RUNTIME_PROVIDER: _fixed("verify on a machine with the declared execution provider, or declare the one used"),
    F.INPUTS_RANGE: _fixed("regenerate the case tensor with the declared preprocessing (`checker preprocess`)"),
    F.INPUTS_FIDELITY: _fidelity,
    F.INPUTS_NOT_REBUILT: _fixed("install the extra named (pip install 'onnx-release-checker[image,text]')"),
    F.INPUTS_TOKENIZER_SETTINGS: _fixed(
        "make sure the application sets what the declaration says after loading the file (as the checker does, "
        "the declaration wins); if the application keeps the file's settings, declare those instead"
    ),
    F.COMPARISON_COVERAGE: _fixed("add cases for what is missing (`checker case add`), at least one edge case"),
    F.COMPARISON_CASE: _fixed("make the case's tensors match the graph's inputs and outputs (names, dtypes, shapes)"),
    F.COMPARISON_NAN: _fixed(
        "find the node that makes NaN or infinity: `checker diagnose PATH --variant NAME` for a variant"
    ),
    F.COMPARISON_RULE: _rule,
    F.COMPARISON_NOT_RUN: _fixed("fix the errors above that stopped the comparison"),
    F.COMPARISON_RUNTIME: _fixed("make the graph load and run in onnxruntime here (the message holds its error)"),
    F.RULES_LOOSENED: _fixed(
        "restore the base's rule; if the weaker rule is meant, the reviewer who accepts it merges past this failed "
        "check (the message says which rule and both values)"
    ),
    F.VARIANT_NO_GAIN: _fixed(
        "ship the variant only if it gains: change the transform (a format or types the runtime accelerates), "
        "or drop the variant"
    ),
    F.COMPARISON_TOO_FEW_CASES: _fixed(
        "add labelled cases to the slice until the interval named in the message no longer holds the threshold"
    ),
    F.VARIANT_NOT_ASSESSED: _fixed(
        "fix what the message names first (the variant's graph, or the graph it derives from); it is judged then"
    ),
    F.VARIANT_TRANSFORM: _fixed(
        "record the variant's transform (tool, version, settings) as it ran; re-run it if the graph shows no trace"
    ),
    F.ATTESTATION_UNTRUSTED: _fixed(
        "get the attestation from the release's publisher, or trust the key that signed it"
    ),
    F.ATTESTATION_SUBJECT: _fixed("get the attestation made for this very bundle, or verify it in full without one"),
    F.ATTESTATION_FAILED: _fixed("do not ship this bundle: the attested verification failed"),
    F.ATTESTATION_ACCEPTED: _fixed("nothing to do: run without --require-attestation to judge the bundle again"),
    F.ATTESTATION_RERUN_DIFFERS: _fixed(
        "do not ship on this attestation: this machine judges the comparison otherwise; find why (runtime, CPU) first"
    ),
    F.SIGNATURE_MISSING: _fixed("sign the bundle with `checker sign` before it is shipped"),
    F.SIGNATURE_UNTRUSTED: _fixed("get the bundle from its publisher again, or trust the key that signed it"),
    F.SIGNATURE_PATH: _fixed("do not trust this signature: sign the bundle again with `checker sign`"),
    F.SIGNATURE_FILE_ADDED: _fixed("remove the file added since signing, or sign the bundle again"),
    F.SIGNATURE_FILE_REMOVED: _fixed("restore the signed file, or sign the bundle again"),
    F.SIGNATURE_FILE_CHANGED: _fixed("restore the signed file, or sign the bundle again"),
    F.VARIANT_DIAGNOSIS: _diagnosis,
    F.VALIDATION_FAILED: _fixed("run the validation command locally and fix what its output shows"),
    F.VALIDATION_NOT_RUN: _fixed("pass --run-validation, on a trusted bundle only, to run it"),
    F.STAGE_SKIPPED: _fixed("fix the errors that stopped the earlier stage; this one then runs"),
    F.RUNTIME_LOAD: _fixed(
        "export at an opset that runtime loads, or raise runtime.version's lower bound above it (the message holds "
        "its error)"
    ),
    F.RUNTIME_INSTALL: _fixed(
        "name a release with a wheel for this Python and platform, or fill the cache (run once online, or give "
        "--find-links)"
    ),
    F.REPORT_MERGE: _fixed("merge the reports of every shard: run the missing --shard K/N job and pass its report"),
    F.RUNTIME_THREADS: _fixed("ask for no more threads than the target device has CPUs (0 lets onnxruntime choose)"),
    F.PLATFORM_NOT_RUN: _fixed(
        "install qemu-user (apt-get install qemu-user) for an x86-64-v2 or v3 class, or run this platform as a "
        "matrix leg on a machine of its class"
    ),
    F.RUNTIME_FALLBACK: _fixed(
        "declare the providers that run the graph as it ships, or re-make the graph so that the declared provider "
        "takes the nodes it names (their operators, shapes or types); with runtime.fallback: allow it may fall back"
    ),
    F.RUNTIME_USABILITY: _fixed(
        "compare the graph with the declared mobile provider on the device against the CPU provider, or fix its "
        "shapes (python -m onnxruntime.tools.make_dynamic_shape_fixed) and the operators the check names"
    ),
    F.PLATFORM_KERNEL: _fixed(
        "set the session option the finding measured (session.x64quantprecision=1) in the application, or "
        "re-quantize with reduce_range=True or U8U8"
    ),
    F.RUNTIME_OPT_LEVEL: _fixed(
        "open the application's sessions at the level that holds, or with the named optimizer in "
        "disabled_optimizers; else re-make the graph so that it holds at every declared level"
    ),
    F.COMPARISON_NONDETERMINISTIC: _fixed(
        "remove the random nodes from the shipped graph (or replace them by constants): onnxruntime draws new "
        "numbers on every run, seeded or not"
    ),
    F.INTERNAL_ERROR: _fixed("report the bug with the traceback from details.traceback; the later stages did not run"),
}


def remedy(finding: Mapping[str, Any], bundle: str = "", others: Sequence[Mapping[str, Any]] = ()) -> str:
    """The next step for one finding of the report (a JSON-shaped dict), read from its facts and the bundle's
    `others` findings; unknown ids get a general one."""
    fid = finding.get("id")
    found = REMEDIES.get(fid) if isinstance(fid, str) else None
    if found is None:
        return "see docs/findings.md for this finding id"
    return found(Facts(finding, bundle, others))


def finding_ids() -> list[str]:
    """Every finding id `checker/findings.py` defines (its upper-case string constants)."""
    return sorted({v for k, v in vars(F).items() if k.isupper() and isinstance(v, str) and "." in v})
