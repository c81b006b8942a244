"""Structure-aware generators of hostile bundles, one family per kind of input `checker verify` reads.

Each strategy draws a `FuzzInput`: a description (printed when a run fails) and a function that writes the
input into a folder, starting from a trimmed copy of the example bundle, and returns the path to verify.
The test suite (tests/fuzz) and the campaign script (scripts/fuzz_campaign.py) share these.
"""

from __future__ import annotations

import copy
import functools
import io
import json
import shutil
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import yaml
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mobilenet-tiny"
SCHEMA = json.loads((REPO / "schemas" / "manifest.schema.json").read_text(encoding="utf-8"))
CASES_KEPT = 2  # two cases keep a verification well under a second, and still exercise every stage


@dataclass(frozen=True)
class FuzzInput:
    family: str
    description: str
    write: Callable[[Path], Path]  # folder to write into -> the path to verify

    def __repr__(self) -> str:  # what Hypothesis prints for a failing example
        return f"FuzzInput({self.family}: {self.description[:4000]})"


def base_manifest() -> dict[str, Any]:
    """The example's manifest with two cases and no digests, so changed files reach the later stages."""
    data: dict[str, Any] = yaml.safe_load((EXAMPLE / "bundle.yaml").read_text(encoding="utf-8"))
    data["release"].pop("digest", None)
    data["comparison"]["cases"] = data["comparison"]["cases"][:CASES_KEPT]

    def drop(node: Any) -> None:
        if isinstance(node, dict):
            node.pop("sha256", None)
            for value in node.values():
                drop(value)
        elif isinstance(node, list):
            for value in node:
                drop(value)

    drop(data)
    return data


BASE = base_manifest()
KEPT_CASES = [c["name"] for c in BASE["comparison"]["cases"]]


def copy_base(dest: Path, manifest: dict[str, Any] | None = None, text: str | None = None) -> Path:
    """The trimmed example bundle under dest/bundle; the manifest written as YAML (or `text` as given)."""
    root = dest / "bundle"
    shutil.copytree(EXAMPLE, root, ignore=lambda folder, names: [n for n in names if _dropped(folder, n)])
    (root / "bundle.yaml").unlink()
    if text is not None:
        (root / "bundle.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
    else:
        (root / "bundle.yaml").write_text(dump(manifest if manifest is not None else BASE), encoding="utf-8")
    return root


def _dropped(folder: str, name: str) -> bool:
    return Path(folder).name == "cases" and name not in KEPT_CASES


def dump(data: Any) -> str:
    """YAML for the manifest; what YAML cannot write (a lone surrogate) goes as JSON escapes, which YAML reads."""
    try:
        return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=False, width=1 << 16))
    except (yaml.YAMLError, UnicodeError, ValueError):
        return json.dumps(data, ensure_ascii=True)


# ----- values a hostile manifest holds

NASTY_STRINGS = st.sampled_from(
    [
        "\ud800",
        "a\udcffb.onnx",
        "../outside",
        "/etc/passwd",
        "C:\\x",
        "a" * 300,
        "x/" * 200 + "y",
        "é" * 200,
        "**/" * 30 + "*.npy",
        "cases/**",
        "\x00",
        "\u202etxt.onnx",
        "x" * 30_000,
        "",
        " ",
        "model.onnx",
        "labels.txt",
        "cases/*",
    ]
)
NASTY_NUMBERS = st.sampled_from(
    [
        10**400,
        -(10**400),
        2**63,
        2**64 + 1,
        -(2**63) - 1,
        1e308,
        -1e308,
        float("inf"),
        float("-inf"),
        float("nan"),
        5e-324,
        0,
        -1,
        1024,
        100_000,
        65536,
    ]
)
LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | NASTY_STRINGS
    | NASTY_NUMBERS
)
VALUES = st.recursive(
    LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, sub in node.items():
            out += _paths(sub, (*prefix, key))
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            out += _paths(sub, (*prefix, i))
    return out


ALL_PATHS = [p for p in _paths(BASE) if p]


@st.composite
def mutated_manifests(draw: st.DrawFn) -> FuzzInput:
    """The example's manifest with one to four fields deleted, replaced or added, with hostile values."""
    data = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(ALL_PATHS))
        parent: Any = data
        try:
            for key in path[:-1]:
                parent = parent[key]
            action = draw(st.sampled_from(["delete", "replace", "replace", "add"]))
            if action == "delete":
                del parent[path[-1]]
            elif action == "replace":
                parent[path[-1]] = draw(VALUES)
            elif isinstance(parent, dict):
                parent[draw(st.text(max_size=10) | NASTY_STRINGS)] = draw(VALUES)
        except (KeyError, IndexError, TypeError):
            continue
    text = dump(data)
    return FuzzInput("mutated manifest", text, lambda dest: copy_base(dest, text=text))


# ----- manifests from the schema


def _branch(schema: dict[str, Any], index: int, key: str) -> dict[str, Any]:
    """One if/then branch of an allOf as a schema of its own (the const that selects it, and its fields)."""
    branch = schema["allOf"][index]
    out = copy.deepcopy(branch["then"])
    out["type"] = "object"
    out.setdefault("properties", {})[key] = branch["if"]["properties"][key]
    out["required"] = sorted({*schema.get("required", []), key})
    out["additionalProperties"] = False
    return out


@functools.cache
def _from_schema(text: str) -> st.SearchStrategy[Any]:
    from hypothesis_jsonschema import from_schema

    return from_schema(json.loads(text))


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    return _from_schema(json.dumps(schema, sort_keys=True))


def _capped(schema: dict[str, Any], items: int) -> dict[str, Any]:
    out = copy.deepcopy(schema)
    out["maxItems"] = min(out.get("maxItems", items), items)
    return out


PROPS = SCHEMA["properties"]
RULE = PROPS["comparison"]["properties"]["rules"]["items"]
PREPROCESSING = PROPS["inputs"]["items"]["properties"]["preprocessing"]
# Parts of the schema generated whole; the rest (inputs, cases, variants) are too entangled for the
# generator to draw quickly, so their rules and preprocessing blocks are drawn branch by branch below.
WHOLE = ("release", "graph", "runtime", "validation")


def rules_from_schema() -> st.SearchStrategy[list[Any]]:
    branches = [from_schema(_branch(RULE, i, "check")) for i in range(len(RULE["allOf"]))]
    return st.lists(st.one_of(branches), min_size=1, max_size=3)


def preprocessing_from_schema() -> st.SearchStrategy[Any]:
    return st.one_of([from_schema(_branch(PREPROCESSING, i, "kind")) for i in range(len(PREPROCESSING["allOf"]))])


@st.composite
def schema_manifests(draw: st.DrawFn) -> FuzzInput:
    """The example's manifest with parts replaced by values the schema admits: every such manifest must be
    verified, in seconds, without a crash."""
    data = copy.deepcopy(BASE)
    for key in draw(st.sets(st.sampled_from((*WHOLE, "outputs", "rules", "preprocessing")), min_size=1)):
        if key in WHOLE:
            data[key] = draw(from_schema(PROPS[key]))
        elif key == "outputs":
            data["outputs"] = draw(from_schema(_capped(PROPS["outputs"], 2)))
        elif key == "rules":
            data["comparison"]["rules"] = draw(rules_from_schema())
        else:
            data["inputs"][0]["preprocessing"] = draw(preprocessing_from_schema())
    text = json.dumps(data, ensure_ascii=True)
    return FuzzInput("schema manifest", text, lambda dest: copy_base(dest, text=text))


# ----- byte mutations, shared by archives, tensor files and graphs


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` with a few flips, cuts, zeroed runs, insertions or duplicated runs."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        if not out:
            break
        at = draw(st.integers(0, len(out) - 1))
        kind = draw(st.sampled_from(["flip", "byte", "truncate", "zero", "insert", "repeat"]))
        if kind == "flip":
            out[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte":
            out[at] = draw(st.sampled_from([0, 0xFF, 0x7F, 0x80, ord("'"), ord("("), ord("{")]))
        elif kind == "truncate":
            del out[at:]
        elif kind == "zero":
            span = draw(st.integers(1, 64))
            out[at : at + span] = bytes(len(out[at : at + span]))
        elif kind == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=16))
        else:
            span = draw(st.integers(1, 32))
            out[at:at] = bytes(out[at : at + span]) * draw(st.integers(1, 8))
    return bytes(out)


# ----- archives


@functools.cache
def _packed(kind: str) -> bytes:
    """The trimmed base bundle as a .tar.gz or .zip, inside one folder as a release archive holds it."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = copy_base(Path(tmp))
        buffer = io.BytesIO()
        if kind == "zip":
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
                for path in sorted(root.rglob("*")):
                    zf.write(path, f"bundle/{path.relative_to(root).as_posix()}")
        else:
            with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
                tar.add(root, "bundle")
        return buffer.getvalue()


def _zip_flags(data: bytes, flag: int, method: int | None) -> bytes:
    """Every local and central header with `flag` set (1: encrypted) and, if given, another method."""
    out = bytearray(data)
    for magic, flag_at, method_at in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        at = out.find(magic)
        while at != -1:
            out[at + flag_at] |= flag
            if method is not None:
                out[at + method_at : at + method_at + 2] = method.to_bytes(2, "little")
            at = out.find(magic, at + 4)
    return bytes(out)


@st.composite
def archives(draw: st.DrawFn) -> FuzzInput:
    kind = draw(st.sampled_from(["tar.gz", "zip"]))
    data = _packed(kind)
    how = draw(st.sampled_from(["bytes", "bytes", "flags"] if kind == "zip" else ["bytes"]))
    if how == "flags":
        data = _zip_flags(data, draw(st.sampled_from([0, 1, 8, 0x41])), draw(st.sampled_from([None, 1, 6, 12, 14, 99])))
        description = f"{kind} with zip flags/method changed"
    else:
        data = draw(mutated_bytes(data))
        description = f"{kind} of {len(data)} bytes, mutated"

    def write(dest: Path) -> Path:
        path = dest / f"bundle.{kind}"
        path.write_bytes(data)
        return path

    return FuzzInput("archive", description, write)


# ----- tensor files: .npy, .npz, .pb


def _case_array(name: str) -> np.ndarray:
    return np.asarray(np.load(EXAMPLE / "cases" / KEPT_CASES[0] / f"{name}.npy"))


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def _pb_bytes(array: np.ndarray, name: str) -> bytes:
    from onnx import numpy_helper

    return bytes(numpy_helper.from_array(array, name).SerializeToString())


HEADERS = st.sampled_from(
    [
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 32, 32), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999), }",
        "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }",
        "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 3, 32, 32), }",
        "{'descr': '>f8', 'fortran_order': False, 'shape': (1, 3, 32, 32), }",
        "{'descr': '<U9', 'fortran_order': False, 'shape': (1,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 32, 32), " + "'x': ((((" * 50 + "}",
        "\x00" * 60,
        "{'descr': '<f4'",
        "(" * 200,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1.5,), }",
    ]
)


def _npy_with_header(header: str, body: bytes) -> bytes:
    text = header.encode("latin1", "replace")
    text += b" " * (-(len(text) + 11) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + body


@st.composite
def tensor_files(draw: st.DrawFn) -> FuzzInput:
    """A case's input tensor replaced by a damaged .npy, .npz or ONNX test-data .pb file."""
    pixels = _case_array("pixel_values")
    kind = draw(st.sampled_from(["npy", "npy-header", "npz", "pb"]))
    data = copy.deepcopy(BASE)
    case = data["comparison"]["cases"][0]
    folder = f"cases/{case['name']}"
    if kind == "npy":
        blob, rel = draw(mutated_bytes(_npy_bytes(pixels))), f"{folder}/pixel_values.npy"
    elif kind == "npy-header":
        header = draw(HEADERS)
        blob, rel = _npy_with_header(header, pixels.tobytes()[: draw(st.integers(0, 12288))]), f"{folder}/x.npy"
        case["inputs"] = {"pixel_values": rel}
    elif kind == "npz":
        blob, rel = draw(mutated_bytes(_npz_bytes({"pixel_values": pixels}))), f"{folder}/inputs.npz"
        case["inputs"] = rel
    else:
        blob, rel = draw(mutated_bytes(_pb_bytes(pixels, "pixel_values"))), "test_data_set_0/input_0.pb"
        logits = _case_array("logits")
        data["comparison"]["cases"].append({"onnx_test_data": "test_data_set_*"})
        expected = _pb_bytes(logits, "logits")
    if kind == "pb":

        def write(dest: Path) -> Path:
            root = copy_base(dest, data)
            (root / "test_data_set_0").mkdir()
            (root / rel).write_bytes(blob)
            (root / "test_data_set_0" / "output_0.pb").write_bytes(expected)
            return root

    else:

        def write(dest: Path) -> Path:
            root = copy_base(dest, data)
            (root / rel).write_bytes(blob)
            return root

    return FuzzInput("tensor file", f"{kind} at {rel}: {blob[:200]!r}... ({len(blob)} bytes)", write)


# ----- graphs


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _graph_bytes() -> bytes:
    return (EXAMPLE / "model.onnx").read_bytes()


@st.composite
def structured_graph(draw: st.DrawFn) -> bytes:
    """The example graph with a structural change: dims, types, ops, attributes, versions, external data."""
    model = onnx.load_from_string(_graph_bytes())
    change = draw(st.sampled_from(["dim", "elem_type", "op_type", "attribute", "ir", "opset", "external", "drop"]))
    value = draw(st.sampled_from([0, -1, 1, 2**31, 2**62, 10**18]))
    graph = model.graph
    if change == "dim":
        graph.input[0].type.tensor_type.shape.dim[draw(st.integers(0, 3))].dim_value = value
    elif change == "elem_type":
        graph.input[0].type.tensor_type.elem_type = draw(st.integers(0, 30))
    elif change == "op_type" and graph.node:
        graph.node[draw(st.integers(0, len(graph.node) - 1))].op_type = draw(
            st.sampled_from(["Loop", "Unknown", "", "Conv", "Reshape", "Expand", "ConstantOfShape"])
        )
    elif change == "attribute" and graph.node:
        node = graph.node[draw(st.integers(0, len(graph.node) - 1))]
        node.attribute.append(onnx.helper.make_attribute(draw(st.sampled_from(["axis", "value", "x"])), value))
    elif change == "ir":
        model.ir_version = abs(value) % (2**63)
    elif change == "opset":
        model.opset_import[0].version = abs(value) % (2**63)
    elif change == "external" and graph.initializer:
        tensor = graph.initializer[0]
        tensor.data_location = onnx.TensorProto.EXTERNAL
        tensor.ClearField("raw_data")
        location = draw(NASTY_STRINGS.filter(_encodable) | st.just("weights.bin"))  # protobuf holds UTF-8 only
        for key, v in (("location", location), ("offset", str(value)), ("length", str(abs(value)))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, v
    elif change == "drop":
        graph.ClearField(draw(st.sampled_from(["node", "input", "output", "initializer"])))
    return bytes(model.SerializeToString())


@st.composite
def graphs(draw: st.DrawFn) -> FuzzInput:
    structured = draw(st.booleans())
    blob = draw(structured_graph()) if structured else draw(mutated_bytes(_graph_bytes()))
    variant = draw(st.booleans())  # the variant's graph is read by other code paths than the baseline's
    name = "model.int8.onnx" if variant else "model.onnx"

    def write(dest: Path) -> Path:
        root = copy_base(dest)
        (root / name).write_bytes(blob)
        return root

    how = "structured" if structured else "byte-mutated"
    return FuzzInput("graph", f"{how} {name}, {len(blob)} bytes: {blob[:120]!r}", write)


# ----- rules and preprocessing blocks with extreme parameters

EXTREME = (
    NASTY_NUMBERS
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([None, True, "x", [], {}])
)
CHECKS = ["allclose", "max_abs", "mean_abs", "cosine", "sqnr", "topk", "score_drift", "exact", "nope"]
RULE_PARAMS = ["atol", "rtol", "max", "min", "min_db", "k", "axis", "min_agreement", "apply", "min_pass_rate"]


@st.composite
def rule_sets(draw: st.DrawFn) -> FuzzInput:
    rules = []
    for _ in range(draw(st.integers(1, 3))):
        rule: dict[str, Any] = {"output": draw(st.sampled_from(["logits", "logits", "nope", "\ud800"]))}
        rule["check"] = draw(st.sampled_from(CHECKS))
        for key in draw(st.sets(st.sampled_from(RULE_PARAMS), max_size=3)):
            rule[key] = draw(EXTREME | st.sampled_from(["none", "softmax", "sigmoid"]))
        rules.append(rule)
    data = copy.deepcopy(BASE)
    target = draw(st.sampled_from(["rules", "variant rules", "drift_rules"]))
    if target == "rules":
        data["comparison"]["rules"] = rules
    else:
        data["variants"][0]["rules" if target == "variant rules" else "drift_rules"] = rules
    text = dump(data)
    return FuzzInput("rules", f"{target}: {rules!r}", lambda dest: copy_base(dest, text=text))


SIDES = st.integers(1, 70_000) | st.sampled_from([0, -1, 10**400, 4096, 2**31])


@st.composite
def preprocessing_blocks(draw: st.DrawFn) -> FuzzInput:
    block: dict[str, Any] = {"kind": "image"}
    block["color"] = draw(st.sampled_from(["RGB", "BGR", "GRAY", "L", "rgb", "\ud800"]))
    resize_modes = ["shorter_side", "longer_side", "exact", "none", "fit", "x"]
    block["resize"] = {
        "mode": draw(st.sampled_from(resize_modes)),
        "size": draw(SIDES | st.lists(SIDES, min_size=0, max_size=3)),
        "interpolation": draw(st.sampled_from(["bilinear", "nearest", "bicubic", "lanczos", "area", "x"])),
    }
    if draw(st.booleans()):
        block["resize"]["library"] = draw(st.sampled_from(["pillow", "opencv", "numpy", "x"]))
    if draw(st.booleans()):
        block["crop"] = {"mode": draw(st.sampled_from(["center", "none", "x"])), "size": draw(SIDES | st.lists(SIDES))}
    if draw(st.booleans()):
        block["pad"] = {
            "mode": draw(st.sampled_from(["letterbox", "corner", "none", "x"])),
            "size": draw(SIDES | st.lists(SIDES, max_size=3)),
            "value": draw(EXTREME),
        }
    for key in draw(st.sets(st.sampled_from(["scale", "mean", "std", "tolerance", "exif"]), max_size=3)):
        block[key] = draw(EXTREME | st.lists(EXTREME, max_size=4))
    data = copy.deepcopy(BASE)
    data["inputs"][0]["preprocessing"] = block
    text = dump(data)
    return FuzzInput("preprocessing", f"{block!r}", lambda dest: copy_base(dest, text=text))


FAMILIES: dict[str, Callable[[], st.SearchStrategy[FuzzInput]]] = {
    "mutated_manifests": mutated_manifests,
    "schema_manifests": schema_manifests,
    "archives": archives,
    "tensor_files": tensor_files,
    "graphs": graphs,
    "rules": rule_sets,
    "preprocessing": preprocessing_blocks,
}
