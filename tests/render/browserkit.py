"""A Markdown report drawn as GitHub draws it, in headless Chromium, and what a reviewer sees measured there.

GitHub-flavoured Markdown by cmark-gfm (GitHub's own parser, through cmarkgfm) with GitHub's extensions; in a
comment a newline inside a paragraph is a line break (GitHub's "writing on GitHub" help), in a job summary it
is not. Mermaid blocks are drawn by the mermaid package from npm, github-markdown-css styles the page, and
Debian's chromium lays it out at a pull request's conversation width. The page measures itself once its
charts are drawn and writes the facts into the DOM, which `--dump-dom` prints.

`.ci/run` installs chromium (apt) and the npm packages (into NODE_MODULES, pinned below).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NPM_PACKAGES = ("mermaid@11.12.0", "github-markdown-css@5.9.0")
NODE_MODULES = Path(
    os.environ.get("CHECKER_TEST_NODE_MODULES", Path.home() / ".cache/onnx-release-checker-tests/browser/node_modules")
)
COMMENT_WIDTH = 780  # px: the conversation column of a pull request
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",  # as root (CI containers) Chromium refuses to start with its sandbox
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--allow-file-access-from-files",
    "--hide-scrollbars",
)


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def missing() -> str | None:
    """Why the browser test cannot run here, or None."""
    if chromium() is None:
        return "chromium is not installed (apt-get install chromium)"
    if not (NODE_MODULES / "mermaid/dist/mermaid.min.js").is_file():
        return f"mermaid is not installed in {NODE_MODULES} (npm install {' '.join(NPM_PACKAGES)})"
    return None


def to_html(markdown: str, comment: bool) -> str:
    import cmarkgfm
    from cmarkgfm.cmark import Options

    options = Options.CMARK_OPT_UNSAFE  # raw HTML kept: GitHub keeps details, summary, sub and br
    if comment:
        options |= Options.CMARK_OPT_HARDBREAKS
    body = cmarkgfm.github_flavored_markdown_to_html(markdown, options=options)
    # GitHub draws a ```mermaid block as a diagram; its source stays hidden beside it.
    return re.sub(
        r'<pre lang="mermaid"><code>(.*?)</code></pre>',
        r'<div class="mermaid-box"><pre class="mermaid-src" hidden>\1</pre></div>',
        body,
        flags=re.S,
    )


_PAGE = """<!doctype html>
<html><head><meta charset="utf-8">
<link rel="stylesheet" href="{css}">
<style>
  html, body {{ margin: 0; background: #fff; }}
  .markdown-body {{ box-sizing: border-box; width: {width}px; padding: 16px; font-size: 14px; }}
</style>
</head><body>
<article class="markdown-body" id="body">
{body}
</article>
<script src="{mermaid}"></script>
<script>
(async () => {{
  const body = document.getElementById('body');
  const details = Array.from(document.querySelectorAll('details'));
  const wasOpen = details.map(d => d.open);
  details.forEach(d => d.open = true);  // each chart drawn at its real width
  mermaid.initialize({{ startOnLoad: false, securityLevel: 'strict' }});
  const charts = [];
  const boxes = Array.from(document.querySelectorAll('.mermaid-box'));
  for (let i = 0; i < boxes.length; i++) {{
    const src = boxes[i].querySelector('.mermaid-src').textContent;
    try {{
      const {{ svg }} = await mermaid.render('chart' + i, src);
      const holder = document.createElement('div');
      holder.innerHTML = svg;
      boxes[i].appendChild(holder);
      charts.push({{ drawn: !!holder.querySelector('svg'), bars: holder.querySelectorAll('rect').length }});
    }} catch (e) {{
      charts.push({{ drawn: false, error: String(e && e.message || e) }});
    }}
  }}
  const openText = body.innerText;  // every fold open: markup showing as text anywhere
  details.forEach((d, i) => d.open = wasOpen[i]);
  const top = body.getBoundingClientRect().top;
  const y = el => el ? Math.round(el.getBoundingClientRect().top - top) : null;
  const heading = body.querySelector('h2');
  const fix = Array.from(body.querySelectorAll('strong')).find(s => /^Fix:?$/.test(s.textContent.trim()));
  const facts = {{
    height: Math.round(body.getBoundingClientRect().height),
    verdict: heading ? heading.innerText : null,
    verdict_y: y(heading),
    first_fix_y: y(fix),
    first_fix: fix ? fix.parentElement.innerText : null,
    closed_text: body.innerText,
    open_text: openText,
    charts: charts,
    summaries: Array.from(body.querySelectorAll('details > summary')).map(s => s.innerText),
  }};
  const out = document.createElement('pre');
  out.hidden = true;
  out.id = 'facts';
  out.textContent = JSON.stringify(facts);
  document.body.appendChild(out);
}})();
</script>
</body></html>
"""


@dataclass(frozen=True)
class Page:
    """What the page showed: its height, where the verdict and the first fix sit, its text, its charts."""

    facts: dict[str, Any]

    @property
    def height(self) -> int:
        return int(self.facts["height"])

    @property
    def verdict(self) -> str:
        return str(self.facts["verdict"] or "")

    @property
    def verdict_y(self) -> int | None:
        return self.facts["verdict_y"]

    @property
    def first_fix_y(self) -> int | None:
        return self.facts["first_fix_y"]

    @property
    def closed_text(self) -> str:
        return str(self.facts["closed_text"])

    @property
    def open_text(self) -> str:
        return str(self.facts["open_text"])

    @property
    def charts(self) -> list[dict[str, Any]]:
        return list(self.facts["charts"])


def page_html(markdown: str, comment: bool, width: int = COMMENT_WIDTH) -> str:
    return _PAGE.format(
        css=(NODE_MODULES / "github-markdown-css/github-markdown-light.css").as_uri(),
        mermaid=(NODE_MODULES / "mermaid/dist/mermaid.min.js").as_uri(),
        width=width,
        body=to_html(markdown, comment),
    )


def _run(page: Path, *extra: str, height: int = 900, width: int = COMMENT_WIDTH) -> str:
    browser = chromium()
    assert browser is not None
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        done = subprocess.run(
            [
                browser,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--virtual-time-budget=60000",  # the page's scripts (Mermaid) finish before the DOM is read
                *extra,
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"chromium failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def look(markdown: str, comment: bool, workdir: Path, screenshot: Path | None = None) -> Page:
    """Draw `markdown` in Chromium at comment width and read the page's facts back (and, if asked, a PNG)."""
    page = workdir / "page.html"
    page.write_text(page_html(markdown, comment), encoding="utf-8")
    dom = _run(page, "--dump-dom")
    found = re.search(r'<pre hidden="" id="facts">(.*?)</pre>', dom, re.S)
    if found is None:
        raise RuntimeError("the page wrote no facts (its script did not finish): " + dom[-1000:])
    facts = json.loads(html.unescape(found.group(1)))
    if screenshot is not None:
        _run(page, f"--screenshot={screenshot}", height=int(facts["height"]) + 32)
    return Page(facts)


MARKUP_AS_TEXT = {
    "a <br> tag": re.compile(r"<br\s*/?>", re.I),
    "a character reference": re.compile(r"&#?[0-9A-Za-z]+;"),
    "bold markers": re.compile(r"\*\*[^*\n]+\*\*"),
    "a <details> tag": re.compile(r"</?(details|summary)\b", re.I),
    "a code fence": re.compile(r"```"),
}


def markup_shown(text: str) -> list[str]:
    """Markup a reader would see as text (Markdown or HTML that did not render)."""
    shown = []
    for what, pattern in MARKUP_AS_TEXT.items():
        found = pattern.search(text)
        if found:
            shown.append(f"{what}: ...{text[max(found.start() - 60, 0) : found.end() + 60]}...")
    return shown
