"""`checker init DIR`: a bundle from a model folder in a convention a large tool reads (release/hubfolder.py).

The baseline graph starts the manifest as `checker init MODEL` does; then what the folder's own files say is
written into it: the preprocessing (the image processor's `preprocessor_config.json`, the tokenizer with its
configuration, Ultralytics' letterbox), the class names, the answers the task gives, cases made from raw inputs
with the baseline graph's outputs as their reference, and every dtype file recorded as a variant by the
`variant add` code, so each is judged against the baseline on those cases.
"""

from __future__ import annotations

import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.errors import UsageError
from checker.manifest import written
from checker.manifest.schema import SCHEMA_FILE
from checker.release.casestore import CASES_DIR
from checker.release.hubfolder import ModelFolder, id2label, inside, recognise
from checker.release.init import InitResult, init_bundle
from checker.release.tree import DEFAULT_NAME, block, drop_note, flow_map, flow_seq, flowed, note, read_tree, write_tree

REFERENCE = "baseline graph, made by checker init"
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".webp", ".gif", ".tif", ".tiff"}
TEXT_SUFFIXES = {".txt"}
AUDIO_SUFFIXES = {".wav", ".flac", ".ogg", ".mp3"}
MAX_RAW = 256  # raw inputs made into cases; a folder holding more is a data set, not a release's cases
LABELS_FILE = "labels.txt"
BASELINE_RULE = {"check": "allclose", "atol": 1.0e-5, "rtol": 1.0e-4}
# The baseline's answers held to its own, for the kinds whose rule needs a bound stated.
ANSWER_BOUNDS: dict[str, dict[str, Any]] = {"embedding": {"min_cosine": 0.9999}, "mask": {"min_iou": 0.99}}
ITEM_INDENT = 4


@dataclass
class FolderResult:
    layout: str
    said: list[str]
    init: InitResult
    filled: list[str] = field(default_factory=list)  # what the folder's files gave the manifest
    cases: list[str] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)


def init_folder(
    root: Path,
    raw: Path | None = None,
    *,
    name: str | None = None,
    version: str | None = None,
    force: bool = False,
    device: str | None = None,
) -> FolderResult:
    if raw is not None and not raw.is_dir():
        raise UsageError(f"--raw {raw}: no such folder")
    folder = recognise(root)  # the chunk map is checked here, before any graph is read
    made = [
        p for p in (root / DEFAULT_NAME, root / SCHEMA_FILE, root / LABELS_FILE, root / CASES_DIR) if not p.exists()
    ]
    init = init_bundle(folder.baseline, root, name=name, version=version, force=force, device=device)
    try:
        return _complete(folder, init, raw, force)
    except BaseException:
        for path in made:  # a bundle that could not be completed is not left half-written
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
        raise


def _complete(folder: ModelFolder, init: InitResult, raw: Path | None, force: bool) -> FolderResult:
    result = FolderResult(folder.layout, folder.said, init)
    tree = read_tree(init.manifest)
    _fill(tree, folder, result)
    write_tree(tree, init.manifest)
    if raw is not None:
        result.cases = _cases(init.manifest, folder, raw, force)
        result.filled += ["comparison.reference", "comparison.cases", "comparison.rules"]
    else:
        result.todo.append("no cases: give raw inputs with --raw DIR (or add them with `checker case add`)")
    _variants(folder, result)
    _shipped(init.manifest, result)
    result.todo = [p for p in init.placeholders if not _done(p, result.filled)] + result.todo
    return result


def _shipped(manifest: Path, result: FolderResult) -> None:
    """The folder's other files (its README, the configs read here) in `release.files`: named, so the bundle
    digest covers them and `checker verify --strict` finds none unlisted. What sits beside a manifest about the
    bundle (its schema copy, digest list and signature) is left out, as the files stage leaves it out; so is
    what is no plain file (a link, a FIFO) or no name the manifest can hold. A folder of more files than the
    field holds gets none listed, and a line to do."""
    from checker.bundle.paths import walk_files, walked_name
    from checker.checks.files import written_beside
    from checker.checks.folder import MAX_WALK
    from checker.manifest.model.common import MAX_PATH
    from checker.manifest.model.release import MAX_RELEASE_FILES
    from checker.manifest.named import named_files
    from checker.manifest.yamltree import to_plain
    from checker.release.tree import block_seq

    tree, root = read_tree(manifest), manifest.parent
    named = {walked_name(n.rel) for n in named_files(to_plain(tree), root)} | set(written_beside(manifest.name))
    others = [rel for rel in walk_files(root, MAX_WALK) if rel not in named and _plain_file(root, rel, MAX_PATH)]
    if not others:
        return
    if len(others) > MAX_RELEASE_FILES:
        result.todo.append(f"release.files: the folder has {len(others)} other files, more than it holds: name them")
        return
    tree["release"]["files"] = block_seq(others)
    note(tree["release"], "files", "the folder's other files, shipped and digested, not judged", indent=ITEM_INDENT)
    write_tree(tree, manifest)
    result.filled.append(f"release.files: {len(others)} other files of the folder, named so the digest covers them")


def _plain_file(root: Path, rel: str, longest: int) -> bool:
    """A regular file, not a link, whose name a manifest can hold (UTF-8, within the path bound)."""
    try:
        rel.encode("utf-8")
        return len(rel) <= longest and stat.S_ISREG((root / rel).lstat().st_mode)
    except (UnicodeEncodeError, OSError):
        return False


def _done(placeholder: str, filled: list[str]) -> bool:
    key = placeholder.rpartition(": ")[2] if ": " in placeholder else placeholder
    return key in filled or placeholder in filled


def _fill(tree: Any, folder: ModelFolder, result: FolderResult) -> None:
    from checker.release.hubprep import preprocessing

    inputs = written.entries(tree, "inputs")
    for index, entry in enumerate(inputs):
        prep = preprocessing(folder, entry, inputs)
        if prep is not None:
            entry["preprocessing"] = flow_map(prep.block)
            drop_note(entry, "meaning")
            note(entry, "preprocessing", f"imported: {prep.why}", indent=ITEM_INDENT)
            result.filled.append(f"inputs[{index}] '{entry['name']}': preprocessing")
    _labels(tree, folder, result)
    _answers(tree, folder, result)
    tree["validation"] = flow_map({"command": "checker verify bundle.yaml"})
    drop_note(tree, "validation")
    result.filled.append("validation.command")


def _labels(tree: Any, folder: ModelFolder, result: FolderResult) -> None:
    labels = id2label(folder.config)
    if labels is None:
        return
    for index, entry in enumerate(written.entries(tree, "outputs")):
        shape = written.items(entry, "shape")
        if entry.get("meaning") in ("logits", "probabilities", "scores") and shape and shape[-1] == len(labels):
            inside(folder.root, LABELS_FILE).write_text("\n".join(labels) + "\n", encoding="utf-8")
            entry["labels"] = flow_map({"path": LABELS_FILE, "axis": -1})
            drop_note(entry, "meaning")
            note(entry, "labels", f"from config.json's id2label ({len(labels)} classes)", indent=ITEM_INDENT)
            result.filled.append(f"outputs[{index}] '{entry['name']}': labels")


def _answers(tree: Any, folder: ModelFolder, result: FolderResult) -> None:
    from checker.release.hubanswers import answers_for

    proposed = answers_for(folder, tree)
    if not proposed:
        return
    from checker.release.tree import block_seq

    entries = block_seq()
    outputs = {str(o.get("name")): o for o in written.entries(tree, "outputs")}
    for proposal in proposed:
        shown = outputs.get(str(proposal.answer.get("from")))
        if proposal.answer["kind"] == "detections" and shown is not None and shown.get("meaning") == "other":
            shown["meaning"] = "boxes"
            drop_note(shown, "meaning")
            note(shown, "meaning", "the detections answer's rows", indent=ITEM_INDENT)
        entry = block({k: flowed(v) for k, v in proposal.answer.items()})
        note(entry, "kind", f"proposed: {proposal.why}", indent=ITEM_INDENT)
        entries.append(entry)
    if "answers" in tree:
        tree["answers"] = entries
    else:  # where `checker init` writes it: after the outputs it reads
        tree.insert(list(tree).index("outputs") + 1, "answers", entries)
    result.filled.append("answers")


def _raw_input(tree: Any, path: Path) -> str | None:
    """The input a raw file feeds: the one whose preprocessing reads that kind of file."""
    suffix = path.suffix.lower()
    kind = "image" if suffix in IMAGE_SUFFIXES else "text" if suffix in TEXT_SUFFIXES else None
    kind = "audio" if suffix in AUDIO_SUFFIXES else kind
    for entry in written.entries(tree, "inputs"):
        if written.block(entry, "preprocessing").get("kind") == kind:
            return str(entry["name"])
    return None


def _cases(manifest: Path, folder: ModelFolder, raw: Path, replace: bool) -> list[str]:
    """One case per raw input: its tensors made by the declared preprocessing, its expected outputs by the
    baseline graph; the manifest's reference says so, and the rules hold the baseline to itself."""
    import onnxruntime as ort

    from checker.preprocess.running import rebuild_file
    from checker.release.casestore import NewCase, add_case

    tree = read_tree(manifest)
    files = sorted(p for p in raw.iterdir() if p.is_file() and _raw_input(tree, p) is not None)
    if not files:
        raise UsageError(f"--raw {raw}: no file an input's declared preprocessing reads (images, .txt, audio)")
    if len(files) > MAX_RAW:
        raise UsageError(f"--raw {raw}: {len(files)} raw inputs; give at most {MAX_RAW}")
    session = ort.InferenceSession(str(folder.baseline), providers=["CPUExecutionProvider"])
    wanted = {i.name for i in session.get_inputs()}
    names: list[str] = []
    for path in files:
        name = _case_name(path, names)
        feeds = _raw_input(tree, path)
        assert feeds is not None
        inputs = {k: v for k, v in rebuild_file(manifest, manifest.parent, feeds, path, npz=True).items()}
        outputs = session.run(None, {k: v for k, v in inputs.items() if k in wanted})
        expected = {o.name: v for o, v in zip(session.get_outputs(), outputs)}
        add_case(manifest, NewCase(name, inputs, expected, {feeds: path}), replace=replace, reference=REFERENCE)
        names.append(name)
    tree = read_tree(manifest)
    _baseline_rules(tree)
    write_tree(tree, manifest)
    return names


def _case_name(path: Path, used: list[str]) -> str:
    import re

    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", path.stem).strip("-._")[:100] or "case"
    name, n = stem, 2
    while name in used:
        name, n = f"{stem}-{n}", n + 1
    return name


def _baseline_rules(tree: Any) -> None:
    """The baseline is its own reference: its outputs are held to what it gave, tightly, and each answer to its
    own; the variants' rules carry the measured thresholds."""
    comparison = tree["comparison"]
    if comparison.get("rules"):
        return
    rules = [flow_map({"output": str(o["name"]), **BASELINE_RULE}) for o in written.entries(tree, "outputs")]
    for answer in written.entries(tree, "answers"):
        kind = str(answer["kind"])
        rules.append(flow_map({"answer": str(answer["name"]), "check": kind, **ANSWER_BOUNDS.get(kind, {})}))
    comparison["rules"] = flow_seq(rules)
    drop_note(comparison, "rules")
    drop_note(comparison, "reference")
    drop_note(comparison, "cases")
    note(comparison, "rules", "the baseline against its own outputs: the variants are judged against it")


def _variants(folder: ModelFolder, result: FolderResult) -> None:
    from checker.errors import Error
    from checker.release.variant import VariantSpec, add_variant

    for dtype in folder.variants:
        try:
            added = add_variant(folder.root, VariantSpec(dtype.path, name=dtype.dtype))
        except Error as exc:
            result.todo.append(f"variant {dtype.dtype} ({dtype.path.name}) not recorded: {exc}")
            continue
        first = " (transformers.js_config's default)" if dtype.dtype == folder.default_dtype else ""
        result.variants.append(f"{dtype.dtype}{first}: {added.transform['tool']} ({added.shown})")
        result.todo += [f"variant {dtype.dtype}: {h}" for h in added.hints]
