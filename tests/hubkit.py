"""Folders in the layouts `checker init DIR` reads, built offline from real parts: graphs made with onnx.helper,
variants made by onnxruntime's own converters as transformers.js's conversion script calls them (dynamic int8,
float16, 4-bit MatMulNBits), a tokenizer made by the `tokenizers` library, and photos made by Pillow."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, external_data_helper, helper, numpy_helper
from PIL import Image

LABELS = ["cat", "dog", "bird", "fish"]
SIDE = 8


def image_classifier() -> onnx.ModelProto:
    """pixel_values [batch, 3, 8, 8] -> logits [batch, 4]: two MatMuls (for the int8 and 4-bit converters)."""
    rng = np.random.default_rng(11)
    weights = {
        "w1": (rng.standard_normal((3 * SIDE * SIDE, 32)) * 0.2).astype(np.float32),
        "b1": (rng.standard_normal(32) * 0.1).astype(np.float32),
        "w2": (rng.standard_normal((32, len(LABELS))) * 0.5).astype(np.float32),
        "b2": (rng.standard_normal(len(LABELS)) * 0.1).astype(np.float32),
    }
    nodes = [
        helper.make_node("Flatten", ["pixel_values"], ["flat"], "flatten"),
        helper.make_node("MatMul", ["flat", "w1"], ["h0"], "fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], "fc1_bias"),
        helper.make_node("Relu", ["h1"], ["h2"], "relu"),
        helper.make_node("MatMul", ["h2", "w2"], ["l0"], "fc2"),
        helper.make_node("Add", ["l0", "b2"], ["logits"], "fc2_bias"),
    ]
    graph = helper.make_graph(
        nodes,
        "classifier",
        [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["batch", 3, SIDE, SIDE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", len(LABELS)])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model.producer_name, model.producer_version = "pytorch", "2.5.1"
    return model


def save_chunked(model: onnx.ModelProto, path: Path, chunks: int) -> list[str]:
    """Save with the weights in `chunks` external files named as transformers.js names them (model.onnx_data,
    model.onnx_data_1, ...), one initializer after another spread over them."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    names = [path.name + "_data" + (f"_{i}" if i else "") for i in range(chunks)]
    handles = {name: (path.parent / name).open("wb") for name in names}
    try:
        for i, tensor in enumerate(model.graph.initializer):
            name = names[i % chunks]
            raw = numpy_helper.to_array(tensor).tobytes()
            offset = handles[name].tell()
            handles[name].write(raw)
            external_data_helper.set_external_data(tensor, name, offset, len(raw))
            tensor.data_location = TensorProto.EXTERNAL
            tensor.ClearField("raw_data")
            tensor.ClearField("float_data")
    finally:
        for handle in handles.values():
            handle.close()
    onnx.save(model, str(path))
    return names


def variants(model: onnx.ModelProto, folder: Path) -> None:
    """model_quantized.onnx (dynamic int8), model_fp16.onnx and model_q4.onnx (MatMulNBits, block 16)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    from onnxruntime.transformers.float16 import convert_float_to_float16

    plain = folder / "plain.onnx"
    onnx.save(model, str(plain))
    quantize_dynamic(str(plain), str(folder / "model_quantized.onnx"), weight_type=QuantType.QUInt8)
    plain.unlink()
    half = convert_float_to_float16(onnx.ModelProto.FromString(model.SerializeToString()), keep_io_types=True)
    sort_nodes(half.graph)  # as transformers.js's float16 script does after adding the Casts at the inputs
    onnx.save(half, str(folder / "model_fp16.onnx"))
    quantizer = MatMulNBitsQuantizer(onnx.ModelProto.FromString(model.SerializeToString()), block_size=16)
    quantizer.process()
    onnx.save(quantizer.model.model, str(folder / "model_q4.onnx"))


def sort_nodes(graph: onnx.GraphProto) -> None:
    """The nodes in an order where each runs after the nodes its inputs come from."""
    ready = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    pending, done = list(graph.node), []
    while pending:
        node = next(n for n in pending if all(i in ready for i in n.input))
        pending.remove(node)
        done.append(node)
        ready.update(node.output)
    del graph.node[:]
    graph.node.extend(done)


def photos(folder: Path, count: int = 4) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(5)
    for i in range(count):
        size = (20 + 6 * i, 16 + 4 * i)
        pixels = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"photo{i}.png")
    return folder


def image_files(folder: Path, extra: dict[str, object]) -> None:
    """config.json (the class map, the architecture, `extra`) and a ViT image processor's preprocessor_config.json."""
    config = {
        "architectures": ["ViTForImageClassification"],
        "model_type": "vit",
        "id2label": {str(i): name for i, name in enumerate(LABELS)},
        "label2id": {name: i for i, name in enumerate(LABELS)},
        **extra,
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    processor = {
        "image_processor_type": "ViTImageProcessor",
        "do_resize": True,
        "size": {"height": SIDE, "width": SIDE},
        "resample": 2,
        "do_rescale": True,
        "rescale_factor": 1 / 255,
        "do_normalize": True,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
    }
    (folder / "preprocessor_config.json").write_text(json.dumps(processor, indent=2), encoding="utf-8")


def transformers_js_image(folder: Path, chunks: int = 2, dtype: str = "q8") -> Path:
    """A Hugging Face repository in transformers.js's layout: onnx/model.onnx (weights in `chunks` external
    files, declared in config.json's transformers.js_config) and one file per dtype beside it."""
    onnx_dir = folder / "onnx"
    onnx_dir.mkdir(parents=True)
    model = image_classifier()
    variants(model, onnx_dir)
    save_chunked(model, onnx_dir / "model.onnx", chunks)
    js = {"dtype": dtype, "device": "wasm", "use_external_data_format": {"model.onnx": chunks}}
    image_files(folder, {"transformers.js_config": js})
    return folder


def ultralytics_metadata(names: dict[int, str], imgsz: list[int], task: str = "detect") -> dict[str, str]:
    """The metadata Ultralytics' exporter writes into an ONNX graph: every value as `str()` of the Python value,
    so the lists and the class map are Python literals ("[640, 640]", "{0: 'person'}")."""
    values = {
        "description": "Ultralytics YOLOv8n model trained on coco8.yaml",
        "author": "Ultralytics",
        "date": "2026-01-05T10:00:00.000000",
        "version": "8.3.40",
        "license": "AGPL-3.0 License (https://ultralytics.com/license)",
        "docs": "https://docs.ultralytics.com",
        "stride": 32,
        "task": task,
        "batch": 1,
        "imgsz": imgsz,
        "names": names,
        "args": {"batch": 1, "half": False, "int8": False, "dynamic": False, "nms": False},
    }
    return {k: str(v) for k, v in values.items()}


def ultralytics_export(folder: Path, detector: onnx.ModelProto, names: list[str]) -> Path:
    """A folder as `yolo export format=onnx` leaves it: one graph whose metadata says what it is."""
    folder.mkdir(parents=True, exist_ok=True)
    size = [d.dim_value for d in detector.graph.input[0].type.tensor_type.shape.dim][2:]
    del detector.metadata_props[:]
    for key, value in ultralytics_metadata(dict(enumerate(names)), size).items():
        detector.metadata_props.add(key=key, value=value)
    detector.producer_name, detector.producer_version = "pytorch", "2.5.1"
    onnx.save(detector, str(folder / "yolov8n.onnx"))
    return folder


WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "on",
    "mat",
    "ran",
    "fast",
    "slow",
    "red",
    "blue",
    "house",
    "car",
    "tree",
    "sky",
]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
HIDDEN = 8


def tokenizer_file(path: Path) -> int:
    """A word-level BERT-style tokenizer.json made by the tokenizers library; the vocabulary's size."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {w: i for i, w in enumerate(SPECIALS + WORDS)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tokenizer.save(str(path))
    return len(vocab)


def text_encoder(vocab: int) -> onnx.ModelProto:
    """input_ids, attention_mask, token_type_ids [batch, sequence] -> last_hidden_state [batch, sequence, 8]: an
    embedding lookup, a MatMul (for the int8 converter) and a type embedding."""
    rng = np.random.default_rng(21)
    init = [
        numpy_helper.from_array(rng.normal(0, 1, (vocab, HIDDEN)).astype(np.float32), "words"),
        numpy_helper.from_array(rng.normal(0, 0.1, (2, HIDDEN)).astype(np.float32), "types"),
        numpy_helper.from_array((rng.normal(0, 0.4, (HIDDEN, HIDDEN))).astype(np.float32), "dense"),
    ]
    nodes = [
        helper.make_node("Gather", ["words", "input_ids"], ["embedded"], "word_embeddings"),
        helper.make_node("Gather", ["types", "token_type_ids"], ["typed"], "type_embeddings"),
        helper.make_node("Add", ["embedded", "typed"], ["summed"], "embeddings"),
        helper.make_node("MatMul", ["summed", "dense"], ["projected"], "dense"),
        helper.make_node("Tanh", ["projected"], ["last_hidden_state"], "activation"),
    ]
    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
           for n in ("input_ids", "attention_mask", "token_type_ids")]  # fmt: skip
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", HIDDEN])
    graph = helper.make_graph(nodes, "encoder", ids, [out], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model.producer_name, model.producer_version = "pytorch", "2.5.1"
    return model


def sentence_encoder(folder: Path, pooling: str = "mean", normalize: bool = True, max_length: int = 16) -> Path:
    """A sentence-transformers repository in transformers.js's layout: modules.json, 1_Pooling/config.json (one
    pooling mode on), a Normalize module or not, the tokenizer with its tokenizer_config.json, and a q8 file."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    (folder / "onnx").mkdir(parents=True)
    vocab = tokenizer_file(folder / "tokenizer.json")
    config = {"model_max_length": max_length, "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    model = text_encoder(vocab)
    onnx.save(model, str(folder / "onnx" / "model.onnx"))
    quantize_dynamic(
        str(folder / "onnx" / "model.onnx"), str(folder / "onnx" / "model_quantized.onnx"), weight_type=QuantType.QInt8
    )
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    (folder / "modules.json").write_text(json.dumps(modules, indent=2), encoding="utf-8")
    modes = ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens", "lasttoken")
    on = {"cls": "cls_token", "mean": "mean_tokens", "max": "max_tokens"}[pooling]
    pool = {"word_embedding_dimension": HIDDEN, **{f"pooling_mode_{m}": m == on for m in modes}}
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pool, indent=2), encoding="utf-8")
    return folder


def texts(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["the cat sat on the mat", "a red car ran fast", "blue sky", "the dog and the zebra ran slow on a mat"]
    for i, line in enumerate(lines):
        (folder / f"text{i}.txt").write_text(line + "\n", encoding="utf-8")
    return folder


def optimum_image(folder: Path) -> Path:
    """A folder as `optimum-cli export onnx` leaves an image classifier (model.onnx, config.json and the image
    processor's preprocessor_config.json), with `optimum-cli onnxruntime quantize`'s model_quantized.onnx."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(image_classifier(), str(folder / "model.onnx"))
    quantize_dynamic(str(folder / "model.onnx"), str(folder / "model_quantized.onnx"), weight_type=QuantType.QInt8)
    image_files(folder, {})
    return folder


def token_classifier(folder: Path) -> Path:
    """A token classifier in transformers.js's layout: input_ids, attention_mask -> logits [batch, sequence, 3]
    (an embedding lookup and a MatMul head), config.json's id2label, the tokenizer and its configuration."""
    (folder / "onnx").mkdir(parents=True)
    vocab = tokenizer_file(folder / "tokenizer.json")
    rng = np.random.default_rng(1)
    init = [
        numpy_helper.from_array(rng.normal(0, 1, (vocab, HIDDEN)).astype(np.float32), "words"),
        numpy_helper.from_array(rng.normal(0, 1, (HIDDEN, 3)).astype(np.float32), "head"),
    ]
    nodes = [
        helper.make_node("Gather", ["words", "input_ids"], ["embedded"], "word_embeddings"),
        helper.make_node("MatMul", ["embedded", "head"], ["logits"], "classifier"),
    ]
    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
           for n in ("input_ids", "attention_mask")]  # fmt: skip
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "sequence", 3])
    model = helper.make_model(
        helper.make_graph(nodes, "tokens", ids, [out], init), opset_imports=[helper.make_opsetid("", 17)], ir_version=8
    )
    model.producer_name, model.producer_version = "pytorch", "2.5.1"
    onnx.save(model, str(folder / "onnx" / "model.onnx"))
    config = {"architectures": ["BertForTokenClassification"], "id2label": {"0": "O", "1": "B-PER", "2": "I-PER"}}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 16}), encoding="utf-8")
    return folder


def transformers_vit(folder: Path) -> Path:
    """A tiny ViT image classifier made from its configuration by `transformers` (random weights, nothing
    downloaded), saved as a Hugging Face repository in transformers.js's layout: config.json and
    preprocessor_config.json written by transformers itself, onnx/model.onnx exported by torch.onnx, and the
    dtype files made from it by onnxruntime's converters."""
    import torch
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    config = ViTConfig(
        image_size=SIDE, patch_size=4, num_channels=3, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, id2label=dict(enumerate(LABELS)), label2id={n: i for i, n in enumerate(LABELS)},
    )  # fmt: skip
    torch.manual_seed(0)
    model = ViTForImageClassification(config).eval()
    model.config.architectures = ["ViTForImageClassification"]
    folder.mkdir(parents=True)
    model.config.to_json_file(str(folder / "config.json"))
    processor = ViTImageProcessor(size={"height": SIDE, "width": SIDE}, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    processor.save_pretrained(str(folder))
    (folder / "onnx").mkdir()
    graph = folder / "onnx" / "model.onnx"
    axes = {"pixel_values": {0: "batch_size"}, "logits": {0: "batch_size"}}
    with warnings.catch_warnings():  # the TorchScript exporter's deprecation and its tracer's notes
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (torch.rand(1, 3, SIDE, SIDE),), str(graph), input_names=["pixel_values"],
            output_names=["logits"], dynamic_axes=axes, opset_version=17, dynamo=False,
        )  # fmt: skip
    exported = onnx.load(str(graph))
    sort_nodes(exported.graph)
    variants(exported, folder / "onnx")
    written = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    written["transformers.js_config"] = {"dtype": "fp16", "device": "webgpu"}
    (folder / "config.json").write_text(json.dumps(written, indent=2), encoding="utf-8")
    return folder


def transformers_sentence_encoder(folder: Path) -> Path:
    """A tiny BERT sentence encoder made from its configuration by `transformers`, with a WordPiece tokenizer
    saved by transformers (tokenizer.json and tokenizer_config.json), sentence-transformers' modules.json and
    1_Pooling/config.json (mean pooling, then Normalize), the graph exported by torch.onnx and a q8 file."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join([*SPECIALS, "[MASK]", *WORDS]) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab_file=str(vocab), model_max_length=32).save_pretrained(str(folder))
    vocab.unlink()  # the tokenizer.json holds it
    config = BertConfig(
        vocab_size=len(SPECIALS) + 1 + len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    model = BertModel(config).eval()
    model.config.architectures = ["BertModel"]
    model.config.to_json_file(str(folder / "config.json"))
    (folder / "onnx").mkdir()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    ones = torch.ones(1, 5, dtype=torch.int64)
    example = (ones, ones, torch.zeros_like(ones))

    class Named(torch.nn.Module):  # the inputs by name, as Optimum's export wraps a model
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    axes = {n: {0: "batch_size", 1: "sequence_length"} for n in [*names, "last_hidden_state"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Named(), example, str(folder / "onnx" / "model.onnx"), input_names=names,
            output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False,
        )  # fmt: skip
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(folder / "onnx" / "model.onnx"), str(folder / "onnx" / "model_quantized.onnx"), weight_type=QuantType.QUInt8
    )
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules, indent=2), encoding="utf-8")
    (folder / "1_Pooling").mkdir()
    pool = {"word_embedding_dimension": 16, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pool, indent=2), encoding="utf-8")
    return folder
