"""`checker diagnose PATH --variant NAME`: where a variant's intermediate tensors leave the baseline's.

Imported when the command line starts: everything heavy is imported inside the handler.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

_MIN_DB = 30.0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "diagnose",
        help="find where a variant's intermediate tensors leave the baseline's, and which nodes to exclude",
        description="Compare every intermediate tensor of a variant with the baseline's on one case (by "
        "SQNR), report the first and the worst diverging tensors and a nodes_to_exclude list for "
        "onnxruntime.quantization.",
    )
    p.add_argument("path", metavar="PATH", help="a bundle folder, its manifest, or an archive")
    p.add_argument("--variant", metavar="NAME", help="the variant to diagnose")
    p.add_argument(
        "--reproduce",
        metavar="VARIANT",
        help="re-run VARIANT's recorded transform (tool, settings, calibration cases) on the baseline and compare "
        "the result with the shipped graph: weights, scales and zero points equal, or the first that differs; "
        "exit status 1 when it differs",
    )
    p.add_argument(
        "--case",
        metavar="NAME",
        help="the case to run (default: the one checker verify diagnoses, its first failing rule's worst case; "
        "when no rule fails, the one where the variant's outputs are furthest from the baseline's)",
    )
    p.add_argument(
        "--min-db",
        type=_finite,
        default=_MIN_DB,
        metavar="DB",
        help=f"a tensor below this SQNR counts as diverging (default {_MIN_DB:g})",
    )
    p.add_argument(
        "--requantize",
        action="store_true",
        help="re-run the variant's recorded onnxruntime.quantization transform, as recorded and with each "
        "candidate nodes_to_exclude, judge each result by the variant's rules, and recommend only what improves "
        "the failing rules",
    )
    p.add_argument(
        "--search-budget",
        type=_seconds,
        default=300.0,
        metavar="SECONDS",
        help="--requantize stops searching after this long and says what it did not try (default: 300)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.set_defaults(func=cmd_diagnose)


def cmd_diagnose(args: argparse.Namespace) -> int:
    from checker.diagnose.investigate import investigate
    from checker.errors import UsageError

    if not Path(args.path).exists():
        raise UsageError(f"no such path: {args.path}")
    if args.reproduce is not None:
        return _reproduce(args)
    if args.variant is None:
        raise UsageError("diagnose needs --variant NAME (or --reproduce VARIANT)")
    result = investigate(Path(args.path), args.variant, args.case, args.min_db, args.requantize, args.search_budget)
    if args.format == "json":
        from checker.reports.model import json_figures  # an infinite drop in dB is written "inf", as in the report

        sys.stdout.write(json.dumps(json_figures(result), indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(render_text(result))
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    from checker.diagnose.reproduce import reproduce_bundle

    result = reproduce_bundle(Path(args.path), args.reproduce)
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(result.summary + "\n")
    return 0 if result.equal else 1


def render_text(diagnosis: dict[str, Any]) -> str:
    """The summary, then one line per matched tensor in graph order, the diverging ones marked."""
    first = (diagnosis.get("first") or {}).get("tensor")
    worst = (diagnosis.get("worst") or {}).get("tensor")
    changed = [f"on case '{diagnosis.get('case')}': {c}" for c in diagnosis.get("answers_changed") or []]
    lines = [*changed, diagnosis["summary"], "", f"{'SQNR dB':>9} {'drop dB':>9}  tensor (node, op)"]
    for t in diagnosis.get("tensors", []):
        mark = " <- first" if t["tensor"] == first else " <- worst" if t["tensor"] == worst else ""
        low = "*" if t["sqnr_db"] < diagnosis["min_db"] else " "
        lines.append(f"{t['sqnr_db']:>9.1f} {t['drop_db']:>9.1f} {low}{t['tensor']} ({_where(t)}){mark}")
    lines.append("")
    lines.append(f"nodes_to_exclude = {diagnosis['nodes_to_exclude']!r}")
    if diagnosis.get("unmatched"):
        lines.append(f"{diagnosis['unmatched']} baseline tensor(s) have no counterpart in the variant")
    if diagnosis.get("requantize"):
        lines += _requantize_text(diagnosis["requantize"])
    return "\n".join(lines) + "\n"


def _requantize_text(done: dict[str, Any]) -> list[str]:
    """Each attempt with each rule's figure, then the measured recommendation."""
    lines = ["", done["summary"], ""]
    for trial in done["tried"]:
        changed = f", settings {trial['settings']!r}" if trial.get("settings") else ""
        lines.append(f"  {trial['label']} (nodes_to_exclude={trial['nodes_to_exclude']!r}{changed})")
        if trial.get("error"):
            lines.append(f"      {trial['error']}")
        for rule in trial["rules"]:
            figure = "-" if rule["measured"] is None else f"{rule['measured']:.4g}"
            lines.append(f"      {'pass' if rule['passed'] else 'FAIL'}  {rule['output']}/{rule['check']}  {figure}")
    lines.append("")
    found = done.get("found")
    if found:
        lines.append(f"measured recommendation: {_change(found)}")
        lines.append(f"the search found a change that passes every rule: {found['label']}")
        for rule in found["rules"]:
            lines.append(f"      {rule['output']}/{rule['check']}  {_num(rule['before'])} -> {_num(rule['after'])}")
        speed = found.get("faster") or {}
        timed = f", {speed['median']:.3g}x faster than the baseline" if "median" in speed else ""
        lines.append(f"      {found['smaller']:.3g}x smaller than the baseline{timed}")
    else:
        lines.append(f"measured recommendation: nodes_to_exclude = {done['recommended']!r}")
    if not found and done.get("not_tried"):
        lines.append(f"the search stopped ({done.get('stopped')}) before it tried: {', '.join(done['not_tried'])}")
    return lines


def _change(found: dict[str, Any]) -> str:
    """The passing change in the transform's own words: its settings, then the nodes it keeps in float."""
    said = [f"{key} = {value!r}" for key, value in (found.get("settings") or {}).items()]
    if found.get("nodes_to_exclude"):
        said.append(f"nodes_to_exclude = {found['nodes_to_exclude']!r}")
    return ", ".join(said) or "the recorded transform as it is"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _where(tensor: dict[str, Any]) -> str:
    from checker.compare.matching import GRAPH_INPUT  # loaded here: the CLI imports this module at start-up

    if tensor["node"] is None and tensor["exclude"] and tensor["op_type"] == GRAPH_INPUT:
        return f"graph input, quantized for {', '.join(tensor['exclude'])}"
    return f"{tensor['node'] or 'unnamed node'}, {tensor['op_type']}"


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds above 0 (at most a day)")
    return value


def _finite(text: str) -> float:
    """A finite number of decibels: with nan or inf no tensor would ever count as diverging."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or abs(value) > 1000:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of decibels from -1000 to 1000")
    return value
