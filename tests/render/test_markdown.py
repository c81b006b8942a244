"""The Markdown report: what it shows, that nothing from a bundle can act as Markdown, and its size limit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.cli import main
from checker.findings import error, info, warning
from checker.render.escape import text
from checker.render.links import Links
from checker.render.markdown import DEFAULT_LIMIT, FOOTER_MARK, render
from checker.reports.files import ReportError, load_report
from checker.reports.model import BundleReport, Comparison, Report, RuleResult
from checker.reports.parts.changes import Base, BundleChange, Changes, Compared, Edit, RuleChange, Verdicts

PIECES = ("graph", "external_weights", "preprocessing", "labels", "comparison_inputs", "runtime", "validation_command")
SHA = "0123456789abcdef0123456789abcdef01234567"
LINKS = Links("https://ghe.example.com", "octo/repo", SHA, "77", "2")
HOSTILE = "evil](https://phish.example) <img src=x onerror=alert(1)> @octocat #1 | `code` *bold* $x$ \n## heading"

SLOW = HealthCheck.too_slow  # a verdict does not depend on how fast this machine draws examples


def rule(
    output: str = "logits", check: str = "allclose", passed: bool = True, measured: float = 2e-5, **kw: Any
) -> RuleResult:
    values: dict[str, Any] = {
        "params": {"atol": 1e-4, "rtol": 1e-3},
        "pass_rate": 1.0 if passed else 0.5,
        "min_pass_rate": 1.0,
        "worst_case": "cat",
        "threshold": 1e-4,
        "would_pass_at": measured,
        "cases": {"cat": measured, "dog": measured / 2},
    }
    values.update(kw)
    return RuleResult(output, check, values.pop("params"), passed, values.pop("pass_rate"), values.pop("min_pass_rate"),
                      values.pop("worst_case"), measured, values.pop("threshold"), values.pop("would_pass_at"),
                      cases=values.pop("cases"), **values)  # fmt: skip


def bundle(name: str = "mobilenet-v2", failing: bool = True) -> BundleReport:
    b = BundleReport(path=f"models/{name}/bundle.yaml", manifest_file="bundle.yaml", name=name, version="2.1.0",
                     digest="sha256:" + "ab" * 32, pieces={p: True for p in PIECES})  # fmt: skip
    b.comparisons.append(Comparison("baseline", "reference", [rule(), rule(check="topk", params={"k": 5})]))
    if failing:
        b.pieces["validation_command"] = False
        b.add([error("bundle.missing_piece", "validation.command is not given", "bundle.yaml", 30)])
        b.comparisons.append(Comparison("int8", "reference", [rule(passed=False, measured=3e-4)]))
        b.comparisons.append(Comparison("pruned", "reference", skipped="the baseline failed"))
    b.add(
        [warning("graph.producer", "graph.producer is absent", "bundle.yaml", 8), info("validation.not_run", "not run")]
    )
    return b


def report(*bundles: BundleReport) -> Report:
    env = {"checker": "0.1.0", "onnxruntime": "1.32.0", "python": "3.11.7", "platform": "Linux x86_64"}
    return Report("0.1.0", list(bundles) or [bundle()], environment=env)


def cells(row: str) -> int:
    """How many table cells GitHub would see in a row: `|` splits cells unless escaped."""
    return len(re.findall(r"(?<!\\)\|", row)) - 1


def test_a_failing_report_shows_verdict_pieces_findings_rules_and_environment() -> None:
    md = render(report(bundle(), bundle("ok-model", failing=False)))
    assert md.startswith("## ❌ ONNX release check: 1 of 2 bundles failed\n")
    assert "### ❌ mobilenet-v2 2.1.0 — models/mobilenet-v2/bundle.yaml\n" in md
    first = "1. **bundle.missing_piece** at models/mobilenet-v2/bundle.yaml:30: validation.command is not given\n\n"
    assert first in md
    assert "   **Fix:** add the missing piece to the manifest" in md
    assert "**⚠️ 1 warning:**" in md and "- **graph.producer** at models/mobilenet-v2/bundle.yaml:8" in md
    assert "<details><summary>✅ 1 other bundle passed</summary>" in md
    assert "| ✅ | ok-model 2.1.0 | models/ok-model/bundle.yaml | 0 | 1 | 7/7 |" in md
    assert "- [x] external weights" in md and "- [ ] validation command: **missing**" in md
    assert "| ❌ | logits allclose (atol=0.0001, rtol=0.001) | 0.0003 | 0.0001 | cat | 50% |" in md
    assert "#### ⏭️ pruned against the reference: not assessed" in md and "the baseline failed" in md
    assert "| onnxruntime | 1.32.0 |" in md
    assert "would pass at" not in md  # the figure stays, worded as measured, in the collapsed rule table
    assert "measured at the pass rate asked" not in md  # it equals "measured" in every row


def test_no_chart_restates_a_comparison_table() -> None:
    md = render(report())
    assert "```mermaid" not in md  # each comparison's table has the figures; a chart of them says nothing more


def test_text_from_the_bundle_cannot_act_as_markdown() -> None:
    hostile = bundle(name=HOSTILE)
    hostile.version = "1.0|<b>"
    hostile.add([error("graph.io", HOSTILE, file="x|y.onnx", line=1)])
    hostile.comparisons[0].rules[0].output = 'y"]\n```\n<script>'
    md = render(report(hostile))
    assert "<img" not in md and "<script" not in md and "<b>" not in md
    assert "](" not in md and "@octocat" not in md and "#1 " not in md
    assert "https://phish" not in md and "\n## heading" not in md
    for line in md.splitlines():
        if line.startswith("| ") and "---" not in line:
            assert cells(line) in (6, 4, 7, 2), line  # the table's own columns, never more
    fences = [line for line in md.splitlines() if line.startswith("```")]
    assert len(fences) % 2 == 0 and all(f in ("```mermaid", "```") for f in fences)


def test_the_limit_cuts_the_least_important_first_and_says_so() -> None:
    full = render(report(), limit=10**7)
    assert "Per-case figures" in full and "Shortened" not in full
    shorter = render(report(), limit=len(full.encode()) - 1)
    assert "bundle.missing_piece" in shorter and "Per-case figures" not in shorter
    assert re.search(r"Shortened to fit GitHub's comment size limit: left out \d+ per-case figures\.", shorter)


def test_a_report_far_over_the_limit_keeps_its_verdict() -> None:
    big = bundle()
    big.add(error("labels.count", f"label {i} " + "x" * 200, "labels.txt", i) for i in range(2000))
    md = render(report(big))
    assert len(md.encode()) <= DEFAULT_LIMIT
    assert md.startswith("## ❌ ONNX release check: 1 of 1 bundle failed")
    note = re.search(r"Shortened to fit GitHub's comment size limit: left out (.*)\. The JSON report", md)
    assert note and "errors" in note.group(1) and "warnings" in note.group(1)
    assert "bundle.missing_piece" in md  # the first errors stay


def test_many_bundles_still_fit(tmp_path: Path) -> None:
    md = render(report(*(bundle(f"model-{i}") for i in range(400))), limit=20_000)
    assert len(md.encode()) <= 20_000
    assert "400 of 400 bundles failed" in md


def test_a_report_read_back_from_json_renders_the_same() -> None:
    data = report()
    assert render(Report.from_dict(json.loads(json.dumps(data.to_dict())))) == render(data)


def test_checker_verify_prints_the_same_markdown_as_its_json_renders(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_SHA"):
        monkeypatch.delenv(name, raising=False)
    example = Path(__file__).resolve().parents[2] / "examples" / "mobilenet-tiny"
    out = tmp_path / "report.json"
    # Untimed: a variant's speed measured twice differs; the rendering is what this compares.
    main(["verify", str(example), "--format", "json", "--output", str(out), "--gain-budget", "0"])
    capsys.readouterr()
    main(["verify", str(example), "--format", "markdown", "--gain-budget", "0"])
    printed = capsys.readouterr().out
    rendered = render(load_report(out))
    assert printed.split(FOOTER_MARK)[0] == rendered.split(FOOTER_MARK)[0]  # the footer's minute may differ


JSON = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)
KEYS = st.sampled_from(
    [
        "bundles",
        "findings",
        "comparisons",
        "rules",
        "pieces",
        "environment",
        "status",
        "name",
        "message",
        "measured",
        "threshold",
        "cases",
        "direction",
        "skipped",
        "line",
        "file",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEYS, JSON | st.lists(st.dictionaries(KEYS, JSON, max_size=6), max_size=3), max_size=6))
def test_any_json_is_refused_or_renders_within_the_limit(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any]
) -> None:
    path = tmp_path_factory.mktemp("json") / "report.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    try:
        read = load_report(path)
    except ReportError:
        return  # a clear error naming the file: JSON that is no report never reaches a renderer
    md = render(read, limit=4000)
    assert len(md.encode()) <= 4000


TEXT = st.text(max_size=30)
FIGURE = st.none() | st.floats()


@st.composite
def hostile_bundles(draw: st.DrawFn) -> BundleReport:
    """A bundle whose every name, message and figure is anything a hostile report could hold."""
    b = BundleReport(path=draw(TEXT), manifest_file=draw(st.none() | TEXT), name=draw(st.none() | TEXT),
                     version=draw(st.none() | TEXT), digest=draw(st.none() | TEXT))  # fmt: skip
    for severity in draw(st.lists(st.sampled_from([error, warning, info]), max_size=4)):
        b.add([severity(draw(TEXT), draw(TEXT), draw(st.none() | TEXT), draw(st.none() | st.integers()))])
    for _ in range(draw(st.integers(0, 2))):
        rules = [
            RuleResult(draw(TEXT), draw(TEXT), {draw(TEXT): draw(JSON)}, draw(st.booleans()), draw(st.floats(0, 1)),
                       draw(st.floats(0, 1)), draw(st.none() | TEXT), draw(FIGURE), draw(FIGURE), draw(FIGURE),
                       direction=draw(st.sampled_from(["max", "min"])),
                       cases=draw(st.dictionaries(TEXT, FIGURE, max_size=4)), tags=draw(st.lists(TEXT, max_size=2)))
            for _ in range(draw(st.integers(0, 3)))
        ]  # fmt: skip
        b.comparisons.append(Comparison(draw(TEXT), draw(TEXT), rules, skipped=draw(st.none() | TEXT)))
    return b


@settings(max_examples=100, deadline=None, suppress_health_check=[SLOW])
@given(st.lists(hostile_bundles(), max_size=3), st.booleans())
def test_any_report_renders_without_error_within_the_limit(bundles: list[BundleReport], strict: bool) -> None:
    md = render(Report("0.1.0", bundles, strict=strict), limit=4000)
    assert len(md.encode()) <= 4000


@given(st.text())
def test_escaped_text_is_one_inert_line(value: str) -> None:
    out = re.sub(r"&#\d+;", "", text(value))  # the character references it writes
    assert not set(out) & set("<>[]|`*~$\\\n\r&")
    assert not re.search(r"@\w", out) and not re.search(r"#\d", out) and "://" not in out


def github_html(markdown: str) -> str:
    """The HTML GitHub's parser (cmark-gfm, with GitHub's extensions) makes of `markdown`."""
    import cmarkgfm
    from cmarkgfm.cmark import Options

    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def test_githubs_parser_sees_no_link_image_or_html_and_whole_tables() -> None:
    hostile = bundle(name=HOSTILE)
    hostile.add([error("graph.io", HOSTILE + " https://evil.example www.evil.example a@b.example", "x|y.onnx", 1)])
    hostile.findings.append(error("bundle.digest", HOSTILE, "a`b](x)", 3, path="`m.onnx`](https://x)"))
    html = github_html(render(report(hostile)))
    assert "<a " not in html and "<img" not in html and "<script" not in html and "<h2>heading" not in html
    assert html.count("<details") == html.count("</details>") > 0
    for table in re.findall(r"<table>(.*?)</table>", html, re.S):
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        assert len({len(re.findall(r"<t[hd][ >]", row)) for row in rows}) == 1
    assert "<code>checker lock" in html  # the remedy's command is a code span, whatever the bundle's names


def test_with_github_links_githubs_parser_sees_only_links_into_the_repository() -> None:
    hostile = bundle(name=HOSTILE)
    hostile.path = "models/a b (x)/bundle.yaml"
    hostile.add([error("graph.io", HOSTILE, "../../../etc/passwd", 1), error("graph.io", "x", "sub/g.onnx", 2)])
    html = github_html(render(report(hostile), links=LINKS))
    hrefs = re.findall(r'<a href="([^"]*)"', html)
    assert hrefs and all(h.startswith("https://ghe.example.com/octo/repo/") for h in hrefs)
    assert f"https://ghe.example.com/octo/repo/blob/{SHA}/models/a%20b%20%28x%29/sub/g.onnx#L2" in hrefs
    assert not any("passwd" in h for h in hrefs)  # a path that leaves the repository gets no link


SCALAR = st.none() | st.booleans() | st.floats() | st.integers() | TEXT
RULE_CHANGES = st.builds(
    RuleChange,
    graph=st.none() | TEXT, against=st.none() | TEXT, output=st.none() | TEXT, check=st.none() | TEXT,
    base=FIGURE, head=FIGURE, delta=FIGURE, crossed=st.none() | st.sampled_from(["now fails", "now passes"]) | TEXT,
    params=st.dictionaries(TEXT, SCALAR, max_size=3), direction=st.sampled_from(["max", "min"]),
    threshold=FIGURE, base_threshold=FIGURE, moved=st.none() | st.booleans(),
    base_passed=st.none() | st.booleans(), head_passed=st.none() | st.booleans(), tags=st.lists(TEXT, max_size=2),
    rule=st.none() | st.sampled_from(["added", "removed", "edited"]) | TEXT,
    edits=st.lists(st.builds(Edit, param=TEXT, base=SCALAR, head=SCALAR, effect=TEXT), max_size=2),
    effect=st.none() | TEXT,
)  # fmt: skip
CHANGES = st.builds(
    BundleChange,
    path=st.just("models/mobilenet-v2/bundle.yaml"), name=st.none() | TEXT,
    state=st.sampled_from(["new", "removed", "changed", "unchanged"]) | TEXT,
    status=st.builds(Verdicts, base=st.none() | TEXT, head=st.none() | TEXT),
    compared=st.none() | st.builds(
        Compared, pieces=st.lists(TEXT, max_size=3), rules=st.lists(RULE_CHANGES, max_size=3),
        loosened=st.lists(TEXT, max_size=3),
    ),
)  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[SLOW])
@given(st.lists(CHANGES, max_size=3))
def test_any_changes_section_renders_within_the_limit(entries: list[BundleChange]) -> None:
    from checker.render.text import render as render_text

    data = report(bundle(failing=False))
    data.changes = Changes(Base(), entries)
    md = render(data, limit=4000)
    assert len(md.encode()) <= 4000
    assert md.startswith("## ✅ ONNX release check")
    render_text(data)
