"""Words a reviewer reads once: whole sentences, no fix twice, ratios in their true direction, pieces not checked
shown as such, changed pieces named precisely, numbered lists that hold past ten, paths from the workspace."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import cmarkgfm
from bundlekit import EXAMPLE
from cmarkgfm.cmark import Options

from checker.cli import main
from checker.findings import error, warning
from checker.remedies import remedy
from checker.render.gains import gain_sentence
from checker.render.links import Links
from checker.render.markdown import render
from checker.render.text import render as render_text
from checker.reports.files import load_report
from checker.reports.model import BundleReport, Report
from checker.reports.parts.gains import Gain, Latency, PairedTiming, Size
from checker.reports.parts.judged import Interval
from checker.sentences import bounded, visible

# A fidelity explanation as long as the BGR one, with parentheses inside it: a cut at 200 characters left
# six "(" and four ")".
EXPLANATION = (
    "with its channels in BGR order (channels 2, 1, 0 of the raw image, as OpenCV's imread gives them; the "
    "declared preprocessing reads RGB) and then normalized with the mean and std of the declared order (so each "
    "channel is shifted by another channel's mean), the same in every case made from a photo (cases 'dusk', "
    "'harbour' and 'portrait')"
)
WORKSPACE = "/home/runner/work/models/models"


def html(markdown: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def one_bundle(*found: object, path: str = "models/m") -> Report:
    bundle = BundleReport(path, manifest_file="bundle.yaml", name="m", version="1")
    bundle.add(found)  # type: ignore[arg-type]
    return Report("0.1.0", [bundle])


def balanced(said: str) -> bool:
    depth = 0
    for c in said:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0


def test_a_long_value_in_a_fix_is_whole_and_its_parentheses_close() -> None:
    finding = error("inputs.fidelity", "the stored tensor differs", "bundle.yaml", 20, explanation=EXPLANATION)
    said = remedy(finding)
    assert EXPLANATION in said and balanced(said)
    flood = "word (a b c) " * 400
    cut = bounded(flood, 1000)
    assert len(cut) <= 1000 and balanced(cut) and cut.endswith("…")


def test_the_visible_line_is_at_most_two_whole_sentences() -> None:
    said = "First one (with e.g. a note. And more). Second at 0.35 here. Third. Fourth."
    shown, rest = visible(said)
    assert shown == "First one (with e.g. a note. And more). Second at 0.35 here."
    assert rest == "Third. Fourth."
    md = render(one_bundle(error("graph.io", said, "bundle.yaml", 3)))
    item = next(line for line in md.splitlines() if line.startswith("1. "))
    assert item.endswith("Second at 0.35 here.") and "Third" not in item
    fold = md[md.index("<details><summary>More</summary>") :]
    assert "Third. Fourth." in fold.split("</details>")[0]


def test_a_fix_is_shown_once_and_later_entries_name_it() -> None:
    found = [error("graph.io", f"input {i} has the wrong dtype {i}", "bundle.yaml", i) for i in range(3)]
    found.append(error("comparison.case", "case 'a' holds an input of another shape", "bundle.yaml", 9))
    md = render(one_bundle(*found))
    fixes = re.findall(r"^\s+\*\*Fix:\*\* (.*)$", md, re.M)
    shown = [f for f in fixes if not f.startswith("as for ")]
    assert len(fixes) == 4 and len(shown) == len(set(shown)) == 2
    assert fixes[1] == "as for 1." and not fixes[3].startswith("as for")


def test_a_slower_variant_is_called_slower() -> None:
    timing = PairedTiming(2 / 3, Interval(0.625, 0.7143, "sign test on the median"), rounds=40)
    said = gain_sentence(Gain("int8", Size(4000, 1000, 4.0), Latency({"intra_op_num_threads": 1}, timing)))
    assert "1.5x slower (95 % 1.4 to 1.6, 40 paired rounds" in said and "faster" not in said
    quick = PairedTiming(1.8, Interval(1.7, 1.9, "sign test on the median"), rounds=48)
    assert "1.8x faster (95 % 1.7 to 1.9" in gain_sentence(Gain("int8", Size(4, 1, 4.0), Latency("default", quick)))


def test_a_larger_variant_is_called_larger() -> None:
    quick = PairedTiming(1.8, Interval(1.7, 1.9, "sign test on the median"), rounds=48)
    said = gain_sentence(Gain("fp32-padded", Size(1000, 2000, 0.5), Latency("default", quick)))
    assert said.startswith("fp32-padded: 2x larger (2,000 of 1,000 bytes)") and "smaller" not in said
    assert Size(4000, 1000, 4.0).ratio() == "4x smaller" and Size(1000, 1000, 1.0).ratio() == "1x smaller"


def test_pieces_no_check_reached_are_not_checked_not_missing(tmp_path: Path) -> None:
    root = tmp_path / "b"
    shutil.copytree(EXAMPLE, root)
    (root / "bundle.yaml").write_text("name: [unclosed\n", encoding="utf-8")
    assert main(["verify", str(root), "--format", "json", "--output", str(tmp_path / "r.json")]) == 1
    report = load_report(tmp_path / "r.json")
    assert set(report.bundles[0].piece_states().values()) == {"not checked"}
    assert "✓" not in render_text(report) and "✗" not in render_text(report)
    assert "0 of 7 present" in render(report) and "not checked" in render(report)


def test_a_variants_missing_file_leaves_the_graph_piece_present(tmp_path: Path) -> None:
    root = tmp_path / "b"
    shutil.copytree(EXAMPLE, root)
    (root / "model.int8.onnx").unlink()
    assert main(["verify", str(root), "--format", "json", "--output", str(tmp_path / "r.json")]) == 1
    bundle = load_report(tmp_path / "r.json").bundles[0]
    assert any(f.id == "bundle.file_missing" and "model.int8.onnx" in f.message for f in bundle.findings)
    assert bundle.piece_states()["graph"] == "present"


def test_twelve_findings_are_one_numbered_list_with_each_fix_inside_its_item() -> None:
    ids = ["graph.io", "comparison.case", "labels.duplicate", "runtime.version", "graph.producer", "inputs.range"]
    found = [error(ids[i % 6], f"mistake number {i} in field {i}", "bundle.yaml", i + 1) for i in range(12)]
    out = html(render(one_bundle(*found)))
    lists = re.findall(r"<ol>(.*?)</ol>", out, re.S)
    assert len(lists) == 1, "one list: no item's fix broke out of it"
    items = re.findall(r"<li>(.*?)</li>", lists[0], re.S)
    assert len(items) == 12
    assert all("Fix:" in item for item in items)
    assert "<pre><code>" not in out  # a fix indented less than its number's width would be a code block


def test_a_bundle_under_the_workspace_is_shown_by_its_path_in_the_repository() -> None:
    report = one_bundle(warning("graph.producer", "no producer", "bundle.yaml", 2), path=f"{WORKSPACE}/models/m")
    links = Links("https://github.com", "octo-org/models", "a" * 40, workspace=WORKSPACE)
    md = render(report, links=links)
    assert WORKSPACE not in md
    assert "[models/m/bundle.yaml](https://github.com/octo-org/models/blob/" in md
    assert "**Path:** models/m" in md
