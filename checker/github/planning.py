"""The action's `plan` mode: the matrix of the bundles that must run (`checker plan`), as step outputs, the
reused verdicts' report for the job that joins the legs' reports, and the plan in the job summary.

`changed-since: base` is the pull request's base commit (fetched into a shallow clone when it is missing), as
`compare-to: base` takes it; the verdict store is the `reuse` input's folder, which the action restores from
the Actions cache and never saves (docs/action.md: only the workflow's trusted job saves it)."""

from __future__ import annotations

import glob
import json
from pathlib import Path

from checker.errors import UsageError
from checker.github.base import base_sha, fetched
from checker.github.config import Config
from checker.github.event import Event, load_event
from checker.github.files import append_summary, write_outputs
from checker.github.run import context, resolve_bundles, verify_options
from checker.plan.planning import Plan, make_plan
from checker.plan.select import REUSED, RUN, UNCHANGED
from checker.readers.environment import environment
from checker.render.escape import text
from checker.reports.files import write_report

SHOWN = 50  # bundles listed in the summary's fold


def plan_matrix(config: Config) -> list[str]:
    """Make the plan, write its outputs, report and summary; returns the log's lines."""
    options = verify_options(config)
    resolved = resolve_bundles(config.bundles)
    event = load_event(config.event_name, config.event_path)
    plan = make_plan(resolved.paths, options, config.shards, _ref(config, event), _costs(config.costs))
    report = plan.reused_report(options, environment())
    report.context.update(context(config, event))
    write_report(Path(config.report), report)
    matrix = json.dumps(plan.matrix())
    if config.output is not None:
        write_outputs(
            config.output,
            {
                "matrix": matrix,
                "legs": str(len(plan.legs)),
                "run": str(plan.count(RUN)),
                "reused": str(plan.count(REUSED)),
                "report": config.report,
                "status": "pass",
                "failed": "0",
            },
        )
    if config.step_summary is not None:
        append_summary(config.step_summary, summary(plan))
    return [*plan.summary(), f"matrix: {matrix}"]


def _ref(config: Config, event: Event) -> str | None:
    if not config.changed_since:
        return None
    if config.changed_since != "base":
        return config.changed_since
    sha = base_sha(event)
    if sha is None:
        raise UsageError("changed-since: base needs a pull_request event (it names the base commit)")
    fetched(config.workspace or Path.cwd(), sha)
    return sha


def _costs(spec: str) -> list[Path]:
    """The reports of the costs input: paths or globs, space or newline separated; one that is missing is no
    cost (a first run has none)."""
    found: list[Path] = []
    for word in spec.split():
        matches = sorted(glob.glob(word, recursive=True)) if glob.has_magic(word) else [word]  # noqa: PTH207
        found += [Path(m) for m in matches if Path(m).is_file()]
    return found


def summary(plan: Plan) -> str:
    """The plan in the job summary: the counts, the legs, and each bundle's reason in a fold."""
    run, reused, unchanged = plan.count(RUN), plan.count(REUSED), plan.count(UNCHANGED)
    lines = [
        f"## ONNX release check: plan — {run} of {len(plan.planned)} bundles to run in {len(plan.legs)} legs",
        "",
        f"{reused} reused from the verdict store" + (f", {unchanged} unchanged since the base" if unchanged else ""),
        "",
    ]
    if plan.legs:
        lines += ["| leg | bundles | measured cost |", "| --- | --- | --- |"]
        for number, leg in enumerate(plan.legs, start=1):
            names = ", ".join(text(b, 200) for b in leg.bundles[:10]) + (" …" if len(leg.bundles) > 10 else "")
            shard = f" (shard {leg.shard})" if leg.shard else ""
            lines.append(f"| {number} | {names}{shard} | {leg.cost:.0f} s |")
        lines.append("")
    rows = [f"- {p.state}: {text(p.path, 200)} — {text(p.why, 300)}" for p in plan.planned[:SHOWN]]
    more = [f"- and {len(plan.planned) - SHOWN} more"] if len(plan.planned) > SHOWN else []
    lines += ["<details><summary>Each bundle</summary>", "", *rows, *more, "", "</details>", ""]
    return "\n".join(lines)
