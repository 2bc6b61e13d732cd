"""Property test: a random node of either family (Max, ReduceMax, ArgMax or a Min twin) at a
random opset, converted to a random opset, gives
bit-identical outputs on inputs full of ties and extremes, or is refused with a clear error.

Budget: EXAMPLES cases in the slow tier, a small share in the default tier (tests/budget.py).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st
from onnx import TensorProto, helper

import maxlower
from maxlower.runtime import bit_equal, run_model
from passes import ConversionError
from passes.extremum import FAMILIES
from tests import budget

LATEST = onnx.defs.onnx_opset_version()
EXAMPLES = 150

# Element types each op accepts from a given opset (design note's table); bfloat16 is left
# out because no runner here computes it.
FLOATS = [TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE]
INTS_12 = [
    TensorProto.INT8,
    TensorProto.INT16,
    TensorProto.INT32,
    TensorProto.INT64,
    TensorProto.UINT8,
    TensorProto.UINT16,
    TensorProto.UINT32,
    TensorProto.UINT64,
]


def allowed_types(role: str, opset: int) -> list[int]:
    """`role`: elementwise, reduce or arg (the schemas of both families agree)."""
    if role == "elementwise":
        return FLOATS + (INTS_12 if opset >= 12 else [])
    if role == "arg":
        return FLOATS + INTS_12
    types = [*FLOATS, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT32, TensorProto.UINT64]
    if opset >= 12:
        types += [TensorProto.INT8, TensorProto.UINT8]
    if opset >= 20:
        types += [TensorProto.BOOL]
    return types


def values(draw, dtype: np.dtype, shape: tuple[int, ...], with_nan: bool) -> np.ndarray:
    """Few distinct values (many ties), drawn from the type's extremes and small numbers."""
    if dtype == np.bool_:
        pool = [False, True]
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        pool = [info.min, info.max, 0, 1, 2, info.max - 1, info.min + 1]
        if info.bits >= 32:
            pool += [2**24 + 1, 2**24]
        if info.bits == 64:
            pool += [2**53 + 1, 2**53, -(2**53) - 1 if info.min < 0 else 2**63 + 1]
    else:
        pool = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, 65504.0] + ([np.nan] if with_nan else [])
    chosen = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique_by=repr))
    picks = draw(
        st.lists(
            st.integers(0, len(chosen) - 1),
            min_size=int(np.prod(shape)),
            max_size=int(np.prod(shape)),
        )
    )
    return np.array([chosen[i] for i in picks], dtype=dtype).reshape(shape)


@st.composite
def family_models(draw):
    family = draw(st.sampled_from(FAMILIES))
    role = draw(st.sampled_from(["elementwise", "reduce", "arg"]))
    op = getattr(family, role)
    opset = draw(st.integers(7, LATEST))
    elem = draw(st.sampled_from(allowed_types(role, opset)))
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    rank = draw(st.integers(1, 3))
    min_dim = 1 if role == "arg" else 0
    shape = tuple(draw(st.lists(st.integers(min_dim, 3), min_size=rank, max_size=rank)))
    feeds, inputs, initializers, attrs = {}, [], [], {}
    node_inputs = ["x"]
    feeds["x"] = values(draw, np.dtype(dtype), shape, with_nan=role == "elementwise")
    inputs.append(helper.make_tensor_value_info("x", elem, shape))
    out_elem = TensorProto.INT64 if role == "arg" else elem
    if role == "elementwise":
        for i in range(draw(st.integers(0, 2))):
            other = shape
            if opset >= 8:  # broadcasting: drop leading dims and/or set dims to 1
                other = tuple(draw(st.sampled_from([d, 1])) for d in shape)
                other = other[draw(st.integers(0, rank)) :]
            name = f"y{i}"
            feeds[name] = values(draw, np.dtype(dtype), other, with_nan=True)
            inputs.append(helper.make_tensor_value_info(name, elem, other))
            node_inputs.append(name)
    elif role == "arg":
        attrs["axis"] = draw(st.integers(-rank if opset >= 11 else 0, rank - 1))
        attrs["keepdims"] = draw(st.integers(0, 1))
        if opset >= 12:
            attrs["select_last_index"] = draw(st.integers(0, 1))
    else:
        attrs["keepdims"] = draw(st.integers(0, 1))
        low = -rank if opset >= 11 else 0
        axes = draw(
            st.lists(st.integers(low, rank - 1), max_size=rank, unique_by=lambda a: a % rank)
        )
        if opset < 18:
            if axes:
                attrs["axes"] = axes
        else:
            if draw(st.booleans()):
                attrs["noop_with_empty_axes"] = draw(st.integers(0, 1))
            how = draw(st.sampled_from(["initializer", "input", "absent"]))
            if how == "initializer":
                initializers.append(
                    helper.make_tensor("axes", TensorProto.INT64, [len(axes)], axes)
                )
                node_inputs.append("axes")
            elif how == "input":
                feeds["axes"] = np.array(axes, dtype=np.int64)
                inputs.append(helper.make_tensor_value_info("axes", TensorProto.INT64, [len(axes)]))
                node_inputs.append("axes")
    node = helper.make_node(op, node_inputs, ["out"], **attrs)
    graph = helper.make_graph(
        [node],
        "fuzz",
        inputs,
        [helper.make_tensor_value_info("out", out_elem, None)],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model = onnx.shape_inference.infer_shapes(model)
    target = draw(st.integers(7, LATEST))
    return model, feeds, target


@budget.fuzz(EXAMPLES)
@given(family_models())
def test_random_conversion_is_exact_or_refused(case):
    model, feeds, target = case
    try:
        onnx.checker.check_model(model, full_check=True)
    except onnx.checker.ValidationError:  # e.g. an output whose shape nothing declares
        assume(False)
    try:
        expected, _ = run_model(model, feeds)
    except Exception:  # neither runner computes the original: nothing to compare against
        event("original runs nowhere")
        return
    try:
        converted = maxlower.convert(model, target)
    except ConversionError as error:
        assert "To make it possible:" in str(error)
        event(f"refused: {error.reason[:60]}")
        return
    except Exception as error:
        raise AssertionError(f"{onnx.printer.to_text(model)}\n-> opset {target}") from error
    try:
        onnx.checker.check_model(converted, full_check=True)
    except onnx.checker.ValidationError as error:
        raise AssertionError(
            f"{onnx.printer.to_text(model)}\n->\n{onnx.printer.to_text(converted)}"
        ) from error
    actual, runner = run_model(converted, feeds)
    event(f"compared in {runner}")
    for e, a in zip(expected, actual, strict=True):
        assert bit_equal(e, a), (
            f"{onnx.printer.to_text(model)}\nfeeds={feeds}\ntarget={target} ({runner})\n"
            f"expected={e!r}\nactual={a!r}"
        )


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_exact_64_bit_max_at_opset_8_on_neighbours_of_large_powers(dtype, family):
    """int64/uint64 Max (Min) below 9 decides near-equal values by their difference: check
    the values float64 cannot tell apart, INT64_MIN included (where -x would wrap)."""
    info = np.iinfo(dtype)
    around = [info.max, info.max - 1, 2**53, 2**53 + 1, 2**62, 2**62 + 1, 0, 1]
    if info.min < 0:
        around += [info.min, info.min + 1, -(2**53), -(2**53) - 1]
    a = np.array(around, dtype=dtype)
    b = np.roll(a, 1)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        [helper.make_node(family.elementwise, ["a", "b"], ["out"])],
        "g",
        [helper.make_tensor_value_info(n, elem, [len(a)]) for n in "ab"],
        [helper.make_tensor_value_info("out", elem, [len(a)])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    converted = maxlower.convert(model, 8)
    actual, _ = run_model(converted, {"a": a, "b": b})
    np.testing.assert_array_equal(actual[0], family.pick(a, b))
    actual, _ = run_model(converted, {"a": b, "b": a})
    np.testing.assert_array_equal(actual[0], family.pick(a, b))
