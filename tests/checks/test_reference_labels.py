"""Labels of an output whose labelled axis is dynamic: counted on the reference outputs, by the labels stage,
on the whole comparison set (so every shard of --shard K/N says the same)."""

from __future__ import annotations

from pathlib import Path

from bundlekit import linear_model, manifest, write_bundle

from checker.context import Options
from checker.sharding import parse_shard
from checker.verify import verify_bundle


def _bundle(tmp_path: Path, labels: int) -> Path:
    data = manifest()
    data["outputs"][0]["labels"] = {"path": "labels.txt", "axis": 0}  # axis 0 is "batch": dynamic in the graph
    bundle = write_bundle(tmp_path / "b", linear_model(), data)  # every case's reference has 2 rows
    (bundle / "labels.txt").write_text("".join(f"label {i}\n" for i in range(labels)), encoding="utf-8")
    return bundle


def test_labels_are_counted_on_the_reference_outputs_in_every_shard(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, labels=5)
    runs = [verify_bundle(bundle, Options())]
    runs += [verify_bundle(bundle, Options(shard=parse_shard(f"{k}/3"))) for k in (1, 2, 3)]
    found = [[f for f in run.findings if f.id == "labels.count"] for run in runs]
    assert all(len(f) == 1 for f in found), found
    first = found[0][0]
    assert first.message == "'y' has 2 entries on axis 0 in the reference outputs, but its label mapping has 5 labels"
    assert first.line is not None and first.details == {"expected": 2, "actual": 5}
    assert all(f[0].to_dict() == first.to_dict() for f in found)  # the same finding: it merges into one


def test_labels_as_many_as_the_reference_rows_pass(tmp_path: Path) -> None:
    report = verify_bundle(_bundle(tmp_path, labels=2), Options())
    assert not [f for f in report.findings if f.id.startswith("labels.")]
