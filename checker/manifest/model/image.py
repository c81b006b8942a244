"""An image input's preprocessing: the fixed-order shorthand fields, the ordered `steps` (each a Keyed block),
a `when:` condition on a step, and an `import:` of another tool's pipeline file.

The step classes of `checker/preprocess/image/steps.py` are the runtime steps; each names its block here
(`MODEL`) and parses it, with the bounds and words of this module.
"""

# Annotations are evaluated as the class is made (no `from __future__ import annotations`): the builder and
# the generator read them as objects, and evaluating hundreds of annotation strings cost more than the build.

from typing import Annotated, Literal

from checker.manifest.model.common import MAX_PATH, NonNegative, Number
from checker.manifest.model.core import Block, Const, Keyed, OneOf, S

# No model input needs a side longer than this; it bounds what a manifest can make the checker allocate.
MAX_SIDE = 16384
MAX_SHORTHAND_SIDE = 65536  # the shorthand's sizes; parsing holds them to MAX_SIDE as well
MAX_OFFSET = 16777216  # a crop box's top and left
MAX_LIMIT = MAX_SIDE * MAX_SIDE  # no measure of an image the bounds admit reaches this (an area)
MAX_SCALE = 64  # resize: {scale}
MAX_REPEAT = 64  # batch: {repeat}
MAX_STEPS = 64
MAX_CHANNELS = 4  # a per-channel list: one value or one per channel

Mode = Literal["RGB", "BGR", "L"]
Rounding = Literal["floor", "ceil", "half_up", "half_even"]
Arithmetic = Literal["exact", "float_scale_first", "float_product_first"]
# Every library's filters together; steps.FILTERS says which belong to which library.
Filter = Literal[
    "nearest",
    "bilinear",
    "bicubic",
    "lanczos",
    "box",
    "hamming",
    "nearest_exact",
    "linear",
    "cubic",
    "area",
    "lanczos4",
]
Library = Literal["pillow", "opencv", "torchvision", "torch", "canvas"]
Subsampling = Literal["4:4:4", "4:2:2", "4:2:0"]
JpegLibrary = Literal["pillow", "opencv"]
Position = Literal["center", "top_left", "top_right", "bottom_left", "bottom_right", "top", "bottom", "left", "right"]
PadMode = Literal["constant", "edge", "reflect", "symmetric"]
Layout = Literal["NCHW", "NHWC", "CHW", "HWC", "NHW", "HW"]
ImportFormat = Literal["albumentations", "openvino", "huggingface"]
CastType = Literal["float32", "float16", "float64", "uint8", "int8", "int16", "int32", "int64"]

Side = Annotated[int, S(minimum=1, maximum=MAX_SIDE)]
Size = Annotated[Side | Annotated[list[Side], S(min_items=2, max_items=2)], OneOf()]
PerChannel = Annotated[Number | Annotated[list[Number], S(min_items=1, max_items=MAX_CHANNELS)], OneOf()]


# ---- when: a condition on the size of the image entering a step


class Compare(Block):
    WORDS = S(min_properties=1)

    gt: Annotated[float | None, S("Greater than", "The measure is > this.", minimum=0, maximum=MAX_LIMIT)] = None
    ge: Annotated[float | None, S("At least", "The measure is >= this.", minimum=0, maximum=MAX_LIMIT)] = None
    lt: Annotated[float | None, S("Less than", "The measure is < this.", minimum=0, maximum=MAX_LIMIT)] = None
    le: Annotated[float | None, S("At most", "The measure is <= this.", minimum=0, maximum=MAX_LIMIT)] = None


class When(Block):
    WORDS = S(min_properties=1)

    height: Annotated[Compare | None, S("Height", "h compared with the limits given.")] = None
    width: Annotated[Compare | None, S("Width", "w compared with the limits given.")] = None
    longer_side: Annotated[Compare | None, S("Longer side", "max(h, w) compared with the limits given.")] = None
    shorter_side: Annotated[Compare | None, S("Shorter side", "min(h, w) compared with the limits given.")] = None
    sum_of_sides: Annotated[Compare | None, S("Sum of sides", "h + w compared with the limits given.")] = None
    area: Annotated[Compare | None, S("Area", "h * w compared with the limits given.")] = None


def _when(step: str) -> S:
    return S(
        "When",
        f"Run the {step} only when the image entering it satisfies every comparison (else it passes unchanged), "
        "e.g. {longer_side: {gt: 960}}.",
    )


# ---- the steps


class Alpha(Block):
    WORDS = S("Composite", "Paste a transparent image on this colour.")

    composite: Annotated[list[Number], S("Colour", "[r, g, b] in 0-255.", min_items=1, max_items=3)]


class Decode(Block):
    WORDS = S("decode", "Must be first when present (absent: {mode: RGB}).")
    TAG = "decode"

    mode: Annotated[Mode, S("Mode", "The pixels decoding makes.")] = "RGB"
    library: Annotated[
        Literal["pillow", "opencv"], S("Library", "pillow (default) or opencv (cv2.imdecode; extra [opencv]).")
    ] = "pillow"
    exif: Annotated[
        bool | None,
        S(
            "EXIF orientation",
            "Apply the file's EXIF orientation; absent: as the library does by default (Pillow: no, OpenCV: yes).",
        ),
    ] = None
    alpha: Annotated[
        Annotated[Literal["drop"], Const()] | Alpha,
        OneOf(),
        S("Alpha", "drop (default) or {composite: [r, g, b]}: paste on that colour first (Pillow)."),
    ] = "drop"


class Convert(Block):
    WORDS = S("convert", "Colour conversion at this point.")
    TAG = "convert"

    to: Annotated[Mode, S("To", "The channel order or grey.")]
    formula: Annotated[
        Literal["pillow", "opencv"],
        S("Formula", "How grey is computed: pillow (ITU-R 601-2, default) or opencv (cv2.cvtColor)."),
    ] = "pillow"


class PpocrLine(Block):
    WORDS = S(
        "PaddleOCR line",
        "PaddleOCR's recogniser rule: x = height * w0 / h0, width min(ceil(x), max(min_width, floor(x))).",
    )

    height: Annotated[Side, S("Height", "The line height.")]
    min_width: Annotated[Side, S("Minimum width", "The width a line is padded to.")]


class Resize(Block):
    WORDS = S("resize", "Resize to the size one geometry computes, with its rounding, library and filter.")
    TAG = "resize"

    size: Annotated[Size | None, S("Size", "[height, width] in pixels (an integer means a square).")] = None
    shorter_side: Annotated[
        Side | None, S("Shorter side", "The shorter side becomes this; the other keeps the aspect ratio.")
    ] = None
    max_longer: Annotated[
        Side | None, S("Longest longer side", "With shorter_side: cap the longer side (torchvision's max_size).")
    ] = None
    longer_side: Annotated[Side | None, S("Longer side", "The longer side becomes this.")] = None
    height: Annotated[Side | None, S("Height", "The height becomes this; the width keeps the aspect ratio.")] = None
    min_width: Annotated[Side | None, S("Minimum width", "With height: clamp the width from below.")] = None
    max_width: Annotated[Side | None, S("Maximum width", "With height: clamp the width from above.")] = None
    width: Annotated[Side | None, S("Width", "The width becomes this; the height keeps the aspect ratio.")] = None
    min_height: Annotated[Side | None, S("Minimum height", "With width: clamp the height from below.")] = None
    max_height: Annotated[Side | None, S("Maximum height", "With width: clamp the height from above.")] = None
    fit: Annotated[
        Size | None,
        S("Fit", "The largest size with the aspect ratio that fits inside [h, w] (a letterbox's resize)."),
    ] = None
    scale: Annotated[
        float | None,
        S("Scale", "Both sides times this factor.", exclusive_minimum=0, maximum=MAX_SCALE),
    ] = None
    ppocr_line: PpocrLine | None = None
    rounding: Annotated[
        Rounding, S("Rounding", "How a computed side is rounded: floor, ceil, half_up (default) or half_even.")
    ] = "half_up"
    arithmetic: Annotated[
        Arithmetic,
        S(
            "Arithmetic",
            "exact (default, rational), float_scale_first (float64 w0 * (h / h0)) or float_product_first "
            "(float64 (h * w0) / h0).",
        ),
    ] = "exact"
    multiple_of: Annotated[
        Side | None,
        S("Multiple of", "Round each computed side s to n * max(1, m(s / n)), m being multiple_of_rounding."),
    ] = None
    multiple_of_rounding: Annotated[
        Rounding | None,
        S(
            "Multiple-of rounding",
            "How s / n is rounded for multiple_of: floor, ceil, half_up or half_even (Python's round); default: "
            "the step's rounding.",
        ),
    ] = None
    filter: Annotated[
        Filter | None,
        S(
            "Filter",
            "The library's own filter: pillow nearest bilinear bicubic lanczos box hamming; opencv nearest "
            "nearest_exact linear cubic area lanczos4; torchvision nearest nearest_exact bilinear bicubic; canvas "
            "bilinear nearest. Default: bilinear, or linear for opencv.",
        ),
    ] = None
    library: Annotated[
        Library,
        S(
            "Library",
            "pillow (default), opencv (extra [opencv]) or torchvision (extra [torch]); canvas: a browser canvas's "
            "drawImage as Chromium draws it (bilinear at imageSmoothingQuality low, nearest with smoothing off); "
            "torch: torch.nn.functional.interpolate on float pixels, as the shorthand's library: torch.",
        ),
    ] = "pillow"
    antialias: Annotated[bool | None, S("Antialias", "torchvision only: antialias when shrinking (default true).")] = (
        None
    )
    when: Annotated[When | None, _when("resize")] = None


class Crop(Block):
    WORDS = S("crop", "Cut a centre or a box.")
    TAG = "crop"

    center: Annotated[
        Size | None,
        S("Centre", "[h, w] cut from the centre; offsets (H - h) / 2 rounded as offset_rounding says."),
    ] = None
    box: Annotated[
        list[Annotated[int, S(minimum=0, maximum=MAX_OFFSET)]] | None,
        S("Box", "[top, left, height, width].", min_items=4, max_items=4),
    ] = None
    offset_rounding: Annotated[
        Literal["floor", "half_even"],
        S("Offset rounding", "floor (default; Hugging Face) or half_even (torchvision)."),
    ] = "floor"
    pad_if_smaller: Annotated[
        PerChannel | None,
        S("Pad if smaller", "The fill when the image is smaller than the crop (absent: an error)."),
    ] = None
    when: Annotated[When | None, _when("crop")] = None


class Pad(Block):
    WORDS = S("pad", "Pad to a size, to at least a size, or to a multiple.")
    TAG = "pad"

    to: Annotated[Size | None, S("To", "Exactly [h, w]; a larger image is an error.")] = None
    at_least: Annotated[
        list[Annotated[Side | Literal[None], OneOf()]] | None,
        S(
            "At least",
            "[h or null, w or null]: pad a side only when it is shorter (a dynamic size).",
            min_items=2,
            max_items=2,
        ),
    ] = None
    multiple_of: Annotated[Side | None, S("Multiple of", "Pad each side up to the next multiple.")] = None
    position: Annotated[
        Position,
        S(
            "Position",
            "Where the content sits: center (default), top_left (pad bottom and right), top_right, bottom_left, "
            "bottom_right, top, bottom, left, right.",
        ),
    ] = "center"
    odd: Annotated[
        Literal["end", "start"], S("Odd remainder", "end (default): after the content; start: before it.")
    ] = "end"
    mode: Annotated[PadMode, S("Mode", "constant (default), edge, reflect or symmetric.")] = "constant"
    value: Annotated[
        PerChannel,
        S(
            "Value",
            "The constant, in the units the image has at this step (0-255 before scale, normalised units after).",
        ),
    ] = 0.0
    when: Annotated[When | None, _when("pad")] = None


class Jpeg(Block):
    WORDS = S(
        "jpeg",
        "Encode as JPEG and decode again, as an application that re-encodes its image does: 8-bit pixels in their "
        "current channel order, handed to the library as they are.",
    )
    TAG = "jpeg"

    quality: Annotated[
        int | None, S("Quality", "1-100; absent: the library's default (Pillow 75, OpenCV 95).", minimum=1, maximum=100)
    ] = None
    subsampling: Annotated[
        Subsampling, S("Chroma subsampling", "4:4:4, 4:2:2 or 4:2:0 (default, both libraries' own).")
    ] = "4:2:0"
    library: Annotated[
        JpegLibrary, S("Library", "pillow (default; Image.save) or opencv (cv2.imencode; extra [opencv]).")
    ] = "pillow"


class Scale(Block):
    WORDS = S("scale", "x * factor, to float32.")
    TAG = "scale"
    SCALAR = "factor"

    factor: Number = 1.0


class Normalize(Block):
    WORDS = S("normalize", "(x - mean) / std per channel, to float32.")
    TAG = "normalize"

    mean: Annotated[PerChannel, S("Mean", "Per channel, in the image's current channel order.")] = 0.0
    std: Annotated[PerChannel, S("Std", "Per channel, in the image's current channel order; no zero.")] = 1.0


class Cast(Block):
    WORDS = S("cast", "To this dtype; integers are rounded half to even and clipped.")
    TAG = "cast"
    SCALAR = "dtype"

    dtype: CastType = "float32"


class Batch(Block):
    WORDS = S("batch", "Stack copies of the image on a new leading axis.")
    TAG = "batch"

    repeat: Annotated[int, S("Repeat", "How many copies (1-64).", minimum=1, maximum=MAX_REPEAT)]


class LayoutStep(Block):
    WORDS = S("layout", "Transpose; N adds a batch axis of one unless batch made one. Absent: the input's layout.")
    TAG = "layout"
    SCALAR = "layout"

    layout: Layout = "NCHW"


Step = Annotated[Decode | Convert | Resize | Crop | Pad | Jpeg | Scale | Normalize | Cast | Batch | LayoutStep, Keyed()]
Steps = Annotated[
    list[Step],
    S(
        "Steps",
        "Ordered operations, applied exactly in list order (see docs/preprocessing.md). A block has steps or the "
        "shorthand fields (color, resize, crop, pad, scale, mean, std, config), not both.",
        min_items=1,
        max_items=MAX_STEPS,
    ),
]


# ---- the shorthand: fixed-order fields that stand for a step list (absent: as a `config` file gives it)

ShorthandSide = Annotated[int, S(minimum=1, maximum=MAX_SHORTHAND_SIDE)]
ShorthandSize = ShorthandSide | Annotated[list[ShorthandSide], S(min_items=2, max_items=2)]
ShorthandChannels = Number | Annotated[list[Number], S(min_items=1, max_items=MAX_CHANNELS)]
Color = Literal["RGB", "BGR", "GRAY"]
ResizeMode = Literal["exact", "shorter_side", "longer_side", "fixed_height", "none"]
Interpolation = Literal["nearest", "bilinear", "bicubic", "lanczos", "box", "hamming"]
ShorthandLibrary = Literal["pillow", "opencv", "torch"]
CropMode = Literal["center", "none"]
ShorthandPadMode = Literal["none", "letterbox", "bottom_right"]


class ShorthandResize(Block):
    WORDS = S("Resize", "How the decoded image is resized.")

    mode: Annotated[
        ResizeMode | None,
        S(
            "Mode",
            "exact: to size [h, w]; shorter_side/longer_side: that side to size, the other by the same factor; "
            "fixed_height: size [h, max_w] keeping the aspect ratio; none: no resize. Absent: as a `config` file "
            "gives it, else none.",
        ),
    ] = None
    size: Annotated[ShorthandSize | None, S("Size", "An int (one side) or [h, w].")] = None
    interpolation: Annotated[
        Interpolation | None,
        S("Interpolation", "Pillow's resampling filter, as Pillow applies it (antialiased when shrinking)."),
    ] = None
    library: Annotated[
        ShorthandLibrary | None,
        S(
            "Library",
            "The library the application resizes with. Only Pillow is reproduced exactly; opencv or torch are "
            "reported as not reproducible unless importable.",
        ),
    ] = None


class ShorthandCrop(Block):
    WORDS = S("Crop", "A crop after resizing.")

    mode: Annotated[CropMode | None, S("Mode", "center or none. Absent: as a `config` file gives it, else none.")] = (
        None
    )
    size: Annotated[ShorthandSize | None, S("Size", "[h, w] (or one int for a square).")] = None


class ShorthandPad(Block):
    WORDS = S("Pad", "Padding after the crop.")

    mode: Annotated[
        ShorthandPadMode | None,
        S(
            "Mode",
            "letterbox: fit inside size keeping the aspect ratio, centred; bottom_right: pad only there; none. "
            "Absent: as a `config` file gives it, else none.",
        ),
    ] = None
    size: Annotated[ShorthandSize | None, S("Size", "[h, w] of the padded image.")] = None
    value: Annotated[
        ShorthandChannels | None, S("Fill value", "The fill in 0-255 pixel units: one number or one per channel.")
    ] = None


class Import(Block):
    WORDS = S(
        "Import",
        "Read the steps from another tool's pipeline file in the bundle: an Albumentations Compose saved with "
        "A.save (JSON or YAML), an OpenVINO Accuracy Checker preprocessing list (YAML or JSON), or a Hugging Face "
        "preprocessor_config.json. What the file cannot say exactly is refused by name.",
    )

    format: Annotated[
        ImportFormat,
        S("Format", "albumentations, openvino, or huggingface (a preprocessor_config.json, as config: reads it)."),
    ]
    path: Annotated[str, S("Path", "The file, relative to the bundle.", min_length=1, max_length=MAX_PATH)]


# The fields a block with `steps` or `import` does not have: the shorthand, and the config it is read from.
SHORTHAND = ("color", "resize", "crop", "pad", "scale", "mean", "std", "config")


def _refuses(*keys: str) -> dict[str, object]:
    return {"not": {"anyOf": [{"required": [k]} for k in keys]}}


class Image(Block):
    TAG = "image"
    EXTRA = {"dependentSchemas": {"steps": _refuses(*SHORTHAND, "import"), "import": _refuses(*SHORTHAND)}}

    kind: Annotated[Literal["image"], Const(), S("Kind", "The kind of preprocessing.")]
    color: Annotated[Color | None, S("Colour order", "The order of the channel axis (or GRAY for one channel).")] = None
    resize: ShorthandResize | None = None
    crop: ShorthandCrop | None = None
    pad: ShorthandPad | None = None
    scale: Annotated[
        Number | None, S("Scale", "Multiplies the 0-255 pixel values (e.g. 1/255 = 0.00392156862745098).")
    ] = None
    mean: Annotated[ShorthandChannels | None, S("Mean", "Per-channel mean subtracted after scale.")] = None
    std: Annotated[ShorthandChannels | None, S("Std", "Per-channel std divided by after the mean.")] = None
    tolerance: Annotated[
        NonNegative | None,
        S(
            "Tolerance",
            "The largest difference, in tensor units, that inputs.fidelity accepts (default: two grey levels, "
            "2 * scale / min(std)).",
        ),
    ] = None
    config: Annotated[
        str | None,
        S(
            "Hugging Face config",
            "A preprocessor_config.json in the bundle, read into the same fields; fields given here override it.",
            min_length=1,
            max_length=MAX_PATH,
        ),
    ] = None
    steps: Steps | None = None
    import_: Import | None = None
