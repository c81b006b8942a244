"""The release commands: `checker init`, `checker case add`, `checker variant add`, `checker pack`. Parse, call,
print, return a status.

Each handler imports its work when it runs: `checker --help` imports this module, and the release code loads
onnx, NumPy and the verify stages.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker import __version__
from checker.errors import UsageError
from checker.signing.options import add_signer_options, signer_from

if TYPE_CHECKING:
    from checker.release.init import InitResult
    from checker.release.pack import PackResult
    from checker.release.variant import AddedVariant


def register(subparsers: Any) -> None:
    _add_init(subparsers)
    _add_case(subparsers)
    _add_variant(subparsers)
    _add_pack(subparsers)


def _add_init(sub: Any) -> None:
    p = sub.add_parser(
        "init",
        help="start a bundle: write a bundle.yaml from a graph, with placeholders for the rest",
        description="Write a bundle.yaml from what the graph says (inputs, outputs, opset, "
        "producer, external weights, metadata labels, the runtime it needs) and a TODO placeholder "
        "for everything it cannot say; `checker verify` then lists those as missing pieces. Given a model "
        "folder, it says which layout it found and also writes what the folder's files declare, cases made from "
        "--raw inputs and every dtype file as a variant.",
    )
    p.add_argument(
        "model",
        type=Path,
        metavar="MODEL.onnx|DIR",
        help="a graph, or a model folder: a Hugging Face repository in transformers.js's layout, an Optimum "
        "export or an Ultralytics export (its preprocessing, labels, answers and every dtype file as a variant)",
    )
    p.add_argument(
        "--raw",
        type=Path,
        metavar="DIR",
        help="with a model folder: raw inputs (images, .txt texts, audio) made into cases, each preprocessed as "
        "declared, its reference outputs made by the baseline graph",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="the bundle folder (default: the model's folder); a model outside it is copied in with its external "
        "data (a model folder is the bundle itself)",
    )
    p.add_argument("--name", help="release.name (default: from the folder's name)")
    p.add_argument(
        "--release-version",
        metavar="VERSION",
        help="release.version (default: the graph's model_version when set, else 0.1.0)",
    )
    p.add_argument(
        "--target",
        metavar="TEXT",
        help="runtime.target, the device (e.g. 'Raspberry Pi 5'); a known one also proposes runtime.platforms",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing manifest (its release and "
        "comparison sections are kept) and files in the way of the copied model",
    )
    p.set_defaults(func=cmd_init)


def _add_case(sub: Any) -> None:
    case = sub.add_parser("case", help="manage a bundle's comparison cases")
    actions = case.add_subparsers(dest="case_command", required=True, metavar="{add}")
    p = actions.add_parser(
        "add",
        help="store a comparison case (tensors as .npy) and name it in the manifest",
        description="Store a case's input tensors and the reference's outputs in the bundle "
        "(as .npy, under cases/NAME/) and add it to comparison.cases, keeping the manifest's "
        "comments. A raw input given without a tensor is made into one with the input's "
        "declared preprocessing.",
    )
    p.add_argument("path", type=Path, metavar="PATH", help="the bundle folder or its manifest")
    p.add_argument("--name", required=True, help="the case's name (letters, digits, '.', '_', '-')")
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="an input tensor (.npy, .pb, or a .npz holding it); repeat per input",
    )
    p.add_argument(
        "--expected",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="an output of the reference (.npy, .pb, or a .npz holding it); repeat per output",
    )
    p.add_argument(
        "--raw",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="the application input (image, text, audio, CSV or Parquet rows) an input tensor is made from",
    )
    p.add_argument("--tag", action="append", default=[], help="a tag; `edge` marks an awkward case")
    p.add_argument(
        "--reference",
        metavar="TEXT",
        help="what produced the expected outputs, for comparison.reference when it is empty",
    )
    p.add_argument("--replace", action="store_true", help="replace a case of the same name")
    p.set_defaults(func=cmd_case_add)


def _add_variant(sub: Any) -> None:
    variant = sub.add_parser("variant", help="manage a bundle's variants (quantized, float16, 4-bit graphs)")
    actions = variant.add_subparsers(dest="variant_command", required=True, metavar="{add}")
    p = actions.add_parser(
        "add",
        help="record a graph derived from the baseline as a variant, with its transform and measured rules",
        description="Record a graph made from the baseline (by onnxruntime.quantization, a float16 conversion, "
        "...) in the manifest's variants, keeping its comments: its path and sha256, what it derives from, "
        "the transform as far as the graph shows it (QDQ or operator-format int8, static or dynamic, "
        "per-channel, reduce_range, activation and weight types, float16, 4-bit MatMulNBits and its block size; "
        "what is stated wins, and a stated setting the graph contradicts is said), and rules and drift rules "
        "whose thresholds are measured on the bundle's cases, as `checker verify` judges them, with headroom.",
    )
    p.add_argument("path", type=Path, metavar="PATH", help="the bundle folder or its manifest")
    p.add_argument(
        "--graph",
        type=Path,
        required=True,
        metavar="FILE",
        help="the variant's .onnx file (one outside the bundle is copied in, with its external data)",
    )
    p.add_argument("--name", help="the variant's name (default: the file's name less the baseline's, e.g. int8)")
    p.add_argument(
        "--transform",
        metavar="TOOL",
        help="the tool that made it, e.g. onnxruntime.quantization.quantize_static (default: what the graph shows)",
    )
    p.add_argument(
        "--transform-version",
        metavar="VERSION",
        help="the tool's version (default: the version of its package installed here)",
    )
    p.add_argument(
        "--settings",
        action="append",
        nargs="+",
        default=[],
        metavar="K=V",
        help="a setting it ran with, the value as YAML (per_channel=true, calibrate_method=Entropy, "
        "nodes_to_exclude=[conv1]); these win over what the graph shows",
    )
    p.add_argument(
        "--calibration-cases",
        nargs="+",
        metavar="N|NAME",
        help="the cases quantize_static calibrated on: a count of the bundle's first cases, or their names",
    )
    p.add_argument(
        "--derived-from",
        default="baseline",
        metavar="NAME",
        help="'baseline' (the default) or an earlier variant it was made from",
    )
    p.add_argument(
        "--platform",
        action="append",
        default=[],
        metavar="NAME",
        help="also measure on this CPU class (as `checker verify --platform`), so the thresholds hold there too",
    )
    p.add_argument("--replace", action="store_true", help="record a variant of the same name anew")
    p.add_argument("--force", action="store_true", help="replace files in the way of a graph copied into the bundle")
    p.set_defaults(func=cmd_variant_add)


def _add_pack(sub: Any) -> None:
    p = sub.add_parser(
        "pack",
        help="verify a bundle and write it as one deterministic .tar.gz",
        description="Verify the bundle, then write the manifest and exactly the files it names "
        "into one .tar.gz that is the same bytes every time, and print the bundle digest. A "
        "failing bundle is not packed.",
    )
    p.add_argument("path", type=Path, metavar="PATH", help="the bundle folder or its manifest")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="NAME-VERSION.tar.gz",
        help="the archive to write (default: NAME-VERSION.tar.gz here)",
    )
    p.add_argument("--strict", action="store_true", help="warnings fail the bundle too")
    p.add_argument(
        "--device-outputs",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        dest="device_outputs",
        help="the folder a device kit's runner wrote on a device the manifest declares (repeatable): a declared "
        "platform not judged is a check not run, and such a release is not packed",
    )
    p.add_argument(
        "--sign",
        action="store_true",
        help="sign the verified bundle into bundle.sig (as `checker sign` does, with its signer flags) and pack it",
    )
    add_signer_options(p)
    p.set_defaults(func=cmd_pack)


def cmd_init(args: argparse.Namespace) -> int:
    from checker.release.init import init_bundle

    if args.model.is_dir():
        return _init_folder(args)
    if args.raw is not None:
        raise UsageError("--raw reads a model folder's raw inputs: give the folder (checker init DIR --raw RAW)")
    result = init_bundle(
        args.model, args.out, name=args.name, version=args.release_version, force=args.force, device=args.target
    )
    sys.stdout.write(init_summary(result))
    return 0


def _init_folder(args: argparse.Namespace) -> int:
    from checker.release.fromfolder import init_folder

    if args.out is not None:
        raise UsageError("--out: a model folder becomes a bundle where it is (copy the folder first to keep it)")
    result = init_folder(
        args.model, args.raw, name=args.name, version=args.release_version, force=args.force, device=args.target
    )
    lines = [f"found {s}" if i == 0 else f"  {s}" for i, s in enumerate(result.said)]
    lines.append(f"wrote {result.init.manifest}")
    lines += [f"  from the folder's files: {f}" for f in result.filled]
    if result.cases:
        lines.append(f"cases made from the raw inputs, referenced by the baseline graph: {', '.join(result.cases)}")
    lines += [f"variant {v}" for v in result.variants]
    lines += [f"to do: {t}" for t in result.todo]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def init_summary(result: InitResult) -> str:
    lines = [f"wrote {result.manifest}"]
    if result.copied:
        lines.append(f"copied into the bundle: {', '.join(result.copied)}")
    if result.guesses:
        lines.append("guessed from hints, check them:")
        lines += [f"  - {g}" for g in result.guesses]
    if result.placeholders:
        lines.append("to do (marked TODO; `checker verify` reports them as missing):")
        lines += [f"  - {p}" for p in result.placeholders]
    return "\n".join(lines) + "\n"


def cmd_case_add(args: argparse.Namespace) -> int:
    from checker.release.casestore import NewCase, add_case
    from checker.release.tensorarg import load_tensors, pairs

    if not args.expected:
        raise UsageError("case add: give the reference's outputs with --expected NAME=FILE")
    inputs, expected = pairs(args.input, "--input"), pairs(args.expected, "--expected")
    case = NewCase(
        args.name,
        load_tensors(inputs),
        load_tensors(expected),
        pairs(args.raw, "--raw"),
        list(args.tag),
        input_files={name: str(path) for name, path in inputs.items()},
        expected_files={name: str(path) for name, path in expected.items()},
    )
    added = add_case(args.path, case, replace=args.replace, reference=args.reference)
    verb = "replaced" if added.replaced else "added"
    sys.stdout.write(f"{verb} case '{added.name}' in {added.manifest}: {', '.join(added.files)}\n")
    if added.built:
        sys.stdout.write(f"made from the raw inputs by the declared preprocessing: {', '.join(added.built)}\n")
    if added.locked:
        sys.stdout.write("release.digest no longer matches the files: run `checker lock` to update it\n")
    return 0


def cmd_variant_add(args: argparse.Namespace) -> int:
    from checker.release.variant import VariantSpec, add_variant

    spec = VariantSpec(
        args.graph,
        name=args.name,
        tool=args.transform,
        version=args.transform_version,
        settings=settings_arg([v for group in args.settings for v in group]),
        calibration=calibration_arg(args.calibration_cases),
        derived_from=args.derived_from,
        replace=args.replace,
        force=args.force,
        platforms=list(args.platform),
    )
    sys.stdout.write(variant_summary(add_variant(args.path, spec)))
    return 0


SETTING_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_SETTING_TEXT = 4096


def settings_arg(values: list[str]) -> dict[str, Any]:
    """{KEY: value} from ["KEY=VALUE", ...], each value read as YAML (a number, true, a name, [a, b])."""
    import yaml

    out: dict[str, Any] = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not SETTING_KEY.match(key):
            raise UsageError(f"--settings {value[:80]}: expected KEY=VALUE, KEY a Python identifier")
        if key in out:
            raise UsageError(f"--settings: '{key}' is given twice")
        if len(text) > MAX_SETTING_TEXT:
            raise UsageError(f"--settings {key}: the value is longer than {MAX_SETTING_TEXT} characters")
        try:
            out[key] = yaml.safe_load(text) if text else ""
        except yaml.YAMLError as exc:
            raise UsageError(f"--settings {key}={text[:80]}: not a YAML value ({exc.__class__.__name__})") from exc
        if not isinstance(out[key], (str, int, float, bool, list, dict)) or out[key] is None:
            raise UsageError(f"--settings {key}={text[:80]}: give a number, true or false, a name or a list")
    return out


def calibration_arg(values: list[str] | None) -> int | list[str] | None:
    """--calibration-cases: one number is a count of the first cases; anything else names cases."""
    if not values:
        return None
    if len(values) == 1 and values[0].isdigit():
        return int(values[0])
    return list(values)


def variant_summary(added: AddedVariant) -> str:
    transform = added.transform
    settings = ", ".join(f"{k}: {_value(v)}" for k, v in transform["settings"].items())
    verb = "recorded anew" if added.replaced else "recorded"
    lines = [
        f"{verb} variant '{added.name}' in {added.manifest}",
        f"transform: {transform['tool']} {transform['version']} {{{settings}}}",
        f"  the graph shows: {added.shown}",
    ]
    if added.copied:
        lines.append(f"copied into the bundle: {', '.join(added.copied)}")
    lines += [f"  assumed: {a}" for a in added.assumed]
    lines += [f"  said: {c}" for c in added.contradictions]
    lines += [f"  note: {n}" for n in added.notes]
    if added.proposals:
        lines.append(f"rules proposed, measured on {' and '.join(added.places)}:")
        for proposed in added.proposals:
            shown = _flow(proposed.rule) if proposed.rule is not None else "none"
            lines.append(f"  {proposed.group}: {shown}  # {proposed.note}")
    lines += [f"to do: {h}" for h in added.hints]
    if added.locked:
        lines.append("release.digest no longer matches the manifest: run `checker lock` to update it")
    return "\n".join(lines) + "\n"


def _flow(rule: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in rule.items()) + "}"


def _value(value: Any) -> str:
    """A value as the manifest writes it (true, not True)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def cmd_pack(args: argparse.Namespace) -> int:
    from checker.release.pack import pack

    if not args.path.exists():
        raise UsageError(f"no such path: {args.path}")
    given = args.key or args.certificate or args.certificate_chain or args.sigstore
    if given and not args.sign:
        raise UsageError("--key, --certificate, --certificate-chain and --sigstore sign the archive: add --sign")
    signer = signer_from(args) if args.sign else None  # a wrong signer flag is said before the verification
    for folder in args.device_outputs:
        if not folder.is_dir():
            raise UsageError(f"--device-outputs {folder}: no such folder")
    result = pack(args.path, args.output, strict=args.strict, signer=signer, device_outputs=args.device_outputs)
    if result.archive is None:
        sys.stdout.write(_failed_report(result, args.strict))
        why = "it fails verification (the findings above)"
        if result.report.status(args.strict) == "pass":
            from checker.reports.model import not_run_line  # the report's words, loaded by a refused pack only

            why = f"not every check ran here ({not_run_line(result.report.not_run)})"
        sys.stderr.write(f"checker: {args.path} was not packed: {why}\n")
        return 1
    signed = " (signed: bundle.sig)" if args.sign else ""
    sys.stdout.write(f"packed {len(result.files)} files into {result.archive}{signed}\nbundle digest {result.digest}\n")
    return 0


def _failed_report(result: PackResult, strict: bool) -> str:
    from checker.readers.environment import environment
    from checker.render import render
    from checker.reports.model import Report

    report = Report(checker_version=__version__, bundles=[result.report], strict=strict, environment=environment())
    return render("text", report)
