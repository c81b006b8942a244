"""The comment and the job summary looked at as a reviewer does: drawn by GitHub-flavoured Markdown, Mermaid
and GitHub's CSS in headless Chromium at comment width, and measured from the page.

For a passing bundle, a failing one, one failed by its warnings, a loosened rule (against a base report) and
twelve bundles (and, read once: the BGR tensors, twelve findings as one numbered list, a bundle under the
workspace's absolute path, a pass that rests on a loosening): the verdict and the first fix sit above 700 px,
every Mermaid block drew an svg, and no markup shows as text. `.ci/run` installs Chromium and the npm packages,
and fails if this skips.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browserkit import look, markup_shown, missing, page_html

from checker.cli import main
from checker.findings import error
from checker.render.links import Links
from checker.render.markdown import SUMMARY_LIMIT, render
from checker.reports.diff import diff
from checker.reports.files import load_report
from checker.reports.model import BundleReport, Comparison, Report, RuleResult
from checker.reports.parts.changes import Base, BundleChange, Changes, Compared, RuleChange, Verdicts

pytestmark = pytest.mark.skipif(missing() is not None, reason=missing() or "")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mobilenet-tiny"
LINKS = Links("https://github.com", "octo/models", "0123456789abcdef0123456789abcdef01234567", "4242", "1")
FOLD = 700  # px: what a reviewer sees without scrolling


def verified(paths: list[Path], out: Path, *flags: str) -> Report:
    main(["verify", *map(str, paths), *flags, "--format", "json", "--output", str(out)])
    return load_report(out)


def copy(root: Path) -> Path:
    shutil.copytree(EXAMPLE, root)
    return root


def broken(root: Path) -> Path:
    """The example with a label too many (labels.count) and so a digest off (bundle.digest)."""
    copy(root)
    with (root / "labels.txt").open("a", encoding="utf-8") as labels:
        labels.write("zebra\n")
    return root


def scenario(name: str, tmp: Path) -> Report:
    if name == "passing":
        return verified([copy(tmp / "b")], tmp / "r.json")
    if name == "failing":
        return verified([broken(tmp / "b")], tmp / "r.json")
    if name == "warnings":
        root = copy(tmp / "b")
        for i in range(4):
            (root / f"notes-{i}.txt").write_text("draft\n", encoding="utf-8")
        return verified([root], tmp / "r.json", "--strict")
    if name == "loosened":
        verified([copy(tmp / "base")], tmp / "base.json")
        head = copy(tmp / "head")
        manifest = head / "bundle.yaml"
        text = manifest.read_text(encoding="utf-8")
        assert "check: score_drift, max: 0.05" in text
        manifest.write_text(text.replace("check: score_drift, max: 0.05", "check: score_drift, max: 0.5"), "utf-8")
        subprocess.run([sys.executable, "-m", "checker", "lock", str(head)], check=True, capture_output=True)
        return verified([head], tmp / "r.json", "--compare-to", str(tmp / "base.json"))
    assert name == "twelve"
    paths = [broken(tmp / "m00")] + [copy(tmp / f"m{i:02}") for i in range(1, 12)]
    return verified(paths, tmp / "r.json")


SCENARIOS = ("passing", "failing", "warnings", "loosened", "twelve")


@pytest.fixture(scope="module", params=SCENARIOS)
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Report, Path]:
    tmp = tmp_path_factory.mktemp(request.param)
    return request.param, scenario(request.param, tmp), tmp


@pytest.mark.parametrize("where", ["comment", "summary"])
def test_the_reviewer_sees_the_verdict_and_the_first_fix_at_once(case: tuple[str, Report, Path], where: str) -> None:
    name, report, tmp = case
    if where == "comment":  # as the action posts it: its size limit, links, newlines as line breaks
        markdown = render(report, links=LINKS)
    else:
        markdown = render(report, links=LINKS, limit=SUMMARY_LIMIT - 4096, limit_name="the job-summary limit")
    (tmp / f"{where}.md").write_text(markdown, encoding="utf-8")
    page = look(markdown, comment=where == "comment", workdir=tmp)
    failed = report.status == "fail"
    assert page.verdict.startswith("❌" if failed else "✅"), page.verdict
    assert page.verdict_y is not None and page.verdict_y < FOLD
    if failed:
        assert page.first_fix_y is not None and page.first_fix_y < FOLD, (page.first_fix_y, page.closed_text[:800])
    if name == "warnings":
        assert "warnings count as failures" in page.verdict
        assert "bundle.unlisted" in page.closed_text[: page.closed_text.index("Details")]
    if name == "loosened":  # what changed since the base, with the old and the new threshold, without a click
        assert "Since the base" in page.closed_text
        assert re.search(r"\b0\.05\b", page.open_text) and re.search(r"\b0\.5\b", page.open_text)
    if name == "twelve":
        assert "11 other bundles passed" in page.closed_text
    assert all(chart["drawn"] for chart in page.charts), page.charts
    assert markup_shown(page.open_text) == []
    assert markup_shown(page.closed_text) == []


def moved(graph: str, base: float, head: float, threshold: float = 0.005) -> RuleChange:
    return RuleChange(graph, "reference", "logits", "score_drift", base, head, head - base, None, threshold=threshold)


def test_a_base_to_head_chart_is_drawn_with_its_bars_side_by_side(tmp_path: Path) -> None:
    """The one chart left: two rules moved against different thresholds, drawn by Mermaid as one bar per rule and
    side, and a threshold."""
    rules = [moved(g, b, h, t) for g, b, h, t in (("int8", 0.004, 0.015, 0.005), ("fp16", 0.001, 0.002, 0.05))]
    entry = BundleChange("models/m", None, "changed", Verdicts(None, None), Compared(rules=rules))
    bundle = BundleReport(path="models/m", name="m", version="1")
    report = Report("0.1.0", [bundle], changes=Changes(Base(), [entry]))
    markdown = render(report)
    assert markdown.count("```mermaid") == 1
    page = look(markdown, comment=True, workdir=tmp_path)
    (chart,) = page.charts
    assert chart["drawn"], chart
    assert chart["bars"] >= 4  # base and head of each rule, each its own bar
    assert markup_shown(page.open_text) == []


def _bgr(tmp: Path) -> Report:
    """Eight stored tensors made in BGR order: one entry, its fix whole, the rest of the message in a fold."""
    sys.path.insert(0, str(Path(__file__).parent))
    from prepkit import bundle_maker, photo
    from test_reviewer import IMAGE_INPUT, bgr_tensor

    from checker.checks.fidelity import fidelity_stage

    chelsea, coffee = photo("chelsea.png"), photo("coffee.png")
    cases = [
        {"name": f"photo{i}", "inputs": {"pixel_values": bgr_tensor(p)}, "raw": {"pixel_values": p}}
        for i, p in enumerate([chelsea, coffee] * 4)
    ]
    bundle = BundleReport(path="models/cls", manifest_file="bundle.yaml", name="cls", version="1")
    bundle.add(fidelity_stage(bundle_maker(tmp)([IMAGE_INPUT], cases)))
    return Report("0.1.0", [bundle])


def _numbered(path: str = "models/m") -> Report:
    """Twelve different errors of one bundle: one numbered list, each fix inside its item."""
    ids = ["graph.io", "comparison.case", "labels.duplicate", "runtime.version", "graph.producer", "inputs.range"]
    bundle = BundleReport(path=path, manifest_file="b.yaml", name="m", version="1")
    bundle.add(
        error(ids[i % 6], f"mistake number {i} in field {i}. A second sentence. A third, for the fold.", "b.yaml", i)
        for i in range(1, 13)
    )
    return Report("0.1.0", [bundle])


def _resting() -> Report:
    """A threshold raised so that a failing variant passes: the pass rests on the loosening."""

    def rule(max_: float) -> RuleResult:
        passed = max_ >= 0.3545
        return RuleResult("logits", "score_drift", {"max": max_}, passed, float(passed), 1.0, "portrait", 0.3545,
                          max_, 0.3545, line=98)  # fmt: skip

    def bundle(max_: float) -> BundleReport:
        comparisons = [Comparison("int8", "reference", [rule(max_)])]
        return BundleReport("models/m", "bundle.yaml", "m", "1", comparisons=comparisons)

    head = Report("0.1.0", [bundle(0.4)])
    head.changes = diff(Report("0.1.0", [bundle(0.05)]), head)
    return head


WORKSPACE = "/home/runner/work/models/models"


@pytest.mark.parametrize("name", ["bgr", "numbered", "absolute", "resting", "drifting"])
def test_what_a_reviewer_reads_once_reads_whole(name: str, tmp_path: Path) -> None:
    workspace = str(tmp_path) if name == "drifting" else WORKSPACE
    links = Links(LINKS.server, LINKS.repository, LINKS.sha, workspace=workspace)
    report = {
        "bgr": lambda: _bgr(tmp_path),
        "numbered": _numbered,
        "absolute": lambda: _numbered(f"{WORKSPACE}/models/m"),
        "resting": _resting,
        "drifting": lambda: _drifting(tmp_path),
    }[name]()
    markdown = render(report, links=links)
    page = look(markdown, comment=True, workdir=tmp_path)
    assert markup_shown(page.closed_text) == [] and markup_shown(page.open_text) == []
    fixes = re.findall(r"^\s+\*\*Fix:\*\* (.*)$", markdown, re.M)
    shown = [f for f in fixes if not f.startswith("as for ")]
    assert len(shown) == len(set(shown)), "no fix twice"
    assert all(f.count("(") == f.count(")") and not f.endswith("…") for f in fixes), fixes
    if name == "bgr":
        assert page.closed_text.count("Fix:") == 1 and "BGR where RGB is declared" in page.closed_text
        assert page.first_fix_y is not None and page.first_fix_y < FOLD
    if name in ("numbered", "absolute"):
        html = page_html(markdown, True)
        (numbered,) = re.findall(r"<ol>(.*?)</ol>", html, re.S)  # one list: no fix broke out of it
        assert len(re.findall(r"<li>", numbered)) == 12 and numbered.count("Fix:") == 12
        assert "A third, for the fold." not in page.closed_text and "A third, for the fold." in page.open_text
    if name == "absolute":
        assert WORKSPACE not in page.open_text and "models/m/b.yaml" in page.closed_text
    if name == "resting":
        assert page.verdict.startswith("⚠️") and "only because a check was loosened" in page.verdict
        assert "the head's 0.3545 fails the base's rule (max 0.05)" in page.closed_text
    if name == "drifting":  # the measured first fix, with its figure, above the fold; no runner path in it
        assert page.first_fix_y is not None and page.first_fix_y < FOLD
        assert "Fix: the shipped graph is not what its record makes: quantize it again as recorded" in page.closed_text
        assert (
            "(max 0.05), passes." in page.closed_text and "checker diagnose b --reproduce int8-bad" in page.closed_text
        )
        assert str(tmp_path) not in page.open_text


def _drifting(tmp: Path) -> Report:
    """An int8 variant calibrated on images 100 times too bright: its score drift fails on every CPU."""
    from modelkit import good_and_miscalibrated_bundle

    return verified([good_and_miscalibrated_bundle(tmp)], tmp / "r.json", "--gain-budget", "0")
