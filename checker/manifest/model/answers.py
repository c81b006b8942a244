"""What the application makes of the graph's outputs: `answers:` (tensor steps and a decoder by kind), the rules
that judge answers (`answer:` instead of `output:`) and the answers a case stores (`expected_answers:`).

The contract is docs/answers.md. Each tensor step is one block of the keyed union `Step`; each kind of answer is
one block of the tagged union `Answer`, with its `decode` block; `checker/answers/` registers a kernel or a
decoder to each (tests/answers/test_entries.py holds the tables together).
"""

from __future__ import annotations

from typing import Annotated, Literal

from checker.manifest.model.common import MAX_AXES, BundlePath, Sha256, TensorName
from checker.manifest.model.core import Block, Keyed, S, Tagged

MAX_ANSWERS = 64  # answers of one manifest
MAX_ANSWER_STEPS = 32  # tensor steps of one answer
MAX_FROM = 8  # graph outputs one answer reads
MAX_TOP_K = 1000
MAX_DETECTIONS = 10_000  # detections kept per item after suppression
MAX_CLASS_OFFSET = 16
MAX_INDEX = 2**31 - 1
BIG = 1e30  # a finite bound for numbers that have no natural one (a score threshold on logits)
ANSWER_KINDS = ("classes", "detections", "text", "embedding", "mask", "decision", "values")

AnswerName = Annotated[
    str,
    S(
        "Answer name",
        "Referred to by rules (`answer: NAME`) and cases (`expected_answers: {NAME: file}`).",
        pattern="^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
    ),
]
Axis = Annotated[
    int, S("Axis", "An axis of the tensor; negative counts from the end.", minimum=-MAX_AXES, maximum=MAX_AXES - 1)
]
StepOutput = Annotated[
    TensorName | None,
    S("Output", "With several `from` outputs, the one this step works on (absent: the first)."),
]
Number = Annotated[float, S(minimum=-BIG, maximum=BIG)]
Function = Literal["softmax", "sigmoid", "exp", "log_softmax"]


# Tensor steps, in the order docs/answers.md lists them.


class Select(Block):
    WORDS = S("select", "Keep one index of an axis (the axis goes) or a slice of it (`start`/`stop`).")
    TAG = "select"
    EXTRA = {
        "anyOf": [{"required": ["index"]}, {"required": ["start"]}, {"required": ["stop"]}],
        "not": {"anyOf": [{"required": ["index", "start"]}, {"required": ["index", "stop"]}]},
    }

    axis: Axis
    index: Annotated[int | None, S("Index", "The one index kept.", minimum=-MAX_INDEX, maximum=MAX_INDEX)] = None
    start: Annotated[int | None, S("Start", "The slice's first index.", minimum=-MAX_INDEX, maximum=MAX_INDEX)] = None
    stop: Annotated[int | None, S("Stop", "The slice's end (excluded).", minimum=-MAX_INDEX, maximum=MAX_INDEX)] = None
    output: StepOutput = None


class Transpose(Block):
    WORDS = S("transpose", "A permutation of the axes, as numpy.transpose.")
    TAG = "transpose"
    SCALAR = "perm"
    MAPPING = "anyOf"

    perm: Annotated[
        list[Annotated[int, S(minimum=0, maximum=MAX_AXES - 1)]],
        S("Permutation", "The new order of the axes.", min_items=1, max_items=MAX_AXES),
    ]
    output: StepOutput = None


class Squeeze(Block):
    WORDS = S("squeeze", "Drop an axis of size 1.")
    TAG = "squeeze"
    SCALAR = "axis"
    MAPPING = "anyOf"

    axis: Axis
    output: StepOutput = None


class Apply(Block):
    WORDS = S("apply", "softmax | sigmoid | exp | log_softmax, element-wise or along `axis`.")
    TAG = "apply"
    SCALAR = "function"
    MAPPING = "anyOf"

    function: Annotated[Function, S("Function", "softmax | sigmoid | exp | log_softmax.")]
    axis: Annotated[
        int, S("Axis", "The axis softmax and log_softmax run along.", minimum=-MAX_AXES, maximum=MAX_AXES - 1)
    ] = -1
    output: StepOutput = None


class Affine(Block):
    WORDS = S("affine", "x * scale + offset (a wake-word model's x / 10 + 2).")
    TAG = "affine"
    EXTRA = {"anyOf": [{"required": ["scale"]}, {"required": ["offset"]}]}

    scale: Annotated[float, S("Scale", "The factor.", minimum=-BIG, maximum=BIG)] = 1.0
    offset: Annotated[float, S("Offset", "Added after the factor.", minimum=-BIG, maximum=BIG)] = 0.0
    output: StepOutput = None


class Pool(Block):
    WORDS = S(
        "pool",
        "Over an axis: mean | max | first | last; `mean` with a `mask` (an input, e.g. attention_mask) averages "
        "only where the mask is 1; `first` is a [CLS] pooling.",
    )
    TAG = "pool"

    mode: Annotated[Literal["mean", "max", "first", "last"], S("Mode", "mean | max | first | last.")]
    axis: Annotated[int, S("Axis", "The axis pooled over.", minimum=-MAX_AXES, maximum=MAX_AXES - 1)] = 1
    mask: Annotated[
        TensorName | None,
        S("Mask", "A graph input whose case tensor (1 keep, 0 drop) weighs the pooled positions."),
    ] = None
    output: StepOutput = None


class Normalize(Block):
    WORDS = S("normalize", "Divide by the l2 or l1 norm along `axis` (a zero vector stays zero).")
    TAG = "normalize"
    SCALAR = "norm"
    MAPPING = "anyOf"

    norm: Annotated[Literal["l2", "l1"], S("Norm", "l2 | l1.")] = "l2"
    axis: Annotated[int, S("Axis", "The axis normalised.", minimum=-MAX_AXES, maximum=MAX_AXES - 1)] = -1
    output: StepOutput = None


Step = Annotated[Select | Transpose | Squeeze | Apply | Affine | Pool | Normalize, Keyed()]
STEPS: tuple[type[Block], ...] = (Select, Transpose, Squeeze, Apply, Affine, Pool, Normalize)
Steps = Annotated[list[Step], S("Steps", "Tensor steps, in order; may be empty.", max_items=MAX_ANSWER_STEPS)]


# Decoders, one per kind.


class ClassesDecode(Block):
    WORDS = S("Classes decoder", "The best classes of each item.")

    top_k: Annotated[int, S("Top k", "How many classes each item keeps.", minimum=1, maximum=MAX_TOP_K)] = 1
    min_score: Annotated[
        float | None, S("Minimum score", "Classes below it are dropped.", minimum=-BIG, maximum=BIG)
    ] = None
    multi_label: Annotated[
        bool, S("Multi-label", "Each class above `min_score` is an answer (order ignored when compared).")
    ] = False


class Nms(Block):
    WORDS = S("Non-maximum suppression", "Greedy, by score, as Ultralytics and torchvision do.")

    iou: Annotated[float, S("IoU", "A box overlapping a kept one by more is suppressed.", minimum=0, maximum=1)]
    class_aware: Annotated[bool, S("Class-aware", "Only boxes of the same class suppress each other.")] = True
    max_detections: Annotated[
        int, S("Maximum detections", "Kept per item, best first.", minimum=1, maximum=MAX_DETECTIONS)
    ] = 300


class DetectionsDecode(Block):
    WORDS = S("Detections decoder", "Boxes, labels and scores from a detector's rows.")

    layout: Annotated[
        Literal["yolo", "yolo_objectness", "boxes_scores", "decoded"],
        S(
            "Layout",
            "yolo: rows [box, class scores...]; yolo_objectness: [box, objectness, class scores...]; "
            "boxes_scores: two outputs, boxes [N, 4] and scores [N, C]; decoded: rows [x1, y1, x2, y2, score, "
            "class], already suppressed.",
        ),
    ]
    box_format: Annotated[
        Literal["xyxy", "xywh", "cxcywh", "yxyx"],
        S("Box format", "xyxy | xywh (corner and size) | cxcywh | yxyx."),
    ] = "xyxy"
    normalized: Annotated[bool, S("Normalized", "Coordinates in 0-1 of the input's size.")] = False
    class_offset: Annotated[
        int,
        S(
            "Class offset",
            "The index of the first real class (1 with a background class).",
            minimum=0,
            maximum=MAX_CLASS_OFFSET,
        ),
    ] = 0
    min_score: Annotated[float, S("Minimum score", "Detections below it are dropped.", minimum=-BIG, maximum=BIG)] = (
        0.25
    )
    nms: Nms | None = None
    to_raw: Annotated[
        TensorName | None,
        S(
            "To raw",
            "An image input: boxes are mapped back through its declared geometry (resize, crop, pad, letterbox) "
            "into the raw file's pixels and clipped to it.",
        ),
    ] = None


class Ctc(Block):
    WORDS = S("CTC", "Greedy CTC decoding with the labels as the character set.")

    blank: Annotated[int, S("Blank", "The blank's class index.", minimum=0, maximum=MAX_INDEX)] = 0
    merge_repeats: Annotated[bool, S("Merge repeats", "Repeated classes between blanks are one character.")] = True


class Tokens(Block):
    WORDS = S("Tokens", "Argmax token ids decoded by an input's tokenizer.json.")

    tokenizer: Annotated[TensorName, S("Tokenizer", "A text input whose preprocessing names the tokenizer.json.")]
    skip_special: Annotated[bool, S("Skip special", "Special tokens ([CLS], </s>) are left out.")] = True


class TextDecode(Block):
    WORDS = S("Text decoder", "ctc or tokens.")
    EXTRA = {"oneOf": [{"required": ["ctc"]}, {"required": ["tokens"]}]}

    ctc: Ctc | None = None
    tokens: Tokens | None = None


class MaskDecode(Block):
    WORDS = S("Mask decoder", "A label map: a threshold (binary) or the argmax over a class axis.")
    EXTRA = {"oneOf": [{"required": ["threshold"]}, {"required": ["argmax"]}]}

    threshold: Annotated[float | None, S("Threshold", "Above it: 1.", minimum=-BIG, maximum=BIG)] = None
    argmax: Annotated[
        int | None, S("Argmax", "The class axis the argmax runs over.", minimum=-MAX_AXES, maximum=MAX_AXES - 1)
    ] = None
    to_raw: Annotated[
        TensorName | None, S("To raw", "An image input: the map is taken back to the raw file's size.")
    ] = None


LabelText = Annotated[str, S(min_length=1, max_length=1024)]


class DecisionDecode(Block):
    WORDS = S("Decision decoder", "A label on each side of a threshold.")

    threshold: Annotated[float, S("Threshold", "The application's threshold.", minimum=-BIG, maximum=BIG)]
    above: Annotated[str, S("Above", "The label of a score at or above the threshold.", min_length=1, max_length=1024)]
    below: Annotated[str, S("Below", "The label of a score below the threshold.", min_length=1, max_length=1024)]
    margin: Annotated[
        float,
        S(
            "Margin",
            "A reference score this close to the threshold is fragile (answers.near_threshold).",
            minimum=0,
            maximum=BIG,
        ),
    ] = 0.02


class AnswerLabels(Block):
    WORDS = S("Labels", "The answer's labels: a file, or a key of the graph's metadata (Ultralytics' `names`).")
    EXTRA = {"oneOf": [{"required": ["path"]}, {"required": ["metadata_key"]}]}

    path: BundlePath | None = None
    metadata_key: Annotated[
        str | None, S("Metadata key", "A key of the graph's metadata_props.", min_length=1, max_length=256)
    ] = None
    sha256: Sha256 | None = None


From = Annotated[
    TensorName | Annotated[list[TensorName], S(min_items=1, max_items=MAX_FROM)],
    S("From", "A graph output, or a list of them (boxes and scores as two outputs)."),
]
Labels = Annotated[AnswerLabels | None, S("Labels", "Absent: the first `from` output's labels.")]


class ClassesAnswer(Block):
    WORDS = S("Classes answer")
    TAG = "classes"

    name: AnswerName
    kind: Annotated[Literal["classes"], S("Kind", "classes: the best classes of each item.")]
    from_: From
    steps: Steps | None = None
    decode: ClassesDecode | None = None
    labels: Labels = None


class DetectionsAnswer(Block):
    WORDS = S("Detections answer")
    TAG = "detections"

    name: AnswerName
    kind: Annotated[Literal["detections"], S("Kind", "detections: boxes, labels and scores.")]
    from_: From
    steps: Steps | None = None
    decode: DetectionsDecode
    labels: Labels = None


class TextAnswer(Block):
    WORDS = S("Text answer")
    TAG = "text"

    name: AnswerName
    kind: Annotated[Literal["text"], S("Kind", "text: a string per item.")]
    from_: From
    steps: Steps | None = None
    decode: TextDecode
    labels: Labels = None


class EmbeddingAnswer(Block):
    WORDS = S("Embedding answer")
    TAG = "embedding"

    name: AnswerName
    kind: Annotated[Literal["embedding"], S("Kind", "embedding: a vector per item.")]
    from_: From
    steps: Steps | None = None


class MaskAnswer(Block):
    WORDS = S("Mask answer")
    TAG = "mask"

    name: AnswerName
    kind: Annotated[Literal["mask"], S("Kind", "mask: a label map per item.")]
    from_: From
    steps: Steps | None = None
    decode: MaskDecode
    labels: Labels = None


class DecisionAnswer(Block):
    WORDS = S("Decision answer")
    TAG = "decision"

    name: AnswerName
    kind: Annotated[Literal["decision"], S("Kind", "decision: a label on each side of a threshold.")]
    from_: From
    steps: Steps | None = None
    decode: DecisionDecode


class ValuesAnswer(Block):
    WORDS = S("Values answer")
    TAG = "values"

    name: AnswerName
    kind: Annotated[Literal["values"], S("Kind", "values: the numbers the steps leave.")]
    from_: From
    steps: Steps | None = None


AnyAnswer = ClassesAnswer | DetectionsAnswer | TextAnswer | EmbeddingAnswer | MaskAnswer | DecisionAnswer | ValuesAnswer
Answer = Annotated[
    AnyAnswer,
    Tagged("kind", S("Kind", "classes | detections | text | embedding | mask | decision | values.")),
]
ANSWER_BLOCKS: tuple[type[Block], ...] = (
    ClassesAnswer,
    DetectionsAnswer,
    TextAnswer,
    EmbeddingAnswer,
    MaskAnswer,
    DecisionAnswer,
    ValuesAnswer,
)
Answers = Annotated[
    list[Answer],
    S(
        "Answers",
        "What the application makes of the outputs: ordered tensor steps ending in one kind of answer; rules "
        "that name `answer:` judge it (docs/answers.md).",
        max_items=MAX_ANSWERS,
    ),
]

ExpectedAnswers = Annotated[
    dict[str, BundlePath],
    S(
        "Expected answers",
        "Answer name -> the answer the application showed for this case (JSON for detections, classes, text and "
        "decisions; .npy for embeddings, values and masks, or a PNG of label indices for a mask).",
        max_properties=MAX_ANSWERS,
        extra={"propertyNames": {"pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"}},
    ),
]


# Rules on answers: `answer:` names the answer, `check:` its kind's figure (docs/answers.md, "Rules on answers").

Share = Annotated[float, S(minimum=0, maximum=1)]
PassRate = Annotated[
    float | None, S("Minimum pass rate", "The share of cases that must pass (default 1.0).", minimum=0, maximum=1)
]
RuleTags = Annotated[
    list[Annotated[str, S(min_length=1, max_length=64)]] | None,
    S(
        "Tags",
        "Judge only the cases carrying any of these tags (a slice), each slice on its own; none: every case.",
        min_items=1,
        max_items=32,
    ),
]
RuleAnswer = Annotated[
    str, S("Answer", "The answer the rule judges (its `name` in `answers`).", min_length=1, max_length=64)
]


class DetectionsRule(Block):
    WORDS = S("Detections rule", "Boxes matched greedily by score, same label, IoU >= iou: recall and precision.")
    TAG = "detections"

    answer: RuleAnswer
    check: Literal["detections"]
    iou: Annotated[float, S("IoU", "A matched box overlaps by at least this much.", minimum=0, maximum=1)] = 0.5
    min_recall: Annotated[
        float, S("Minimum recall", "Share of the other side's boxes found.", minimum=0, maximum=1)
    ] = 1.0
    min_precision: Annotated[
        float, S("Minimum precision", "Share of this side's boxes matched.", minimum=0, maximum=1)
    ] = 1.0
    max_shift: Annotated[
        float | None, S("Maximum shift", "Pixels a matched box's corner may move.", minimum=0, maximum=BIG)
    ] = None
    max_score_drift: Annotated[
        float | None, S("Maximum score drift", "How far a matched box's score may move.", minimum=0, maximum=BIG)
    ] = None
    min_pass_rate: PassRate = None
    tags: RuleTags = None


class TextRule(Block):
    WORDS = S("Text rule", "Character error rate, and the share of items with equal strings.")
    TAG = "text"

    answer: RuleAnswer
    check: Literal["text"]
    max_cer: Annotated[float, S("Maximum CER", "Levenshtein distance / reference length.", minimum=0, maximum=BIG)] = (
        0.0
    )
    min_exact: Annotated[
        float | None, S("Minimum exact share", "Share of items with equal strings.", minimum=0, maximum=1)
    ] = None
    min_pass_rate: PassRate = None
    tags: RuleTags = None


class Neighbours(Block):
    WORDS = S("Neighbours", "Over the whole comparison set: is each item's k nearest neighbours kept?")

    k: Annotated[int, S("k", "Neighbours compared.", minimum=1, maximum=100)] = 1
    min_agreement: Annotated[
        float, S("Minimum agreement", "Share of items whose neighbours are kept.", minimum=0, maximum=1)
    ] = 1.0


class EmbeddingRule(Block):
    WORDS = S("Embedding rule", "The lowest cosine over items; nearest-neighbour agreement over the set.")
    TAG = "embedding"
    EXTRA = {"anyOf": [{"required": ["min_cosine"]}, {"required": ["neighbours"]}]}

    answer: RuleAnswer
    check: Literal["embedding"]
    min_cosine: Annotated[float | None, S("Minimum cosine", "The lowest cosine allowed.", minimum=-1, maximum=1)] = None
    neighbours: Neighbours | None = None
    min_pass_rate: PassRate = None
    tags: RuleTags = None


class ClassesRule(Block):
    WORDS = S("Classes rule", "Share of items whose label lists agree.")
    TAG = "classes"

    answer: RuleAnswer
    check: Literal["classes"]
    min_agreement: Annotated[float, S("Minimum agreement", "Share of items that agree.", minimum=0, maximum=1)] = 1.0
    min_pass_rate: PassRate = None
    tags: RuleTags = None


class MaskRule(Block):
    WORDS = S("Mask rule", "Mean over labels present of the intersection over union.")
    TAG = "mask"

    answer: RuleAnswer
    check: Literal["mask"]
    min_iou: Annotated[float, S("Minimum IoU", "The lowest mean IoU allowed.", minimum=0, maximum=1)]
    min_pass_rate: PassRate = None
    tags: RuleTags = None


class DecisionRule(Block):
    WORDS = S("Decision rule", "Items whose label differs from the other side's, counted over the slice.")
    TAG = "decision"

    answer: RuleAnswer
    check: Literal["decision"]
    max_flips: Annotated[
        int, S("Maximum flips", "Flipped items allowed over the slice.", minimum=0, maximum=MAX_INDEX)
    ] = 0
    tags: RuleTags = None


class ValuesRule(Block):
    WORDS = S("Values rule", "The largest absolute difference, and relative to the other side's magnitude.")
    TAG = "values"
    EXTRA = {"anyOf": [{"required": ["max_abs"]}, {"required": ["max_rel"]}]}

    answer: RuleAnswer
    check: Literal["values"]
    max_abs: Annotated[
        float | None, S("Maximum absolute difference", "The largest |a - b| over the numbers.", minimum=0, maximum=BIG)
    ] = None
    max_rel: Annotated[
        float | None,
        S(
            "Maximum relative difference",
            "The largest |a - b| over the other side's largest magnitude.",
            minimum=0,
            maximum=BIG,
        ),
    ] = None
    min_pass_rate: PassRate = None
    tags: RuleTags = None


AnswerRule = DetectionsRule | TextRule | EmbeddingRule | ClassesRule | MaskRule | DecisionRule | ValuesRule
ANSWER_RULES: tuple[type[Block], ...] = (
    DetectionsRule,
    TextRule,
    EmbeddingRule,
    ClassesRule,
    MaskRule,
    DecisionRule,
    ValuesRule,
)
RULE_BY_CHECK: dict[str, type[Block]] = {r.TAG: r for r in ANSWER_RULES}
