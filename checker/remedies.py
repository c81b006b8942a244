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
from checker.sentences import bounded

SHOWN_LABELS = 5  # misplaced labels a labels.order fix names
VALUE_CHARS = 1000  # a value from a report placed in a remedy: whole, unless a report from a file holds a flood


@dataclass(frozen=True)
class Facts:
    """What a remedy reads: the finding as in the report, the bundle's path, and the bundle's other findings
    (a failed rule's fix reads the diagnosis the same run already made)."""

    finding: F.Finding
    bundle: str = ""
    others: Sequence[F.Finding] = ()

    @property
    def details(self) -> Mapping[str, Any]:
        return self.finding.details

    def word(self, key: str) -> str | None:
        """A string fact of the finding, made safe to place in a sentence; None when absent or empty."""
        value = self.details.get(key)
        return _plain(value) if isinstance(value, str) and value else None

    def diagnosis(self, variant: str) -> Mapping[str, Any] | None:
        """The details of the diagnosis this run made of `variant`, when it made one."""
        for other in self.others:
            if other.id == F.VARIANT_DIAGNOSIS and other.details.get("variant") == variant:
                return other.details
        return None


Remedy = Callable[[Facts], str]
"""The facts of one finding -> one sentence."""


def _fixed(sentence: str) -> Remedy:
    return lambda _facts: sentence


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _plain(value: str) -> str:
    """A value from a report, placed in a remedy: no backtick, so a renderer can tell code spans apart; whole,
    or cut after a sentence or between words outside a parenthesis (a cut inside one left a `(` unclosed)."""
    return bounded(value.replace("`", "'"), VALUE_CHARS)


def _quoted(path: str) -> str:
    """A path for a command line the reader copies: quoted only when it needs to be."""
    path = _plain(path)
    return path if path and all(c.isalnum() or c in "/._-+" for c in path) else "'" + path.replace("'", "") + "'"


def _digest(facts: Facts) -> str:
    if facts.details.get("definition") == 1:  # written by the digest's earlier definition: the files are as locked
        return f"run `checker lock {_quoted(facts.bundle or '.')}` to write the digest by its current definition"
    what = facts.word("path")
    fields = facts.details.get("fields_changed")
    edited = not what and isinstance(fields, list) and fields and facts.finding.message.startswith("manifest field")
    restore = f"restore {what}" if what else "undo the edit of the field named" if edited else "restore the file"
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
    moved = facts.details.get("misplaced")
    unseen = _int(facts.details.get("unseen"))
    if isinstance(moved, list) and moved and unseen:
        placed = [m for m in moved if isinstance(m, Mapping) and isinstance(m.get("label"), str)][:SHOWN_LABELS]
        said = ", ".join(f"`{_plain(str(m['label']))}` at index {_int(m.get('index'))}" for m in placed)
        return (
            f"put {said}, as the cases show; no case picks the {unseen} other indices, so check those against the "
            "labels the model was trained with (the file is likely shifted or reordered there too)"
        )
    return "put each label at the index the reference output gives its class (the finding names the swapped ones)"


def _excluded(diagnosis: Mapping[str, Any]) -> list[str]:
    nodes = diagnosis.get("nodes_to_exclude")
    return [_plain(n) for n in nodes if isinstance(n, str)][:20] if isinstance(nodes, list) else []


def _rule(facts: Facts) -> str:
    graph, worst = facts.word("graph"), facts.word("worst_case")
    if graph is not None and graph != "baseline":
        diagnosis = facts.diagnosis(graph)
        if diagnosis is not None:
            return _measured(diagnosis, facts.bundle, graph)
        look = f"look at the worst case '{worst}'" if worst else "look at the worst case"
        where = f"`checker diagnose {_quoted(facts.bundle or '.')} --variant {_quoted(graph)}`"
        return f"{look}; {where} names the node where the variant starts to diverge: change the conversion there"
    look = f"look at the worst case '{worst}'" if worst else "look at the worst case"
    return f"{look}: the graph or its reference outputs changed; re-export the graph or regenerate the references"


def _search_command(bundle: str, graph: str) -> str:
    return f"`checker diagnose {_quoted(bundle or '.')} --variant {_quoted(graph)} --requantize`"


def _measured(diagnosis: Mapping[str, Any], bundle: str, graph: str) -> str:
    """A diagnosed variant's first fix: what the measured search found (the figure it got, in the visible line),
    or, when it found nothing or could not run, "not measured" and the command that measures it. A node
    exclusion is never shown first unmeasured: it made the worst case worse where the calibration was wrong."""
    measured = diagnosis.get("measured")
    outcome = measured.get("outcome") if isinstance(measured, Mapping) else None
    command = _search_command(bundle, graph)
    if outcome == "recorded" and isinstance(measured, Mapping):
        count = _int(measured.get("calibration_cases"))
        calibrated = (
            "its settings and calibration cases"
            if measured.get("calibration_declared") is True
            else f"its settings, calibrated on the bundle's {count} cases as the record names none"
        )
        return (
            f"the shipped graph is not what its record makes: quantize it again as recorded "
            f"({_plain(str(measured.get('tool')))}, {calibrated}) and ship that graph, measured: "
            f"{_figures(measured)}. `checker diagnose {_quoted(bundle or '.')} --reproduce {_quoted(graph)}` shows "
            "where the shipped graph differs from the re-run"
        )
    if outcome == "found" and isinstance(measured, Mapping):
        return (
            f"re-quantize with {_change(measured)}: measured, {_figures(measured)}. {command} lists every attempt "
            "and the size and speed of the graph it makes"
        )
    nodes = _excluded(diagnosis)
    if outcome in ("none", "budget") and isinstance(measured, Mapping):
        tried = [_plain(str(t)) for t in measured.get("tried") or []][:6]
        ended = (
            f"the search ran out of its {_seconds(measured.get('budget_s'))} of CPU time"
            if outcome == "budget"
            else "no change the search tried passes"
        )
        said = f" (tried: {'; '.join(tried)})" if tried else ""
        return (
            f"not measured to pass: re-running the recorded transform gives {_figures(measured)}, and {ended}{said}. "
            f"{command} searches further (`--search-budget`); else change the conversion or its calibration data"
        )
    why = measured.get("reason") if isinstance(measured, Mapping) else None
    because = f"; {_plain(why)}" if isinstance(why, str) and why else ""
    if isinstance(measured, Mapping) and measured.get("rerunnable") is False:  # no search can re-run the tool
        case = diagnosis.get("case")
        on = f" on case '{_plain(case)}'" if isinstance(case, str) else ""
        where = f" at `{', '.join(nodes)}`" if nodes else ""
        return (
            f"not measured{because}: change the conversion where the diagnosis{on} found the variant leaving the "
            f"baseline{where}, then verify again"
        )
    if nodes:
        return _unmeasured(nodes, diagnosis, bundle, graph) + because
    return (
        "not measured: the diagnosis found no node to keep in float (the error is spread over the graph); "
        f"{command} re-runs the recorded transform, then with the settings onnxruntime offers "
        f"(16-bit activations, per-channel weights, another calibration), and names the change that passes{because}"
    )


def _change(measured: Mapping[str, Any]) -> str:
    """The passing change in the transform's own words: its settings, then the nodes it keeps in float."""
    settings = measured.get("settings")
    said = [f"{k}={v!r}" for k, v in settings.items()] if isinstance(settings, Mapping) else []
    nodes = measured.get("nodes_to_exclude")
    if isinstance(nodes, list) and nodes:
        said.append(f"nodes_to_exclude={[str(n) for n in nodes][:20]!r}")
    return "`" + _plain(", ".join(said) or "the recorded settings") + "`"


def _figures(measured: Mapping[str, Any]) -> str:
    """Each rule's figure: "logits score_drift from 0.3545 to 0.0169 (max 0.05), passes"."""
    out = []
    for rule in (measured.get("rules") or [])[:4]:
        if not isinstance(rule, Mapping):
            continue
        before, after, limit = rule.get("before"), rule.get("after"), rule.get("limit")
        moved = f"from {_num(before)} to {_num(after)}" if before != after else _num(after)
        bound = f" ({'max' if rule.get('direction') == 'max' else 'min'} {_num(limit)})" if limit is not None else ""
        verdict = "passes" if rule.get("passed") else "fails"
        out.append(f"{_plain(str(rule.get('output')))} {_plain(str(rule.get('check')))} {moved}{bound}, {verdict}")
    return "; ".join(out) or "every rule passes"


def _num(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _seconds(value: object) -> str:
    return f"{value:g} s" if isinstance(value, (int, float)) and not isinstance(value, bool) else "budget"


def _exclude(nodes: list[str], diagnosis: Mapping[str, Any]) -> str:
    case = diagnosis.get("case")
    on = f" on case '{_plain(case)}'" if isinstance(case, str) else ""
    listed = "[" + ", ".join(repr(n) for n in nodes) + "]"
    return (
        f"re-quantize with `nodes_to_exclude={listed}`: the diagnosis{on} found the variant leaving the baseline "
        "there (or change the conversion of those nodes)"
    )


def _unmeasured(nodes: list[str], diagnosis: Mapping[str, Any], bundle: str, graph: str) -> str:
    """The diagnosis's nodes as a fix that says it was not measured, and the command that measures it: an
    exclusion proposed unmeasured made the worst case worse where the calibration, not a node, was wrong."""
    case = diagnosis.get("case")
    on = f" on case '{_plain(case)}'" if isinstance(case, str) else ""
    listed = "[" + ", ".join(repr(n) for n in nodes) + "]"
    command = f"`checker diagnose {_quoted(bundle or '.')} --variant {_quoted(graph)} --requantize`"
    return (
        f"not measured: {command} measures it (it re-runs the recorded transform first, then with "
        f"`nodes_to_exclude={listed}`, where the diagnosis{on} found the variant leaving the baseline, and names "
        "the first change that makes the rule pass)"
    )


def _diagnosis(facts: Facts) -> str:
    variant = facts.word("variant")
    if variant is not None and "measured" in facts.details:
        return _measured(facts.details, facts.bundle, variant)
    nodes = _excluded(facts.details)
    if nodes and variant is not None:
        return _unmeasured(nodes, facts.details, facts.bundle, variant)
    if nodes:
        return _exclude(nodes, facts.details)
    return "change the conversion at the node named (or exclude it from quantization)"


def _fidelity(facts: Facts) -> str:
    # The best single edit alone: the whole explanation (its measure, the tensors it builds the same) is the
    # message's, and said again here it named the cause twice.
    explanation = facts.word("edit") or facts.word("explanation")
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
        "restore the base's rule or setting; if the weaker check is meant, the reviewer who accepts it merges past "
        "this failed check (the message says which rule or setting and both values)"
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
    F.ATTESTATION_STRICT: _fixed(
        "verify the bundle in full here, or attest it again from a run with --strict where every check ran"
    ),
    F.ATTESTATION_PLATFORMS: _fixed(
        "attest the bundle again from a run that judged every declared platform (--platform target), or verify it "
        "in full here"
    ),
    F.SIGNATURE_STALE: _fixed(
        "sign the bundle again (`checker sign`, or `checker pack --sign`), or restore the files it signed"
    ),
    F.STORE_REUSED: _fixed(
        "nothing to do for a reused pass; for a reused failure, fix what the run that stored it found (its report), "
        "then the changed bundle runs again"
    ),
    F.STORE_REFUSED: _fixed(
        "remove the entry the message names from the store, and find out who wrote it; only a trusted run with "
        "--attest writes the store"
    ),
    F.STORE_NOT_REUSED: _fixed("nothing to do: the bundle ran, and a run with --attest stores its verdict"),
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
        "install what the message names (qemu-user for an x86-64-v2 or v3 class, chromium for a browser platform, "
        "nodejs and npm for node) and run once online to fill the cache, or run this platform as a matrix leg on a "
        "machine of its class"
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
    F.COMPARISON_SENTINEL: _fixed(
        "run the graph on that platform with the case named and look at its intermediate tensors (the finding's "
        "graph and output); a backend that writes nothing or NaN needs another backend, precision or version there"
    ),
    F.COMPARISON_ENVELOPE: _fixed(
        "run the graph at the size the finding names on that platform, and fix the graph or the backend there; "
        "an envelope a release cannot hold is declared smaller, with the application refusing larger inputs"
    ),
    F.DEVICE_OUTPUTS: _fixed(
        "run the device kit of this release (checker device-kit) on the device again and send back the whole folder "
        "its runner writes: every graph on every case, regular files only"
    ),
    F.DEVICE_EXTRA: _fixed(
        "send back only what the device kit of this release asks for: make the kit of this release with checker "
        "device-kit, and check the names the runner writes"
    ),
    F.DEVICE_PREPROCESSING: _fixed(
        "change the application's preprocessing, or the manifest's declaration, so that the two agree: the "
        "finding names the single edit that makes the declared steps build the application's tensor"
    ),
    F.PLATFORM_DIVERGENCE: _fixed(
        "attach the reproduction folder the finding names to an issue of the runtime on the wrong side (it reruns "
        "with plain onnxruntime), and keep the node it names off that backend until it is fixed"
    ),
    F.PLATFORM_FALLBACK: _fixed(
        "replace the named operators with ones the backend runs (its operator list in onnxruntime-web's docs), or "
        "accept the CPU round trip; with runtime.fallback: forbid this is an error"
    ),
    F.RUNTIME_OPT_LEVEL: _fixed(
        "open the application's sessions at the level that holds, or with the named optimizer in "
        "disabled_optimizers; else re-make the graph so that it holds at every declared level"
    ),
    F.COMPARISON_NONDETERMINISTIC: _fixed(
        "remove the random nodes from the shipped graph (or replace them by constants): onnxruntime draws new "
        "numbers on every run, seeded or not"
    ),
    F.ANSWERS_INVALID: _fixed(
        "make the answer's `from`, steps and decoder fit the graph's outputs (docs/answers.md), or store the "
        "answer file in its kind's format"
    ),
    F.ANSWERS_FIDELITY: _fixed(
        "make the declared answer say what the application does: apply the single edit the finding names, or "
        "store the answer the application shows again"
    ),
    F.ANSWERS_NEAR_THRESHOLD: _fixed(
        "keep these cases: they are where the decision is fragile; tag them `edge` so that a rule can judge them apart"
    ),
    F.ANSWERS_VACUOUS: _fixed(
        "add cases on which the reference shows something (a box, a string) so that the rule judges an answer"
    ),
    F.INTERNAL_ERROR: _fixed("report the bug with the traceback from details.traceback; the later stages did not run"),
}


def remedy(finding: F.Finding, bundle: str = "", others: Sequence[F.Finding] = ()) -> str:
    """The next step for one finding of the report, read from its facts and the bundle's `others` findings;
    unknown ids get a general one."""
    found = REMEDIES.get(finding.id)
    if found is None:
        return "see docs/findings.md for this finding id"
    return found(Facts(finding, bundle, others))


def finding_ids() -> list[str]:
    """Every finding id `checker/findings.py` defines (its upper-case string constants)."""
    return sorted({v for k, v in vars(F).items() if k.isupper() and isinstance(v, str) and "." in v})
