"""The `answers:` block a model folder's task gives: `config.json`'s architectures (image or sequence
classification: the top class; token classification: the class of each token), a sentence encoder's
`modules.json` with `1_Pooling/config.json` (the pooling and normalisation it declares), and an Ultralytics
`detect` export (`yolo` rows, its `predict` defaults: score 0.25, NMS IoU 0.7, labels from `names`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checker.manifest import written
from checker.release.answersguess import Proposal
from checker.release.hubfolder import ULTRALYTICS, FolderError, ModelFolder, inside, read_json

ULTRALYTICS_SCORE = 0.25
ULTRALYTICS_IOU = 0.7
# sentence-transformers' Pooling switches, in its own precedence, and the answer's pool mode for each.
POOLING_MODES = {
    "pooling_mode_cls_token": "first",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_lasttoken": "last",
}


def answers_for(folder: ModelFolder, tree: Mapping[str, Any]) -> list[Proposal]:
    outputs = written.entries(tree, "outputs")
    inputs = [str(i.get("name")) for i in written.entries(tree, "inputs")]
    if folder.layout == ULTRALYTICS:
        return _detections(tree)
    encoder = _sentence_encoder(folder, outputs, inputs)
    if encoder is not None:
        return [encoder]
    architectures = folder.config.get("architectures")
    names = [a for a in architectures if isinstance(a, str)] if isinstance(architectures, list) else []
    logits = next((o for o in outputs if o.get("name") == "logits"), None)
    if logits is None:
        return []
    if any(a.endswith(("ForImageClassification", "ForSequenceClassification")) for a in names):
        top: dict[str, Any] = {"name": "top", "kind": "classes", "from": "logits", "steps": [{"apply": "softmax"}]}
        return [Proposal(top, f"config.json's architectures {names}: the top class after softmax")]
    if any(a.endswith("ForTokenClassification") for a in names):
        # One text per case: its tokens are the items (special tokens included, which an application may drop).
        steps: list[Any] = [{"select": {"axis": 0, "index": 0}}, {"apply": "softmax"}]
        tokens = {"name": "tokens", "kind": "classes", "from": "logits", "steps": steps}
        why = f"config.json's architectures {names}: the class of each token of the case's text, after softmax"
        return [Proposal(tokens, why)]
    return []


def _detections(tree: Mapping[str, Any]) -> list[Proposal]:
    """The draft's detections answer (release/answersguess.py) with Ultralytics' predict thresholds."""
    out = []
    for entry in written.entries(tree, "answers"):
        answer = _plain(entry)
        if answer.get("kind") == "detections" and isinstance(answer.get("decode"), dict):
            answer["decode"].update({"min_score": ULTRALYTICS_SCORE, "nms": {"iou": ULTRALYTICS_IOU}})
            answer["labels"] = {"metadata_key": "names"}
            why = (
                f"Ultralytics' detect head, decoded as its predict does: score {ULTRALYTICS_SCORE}, NMS IoU "
                f"{ULTRALYTICS_IOU}, class names from the graph's names"
            )
            out.append(Proposal(answer, why))
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _sentence_encoder(folder: ModelFolder, outputs: list[Mapping[str, Any]], inputs: list[str]) -> Proposal | None:
    """modules.json's Pooling (and Normalize) module, as sentence-transformers runs them on the token outputs."""
    if folder.file("modules.json") is None:
        return None
    modules = _modules(folder)
    pooling = next((m for m in modules if str(m.get("type", "")).endswith("Pooling")), None)
    if pooling is None:
        return None
    rel = f"{pooling.get('path') or '1_Pooling'}/config.json"
    path = inside(folder.root, rel)
    if not path.is_file():
        raise FolderError(f"{folder.root / 'modules.json'} names a Pooling module at {path}, which is not there")
    config = read_json(path)
    mode = next((m for key, m in POOLING_MODES.items() if config.get(key) is True), None)
    if mode is None:
        raise FolderError(f"{path}: no pooling mode this checker reproduces is on ({', '.join(POOLING_MODES)})")
    token = next((o for o in outputs if len(written.items(o, "shape")) == 3), None)
    if token is None:
        return None
    pool: dict[str, Any] = {"mode": mode, "axis": 1}
    if "attention_mask" in inputs:
        pool["mask"] = "attention_mask"
    steps: list[Any] = [{"pool": pool}]
    normalised = any(str(m.get("type", "")).endswith("Normalize") for m in modules)
    if normalised:
        steps.append({"normalize": "l2"})
    answer = {"name": "sentence", "kind": "embedding", "from": str(token["name"]), "steps": steps}
    why = f"{rel}: {mode} pooling" + (", then modules.json's Normalize (L2)" if normalised else ", not normalised")
    return Proposal(answer, why)


def _modules(folder: ModelFolder) -> list[Mapping[str, Any]]:
    import json

    path = inside(folder.root, "modules.json")
    if path.stat().st_size > 1 << 20:
        raise FolderError(f"{path}: larger than 1 MiB; not read")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FolderError(f"{path}: not a JSON list of modules ({exc})") from exc
    if not isinstance(value, list):
        raise FolderError(f"{path}: expected a JSON list of modules")
    return [m for m in value if isinstance(m, dict)]
