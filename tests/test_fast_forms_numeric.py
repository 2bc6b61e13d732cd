"""The fast forms (passes/decompose/log_depth.py, runtime_axes_if.py) in onnxruntime against
onnx.reference on the original node: axes of length 0, 1, 2, odd and even, NaN anywhere, -0.0
against +0.0, ties and the type's extremes, every value of keepdims and of run-time axes."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from maxlower.runtime import bit_equal, onnxruntime_session
from passes.decompose import BY_NAME
from passes.legalize import apply_decomposition
from tests import tiers

TYPES = {
    "float32": (TensorProto.FLOAT, np.float32),
    "float16": (TensorProto.FLOAT16, np.float16),
    "float64": (TensorProto.DOUBLE, np.float64),
    "int32": (TensorProto.INT32, np.int32),
    "int64": (TensorProto.INT64, np.int64),
    "int8": (TensorProto.INT8, np.int8),
    "uint8": (TensorProto.UINT8, np.uint8),
    "bool": (TensorProto.BOOL, np.bool_),
}


def reduce_max_model(shape, dtype: int, keepdims: int, axes=None, noop=0, opset=20):
    """ReduceMax with constant `axes`, or run-time axes (an input) when `axes` is None."""
    x = helper.make_tensor_value_info("x", dtype, shape)
    inputs, initializers = [x], []
    if axes is None:
        inputs.append(helper.make_tensor_value_info("axes", TensorProto.INT64, ["K"]))
    else:
        initializers.append(onnx.numpy_helper.from_array(np.array(axes, dtype=np.int64), "axes"))
    node = helper.make_node(
        "ReduceMax", ["x", "axes"], ["out"], keepdims=keepdims, noop_with_empty_axes=noop
    )
    rank = len(shape) if keepdims else None if axes is None else len(shape) - len(axes)
    out = helper.make_tensor_value_info("out", dtype, None if rank is None else [None] * rank)
    graph = helper.make_graph([node], "g", inputs, [out], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


def decomposed(model: onnx.ModelProto, form: str, opset: int) -> onnx.ModelProto:
    graph = ir.serde.deserialize_model(model)
    assert apply_decomposition(next(iter(graph.graph)), BY_NAME[form], opset)
    return ir.serde.serialize_model(graph)


def special_arrays(shape, np_type, seed: int) -> list[np.ndarray]:
    """Random data, ties (few distinct values), the extremes, and for floats NaN and ±0."""
    rng = np.random.default_rng(seed)
    if np_type == np.bool_:
        return [rng.integers(0, 2, size=shape).astype(bool), np.zeros(shape, dtype=bool)]
    if np.issubdtype(np_type, np.integer):
        info = np.iinfo(np_type)
        extremes = rng.choice([info.min, info.max, 0], size=shape).astype(np_type)
        return [rng.integers(info.min, info.max, size=shape, dtype=np_type), extremes]
    ties = rng.integers(-2, 2, size=shape).astype(np_type)
    zeros = rng.choice([0.0, -0.0], size=shape).astype(np_type)
    nan = rng.standard_normal(shape).astype(np_type)
    if nan.size:
        nan.flat[rng.integers(0, nan.size, size=max(1, nan.size // 5))] = np.nan
    infs = rng.choice([np.inf, -np.inf, 1.0], size=shape).astype(np_type)
    return [ties, zeros, nan, infs]


def assert_same(model, lowered, feeds, native_reductions: bool = False):
    """onnx.reference on the original against onnxruntime on the lowered model. Where the
    lowered model keeps native ReduceMax nodes and the data holds NaN, onnxruntime's result
    depends on where the NaN sits (design note 5), so there onnx.reference runs both."""
    expected = ReferenceEvaluator(model).run(None, feeds)
    runs = [ReferenceEvaluator(lowered).run(None, feeds)]
    if not (native_reductions and np.isnan(feeds["x"].astype(np.float64)).any()):
        runs.append(onnxruntime_session(lowered).run(None, feeds))
    for actual in runs:
        for e, a in zip(expected, actual, strict=True):
            assert bit_equal(e, a), f"{feeds}: expected {e!r}, got {a!r}"


# Every (axis, keepdims, type); the default tier runs each type at one (axis, keepdims),
# taking each in turn, the slow tier the rest.
AXIS_KEEPDIMS = [(0, 0), (0, 1), (-1, 0), (-1, 1)]
HALVING_LOOPS = [
    pytest.param(
        axis,
        keepdims,
        type_name,
        id=f"{axis}-{keepdims}-{type_name}",
        marks=() if AXIS_KEEPDIMS[t % 4] == (axis, keepdims) else tiers.slow,
    )
    for axis, keepdims in AXIS_KEEPDIMS
    for t, type_name in enumerate(TYPES)
]


@pytest.mark.parametrize(("axis", "keepdims", "type_name"), HALVING_LOOPS)
def test_halving_loop(type_name, keepdims, axis):
    dtype, np_type = TYPES[type_name]
    shape = [3, "N"] if axis == -1 else ["N", 2]
    model = reduce_max_model(shape, dtype, keepdims, axes=[axis])
    lowered = decomposed(model, "reduce_max_halving_loop", 20)
    onnx.checker.check_model(lowered, full_check=True)
    for length, seed in itertools.product([0, 1, 2, 3, 5, 8, 13], range(2)):
        concrete = [length if d == "N" else d for d in shape]
        for x in special_arrays(concrete, np_type, seed):
            assert_same(model, lowered, {"x": x})


@pytest.mark.parametrize("opset", [10, 13])
def test_halving_loop_at_older_opsets(opset):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "N"])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, [2])
    node = helper.make_node("ReduceMax", ["x"], ["out"], axes=[1], keepdims=0)
    graph = helper.make_graph([node], "g", [x], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    lowered = decomposed(model, "reduce_max_halving_loop", opset)
    onnx.checker.check_model(lowered, full_check=True)
    for length in (0, 1, 6, 7):
        for x in special_arrays([2, length], np.float32, length):
            assert_same(model, lowered, {"x": x})


def test_halving_loop_leaves_static_lengths_to_the_slice_tree():
    model = reduce_max_model([2, 5], TensorProto.FLOAT, 0, axes=[1])
    graph = ir.serde.deserialize_model(model)
    assert (
        apply_decomposition(next(iter(graph.graph)), BY_NAME["reduce_max_halving_loop"], 20) is None
    )


RUNTIME_AXES = [[], [0], [1], [2], [-1], [0, 2], [2, -3], [0, 1, 2]]


# Every (keepdims, noop, type, form); the default tier runs each form and type at one
# (keepdims, noop), taking each in turn, the slow tier the rest.
KEEPDIMS_NOOP = [(0, 0), (1, 0), (0, 1), (1, 1)]
RUNTIME_AXES_FORMS = ["reduce_max_runtime_axes_if", "reduce_max_runtime_axes_subset_if"]
RUNTIME_AXES_TYPES = ["float32", "float16", "int32", "uint8"]
RUNTIME_AXES_CASES = [
    pytest.param(
        keepdims,
        noop,
        type_name,
        form,
        id=f"{keepdims}-{noop}-{type_name}-{form}",
        marks=() if KEEPDIMS_NOOP[(f + t) % 4] == (keepdims, noop) else tiers.slow,
    )
    for keepdims, noop in KEEPDIMS_NOOP
    for t, type_name in enumerate(RUNTIME_AXES_TYPES)
    for f, form in enumerate(RUNTIME_AXES_FORMS)
]


@pytest.mark.parametrize(("keepdims", "noop", "type_name", "form"), RUNTIME_AXES_CASES)
def test_runtime_axes(form, type_name, keepdims, noop):
    dtype, np_type = TYPES[type_name]
    shape = [2, "N", 3]
    model = reduce_max_model(shape, dtype, keepdims, axes=None, noop=noop, opset=18)
    lowered = decomposed(model, form, 18)
    for length, axes in itertools.product([0, 1, 4], RUNTIME_AXES):
        for x in special_arrays([2, length, 3], np_type, length):
            feeds = {"x": x, "axes": np.array(axes, dtype=np.int64)}
            assert_same(model, lowered, feeds, native_reductions=True)


def test_subset_if_refuses_beyond_rank_5_and_the_per_axis_form_does_not():
    model = reduce_max_model([1, 2, 1, 2, 1, 2], TensorProto.FLOAT, 0, axes=None, opset=18)
    graph = ir.serde.deserialize_model(model)
    node = next(iter(graph.graph))
    with pytest.raises(Exception, match="64 leaves"):
        apply_decomposition(node, BY_NAME["reduce_max_runtime_axes_subset_if"], 18)
    lowered = decomposed(model, "reduce_max_runtime_axes_if", 18)
    x = special_arrays([1, 2, 1, 2, 1, 2], np.float32, 0)[2]
    for axes in ([], [1, -1], [0, 1, 2, 3, 4, 5]):
        feeds = {"x": x, "axes": np.array(axes, dtype=np.int64)}
        assert_same(model, lowered, feeds, native_reductions=True)


FLOATS = ["float32", "float16", "float64"]


@pytest.mark.parametrize("type_name", FLOATS)
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("length", [0, 1, 2, 3, 8, 13])
def test_negated_min_tree(type_name, keepdims, length):
    dtype, np_type = TYPES[type_name]
    model = reduce_max_model([3, length], dtype, keepdims, axes=[-1])
    lowered = decomposed(model, "reduce_max_negated_min_tree", 20)
    onnx.checker.check_model(lowered, full_check=True)
    for seed in range(3):
        for x in special_arrays([3, length], np_type, seed):
            assert_same(model, lowered, {"x": x})


@pytest.mark.parametrize("type_name", FLOATS)
@pytest.mark.parametrize("shapes", [[[4, 5], [4, 5]], [[4, 5], [5]], [[2, 1], [1, 3], [2, 3]]])
def test_negated_min_elementwise(type_name, shapes):
    dtype, np_type = TYPES[type_name]
    names = [f"x{k}" for k in range(len(shapes))]
    inputs = [helper.make_tensor_value_info(n, dtype, s) for n, s in zip(names, shapes)]
    out_shape = list(np.broadcast_shapes(*map(tuple, shapes)))
    graph = helper.make_graph(
        [helper.make_node("Max", names, ["out"])],
        "g",
        inputs,
        [helper.make_tensor_value_info("out", dtype, out_shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    lowered = decomposed(model, "max_negated_min", 13)
    onnx.checker.check_model(lowered, full_check=True)
    for seed in range(3):
        arrays = [special_arrays(s, np_type, seed + k) for k, s in enumerate(shapes)]
        for variant in range(len(arrays[0])):
            feeds = {n: a[variant] for n, a in zip(names, arrays)}
            expected = ReferenceEvaluator(model).run(None, feeds)[0]
            actual = onnxruntime_session(lowered).run(None, feeds)[0]
            assert bit_equal(expected, actual), feeds


def test_negated_forms_leave_integers_alone():
    model = reduce_max_model([3, 4], TensorProto.INT32, 0, axes=[1])
    graph = ir.serde.deserialize_model(model)
    node = next(iter(graph.graph))
    assert apply_decomposition(node, BY_NAME["reduce_max_negated_min_tree"], 20) is None


@pytest.mark.parametrize("type_name", ["float32", "int32"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_max_over_a_dynamic_length_for_primitives(type_name, last):
    """ArgMax's comparison form over a run-time length, its ReduceMax the halving Loop: ties
    pick the first (or last) index, NaN the first NaN (onnx.reference)."""
    from maxlower.api import lower_with_report

    dtype, np_type = TYPES[type_name]
    x = helper.make_tensor_value_info("x", dtype, [3, "N"])
    out = helper.make_tensor_value_info("out", TensorProto.INT64, [3])
    node = helper.make_node("ArgMax", ["x"], ["out"], axis=1, keepdims=0, select_last_index=last)
    graph = helper.make_graph([node], "g", [x], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    lowered, report = lower_with_report(model, "primitives")
    assert "reduce_max_halving_loop" in report.lowerings[0].steps
    for length, seed in itertools.product([1, 2, 3, 7, 8], range(2)):
        for data in special_arrays([3, length], np_type, seed):
            expected = ReferenceEvaluator(model).run(None, {"x": data})[0]
            actual = onnxruntime_session(lowered).run(None, {"x": data})[0]
            assert np.array_equal(expected, actual), data
