"""Models whose tensors keep their data in external files, wherever a tensor can sit.

    PLACES                         where the external tensor is: a Constant's value, another
                                   tensor attribute (ConstantOfShape's value), a subgraph's
                                   initializer (an If branch), a Constant in a model-local
                                   function, a sparse Constant's values, training_info
    ExternalCase                   a drawn model: its files, and what its output must be
    build(case)                    the ModelProto (external) and the file contents
    external_cases()               the hypothesis strategy

Every model computes y = Max(x, W) (W broadcast), whichever place holds W, so the expected
output is known without running anything: `expected(case, x)`. W is small (kept in the
output's protobuf) or over 256 bytes (written to the output's OUT.data). The data files hold other
tensors' bytes before W (an offset) and after it; a file of the same name somewhere else
holds different values (`decoy_bytes`), so reading the wrong file shows in the output.
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

PLACES = ("constant", "attribute", "subgraph", "function", "sparse", "training_info")
LOCATIONS = (".env", "weights.bin", "data/w.bin")
DTYPES = {"float32": TensorProto.FLOAT, "int32": TensorProto.INT32, "int64": TensorProto.INT64}
FUNCTION_DOMAIN = "ext.local"


@dataclasses.dataclass(frozen=True)
class ExternalCase:
    place: str
    location: str
    dtype: str
    values: tuple[int, ...]  # W (one value for "attribute": ConstantOfShape fills with it)
    padding: int  # bytes of other data before W in its file
    source: int  # the model's opset
    target: int  # the opset to convert to
    size: int = 4  # x and y are [size]; over 64 float32, W goes to the output's OUT.data

    def weights(self) -> np.ndarray:
        return np.array(self.values, dtype=self.dtype)

    def decoy(self) -> np.ndarray:
        """What a same-named file elsewhere holds instead: other values, same length."""
        return self.weights() + np.array(1000, dtype=self.dtype)


def expected(case: ExternalCase, x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.broadcast_to(case.weights(), x.shape)).astype(case.dtype)


def file_bytes(case: ExternalCase, weights: np.ndarray) -> bytes:
    """The data file: `padding` bytes, W, and a tail."""
    return b"\x5a" * case.padding + weights.tobytes() + b"\xa5" * 8


def decoy_bytes(case: ExternalCase) -> bytes:
    return file_bytes(case, case.decoy())


def write_files(case: ExternalCase, directory: pathlib.Path, content: bytes) -> pathlib.Path:
    path = directory / case.location
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def _tensor(case: ExternalCase, name: str, external: bool) -> TensorProto:
    weights = case.weights()
    tensor = numpy_helper.from_array(weights, name)
    if not external:
        return tensor
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (
        ("location", case.location),
        ("offset", str(case.padding)),
        ("length", str(weights.nbytes)),
    ):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def build(case: ExternalCase, *, external: bool = True) -> onnx.ModelProto:
    """The model of `case`; `external=False`: the same with W inline (a reference)."""
    elem = DTYPES[case.dtype]
    x = helper.make_tensor_value_info("x", elem, [case.size])
    y = helper.make_tensor_value_info("y", elem, [case.size])
    w = _tensor(case, "w", external)
    inputs, initializers, functions, nodes = [x], [], [], []
    if case.place == "constant":
        nodes = [
            helper.make_node("Constant", [], ["w"], value=w, name="const_w"),
            helper.make_node("Max", ["x", "w"], ["y"], name="max_w"),
        ]
    elif case.place == "attribute":
        shape = numpy_helper.from_array(np.array([case.size], np.int64), "shape")
        initializers.append(shape)
        nodes = [
            helper.make_node("ConstantOfShape", ["shape"], ["w"], value=w, name="fill_w"),
            helper.make_node("Max", ["x", "w"], ["y"], name="max_w"),
        ]
    elif case.place == "sparse":
        indices = numpy_helper.from_array(np.arange(case.size, dtype=np.int64), "w_indices")
        w.name = "w_values"
        sparse = helper.make_sparse_tensor(w, indices, [case.size])
        nodes = [
            helper.make_node("Constant", [], ["w"], sparse_value=sparse, name="const_w"),
            helper.make_node("Max", ["x", "w"], ["y"], name="max_w"),
        ]
    elif case.place == "subgraph":
        inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
        branches = {}
        for branch, is_external in (("then", external), ("else", False)):
            out = helper.make_tensor_value_info(f"{branch}_y", elem, [case.size])
            tensor = _tensor(case, f"{branch}_w", is_external)
            node = helper.make_node("Max", ["x", f"{branch}_w"], [f"{branch}_y"])
            node.name = f"{branch}_max"
            branches[f"{branch}_branch"] = helper.make_graph(
                [node], f"{branch}_graph", [], [out], [tensor]
            )
        nodes = [helper.make_node("If", ["cond"], ["y"], name="pick", **branches)]
    elif case.place == "function":
        body = [
            helper.make_node("Constant", [], ["w"], value=w, name="fn_const_w"),
            helper.make_node("Max", ["fx", "w"], ["fy"], name="fn_max"),
        ]
        functions.append(
            helper.make_function(
                FUNCTION_DOMAIN,
                "MaxW",
                ["fx"],
                ["fy"],
                body,
                [helper.make_opsetid("", case.source)],
            )
        )
        nodes = [helper.make_node("MaxW", ["x"], ["y"], domain=FUNCTION_DOMAIN, name="call")]
    elif case.place == "training_info":
        initializers.append(_tensor(case, "w", False))
        nodes = [helper.make_node("Max", ["x", "w"], ["y"], name="max_w")]
    graph = helper.make_graph(nodes, "ext", inputs, [y], initializers)
    imports = [helper.make_opsetid("", case.source)]
    if functions:
        imports.append(helper.make_opsetid(FUNCTION_DOMAIN, 1))
    model = helper.make_model(graph, opset_imports=imports, functions=functions, ir_version=8)
    if case.place == "training_info":
        # a training graph of no nodes (so no schema to change): it hands out its weight
        trained = _tensor(case, "trained_w", external)
        out = helper.make_tensor_value_info("trained_w", elem, [case.size])
        algorithm = helper.make_graph([], "train", [], [out], [trained])
        model.training_info.add().algorithm.CopyFrom(algorithm)
    return model


def feeds(case: ExternalCase, x: np.ndarray) -> dict[str, np.ndarray]:
    """The inputs of one run (an If model also takes its condition: both branches hold W)."""
    given = {"x": x}
    if case.place == "subgraph":
        given["cond"] = np.array(True)
    return given


@st.composite
def external_cases(draw, places=PLACES) -> ExternalCase:
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    place = draw(st.sampled_from(places))
    size = draw(st.sampled_from([4, 96]))
    count = 1 if place == "attribute" else size  # ConstantOfShape's value holds one element
    drawn = draw(st.lists(st.integers(-(10**6), 10**6), min_size=min(count, 4), max_size=4))
    # a long W repeats the drawn values, each time shifted, so that every element differs
    values = tuple(int(v) for v in np.resize(drawn, count) + 7 * (np.arange(count) // 4))
    source = draw(st.integers(13, 18))
    target = draw(st.integers(12, 18))
    return ExternalCase(
        place=place,
        location=draw(st.sampled_from(LOCATIONS)),
        dtype=dtype,
        values=values,
        padding=draw(st.sampled_from([0, 4, 8, 24])),
        source=source,
        target=target,
        size=size,
    )
