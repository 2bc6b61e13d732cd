"""The schemas' argument (maxlower/prove/canonical.py): two one-node models whose op and
parameters agree are one function at any size. Golden pairs that it must and must not take,
then a property test that checks every pair it takes against onnx.reference, bit for bit
(the sign of a zero included: the argument claims the same bits, not the ±0 policy)."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import helper
from onnx.reference import ReferenceEvaluator

from maxlower.prove.canonical import COERCED_TO_2D, same_by_schema
from passes.builder import min_ir_version
from tests import budget


def _reduce(op: str, opset: int, axes, keepdims=1, noop=None, shape=(2, 3, 4), runtime=False):
    """A one-node model: `op` over `axes` as the opset spells them (an attribute before
    18, an input from 18; ReduceSum's, Squeeze's and Unsqueeze's from 13), or with
    `runtime` a graph input."""
    dtype = onnx.TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", dtype, shape)]
    initializers, attrs, names = [], {}, ["x"]
    as_input = opset >= (13 if op in ("ReduceSum", "Squeeze", "Unsqueeze") else 18)
    if op not in ("Squeeze", "Unsqueeze", "ArgMax", "ArgMin"):
        attrs["keepdims"] = keepdims
    if op in ("ArgMax", "ArgMin"):
        attrs.update(axis=axes, keepdims=keepdims)
    elif axes is not None and as_input and runtime:
        inputs.append(helper.make_tensor_value_info("axes", onnx.TensorProto.INT64, [len(axes)]))
        names.append("axes")
    elif axes is not None and as_input:
        initializers.append(onnx.numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        names.append("axes")
    elif axes is not None:
        attrs["axes"] = list(axes)
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    node = helper.make_node(op, names, ["y"], **attrs)
    out_type = onnx.TensorProto.INT64 if op in ("ArgMax", "ArgMin") else dtype
    out = helper.make_tensor_value_info("y", out_type, None)
    graph = helper.make_graph([node], "g", inputs, [out], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)  # (the outputs' shapes)


def _reshape(opset: int, shape, allowzero=None, data=(2, 3, 4), runtime=False):
    """A one-node Reshape of float data to `shape` (an initializer, or with `runtime` a
    graph input), `allowzero` given when not None (it exists from opset 14)."""
    dtype = onnx.TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", dtype, data)]
    initializers = []
    if runtime:
        inputs.append(helper.make_tensor_value_info("shape", onnx.TensorProto.INT64, [len(shape)]))
    else:
        initializers.append(onnx.numpy_helper.from_array(np.array(shape, np.int64), "shape"))
    attrs = {} if allowzero is None else {"allowzero": allowzero}
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], **attrs)
    out = helper.make_tensor_value_info("y", dtype, [None] * len(shape))
    graph = helper.make_graph([node], "g", inputs, [out], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def _coerced(op: str, opset: int, axis, shape=(2, 3, 4), dtype=onnx.TensorProto.FLOAT):
    """A one-node Softmax, LogSoftmax or Hardmax on `dtype` `shape` (None: unknown rank),
    `axis` given when not None."""
    x = helper.make_tensor_value_info("x", dtype, shape)
    node = helper.make_node(op, ["x"], ["y"], **({} if axis is None else {"axis": axis}))
    out = helper.make_tensor_value_info("y", dtype, shape)
    graph = helper.make_graph([node], "g", [x], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


INT64_MAX = int(np.iinfo(np.int64).max)


def _shape(opset: int, start=None, end=None, dims=(2, 3, 4)):
    """A one-node Shape of float `dims`, `start`/`end` given when not None (from 15)."""
    attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    node = helper.make_node("Shape", ["x"], ["y"], **attrs)
    return _model([node], opset, dims, [])


def _shape_sliced(opset: int, start, end, dims=(2, 3, 4), axis=0, step=None):
    """Shape(x), then Slice(·, [start], [end], [axis](, [step])): the form below 15."""
    names = ["s", "starts", "ends", "axes"] + (["steps"] * (step is not None))
    values = [start, end, axis] + ([step] if step is not None else [])
    constants = [
        onnx.numpy_helper.from_array(np.array([v], np.int64), n)
        for n, v in zip(names[1:], values, strict=True)
    ]
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Slice", names, ["y"])]
    return _model(nodes, opset, dims, constants)


def _model(nodes, opset, dims, initializers):
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, dims)
    out = helper.make_tensor_value_info("y", onnx.TensorProto.INT64, [None])
    graph = helper.make_graph(nodes, "g", [x], [out], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _split(opset: int, split=None, axis=None, num_outputs=None, outputs=2, dims=(4, 6)):
    """A one-node Split of float `dims` into `outputs` parts, `split` as the opset spells
    it (an attribute before 13, a constant input from 13), `axis`/`num_outputs` given when
    not None."""
    attrs = {k: v for k, v in (("axis", axis), ("num_outputs", num_outputs)) if v is not None}
    names, initializers = ["x"], []
    if split is not None and opset >= 13:
        initializers.append(onnx.numpy_helper.from_array(np.array(split, np.int64), "split"))
        names.append("split")
    elif split is not None:
        attrs["split"] = list(split)
    outs = [f"y{i}" for i in range(outputs)]
    node = helper.make_node("Split", names, outs, **attrs)
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, dims)
    ys = [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) for o in outs]
    graph = helper.make_graph([node], "g", [x], ys, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def _reshape_1(shape):
    """Reshape-1: the shape an attribute (and opset 1's data types)."""
    node = helper.make_node("Reshape", ["x"], ["y"], shape=list(shape))
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, (2, 3, 4))
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "g", [x], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 1)])
    model.ir_version = 8
    return model


SAME = {
    # axes an input at 18 and an attribute at 13, left out of both: every axis reduced
    # (noop_with_empty_axes=1 at 18 is another thing: NOT_SAME)
    "no axes at 18 against none at 13": (
        _reduce("ReduceMax", 18, None), _reduce("ReduceMax", 13, None)
    ),
    "Squeeze without axes across 13 (every dim of size 1)": (
        _reduce("Squeeze", 11, None), _reduce("Squeeze", 13, None)
    ),
    "axes input made the attribute": (
        _reduce("ReduceMax", 18, [1], keepdims=0), _reduce("ReduceMax", 13, [1], keepdims=0)
    ),
    "default noop said": (_reduce("ReduceMin", 18, [0], noop=0), _reduce("ReduceMin", 13, [0])),
    "a relabel with nothing moved": (_reduce("ReduceMin", 13, [2]), _reduce("ReduceMin", 12, [2])),
    "ArgMax across select_last_index's version": (
        _reduce("ArgMax", 11, 1), _reduce("ArgMax", 13, 1)
    ),
    "Squeeze axes to the attribute": (
        _reduce("Squeeze", 13, [0], shape=(1, 3)), _reduce("Squeeze", 11, [0], shape=(1, 3))
    ),
    # TorchScript's Reshape-14 says allowzero=0; the shape computed at run time
    "Reshape-14 allowzero=0 dropped": (
        _reshape(14, [0, -1], allowzero=0, runtime=True),
        _reshape(13, [0, -1], runtime=True),
    ),
    "a reduction's axes out of order (dynamo's [-1, -2])": (
        _reduce("ReduceMean", 18, [-1, -2]), _reduce("ReduceMean", 13, [-1, -2])
    ),
    "allowzero=1 to a constant shape with no 0 (dynamo's Reshape-14)": (
        _reshape(14, [-1, 12], allowzero=1), _reshape(13, [-1, 12])
    ),
    "Shape-15's start as a Slice to the end": (
        _shape(18, start=1), _shape_sliced(13, 1, INT64_MAX)
    ),
    "Shape-15's start and end, negative, as a Slice": (
        _shape(15, start=-2, end=-1), _shape_sliced(13, -2, -1)
    ),
    "Shape-15 with no bounds relabelled": (_shape(21), _shape(13)),
    "Shape-15's end past the rank, clamped on both": (
        _shape(15, start=0, end=9), _shape_sliced(14, 0, 9)
    ),
    "Split-11's split attribute made the input": (
        _split(11, [1, 3], axis=0), _split(13, [1, 3], axis=0)
    ),
    "Split-18's num_outputs, even, as equal parts (dynamo's q, k, v)": (
        _split(18, axis=1, num_outputs=3, outputs=3), _split(13, axis=1, outputs=3)
    ),
    "Split-18's num_outputs, uneven, as sizes": (
        _split(18, axis=1, num_outputs=3, outputs=3, dims=(4, 7)),
        _split(13, [3, 3, 1], axis=1, outputs=3, dims=(4, 7)),
    ),
    "Reshape-5 at opset 11 relabelled": (_reshape(11, [0, 12]), _reshape(13, [0, 12])),
    "Reshape allowzero=0 made explicit": (_reshape(13, [2, 0, 4]), _reshape(21, [2, 0, 4], 0)),
    "Softmax-13 on the last axis relabelled to 11, any rank": (
        _coerced("Softmax", 13, -1, shape=None), _coerced("Softmax", 11, -1, shape=None)
    ),
    "Hardmax-13's default axis and Hardmax-11's -1": (
        _coerced("Hardmax", 13, None), _coerced("Hardmax", 11, -1)
    ),
    "LogSoftmax-11 at the last axis counted from the front": (
        _coerced("LogSoftmax", 11, 2), _coerced("LogSoftmax", 13, -1)
    ),
    "Softmax-11 and 12 at an inner axis (both coerce)": (
        _coerced("Softmax", 11, 1), _coerced("Softmax", 12, 1)
    ),
}  # fmt: skip

NOT_SAME = {
    "Softmax at an inner axis across 13 (coerced before, one axis after)": (
        _coerced("Softmax", 11, 1), _coerced("Softmax", 13, 1)
    ),
    "Softmax-11's default axis 1 against 13's -1": (
        _coerced("Softmax", 11, None), _coerced("Softmax", 13, None)
    ),
    "Hardmax at 0 of an input of unknown rank, across 13": (
        _coerced("Hardmax", 11, 0, shape=None), _coerced("Hardmax", 13, 0, shape=None)
    ),
    "Softmax-11 at axis 1 of unknown rank, against 13's last axis": (
        _coerced("Softmax", 11, 1, shape=None), _coerced("Softmax", 13, -1, shape=None)
    ),
    "float16 LogSoftmax across 13 (onnxruntime's kernels round apart)": (
        _coerced("LogSoftmax", 13, -1, dtype=onnx.TensorProto.FLOAT16),
        _coerced("LogSoftmax", 11, -1, dtype=onnx.TensorProto.FLOAT16),
    ),
    "Squeeze's axes out of order (onnx.reference's Squeeze-11 takes them as listed)": (
        _reduce("Squeeze", 11, [2, 0], shape=(1, 3, 1)),
        _reduce("Squeeze", 13, [2, 0], shape=(1, 3, 1)),
    ),
    "LogSoftmax against Softmax": (_coerced("LogSoftmax", 13, -1), _coerced("Softmax", 13, -1)),
    "Softmax on a scalar (no axis to normalise)": (
        _coerced("Softmax", 13, -1, shape=()), _coerced("Softmax", 11, -1, shape=())
    ),
    "other axes": (_reduce("ReduceMax", 18, [1]), _reduce("ReduceMax", 13, [2])),
    "other keepdims": (_reduce("ReduceMax", 18, [1], 0), _reduce("ReduceMax", 13, [1], 1)),
    "noop with no axes is no reduction": (
        _reduce("ReduceMax", 18, None, noop=1), _reduce("ReduceMax", 13, None)
    ),
    "axes computed at run time": (
        _reduce("ReduceMax", 18, [1], runtime=True), _reduce("ReduceMax", 13, [1])
    ),
    "another op": (_reduce("ReduceMax", 13, [1]), _reduce("ReduceMin", 13, [1])),
    "a version before negative axes": (_reduce("ReduceMax", 1, [1]), _reduce("ReduceMax", 13, [1])),
    "last index against first": (
        _reduce("ArgMax", 13, 1) , _reduce("ArgMax", 12, 1)
    ),
    "keepdims outside 0 and 1 (onnx.reference's versions part ways)": (
        _reduce("ReduceMax", 17, [1], keepdims=2), _reduce("ReduceMax", 18, [1], keepdims=2)
    ),
    "Unsqueeze's axes out of order (onnx.reference inserts them as listed)": (
        _reduce("Unsqueeze", 11, [2, 0]), _reduce("Unsqueeze", 13, [2, 0])
    ),
    "a reduction's axes named twice": (
        _reduce("ReduceMin", 13, [2, -1]), _reduce("ReduceMin", 18, [2, -1])
    ),
    "one set of axes in another order": (
        _reduce("ReduceMean", 18, [-1, -2]), _reduce("ReduceMean", 13, [-2, -1])
    ),
    "negative axis against the positive one": (
        _reduce("ReduceMax", 13, [-1]), _reduce("ReduceMax", 18, [2])
    ),
    "allowzero=1 (a 0 is an empty dim) against 13's copy": (
        _reshape(14, [0, -1], allowzero=1, data=(0, 3)), _reshape(13, [0, -1], data=(0, 3))
    ),
    "Shape-15's start against a Slice from another": (
        _shape(15, start=1), _shape_sliced(13, 0, INT64_MAX)
    ),
    "a Slice of the shape with step 2": (
        _shape(15, start=0), _shape_sliced(13, 0, INT64_MAX, step=2)
    ),
    "an end of 3 against the last axis (3 only at rank 3)": (
        _shape(15, start=1, end=3), _shape_sliced(13, 1, INT64_MAX)
    ),
    "Split in other parts": (_split(11, [1, 3]), _split(13, [3, 1])),
    "Split-18's num_outputs against equal parts of a length it does not divide": (
        _split(18, axis=1, num_outputs=3, outputs=3, dims=(4, 7)),
        _split(13, axis=1, outputs=3, dims=(4, 7)),
    ),
    "Split-18's num_outputs on a length of unknown size": (
        _split(18, axis=1, num_outputs=2, dims=(4, "n")), _split(13, axis=1, dims=(4, "n"))
    ),
    "Split on another axis": (_split(11, axis=0), _split(13, axis=1)),
    "Reshape-1's shape attribute": (_reshape_1([2, 12]), _reshape(13, [2, 12])),
    "another shape": (_reshape(13, [6, 4]), _reshape(14, [4, 6])),
    "allowzero outside 0 and 1": (_reshape(14, [6, 4], allowzero=2), _reshape(13, [6, 4])),
    "allowzero=1 to a constant shape with a 0": (
        _reshape(14, [2, 0, 3], allowzero=1, data=(2, 0, 3)),
        _reshape(13, [2, 0, 3], data=(2, 0, 3)),
    ),
    "allowzero=1 to a shape computed at run time": (
        _reshape(14, [2, 12], allowzero=1, runtime=True), _reshape(13, [2, 12], runtime=True)
    ),
}  # fmt: skip
# ArgMax-12 with select_last_index=1 (the last tie) against ArgMax-13 without it
NOT_SAME["last index against first"][1].graph.node[0].attribute.append(
    helper.make_attribute("select_last_index", 1)
)


@pytest.mark.parametrize("name", sorted(SAME))
def test_the_same_node_by_its_parameters_is_one_function(name):
    reference, candidate = SAME[name]
    for model in (reference, candidate):  # (a site's input of unknown rank has no shape)
        if model.graph.input[0].type.tensor_type.HasField("shape"):
            onnx.checker.check_model(model, full_check=True)
    assumption = same_by_schema(reference, candidate)
    assert assumption is not None and "compute" in assumption
    if _is_coerced(reference) or reference.graph.node[0].op_type == "Shape":
        assert _assert_same_bits_in_onnxruntime(reference, candidate, np.random.default_rng(0))
    else:
        _assert_same_bits(reference, candidate, np.random.default_rng(0))


@pytest.mark.parametrize("name", sorted(NOT_SAME))
def test_another_node_is_left_to_the_solver(name):
    reference, candidate = NOT_SAME[name]
    assert same_by_schema(reference, candidate) is None


# run-time shapes (of length 2, as the model declares) for a Reshape whose shape is a graph
# input: a 0 copied, -1 inferred, plain, -1 that does not divide, 0s that do not fit (the
# last two an error on both sides)
RUNTIME_SHAPES = [[0, -1], [-1, 0], [4, 6], [5, -1], [0, 0]]


def _assert_same_bits(reference, candidate, rng) -> None:
    shape = [d.dim_value for d in reference.graph.input[0].type.tensor_type.shape.dim]
    values = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.5], np.float32)
    runtime = len(reference.graph.input) > 1  # a Reshape's shape given at run time
    for k in range(len(RUNTIME_SHAPES) if runtime else 5):
        feeds = {"x": rng.choice(values, size=shape).astype(np.float32)}
        if runtime:
            feeds["shape"] = np.array(RUNTIME_SHAPES[k], np.int64)
        a, b = (_run(model, feeds) for model in (reference, candidate))
        if isinstance(a, Exception) or isinstance(b, Exception):  # (both, or a difference)
            assert isinstance(a, Exception) and isinstance(b, Exception), (a, b)
            continue
        assert a.shape == b.shape and a.dtype == b.dtype
        assert a.tobytes() == b.tobytes() or (
            np.array_equal(a, b, equal_nan=True) and (np.array_equal(np.signbit(a), np.signbit(b)))
        ), (a, b)


def _run(model, feeds):
    try:
        with np.errstate(all="ignore"):
            return ReferenceEvaluator(model).run(None, feeds)[0]
    except Exception as error:  # an axis named twice, say: an error on both sides or neither
        return error


def _judge_if_taken(pair, seed: int, *judges) -> None:
    """Where the schemas' argument takes `pair` as one function, each judge runs both
    sides on the same seeded inputs and finds the same bits (or an error on both)."""
    reference, candidate = pair
    if same_by_schema(reference, candidate) is None:
        return
    for judge in judges:
        judge(reference, candidate, np.random.default_rng(seed))


OPS = [
    "ReduceMax",
    "ReduceMin",
    "ReduceSum",
    "ReduceMean",
    "ReduceProd",
    "ReduceL2",
    "ReduceLogSumExp",
    "ArgMax",
    "ArgMin",
]


@st.composite
def _pairs(draw):
    op = draw(st.sampled_from(OPS))
    rank = 3
    if op in ("ArgMax", "ArgMin"):
        axes_of = st.integers(-rank, rank - 1)
    else:
        axes_of = st.lists(
            st.integers(-rank, rank - 1), min_size=1, max_size=2, unique_by=lambda a: a % rank
        )
    sides = []
    for _ in range(2):
        opset = draw(st.sampled_from([11, 12, 13, 17, 18, 20]))
        keepdims = draw(st.sampled_from([0, 1]))
        sides.append(_reduce(op, opset, draw(axes_of), keepdims=keepdims))
    for model in sides:
        onnx.checker.check_model(model, full_check=True)
    return sides


@budget.fuzz(200, database=None)
@given(_pairs(), st.integers(0, 2**32 - 1))
def test_every_pair_taken_by_the_schemas_gives_the_same_bits(pair, seed):
    """A checker checked by a checker: whenever the schemas' argument says one function,
    onnx.reference gives the same bits on inputs with ±0, ±inf and NaN."""
    _judge_if_taken(pair, seed, _assert_same_bits)


@st.composite
def _reshape_pairs(draw):
    """Two Reshapes of (2, 3, 4) data, each at an opset from 5 to 21 (Reshape-5, 13, 14,
    19, 21), allowzero absent, 0 or 1 where it exists, to a constant shape drawn from
    entries the spec gives meaning to (0 copies or, with allowzero=1, is empty; -1
    infers) or to a run-time one; some fit the data, some do not (an error on both
    sides or neither, _assert_same_bits)."""
    runtime = draw(st.booleans())
    shape = draw(st.lists(st.sampled_from([0, -1, 1, 2, 3, 4, 6, 12, 24]), min_size=1, max_size=4))
    sides = []
    for _ in range(2):
        opset = draw(st.sampled_from([5, 11, 13, 14, 18, 19, 21]))
        allowzero = draw(st.sampled_from([None, 0, 1])) if opset >= 14 else None
        # (a run-time shape is fed: RUNTIME_SHAPES, of length 2)
        sides.append(_reshape(opset, [0, -1] if runtime else shape, allowzero, runtime=runtime))
    return sides


@budget.fuzz(200, database=None)
@given(_reshape_pairs(), st.integers(0, 2**32 - 1))
def test_every_reshape_pair_taken_by_the_schemas_gives_the_same_bits(pair, seed):
    """The same, for Reshape across its versions (allowzero added at 14): whatever the
    schemas' argument takes, onnx.reference runs to the same bits, or fails on both."""
    _judge_if_taken(pair, seed, _assert_same_bits)


def _is_coerced(model) -> bool:
    return model.graph.node[0].op_type in COERCED_TO_2D


# Inputs for a Softmax-like pair: every rank from 1 to 4, trailing dims other than 1 (where
# the 2-D coercion and the single axis part ways), and ±0, ±inf, NaN and ties
_COERCED_SHAPES = [(5,), (2, 3), (2, 1, 3), (2, 3, 4), (1, 2, 3, 2), (2, 0, 3)]


def _assert_same_bits_in_onnxruntime(reference, candidate, rng) -> int:
    """The judge for Softmax, LogSoftmax and Hardmax, and for Shape: onnxruntime, whose
    kernels before 13 coerce to 2-D as the spec says (onnx.reference's Softmax normalises
    one axis at every version, so it cannot tell the two meanings apart). The input's
    declared shape, or where its rank is unknown every shape of _COERCED_SHAPES, gives the
    same bits on both, or an error on both. Returns how many shapes ran on both."""
    tensor_type = reference.graph.input[0].type.tensor_type
    if tensor_type.HasField("shape"):
        shapes = [tuple(d.dim_value for d in tensor_type.shape.dim)]
    else:
        shapes = _COERCED_SHAPES
    values = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.5, 1.0, 1.3, -0.6, 6.1])
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
    ran = 0
    for shape in shapes:
        feeds = {"x": rng.choice(values, size=shape).astype(dtype)}
        a, b = (_run_in_onnxruntime(model, feeds) for model in (reference, candidate))
        if isinstance(a, Exception) or isinstance(b, Exception):
            assert isinstance(a, Exception) and isinstance(b, Exception), (shape, a, b)
            continue
        assert a.shape == b.shape and a.tobytes() == b.tobytes(), (shape, a, b)
        ran += 1
    return ran


def _run_in_onnxruntime(model, feeds):
    options = ort.SessionOptions()
    options.log_severity_level = 3  # (the declared output shape is not the fed one's)
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        return session.run(None, feeds)[0]
    except Exception as error:  # an axis out of range: an error on both sides or neither
        return error


@st.composite
def _coerced_pairs(draw):
    """Two nodes of one of Softmax, LogSoftmax and Hardmax, each at an opset from 11 to 21
    (on either side of 13), on an input of a rank from 1 to 4 or of unknown rank, with an
    axis anywhere in range or left out (the version's default: 1 before 13, -1 from 13)."""
    op = draw(st.sampled_from(sorted(COERCED_TO_2D)))
    rank = draw(st.sampled_from([None, 1, 2, 3, 4]))
    shape = (
        None
        if rank is None
        else draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank).map(tuple))
    )
    top = 2 if rank is None else rank
    # float16 too: onnxruntime's float16 kernels before and from 13 round apart
    dtype = draw(
        st.sampled_from([onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16])
    )
    sides = []
    for _ in range(2):
        opset = draw(st.sampled_from([11, 12, 13, 17, 21]))
        axis = draw(st.one_of(st.none(), st.integers(-top, top - 1)))
        sides.append(_coerced(op, opset, axis, shape, dtype))
    return sides


@budget.fuzz(200, database=None)
@given(_coerced_pairs(), st.integers(0, 2**32 - 1))
def test_every_softmax_like_pair_taken_by_the_schemas_gives_the_same_bits(pair, seed):
    """The same for the ops whose axis changed meaning at 13, judged by onnxruntime: a
    relabel across 13 that the argument takes normalises the same axis on both sides."""
    _judge_if_taken(pair, seed, _assert_same_bits_in_onnxruntime)


@st.composite
def _shape_pairs(draw):
    """A Shape-15 to 21 with start/end drawn (absent, or around 0 and the rank: in and out
    of range, negative, INT64_MAX) against its own Slice form with one bound moved, or
    another such Shape, a Shape-1/13 with no bounds or a Slice form, on an input of a rank
    from 0 to 4. Bounds near the rank and pairs near each other are drawn often: there the
    argument's reading of a bound is wrong if it is."""
    rank = draw(st.integers(0, 4))
    dims = tuple(draw(st.lists(st.integers(0, 3), min_size=rank, max_size=rank)))
    values = sorted({-rank - 1, -1, 0, 1, max(rank - 1, 0), rank, rank + 1})
    bound = st.sampled_from([None, *values, INT64_MAX])
    start, end = draw(bound), draw(bound)
    reference = _shape(draw(st.sampled_from([15, 19, 21])), start, end, dims)
    kind = draw(st.sampled_from(["own slice", "attributes", "slice", "plain"]))
    step, axis = draw(st.sampled_from([None, 1, 2, -1])), draw(st.sampled_from([0, -1]))
    opset = draw(st.sampled_from([10, 13, 14]))
    if kind == "own slice":
        start = 0 if start is None else start
        end = INT64_MAX if end is None else end
        moved = draw(st.sampled_from(["none", "start", "end"]))
        start = draw(st.sampled_from(values)) if moved == "start" else start
        end = draw(st.sampled_from([*values, INT64_MAX])) if moved == "end" else end
        candidate = _shape_sliced(opset, start, end, dims, axis, step)
    elif kind == "attributes":
        candidate = _shape(draw(st.sampled_from([15, 19, 21])), draw(bound), draw(bound), dims)
    elif kind == "slice":
        start = draw(st.sampled_from(values))
        end = draw(st.sampled_from([*values, INT64_MAX]))
        candidate = _shape_sliced(opset, start, end, dims, axis, step)
    else:
        candidate = _shape(draw(st.sampled_from([1, 13])), dims=dims)
    return [reference, candidate] if draw(st.booleans()) else [candidate, reference]


@budget.fuzz(200, database=None)
@given(_shape_pairs(), st.integers(0, 2**32 - 1))
def test_every_shape_pair_taken_by_the_schemas_gives_the_same_bits(pair, seed):
    """The same for Shape across 15 (start/end added) and its Slice form, judged by
    onnxruntime. (onnx.reference's Shape-15 adds the rank to a negative bound without
    clamping it to 0 as the spec says: end=-3 of a rank-2 shape gives [d0] where the spec
    and onnxruntime give []. This test found that.)"""
    _judge_if_taken(pair, seed, _assert_same_bits_in_onnxruntime)


@st.composite
def _split_pairs(draw):
    """Two Splits of a float (4, 6) into 2 or 3 parts, each at an opset from 11 to 21
    (`split` an attribute before 13, an input from 13; num_outputs from 18), with sizes
    that fit or do not, equal parts, or num_outputs (which allows a smaller last part)."""
    outputs = draw(st.sampled_from([2, 3]))
    axis = draw(st.sampled_from([None, 0, 1, -1]))
    dims = draw(st.sampled_from([(4, 6), (5, 7), (7, 6), (4, 4), (2, 3)]))
    sides = []
    for _ in range(2):
        opset = draw(st.sampled_from([11, 12, 13, 17, 18, 21]))
        kind = draw(
            st.sampled_from(
                ["sizes", "equal", "num_outputs"] if opset >= 18 else ["sizes", "equal"]
            )
        )
        if kind == "sizes":
            split = draw(st.lists(st.integers(0, 6), min_size=outputs, max_size=outputs))
            sides.append(_split(opset, split, axis, outputs=outputs, dims=dims))
        elif kind == "num_outputs":
            sides.append(_split(opset, None, axis, outputs, outputs, dims))
        else:
            sides.append(_split(opset, None, axis, outputs=outputs, dims=dims))
    return sides


@budget.fuzz(200, database=None)
@given(_split_pairs(), st.integers(0, 2**32 - 1))
def test_every_split_pair_taken_by_the_schemas_gives_the_same_bits(pair, seed):
    """The same for Split across 13 (split moved to an input) and 18 (num_outputs)."""
    # (both doors of the prover take only models the full check passes)
    if all(map(_valid, pair)):
        _judge_if_taken(pair, seed, _assert_same_bits, _assert_same_bits_in_onnxruntime)


def _valid(model) -> bool:
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
        return False
    return True


# Scatter and Gather by index across their versions: ScatterND and ScatterElements added
# `reduction` at 16 (more of it at 18), GatherND `batch_dims` at 12; each version's
# default is what the one before does. Data (2, 3, 4); indices that repeat (where
# ScatterND's order is the spec's to leave open: both sides run the same), negative ones
# (ScatterElements and GatherElements take them from 11 on), and the last element.
_INDEXED = {
    "ScatterND": ((2, 1), (2, 3, 4), [[1], [1], [0], [-1]]),
    "ScatterElements": ((2, 3, 4), (2, 3, 4), None),
    "GatherND": ((2, 2), None, [[0, 1], [1, -1], [1, 2], [0, 0]]),
    "GatherElements": ((2, 3, 4), None, None),
}
_ADDED = {"reduction": (16, ["none", "add", "mul"], 18, ["max", "min"]), "batch_dims": (12, [0, 1])}
_HAS = {"reduction": ("ScatterND", "ScatterElements"), "batch_dims": ("GatherND",)}


def _indexed(op: str, opset: int, attrs: dict, indices: np.ndarray) -> onnx.ModelProto:
    """A one-node `op` at `opset` on data x (2, 3, 4), constant `indices`, and for a
    Scatter updates u as a graph input."""
    _, update_shape, _ = _INDEXED[op]
    inputs = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, (2, 3, 4))]
    names = ["x", "i"]
    if update_shape is not None:
        shape = indices.shape if op == "ScatterElements" else update_shape
        inputs.append(helper.make_tensor_value_info("u", onnx.TensorProto.FLOAT, shape))
        names.append("u")
    node = helper.make_node(op, names, ["y"], **attrs)
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    constant = onnx.numpy_helper.from_array(indices, "i")
    graph = helper.make_graph([node], "g", inputs, [out], [constant])
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=min_ir_version(opset)
    )


@st.composite
def _indexed_pairs(draw):
    op = draw(st.sampled_from(sorted(_INDEXED)))
    index_shape, _, rows = _INDEXED[op]
    if rows is not None:
        picked = draw(st.lists(st.sampled_from(rows), min_size=2, max_size=2))
        indices = np.array(picked, np.int64).reshape(index_shape)
        if op == "GatherND" and draw(st.booleans()):  # batch_dims=1: one index per row
            indices = np.array([picked[0][:1], picked[1][:1]], np.int64)
    else:
        axis = draw(st.integers(-3, 2))
        shape = [2, 3, 4]
        size = shape[axis]
        indices = np.array(
            draw(st.lists(st.integers(-size, size - 1), min_size=24, max_size=24)), np.int64
        ).reshape(2, 3, 4)  # (onnx.reference takes indices of the data's shape only)
    sides = []
    for _ in range(2):
        opset = draw(st.sampled_from([11, 12, 13, 16, 18]))
        attrs: dict = {}
        if rows is None:
            attrs["axis"] = axis
        for name, (since, values, *later) in _ADDED.items():
            if op not in _HAS[name] or opset < since:
                continue
            choices = values + (later[1] if later and opset >= later[0] else [])
            choice = draw(st.sampled_from([None, *choices]))
            if choice is not None:
                attrs[name] = choice
        sides.append(_indexed(op, opset, attrs, indices))
    return sides


def _assert_same_bits_in_both_runtimes(reference, candidate, rng, both_may_fail=False) -> None:
    """onnx.reference and onnxruntime each run both sides to the same bits, on data and
    updates drawn with ±0, ±inf and NaN (the pairs drawn are valid: an error is a bug,
    unless `both_may_fail` and it is one on both sides: a mode a runtime lacks)."""
    values = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.5], np.float32)
    feeds = {}
    for value in reference.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.choice(values, size=shape).astype(np.float32)
    for run in (_run, _run_in_onnxruntime):
        a, b = (run(model, feeds) for model in (reference, candidate))
        failed = isinstance(a, Exception), isinstance(b, Exception)
        if both_may_fail and failed == (True, True):
            continue
        assert failed == (False, False), (run, a, b)
        assert a.shape == b.shape and a.tobytes() == b.tobytes(), (run, a, b)


@budget.fuzz(150, database=None)
@given(_indexed_pairs(), st.integers(0, 2**32 - 1))
def test_every_scatter_and_gather_pair_taken_by_the_schemas_gives_the_same_bits(pair, seed):
    """ScatterND, ScatterElements, GatherND and GatherElements across their versions: what
    the schemas' argument takes as one function runs to the same bits in onnx.reference
    and in onnxruntime (a reduction or batch_dims other than the old behaviour is not
    taken: test_a_reduction_or_batch_dims_is_left_to_the_solver)."""
    _judge_if_taken(pair, seed, _assert_same_bits_in_both_runtimes)


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("ScatterND", {"reduction": "add"}),
        ("ScatterElements", {"reduction": "max", "axis": 0}),
        ("GatherND", {"batch_dims": 1}),
    ],
)
def test_a_reduction_or_batch_dims_is_left_to_the_solver(op, attrs):
    index_shape, _, rows = _INDEXED[op]
    if op == "GatherND":
        indices = np.array([[0], [1]], np.int64)
    elif rows is not None:
        indices = np.array(rows[:2], np.int64).reshape(index_shape)
    else:
        indices = np.zeros((2, 3, 4), np.int64)
    new = _indexed(op, 18, attrs, indices)
    old = _indexed(
        op, 13 if op != "GatherND" else 11, {"axis": 0} if "axis" in attrs else {}, indices
    )
    assert same_by_schema(old, new) is None
    explicit = dict(attrs, **({"reduction": "none"} if "reduction" in attrs else {"batch_dims": 0}))
    assert same_by_schema(old, _indexed(op, 18, explicit, indices)) is not None


def _transposed(op: str, opset: int, perm, axis, back, shape, dtype=onnx.TensorProto.FLOAT):
    """Transpose(x){perm}, `op`{axis} (left out when None), Transpose{back}: the form the
    adapter writes for a Softmax-like node over another axis than the last below 13."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=list(perm)),
        helper.make_node(op, ["t"], ["s"], **({} if axis is None else {"axis": axis})),
        helper.make_node("Transpose", ["s"], ["y"], perm=list(back)),
    ]
    x = helper.make_tensor_value_info("x", dtype, shape)
    out = helper.make_tensor_value_info("y", dtype, None)
    graph = helper.make_graph(nodes, "g", [x], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


@st.composite
def _transposed_pairs(draw):
    """A Softmax-like node over an axis of a rank 2..4 input against the Transpose form
    at an opset on either side of 13: a permutation drawn (its last entry the axis most
    often), the middle node's axis last or not, and a second Transpose that undoes the
    first, or another one; float, double or float16."""
    op = draw(st.sampled_from(sorted(COERCED_TO_2D)))
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank)))
    dtype = draw(
        st.sampled_from([onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16])
    )
    axis = draw(st.integers(-rank, rank - 1))
    perm = draw(st.permutations(range(rank)))
    if draw(st.booleans()):  # the adapter's kind: the axis moved last, the rest in order
        rest = [k for k in range(rank) if k != axis % rank]
        perm = [*rest, axis % rank]
    inverse = list(np.argsort(perm).tolist())
    back = inverse if draw(st.integers(0, 3)) else draw(st.permutations(range(rank)))
    middle_axis = draw(st.sampled_from([-1, rank - 1, None, 0, 1]))
    reference = _coerced(op, draw(st.sampled_from([13, 17, 21])), axis, shape, dtype)
    candidate = _transposed(
        op, draw(st.sampled_from([11, 12, 13])), perm, middle_axis, back, shape, dtype
    )
    return [reference, candidate] if draw(st.booleans()) else [candidate, reference]


@budget.fuzz(200, database=None)
@given(_transposed_pairs(), st.integers(0, 2**32 - 1))
def test_every_transposed_softmax_taken_by_the_schemas_gives_the_same_bits(pair, seed):
    """The Transpose form of a Softmax-like node below 13, against the node at 13 and
    later: whatever the argument takes runs to the same bits in onnxruntime."""
    _judge_if_taken(pair, seed, _assert_same_bits_in_onnxruntime)


def test_the_adapters_transpose_form_is_the_softmax_it_replaced():
    reference = _coerced("Softmax", 13, 1, (2, 3, 4, 5))
    candidate = _transposed("Softmax", 11, [0, 2, 3, 1], 3, [0, 3, 1, 2], (2, 3, 4, 5))
    assumption = same_by_schema(reference, candidate)
    assert assumption is not None and "axis 1 alone" in assumption
    assert _assert_same_bits_in_onnxruntime(reference, candidate, np.random.default_rng(0))
    wrong_back = _transposed("Softmax", 11, [0, 2, 3, 1], 3, [0, 2, 3, 1], (2, 3, 4, 5))
    other_axis = _transposed("Softmax", 11, [0, 2, 3, 1], 2, [0, 3, 1, 2], (2, 3, 4, 5))
    half = _transposed("Softmax", 11, [0, 2, 3, 1], 3, [0, 3, 1, 2], (2, 3, 4, 5))
    half.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.FLOAT16
    for not_it in (wrong_back, other_axis, half):
        assert same_by_schema(reference, not_it) is None


def _resize(opset: int, attrs: dict, scales=None, sizes=None, empty_roi=False):
    """A one-node Resize of float x (1, 1, 3, 4) by constant `scales` or `sizes`: below 13
    the roi and scales it does not use are given as empty tensors (as the adapter writes
    them), from 13 left out, or with `empty_roi` given empty all the same."""
    names, constants = ["x"], []

    def constant(name, array):
        constants.append(onnx.numpy_helper.from_array(array, name))
        return name

    empty = np.zeros((0,), np.float32)
    names.append(constant("roi", empty) if opset < 13 or empty_roi else "")
    if scales is not None:
        names.append(constant("scales", np.array(scales, np.float32)))
    else:
        names.append(constant("no_scales", empty) if opset < 13 else "")
        names.append(constant("sizes", np.array(sizes, np.int64)))
    node = helper.make_node("Resize", names, ["y"], **attrs)
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, (1, 1, 3, 4))
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "g", [x], [out], constants)
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=min_ir_version(opset)
    )


@st.composite
def _resize_pairs(draw):
    """Two Resizes by the same scales or sizes, each at 11, 13, 18 or 19, with a mode, a
    coordinate transformation and a nearest mode drawn (some only one version has), and
    from 18 antialias and keep_aspect_ratio_policy absent, at their default or not."""
    by_sizes = draw(st.booleans())
    scales = None if by_sizes else [1.0, 1.0, draw(st.sampled_from([0.5, 1.5, 2.0])), 2.0]
    sizes = [1, 1, draw(st.sampled_from([2, 5, 6])), 3] if by_sizes else None
    mode = draw(st.sampled_from(["nearest", "linear", "cubic"]))
    sides = []
    for _ in range(2):
        opset = draw(st.sampled_from([11, 13, 18, 19]))
        attrs = {"mode": mode}
        transforms = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]
        transforms += ["tf_crop_and_resize"]  # (an empty roi an error, a left-out one not)
        transforms += ["tf_half_pixel_for_nn"] * (opset < 13)
        attrs["coordinate_transformation_mode"] = draw(st.sampled_from(transforms))
        if mode == "nearest":
            attrs["nearest_mode"] = draw(st.sampled_from(["round_prefer_floor", "floor"]))
        if opset >= 18:
            for name, values in (
                ("antialias", [0, 1]),
                ("keep_aspect_ratio_policy", ["stretch", "not_larger"]),
            ):
                if draw(st.booleans()):
                    attrs[name] = draw(st.sampled_from(values))
        sides.append(_resize(opset, attrs, scales, sizes, empty_roi=draw(st.booleans())))
    return sides


@budget.fuzz(150, database=None)
@given(_resize_pairs(), st.integers(0, 2**32 - 1))
def test_every_resize_pair_taken_by_the_schemas_gives_the_same_bits(pair, seed):
    """Resize across 11, 13, 18 and 19 (roi and scales optional from 13, antialias,
    axes and keep_aspect_ratio_policy from 18): what the argument takes runs to the same
    bits in onnx.reference and onnxruntime."""
    judge = functools.partial(_assert_same_bits_in_both_runtimes, both_may_fail=True)
    _judge_if_taken(pair, seed, judge)


def test_dynamos_resize_18_is_the_resize_13_it_converts_to():
    """fcn's and deeplabv3's upsampling as dynamo writes it (antialias=0 and
    keep_aspect_ratio_policy='stretch' explicit) and as the adapter writes it at 13 and
    at 11 (empty roi and scales)."""
    attrs = {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}
    dynamo = _resize(
        18, dict(attrs, antialias=0, keep_aspect_ratio_policy="stretch"), sizes=[1, 1, 6, 8]
    )
    for opset in (13, 11):
        assert same_by_schema(dynamo, _resize(opset, attrs, sizes=[1, 1, 6, 8])) is not None
    assert (
        same_by_schema(dynamo, _resize(13, dict(attrs, mode="nearest"), sizes=[1, 1, 6, 8])) is None
    )
    smoothed = _resize(18, dict(attrs, antialias=1), sizes=[1, 1, 6, 8])
    assert same_by_schema(smoothed, _resize(13, attrs, sizes=[1, 1, 6, 8])) is None


def _roi_align(opset: int, attrs: dict) -> onnx.ModelProto:
    """A one-node RoiAlign of float x (1, 2, 6, 6), rois (3, 4) and batch indices as graph
    inputs (the rois drawn by the judge: inside, across and outside the map)."""
    node = helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], **attrs)
    inputs = [
        helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, (1, 2, 6, 6)),
        helper.make_tensor_value_info("rois", onnx.TensorProto.FLOAT, (3, 4)),
        helper.make_tensor_value_info("batch", onnx.TensorProto.INT64, (3,)),
    ]
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "g", inputs, [out])
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=min_ir_version(opset)
    )


@st.composite
def _roi_align_pairs(draw):
    """Two RoiAligns, each at 10, 13, 16 or 21, with mode, sizes, sampling ratio and
    scale drawn once, and from 16 coordinate_transformation_mode absent (half_pixel
    there, output_half_pixel at 10) or either value."""
    shared = {
        "mode": draw(st.sampled_from(["avg", "max"])),
        "output_height": draw(st.integers(1, 3)),
        "output_width": draw(st.integers(1, 3)),
        "sampling_ratio": draw(st.integers(0, 2)),
        "spatial_scale": draw(st.sampled_from([1.0, 0.5])),
    }
    sides = []
    for _ in range(2):
        opset = draw(st.sampled_from([10, 13, 16, 21]))
        attrs = dict(shared)
        if opset >= 16 and draw(st.booleans()):
            attrs["coordinate_transformation_mode"] = draw(
                st.sampled_from(["half_pixel", "output_half_pixel"])
            )
        sides.append(_roi_align(opset, attrs))
    return sides


def _assert_roi_align_same_bits(reference, candidate, rng) -> None:
    feeds = {
        "x": rng.standard_normal((1, 2, 6, 6)).astype(np.float32),
        "rois": np.array([[0, 0, 5, 5], [1.5, 0.5, 3.25, 4], [-1, 2, 8, 7]], np.float32),
        "batch": np.zeros(3, np.int64),
    }
    # onnxruntime only: onnx.reference has one RoiAlign for both versions, which reads an
    # absent mode at 10 as 16's half_pixel (10 is output_half_pixel: onnx.defs, and
    # onnxruntime's kernel of 10)
    a, b = (_run_in_onnxruntime(model, feeds) for model in (reference, candidate))
    assert not isinstance(a, Exception) and not isinstance(b, Exception), (a, b)
    assert a.shape == b.shape and a.tobytes() == b.tobytes(), (a, b)


@budget.fuzz(100, database=None)
@given(_roi_align_pairs(), st.integers(0, 2**32 - 1))
def test_every_roi_align_pair_taken_by_the_schemas_gives_the_same_bits(pair, seed):
    """RoiAlign across 10 and 16, whose coordinate_transformation_mode is absent at 10 as
    output_half_pixel and defaults to half_pixel at 16: what the argument takes runs to
    the same bits in onnxruntime."""
    _judge_if_taken(pair, seed, _assert_roi_align_same_bits)


def test_torchvisions_roi_align_16_is_roi_align_10_without_its_mode():
    """fasterrcnn's box head as TorchScript writes it at 17 (output_half_pixel, what 10
    does), and the same with half_pixel (16's default), which 10 cannot say."""
    attrs = {"output_height": 7, "output_width": 7, "sampling_ratio": 2, "spatial_scale": 0.03125}
    old = _roi_align(10, attrs)
    exported = _roi_align(16, dict(attrs, coordinate_transformation_mode="output_half_pixel"))
    assert same_by_schema(exported, old) is not None
    assert same_by_schema(_roi_align(16, attrs), old) is None  # half_pixel by default


def _changed_absent_values():
    """(op, attribute, version, version) of every op the argument reads, where the
    attribute left out means another thing at the two versions (onnx.defs, through
    changed_defaults.absent_value)."""
    from maxlower.prove.canonical import SCHEMA_ONLY_OPS, SINCE, SINCE_OF
    from passes.graph_utils import op_versions
    from passes.version.changed_defaults import NOT_APPLICABLE, UNSAID, absent_value

    found = []
    for op in sorted(SCHEMA_ONLY_OPS | COERCED_TO_2D):
        versions = [v for v in op_versions(op) if v >= SINCE_OF.get(op, SINCE)]
        names = {n for v in versions for n in onnx.defs.get_schema(op, v, "").attributes}
        for name in sorted(names):
            for low, high in itertools.combinations(versions, 2):
                a, b = absent_value(op, name, low), absent_value(op, name, high)
                if UNSAID not in (a, b) and NOT_APPLICABLE not in (a, b) and a != b:
                    found.append((op, name, low, high))
    return found


def test_an_attribute_left_out_of_both_is_read_at_each_version():
    """Every attribute whose absent meaning changed between two versions of an op the
    argument reads (Softmax's axis at 13, RoiAlign's mode at 16) is told apart when both
    nodes leave it out."""
    from maxlower.prove.canonical import Form, _same_when_left_out

    changed = _changed_absent_values()
    assert ("RoiAlign", "coordinate_transformation_mode", 10, 16) in changed
    for op, name, low, high in changed:
        forms = [Form(op, version, ("x",), ("y",), {}) for version in (low, high)]
        assert not _same_when_left_out(*forms, name), (op, name, low, high)


def _unranked(op: str, opset: int, axes) -> onnx.ModelProto:
    """`op` over constant `axes` (as its version spells them) of an input of unknown rank."""
    model = _reduce(op, opset, axes, shape=None)
    del model.graph.output[0].type.tensor_type.shape.dim[:]
    model.graph.output[0].type.tensor_type.ClearField("shape")
    return model


@st.composite
def _unranked_pairs(draw):
    """A reduction, Squeeze or Unsqueeze over axes drawn from -2..4 (in range of some
    ranks, out of it for others) or none, each side at an opset across 13 and 18 (a
    reduction at 18 with noop_with_empty_axes=1 sometimes), on an input whose rank
    inference does not know."""
    op = draw(st.sampled_from(["ReduceMax", "ReduceSum", "Squeeze", "Unsqueeze"]))
    axes = draw(st.one_of(st.none(), st.lists(st.integers(-2, 4), min_size=1, max_size=2)))
    sides = [_unranked(op, draw(st.sampled_from([11, 13, 18])), axes) for _ in range(2)]
    for side in sides:  # (18's noop_with_empty_axes: what a reduction without axes does)
        node = side.graph.node[0]
        if op.startswith("Reduce") and side.opset_import[0].version >= 18 and draw(st.booleans()):
            node.attribute.append(helper.make_attribute("noop_with_empty_axes", 1))
    return sides


def _assert_same_at_every_rank(reference, candidate, rng) -> None:
    """Both sides, on inputs of rank 1 to 4 (some dims 1, for Squeeze), give the same
    bits in onnx.reference and onnxruntime, or an error on both."""
    for shape in [(3,), (1, 2), (2, 1, 3), (1, 2, 1, 3)]:
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        for run in (_run, _run_in_onnxruntime):
            a, b = (run(model, feeds) for model in (reference, candidate))
            if isinstance(a, Exception) or isinstance(b, Exception):
                assert isinstance(a, Exception) and isinstance(b, Exception), (shape, run, a, b)
                continue
            assert a.shape == b.shape and a.tobytes() == b.tobytes(), (shape, run, a, b)


@budget.fuzz(150, database=None)
@given(_unranked_pairs(), st.integers(0, 2**32 - 1))
def test_every_pair_of_unknown_rank_taken_by_the_schemas_gives_the_same_bits(pair, seed):
    """Axes of an input of unknown rank (vit_b_16's Unsqueeze after a Reshape to a shape
    computed at run time): what the argument takes means one thing at every rank."""
    _judge_if_taken(pair, seed, _assert_same_at_every_rank)
