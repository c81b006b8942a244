"""The comment a reviewer acts on: order, fixes, links, footer, compactness, in Markdown, text and job summary."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from checker.cli import main
from checker.github.config import Config
from checker.github.publish import publish
from checker.render.links import Links
from checker.render.markdown import FOOTER_MARK, render
from checker.render.text import render as render_text
from checker.reports.files import load_report
from checker.reports.model import BundleReport, Comparison, NotRun, Report, RuleResult

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mobilenet-tiny"
SHA = "89abcdef0123456789abcdef0123456789abcdef"
GITHUB = {
    "GITHUB_SERVER_URL": "https://ghe.example.com",
    "GITHUB_REPOSITORY": "octo/models",
    "GITHUB_SHA": SHA,
    "GITHUB_RUN_ID": "4242",
    "GITHUB_RUN_ATTEMPT": "1",
}


def visible_lines(markdown: str) -> list[str]:
    """The lines a reader sees before opening anything: outside every <details> (its summary counts once),
    without blank lines and hidden comments."""
    seen, depth = [], 0
    for line in markdown.splitlines():
        opens, closes = line.count("<details"), line.count("</details>")
        if depth == 0 and line.strip() and not line.startswith("<!--"):
            seen.append(line)
        depth += opens - closes
    return seen


@pytest.fixture
def no_github(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in GITHUB:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def with_github(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in GITHUB.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository-like folder: models/good (the example) and models/bad (a label too many, a digest off)."""
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(EXAMPLE, root / "models" / "good")
    shutil.copytree(EXAMPLE, root / "models" / "bad")
    with (root / "models" / "bad" / "labels.txt").open("a", encoding="utf-8") as labels:
        labels.write("zebra\n")
    return root


def verify(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    cwd = Path.cwd()
    try:
        os.chdir(root)
        code = main(["verify", *args])
    finally:
        os.chdir(cwd)
    return code, capsys.readouterr().out


def test_a_failing_comment_puts_the_failing_bundle_and_its_first_fix_first(
    bundles: Path, capsys: pytest.CaptureFixture[str], no_github: None
) -> None:
    code, md = verify(bundles, capsys, "models/good", "models/bad", "--format", "markdown")
    assert code == 1
    lines = md.splitlines()
    assert lines[0] == "## ❌ ONNX release check: 1 of 2 bundles failed"
    heading = next(i for i, line in enumerate(lines) if line.startswith("### "))
    assert lines[heading] == "### ❌ mobilenet-tiny 1.0.0 — models/bad/bundle.yaml"  # the failing one, first
    fix = next(i for i, line in enumerate(lines) if "**Fix:**" in line)
    assert fix < 15
    # The fix is a paragraph of its finding's list item: in a comment, where a newline is a line break, it
    # stays with its finding.
    # The substantive error first; the stale digest, which only says the file changed since the lock, after it.
    assert lines[fix - 2].startswith("1. **labels.count** at models/bad/bundle.yaml:36: 'logits' has 10 entries")
    assert lines[fix - 1] == "" and "<br>" not in md
    assert lines[fix] == "   **Fix:** remove the 1 extra labels: the output has 10 entries, the mapping 11"
    digest = md.index("**bundle.digest** at models/bad/bundle.yaml:36: 'labels.txt' has sha256")
    restore = md.index("restore labels.txt, or, if the change is intended, run `checker lock models/bad`")
    assert restore > digest > md.index("**Fix:**")
    labels = md.index("add the 1 missing labels") if "missing labels" in md else md.index("remove the 1 extra labels")
    first_details = md.index("<details")
    assert labels < first_details  # every error with its fix comes before anything collapsed
    assert md.index("✅ 1 other bundle passed") > labels  # the passing bundle comes after, collapsed
    assert "would pass at" not in md


def test_with_the_github_variables_files_commit_and_run_link(
    bundles: Path, capsys: pytest.CaptureFixture[str], with_github: None
) -> None:
    _, md = verify(bundles, capsys, "models/bad", "--format", "markdown")
    blob = f"https://ghe.example.com/octo/models/blob/{SHA}"
    assert f"[models/bad/bundle.yaml]({blob}/models/bad/bundle.yaml)" in md
    assert f"[models/bad/bundle.yaml:36]({blob}/models/bad/bundle.yaml#L36)" in md
    footer = md.split(FOOTER_MARK)[1]
    assert f"commit [`{SHA[:7]}`](https://ghe.example.com/octo/models/commit/{SHA})" in footer
    assert "[run 4242](https://ghe.example.com/octo/models/actions/runs/4242)" in footer
    assert re.search(r"onnx-release-checker \S+ · \d{4}-\d\d-\d\d \d\d:\d\d UTC", footer)


def test_without_them_nothing_links(bundles: Path, capsys: pytest.CaptureFixture[str], no_github: None) -> None:
    _, md = verify(bundles, capsys, "models/bad", "--format", "markdown")
    assert "](" not in md and "://" not in md
    assert re.search(r"<sub>onnx-release-checker \S+ · \d{4}-\d\d-\d\d \d\d:\d\d UTC · ", md.split(FOOTER_MARK)[1])


def test_a_passing_comment_is_at_most_six_visible_lines(
    bundles: Path, capsys: pytest.CaptureFixture[str], with_github: None, tmp_path: Path
) -> None:
    code, md = verify(bundles, capsys, "models/good", "--format", "markdown")
    assert code == 0
    shown = visible_lines(md)
    assert len(shown) <= 6, shown
    assert shown[0] == "## ✅ ONNX release check: 1 bundle passed"
    assert "7 of 7 pieces" in shown[1] and "3 of 3 comparisons passed" in shown[1]
    assert "| logits allclose" in md and "| onnxruntime |" in md  # all there, collapsed
    # With a comparison against a base, one more line says what changed.
    base = tmp_path / "base.json"
    verify(bundles, capsys, "models/good", "--format", "json", "--output", str(base))
    _, md = verify(bundles, capsys, "models/good", "--format", "markdown", "--compare-to", str(base))
    shown = visible_lines(md)
    assert len(shown) <= 6, shown
    assert "**Since the base:** no change in pieces, figures or findings" in shown


def test_many_passing_bundles_stay_within_six_visible_lines() -> None:
    many = [
        BundleReport(path=f"models/m{i}", manifest_file="bundle.yaml", name=f"m{i}", version="1") for i in range(40)
    ]
    md = render(Report("0.1.0", many, environment={"python": "3.11"}), links=Links("https://x.example", "o/r", SHA))
    assert len(visible_lines(md)) <= 6
    assert "and 35 more" in md


def test_a_case_table_shows_the_failing_cases_and_the_three_worst_passing() -> None:
    cases: dict[str, float | None] = {f"case{i}": 0.0 for i in range(7)}
    cases.update({"case3": 0.002, "case5": 0.001, "dusk": 0.4997})
    rule = RuleResult(
        "logits", "allclose", {"atol": 0.01}, False, 7 / 8, 1.0, "dusk", 0.4997, 0.01, 0.4997, cases=cases
    )
    bundle = BundleReport(path="m", manifest_file="bundle.yaml", name="m", version="1")
    bundle.comparisons.append(Comparison("int8", "reference", [rule]))
    md = render(Report("0.1.0", [bundle]))
    table = md[md.index("| rule | case | measured | |") :].split("</details>")[0]
    rows = [line.split(" | ")[1:] for line in table.splitlines() if line.startswith("| logits")]
    assert rows == [
        ["dusk", "0.4997", "❌ |"],
        ["case3", "0.002", "✅ |"],
        ["case5", "0.001", "✅ |"],
        ["case0", "0", "✅ |"],
        ["_4 more cases pass_", "| |"],
    ]


def test_the_text_report_has_the_same_order(bundles: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out = verify(bundles, capsys, "models/good", "models/bad")
    lines = out.splitlines()
    assert lines[0].startswith("FAIL: 1 of 2 bundle passes")
    assert lines[2].startswith("FAIL  mobilenet-tiny 1.0.0  (models/bad/bundle.yaml)")
    assert "labels.count" in lines[3] and "models/bad/bundle.yaml:36" in lines[3]  # the digest after it
    assert lines[4].strip() == "fix: remove the 1 extra labels: the output has 10 entries, the mapping 11"
    assert "bundle.digest" in lines[5]
    pieces = next(i for i, line in enumerate(lines) if line.startswith("  pieces"))
    assert max(i for i, line in enumerate(lines[:pieces]) if "fix:" in line) < pieces  # fixes before the pieces
    assert out.index("PASS  mobilenet-tiny 1.0.0  (models/good/bundle.yaml)") > pieces


def test_the_job_summary_has_the_same_order(bundles: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report_file = tmp_path / "report.json"
    verify(bundles, capsys, "models/good", "models/bad", "--format", "json", "--output", str(report_file))
    summary = tmp_path / "summary.md"
    config = Config(step_summary=summary, mode="verify-only", comment="never")
    published = publish(config, load_report(report_file), str(report_file), None)
    assert published.code == 1
    md = summary.read_text(encoding="utf-8")
    lines = md.splitlines()
    assert lines[0] == "## ❌ ONNX release check: 1 of 2 bundles failed"
    assert next(i for i, line in enumerate(lines) if "**Fix:**" in line) < 15


def test_checks_that_did_not_run_show_in_the_verdict_line() -> None:
    report = Report(
        "0.1.0", [BundleReport(path="m", name="m", not_run=[NotRun("image fidelity", "needs Pillow ([image])")])]
    )
    md = render(report)
    assert (
        md.splitlines()[0]
        == "## ✅ ONNX release check: 1 bundle passed — 1 check not run: image fidelity: needs Pillow (&#91;image&#93;)"
    )
    assert render_text(report).splitlines()[0].endswith("— 1 check not run: image fidelity: needs Pillow ([image])")
