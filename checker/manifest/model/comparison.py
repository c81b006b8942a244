"""The comparison: `comparison:` (the reference, the cases and the baseline's rules)."""

from __future__ import annotations

from typing import Annotated

from checker.manifest.model.answers import ExpectedAnswers
from checker.manifest.model.common import MAX_PATH, MAX_TENSORS, BundlePath
from checker.manifest.model.core import Block, S
from checker.manifest.model.rules import MAX_RULES, MAX_TAGS, Rule, Tag

MAX_CASES = 100_000
MAX_LABEL = 2**20  # a class index
MAX_LABELS = 100_000  # labels of one case, one per item of its batch
MAX_ENVELOPE_DIMS = 8  # named dims of one envelope
MAX_DIM_SIZE = 65536

# Input or output name -> .npy file, or one .npz whose keys are the names.
TensorFiles = BundlePath | Annotated[dict[str, BundlePath], S(max_properties=MAX_TENSORS)]
ClassLabel = Annotated[str, S(min_length=1, max_length=1024)] | Annotated[int, S(minimum=0, maximum=MAX_LABEL)]
Version = Annotated[str, S(max_length=64)]


class BundleProducedOn(Block):
    WORDS = S(
        "Produced on",
        "Where the cases' expected outputs were stored (`checker case add`, `save_case`), once for the bundle: the "
        "architecture, CPU class, onnxruntime and NumPy there. A case stored elsewhere has its own `produced_on`.",
    )

    arch: Annotated[Version | None, S("Architecture", "platform.machine(), e.g. x86_64 or aarch64.")] = None
    cpu_class: Annotated[Version | None, S("CPU class", "E.g. x86-64-v4-vnni, aarch64-dotprod.")] = None
    onnxruntime: Annotated[Version | None, S("onnxruntime", "The onnxruntime version installed there, if any.")] = None
    numpy: Annotated[Version | None, S("NumPy", "The NumPy version there.")] = None


class ProducedOn(BundleProducedOn):
    WORDS = S(
        "Produced on",
        "The platform that ran the reference when this case was stored, when it is not the bundle's "
        "(`comparison.reference.produced_on`): its architecture, CPU class (and features, in manifests written "
        "before the bundle-wide record), and the onnxruntime and NumPy there.",
    )

    cpu_features: Annotated[
        list[Version] | None, S("CPU features", "NumPy's names of the CPU features found there.", max_items=256)
    ] = None


class Reference(Block):
    WORDS = S("Reference", "What produced the expected outputs.")

    description: Annotated[
        str | None, S("Description", "E.g. 'PyTorch 2.5.1 eager, float32, x86_64'.", min_length=1, max_length=4096)
    ] = None
    produced_on: BundleProducedOn | None = None


class Case(Block):
    WORDS = S(
        "Case",
        "A comparison case: stored input tensors and the reference's outputs, or a glob of ONNX test-data folders.",
    )
    EXTRA = {
        "oneOf": [
            {"required": ["name", "inputs", "expected"], "not": {"required": ["onnx_test_data"]}},
            {
                "required": ["onnx_test_data"],
                "not": {"anyOf": [{"required": ["inputs"]}, {"required": ["expected"]}, {"required": ["raw"]}]},
            },
        ]
    }

    name: Annotated[str | None, S("Case name", "Unique among the cases.", min_length=1, max_length=128)] = None
    tags: Annotated[list[Tag] | None, S("Tags", "Free tags; `edge` marks an awkward case.", max_items=MAX_TAGS)] = None
    inputs: Annotated[
        TensorFiles | None, S("Inputs", "Input name -> .npy file, or one .npz whose keys are input names.")
    ] = None
    expected: Annotated[
        TensorFiles | None,
        S("Expected outputs", "Output name -> .npy file, or one .npz whose keys are output names."),
    ] = None
    raw: Annotated[
        dict[str, BundlePath] | None,
        S(
            "Raw inputs",
            "Input name -> the application input (image, text file) this tensor was made from.",
            max_properties=MAX_TENSORS,
        ),
    ] = None
    onnx_test_data: Annotated[
        str | None,
        S(
            "ONNX test data",
            "A glob of folders in ONNX test-data layout (input_N.pb, output_N.pb); each folder becomes a case named "
            "after it.",
            min_length=1,
            max_length=MAX_PATH,
        ),
    ] = None
    produced_on: ProducedOn | None = None
    label: Annotated[
        ClassLabel | Annotated[list[ClassLabel], S(min_items=1, max_items=MAX_LABELS)] | None,
        S(
            "Label",
            "The class the application expects: a name from the output's labels or an index; a list gives one per "
            "item of the batch.",
        ),
    ] = None
    expected_answers: ExpectedAnswers | None = None


DimSize = Annotated[int, S(minimum=1, maximum=MAX_DIM_SIZE)]


class DimSizes(Block):
    WORDS = S("Dim sizes")

    min: Annotated[DimSize, S("Minimum", "The smallest size accepted.")]
    typical: Annotated[DimSize | None, S("Typical", "The size most inputs have.")] = None
    max: Annotated[DimSize, S("Maximum", "The largest size accepted.")]


Envelope = Annotated[
    dict[str, DimSizes],
    S(
        "Input-size envelope",
        "The sizes the release accepts for its dynamic axes, by the dim name inputs[].shape gives them: a minimum, "
        "a maximum and the typical one. Each point (every named dim at its min, typical or max) runs on every "
        "platform, made from the first case's inputs resampled to that size, and is compared across platforms by "
        "each graph's rules.",
        min_properties=1,
        max_properties=MAX_ENVELOPE_DIMS,
        extra={"propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"}},
    ),
]


class Comparison(Block):
    WORDS = S("Comparison", "The comparison inputs, their reference outputs and the acceptance rules.")

    reference: Reference | None = None
    cases: Annotated[list[Case] | None, S("Cases", "At least one case.", max_items=MAX_CASES)] = None
    rules: Annotated[
        list[Rule] | None,
        S("Rules", "The baseline's rules, judged against the reference outputs.", max_items=MAX_RULES),
    ] = None
    envelope: Envelope | None = None
