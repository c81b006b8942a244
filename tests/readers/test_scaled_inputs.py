"""Which graph inputs the graph scales itself (a tabular `standard` declared on them scales twice)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from checker.readers.graphinfo import scaled_inputs


def graph(nodes: list, inputs: list[str], constants: dict[str, np.ndarray]) -> object:
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 3]) for n in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [numpy_helper.from_array(v, k) for k, v in constants.items()],
    )
    return helper.make_model(g)


def test_sub_by_a_constant_through_a_cast_is_scaling_and_a_sub_of_two_inputs_is_not() -> None:
    mean = np.zeros(3, np.float32)
    nodes = [
        helper.make_node("Cast", ["a"], ["a32"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["a32", "mean"], ["centred"], name="centre"),
        helper.make_node("Sub", ["b", "a"], ["y"]),
    ]
    found = scaled_inputs(graph(nodes, ["a", "b"], {"mean": mean}))
    assert found == {"a": "the Sub by a constant 'centre'"}
