"""What a reviewer reads first: every failure's reason and a fix read from what was found, the same finding
once, no chart that restates a table, no noise. Real bundles verified by the checker, rendered as Markdown."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest
from bundlekit import EXAMPLE
from modelkit import good_and_miscalibrated_bundle
from PIL import Image
from prepkit import bundle_maker, photo

from checker.checks.fidelity import fidelity_stage
from checker.cli import main
from checker.context import Options
from checker.findings import Severity, error, info
from checker.remedies import remedy
from checker.render.markdown import render
from checker.reports.files import load_report
from checker.reports.model import BundleReport, Report
from checker.reports.parts.changes import Base, BundleChange, Changes, Compared, RuleChange, Verdicts
from checker.verify import verify_bundle

MEAN, STD = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
RESIZE = {"mode": "exact", "size": [64, 64], "interpolation": "bilinear"}
IMAGE_PREP = {"kind": "image", "color": "RGB", "resize": RESIZE, "scale": 1 / 255, "mean": MEAN.tolist(),
              "std": STD.tolist()}  # fmt: skip
IMAGE_INPUT = {"name": "pixel_values", "dtype": "float32", "shape": [1, 3, 64, 64], "layout": "NCHW",
               "preprocessing": IMAGE_PREP}  # fmt: skip


def bgr_tensor(path: Path) -> np.ndarray:
    """What an application that swapped the channels would store: Pillow for the pixels, NumPy for the rest."""
    with Image.open(path) as im:
        arr = np.asarray(im.convert("RGB").resize((64, 64), Image.Resampling.BILINEAR))[..., ::-1]
    return ((arr / 255 - MEAN) / STD).transpose(2, 0, 1)[None].astype(np.float32)


def verified(paths: list[Path], out: Path, *flags: str) -> Report:
    """`checker verify` on real bundles, its JSON report read back."""
    main(["verify", *map(str, paths), *flags, "--format", "json", "--output", str(out)])
    return load_report(out)


def strays(root: Path, n: int = 4) -> Path:
    """The example bundle with `n` files the manifest does not name: `n` bundle.unlisted warnings."""
    shutil.copytree(EXAMPLE, root)
    for i in range(n):
        (root / f"notes-{i}.txt").write_text("draft\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def warned(tmp_path_factory: pytest.TempPathFactory) -> Report:
    tmp = tmp_path_factory.mktemp("warned")
    return verified([strays(tmp / "b")], tmp / "r.json", "--strict")


def test_a_bundle_failed_by_its_warnings_says_so_and_shows_them_with_their_fix(warned: Report) -> None:
    md = render(warned)
    head, _, rest = md.partition("\n")
    assert head == "## ❌ ONNX release check: 1 of 1 bundle failed because warnings count as failures (4 warnings)"
    first_fold = rest.index("<details")
    assert rest.index("**bundle.unlisted**") < first_fold  # the reason, not folded into one line
    assert rest.index("**Fix:** name the file in the manifest") < first_fold
    assert "<summary>⚠️" not in md


def test_without_strict_the_same_warnings_do_not_claim_a_failure(tmp_path: Path) -> None:
    md = render(verified([strays(tmp_path / "b")], tmp_path / "r.json"))
    assert md.startswith("## ✅ ONNX release check: 1 bundle passed\n")
    assert "count as failures" not in md


def test_the_same_finding_is_one_entry_listing_its_places(warned: Report) -> None:
    md = render(warned)
    assert md.count("**bundle.unlisted**") == 1 and md.count("**Fix:**") == 1
    assert "the same in 3 more places: notes-1.txt, notes-2.txt, notes-3.txt" in md


def test_eight_photos_with_the_same_mistake_are_one_entry_with_one_fix(tmp_path: Path) -> None:
    chelsea, coffee = photo("chelsea.png"), photo("coffee.png")
    cases = [
        {"name": f"photo{i}", "inputs": {"pixel_values": bgr_tensor(p)}, "raw": {"pixel_values": p}}
        for i, p in enumerate([chelsea, coffee] * 4)
    ]
    ctx = bundle_maker(tmp_path)([IMAGE_INPUT], cases)
    found = list(fidelity_stage(ctx))
    assert len(found) == 8 and {f.id for f in found} == {"inputs.fidelity"}
    b = BundleReport(path="models/cls", manifest_file="bundle.yaml", name="cls", version="1")
    b.add(found)
    md = render(Report("0.1.0", [b]))
    assert md.count("**inputs.fidelity**") == 1 and md.count("**Fix:**") == 1
    listed = re.findall(r"case 'photo(\d)' \(", md)
    assert sorted(listed) == [str(i) for i in range(1, 8)]  # the first case is the entry's own message
    assert "**1 error**" not in md and "**8 errors**" in md


def test_the_fidelity_fix_follows_the_explanation(tmp_path: Path) -> None:
    coffee = photo("coffee.png")
    case = {"name": "coffee", "inputs": {"pixel_values": bgr_tensor(coffee)}, "raw": {"pixel_values": coffee}}
    ctx = bundle_maker(tmp_path)([IMAGE_INPUT], [case])
    (finding,) = fidelity_stage(ctx)
    said = remedy(finding, "models/cls")
    assert said.startswith("the stored tensor was made with channels reversed (BGR where RGB is declared)")
    # Which side is wrong comes first; rebuilding from the raw file comes last, after checking that file.
    assert said.index("declare it in the manifest") < said.index("check that the raw file is the original")
    assert said.index("check that the raw file is the original") < said.index("`checker preprocess`")
    assert not said.startswith("regenerate")


def test_a_truncated_archive_gets_an_archive_fix(tmp_path: Path) -> None:
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(EXAMPLE, arcname=".")
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2])
    report = verified([archive], tmp_path / "r.json")
    (finding,) = [f for f in report.bundles[0].findings if f.severity is Severity.ERROR]
    assert finding.id == "bundle.path"
    said = remedy(finding, str(archive))
    assert "damaged or cut short" in said and "checker pack" in said
    assert "name the file by a path inside the bundle" not in said


def test_dynamic_axes_names_a_node_only_when_one_is_known() -> None:
    message = "the graph declares dim 'N' dynamic, but with cases 'a' and 'b' stacked along it item 0 changes"
    unknown = remedy(error("graph.dynamic_axes", message, "bundle.yaml", 12, axis="N", node=None))
    assert "node named" not in unknown and "no node mixes the items of a batch" in unknown
    known = error("graph.dynamic_axes", message, axis="N", node="node 'r' (Reshape to [1, 12])")
    assert "node 'r' (Reshape to [1, 12]) keeps the batch dynamic" in remedy(known)


@pytest.fixture(scope="module")
def drifting(tmp_path_factory: pytest.TempPathFactory) -> Report:
    root = tmp_path_factory.mktemp("drift")
    return verified([good_and_miscalibrated_bundle(root)], root / "r.json")


def test_a_diagnosed_variants_first_fix_is_the_measured_one_not_the_diagnosis_nodes(drifting: Report) -> None:
    bundle = drifting.bundles[0]
    diagnosis = next(f for f in bundle.findings if f.id == "variant.diagnosis")
    nodes = diagnosis.details["nodes_to_exclude"]
    assert nodes and diagnosis.details["variant"] == "int8-bad"
    failed = next(f for f in bundle.findings if f.id == "comparison.rule")
    said = remedy(failed, bundle.path, bundle.findings)
    # Excluding the nodes was never measured to help: the re-run of the recorded transform was, and it passes.
    assert "nodes_to_exclude" not in said
    assert said.startswith("the shipped graph is not what its record makes: quantize it again as recorded")
    md = render(drifting)
    fix = next(line for line in md.splitlines() if "**Fix:**" in line)
    assert fix.split("**Fix:** ")[1].startswith("the shipped graph is not what its record makes")
    assert "logits score_drift from 0.2283 to " in fix and "(max 0.05), passes." in fix


def test_a_failing_rule_is_shown_beside_its_bundle_not_in_a_pieces_fold(drifting: Report) -> None:
    md = render(drifting)
    fold = md.index("<details><summary>Details: pieces")
    assert md.index("#### ❌ int8-bad against the reference: failed") < fold
    assert "<summary>Pieces" not in md


def test_a_variants_two_comparisons_are_named_by_what_they_compare_against(warned: Report) -> None:
    summary = next(line for line in render(warned).splitlines() if "<summary>Details: pieces" in line)
    assert "int8 vs reference ✅" in summary and "int8 vs baseline ✅" in summary
    assert "int8 ✅, int8 ✅" not in summary


def test_a_column_equal_to_measured_and_a_worst_case_among_equals_are_left_out(warned: Report) -> None:
    md = render(warned)
    assert "measured at the pass rate asked" not in md
    topk = next(line for line in md.splitlines() if line.startswith("| ✅ | logits topk (k=3"))
    assert "| all alike |" in topk  # every case agreed fully: none is the worst
    assert not re.search(r"^\| \| \|$", md, re.M)  # no table with an empty header row


def test_backticks_in_a_message_are_code_not_character_references() -> None:
    b = BundleReport(path="m", manifest_file="bundle.yaml", name="m", version="1")
    b.add([error("manifest.schema", "inputs[0]: `shape` must be a list, not `7`", "bundle.yaml", 3)])
    md = render(Report("0.1.0", [b]))
    assert "`shape` must be a list, not `7`" in md and "&#96;" not in md


def test_a_missing_piece_fix_points_to_no_unlinked_file() -> None:
    said = remedy(error("bundle.missing_piece", "labels are not given", piece="labels"), "m")
    assert "docs/manifest.md" not in said and "`checker schema`" in said


def test_ten_other_passing_bundles_open_as_one_line_each(tmp_path: Path) -> None:
    paths = [tmp_path / "bad"] + [tmp_path / f"ok{i}" for i in range(3)]
    for p in paths:
        shutil.copytree(EXAMPLE, p)
    (paths[0] / "labels.txt").write_text("one\n", encoding="utf-8")
    md = render(verified(paths, tmp_path / "r.json"))
    block = md[md.index("<details><summary>✅ 3 other bundles passed</summary>") :]
    overview = block[: block.index("<details>", 10)]  # what one click shows, up to the first bundle's own fold
    assert overview.count("| ✅ | mobilenet-tiny") == 3
    assert "#### " not in overview and "The seven pieces" not in overview


def change_report(rules: list[RuleChange]) -> Report:
    b = BundleReport(path="models/m", manifest_file="bundle.yaml", name="m", version="1")
    entry = BundleChange("models/m", None, "changed", Verdicts(None, None), Compared(rules=rules))
    return Report("0.1.0", [b], changes=Changes(Base(), [entry]))


def moved(graph: str, base: float, head: float, threshold: float, direction: str = "max") -> RuleChange:
    crossed = "now fails" if base <= threshold < head else None
    return RuleChange(graph, "reference", "logits", "score_drift", base, head, head - base, crossed,
                      threshold=threshold, direction=direction)  # fmt: skip


def chart_lines(md: str) -> list[str]:
    (chart,) = re.findall(r"```mermaid\n(.*?)```", md, re.S)
    return chart.splitlines()


def test_the_base_to_head_chart_draws_base_and_head_side_by_side() -> None:
    md = render(change_report([moved("int8", 0.004, 0.015, 0.005), moved("fp16", 0.001, 0.002, 0.05)]))
    lines = chart_lines(md)
    labels = json.loads("[" + next(x for x in lines if "x-axis" in x).split("[", 1)[1].rsplit("]", 1)[0] + "]")
    # Short categories that cannot overlap, keyed to the rules named above the chart.
    assert labels == ["1 base", "1 head", "2 base", "2 head"]
    assert "1: int8 score_drift; 2: fp16 score_drift" in md
    bars = [[float(v) for v in x.split("[")[1].rstrip("]").split(",")] for x in lines if x.strip().startswith("bar")]
    # Each category has its value in one series only: no bar stands behind another.
    assert all(sum(1 for series in bars if series[i] != 0) == 1 for i in range(len(labels)))
    head_fails = bars[3]
    assert head_fails[1] == pytest.approx(3.0)  # 0.015 over 0.005: not cut at 2
    assert bars[0][0] == pytest.approx(0.8)  # the base passes, in its own series (colour)
    assert any(x.strip() == "line [1, 1, 1, 1]" for x in lines)  # the threshold, drawn across
    assert "plotColorPalette" in lines[0]


def test_an_edited_threshold_draws_the_base_against_its_own_threshold() -> None:
    """score_drift loosened 0.005 -> 0.05: the base's 0.0169 failed at 3.4x its own limit, and is drawn so."""
    edited = dataclasses.replace(
        moved("int8", 0.0169, 0.02, 0.05), base_threshold=0.005, base_passed=False, head_passed=True
    )
    md = render(change_report([edited, moved("fp16", 0.001, 0.002, 0.005)]))
    bars = [[float(v) for v in x.split("[")[1].rstrip("]").split(",")] for x in chart_lines(md) if "bar [" in x]
    base_fails, head_passes = bars[1], bars[2]
    assert base_fails[0] == pytest.approx(0.0169 / 0.005) and head_passes[1] == pytest.approx(0.02 / 0.05)


def test_rules_under_one_threshold_get_no_chart_that_restates_their_table() -> None:
    """Against one threshold the table's figures compare as they stand: a chart would only repeat them."""
    md = render(change_report([moved("int8", 0.004, 0.015, 0.005), moved("fp16", 0.001, 0.002, 0.005)]))
    assert "```mermaid" not in md and "| 0.015 |" in md


def test_rules_whose_figures_did_not_move_get_no_chart() -> None:
    still = [dataclasses.replace(moved(g, 0.004, 0.004, 0.005), moved=False) for g in ("int8", "fp16")]
    assert "```mermaid" not in render(change_report(still))


def test_one_changed_rule_or_a_lower_bound_gets_no_chart() -> None:
    assert "```mermaid" not in render(change_report([moved("int8", 0.004, 0.015, 0.005)]))
    cosine = [moved("int8", 0.9999, 0.9995, 0.99, "min"), moved("fp16", 0.9999, 0.9998, 0.99, "min")]
    assert "```mermaid" not in render(change_report(cosine))


def test_no_comparison_gets_a_chart_that_restates_its_table(warned: Report) -> None:
    assert "```mermaid" not in render(warned)


def test_a_fix_stays_with_its_finding_where_newlines_are_line_breaks(tmp_path: Path) -> None:
    root = tmp_path / "b"
    shutil.copytree(EXAMPLE, root)
    (root / "labels.txt").write_text("one\n", encoding="utf-8")
    (root / "model.onnx").write_bytes((root / "model.onnx").read_bytes() + b"\0")
    md = render(verified([root], tmp_path / "r.json"))
    assert "<br>" not in md
    items = re.findall(r"^(\d+)\. \*\*([a-z_.]+)\*\*.*\n\n   \*\*Fix:\*\* (.*)$", md, re.M)
    assert len(items) >= 2, md  # each numbered finding is followed, in its own item, by its fix
    assert all(fix.startswith(("restore ", "as for ")) for _, fid, fix in items if fid == "bundle.digest")
    fixes = [fix for _, _, fix in items if not fix.startswith("as for ")]
    assert len(fixes) == len(set(fixes)), "a fix shown once is named by its entry's number after that"
    assert np.all(np.diff([int(n) for n, _, _ in items]) == 1)


def test_a_diagnosis_that_named_no_node_points_to_the_measured_search() -> None:
    """The diagnosis ran and kept nothing in float: the fix is the search over settings, not the same diagnosis."""
    failed = error("comparison.rule", "int8 failed", graph="int8", worst_case="panorama")
    ran = info("variant.diagnosis", "diagnosis: ...", variant="int8", case="panorama", nodes_to_exclude=[])
    said = remedy(failed, "models/m", [failed, ran])
    assert "--requantize" in said and "no node to keep in float" in said
    assert "names the node where the variant starts to diverge" not in said
    assert "names the node where" in remedy(failed, "models/m", [failed])  # not diagnosed: the diagnosis is next


def test_the_text_verdict_says_warnings_count_as_failures(tmp_path: Path) -> None:
    from checker.render import text

    bundle = tmp_path / "m"
    shutil.copytree(EXAMPLE, bundle)
    (bundle / "stray.txt").write_text("not named by the manifest\n")
    judged = verify_bundle(bundle, Options(gain_budget_s=0.0))
    strict = text.render(Report("0", [judged], strict=True)).splitlines()[0]
    assert strict.startswith("FAIL") and "failed because warnings count as failures (1 warning)" in strict
    assert "warnings count" not in text.render(Report("0", [judged])).splitlines()[0]
