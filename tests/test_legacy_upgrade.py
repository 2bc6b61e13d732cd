"""Legacy upgrades (passes/version/legacy.py, issue 29): models at opsets 1 to 6 with
`consumed_inputs`, `broadcast`/`axis`, `is_test`, Reshape-1's `shape` and Concat-1 without
`axis`, brought to opset 7 and later exactly, or refused.

The golden cases are tests/golden/version_legacy.onnxtxt (tests/test_golden.py holds their
text, validity and refusals). onnxruntime has no kernels below opset 7, so here each
converted case runs in onnxruntime and is compared, bit for bit, against the legacy op's
result as the spec states it: for `broadcast=1` with `axis`, the spec's own words ("the
starting of the mutually equal shape is specified by the argument axis"), element by
element; else onnx.reference on the legacy model where it runs that opset, else
onnx.version_converter's result (whose adapters for these ops only relabel).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.version_converter
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import maxlower
from maxlower.runtime import bit_equal, run_model
from passes import ConversionError
from tests.golden import GOLDEN_DIR, canonical_text, load_cases, random_feeds

CASES = [
    pytest.param(case, id=case.name)
    for case in load_cases(GOLDEN_DIR / "version_legacy.onnxtxt")
    if not case.error
]
_BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}


def _spec_broadcast(op: str, a: np.ndarray, b: np.ndarray, axis: int) -> np.ndarray:
    """Add-1 .. Div-6 with broadcast=1: B's dims are A's dims from `axis` on, so each
    element of A meets B at the same indices from there (the spec's words, element by
    element; nothing here is numpy's broadcasting)."""
    out = np.empty_like(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        for index in np.ndindex(*a.shape):
            out[index] = _BINARY[op](a[index], b[index[axis : axis + b.ndim]])
    return out


def _legacy_outputs(source: onnx.ModelProto, target: int, feeds: dict) -> tuple[list, str]:
    node = source.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if attrs.get("broadcast") == 1 and "axis" in attrs:
        a, b = (feeds[name] for name in node.input)
        return [_spec_broadcast(node.op_type, a, b, attrs["axis"])], "the spec"
    try:
        return ReferenceEvaluator(source).run(None, feeds), "onnx.reference"
    except Exception:  # no kernel of that version (Relu-1, BatchNormalization-1, ...)
        converted = onnx.version_converter.convert_version(source, target)
        return run_model(converted, feeds)[0], "onnx.version_converter"


@pytest.mark.parametrize("case", CASES)
def test_legacy_case_is_bit_exact(case):
    source = case.source_model()
    converted = maxlower.convert(source, case.target)
    onnx.checker.check_model(converted, full_check=True)
    for seed in range(3):
        feeds = random_feeds(source, case.feeds, seed=seed)
        expected, by = _legacy_outputs(source, case.target, feeds)
        actual, runtime = run_model(converted, feeds)
        assert runtime == "onnxruntime"
        for e, a in zip(expected, actual, strict=True):
            assert bit_equal(e, a), f"seed {seed}, against {by}: {e!r} != {a!r}"


@pytest.mark.parametrize("case", CASES)
def test_converting_again_changes_nothing(case):
    converted = maxlower.convert(case.source_model(), case.target)
    again = maxlower.convert(converted, case.target)
    assert canonical_text(again) == canonical_text(converted)


def _broadcast_model(op: str, a_shape, b_shape, dtype: int, opset: int, **attrs) -> onnx.ModelProto:
    """`op`(a, b); `b_shape` None: b is Reshape(b_data, b_dims) with b_dims' length not
    known, so b's rank is unknown (a graph input must have a shape)."""
    nodes = [helper.make_node(op, ["a", "b"], ["y"], name="legacy_binary", **attrs)]
    inputs = [helper.make_tensor_value_info("a", dtype, a_shape)]
    if b_shape is None:
        nodes.insert(0, helper.make_node("Reshape", ["b_data", "b_dims"], ["b"]))
        inputs.append(helper.make_tensor_value_info("b_data", dtype, ("n",)))
        inputs.append(helper.make_tensor_value_info("b_dims", TensorProto.INT64, ("r",)))
    else:
        inputs.append(helper.make_tensor_value_info("b", dtype, b_shape))
    outputs = [helper.make_tensor_value_info("y", dtype, a_shape)]
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(
        graph, opset_imports=[helper.make_operatorsetid("", opset)], ir_version=3
    )


# (A's shape, B's shape, axis): the spec's own examples with an axis, and one more of each
_AXES = [((2, 3, 4, 5), (3, 4), 1), ((2, 3, 4, 5), (2,), 0), ((2, 3, 4), (3,), 1)]
_DTYPES = [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, TensorProto.INT64]


@pytest.mark.parametrize("op", sorted(_BINARY))
@pytest.mark.parametrize("dtype", _DTYPES, ids=TensorProto.DataType.Name)
@pytest.mark.parametrize(("a_shape", "b_shape", "axis"), _AXES)
@pytest.mark.parametrize("target", [7, 13, 14])
def test_broadcast_axis_is_the_spec(op, dtype, a_shape, b_shape, axis, target):
    """Op-6 on every type it takes, B lined up with A from `axis`, each target spelling
    of Unsqueeze (an attribute before 13, an input from 13): equal to the spec's result."""
    model = _broadcast_model(op, a_shape, b_shape, dtype, 6, broadcast=1, axis=axis)
    onnx.checker.check_model(model, full_check=True)
    converted = maxlower.convert(model, target)
    onnx.checker.check_model(converted, full_check=True)
    assert [n.op_type for n in converted.graph.node] == ["Unsqueeze", op]
    np_type = helper.tensor_dtype_to_np_dtype(dtype)
    rng = np.random.default_rng(0)
    a = rng.integers(1, 50, a_shape) if np_type.kind == "i" else rng.random(a_shape) + 0.5
    b = rng.integers(1, 50, b_shape) if np_type.kind == "i" else rng.random(b_shape) + 0.5
    a, b = a.astype(np_type), b.astype(np_type)
    if op == "Div" and np_type.kind == "i":
        expected = np.empty_like(a)  # integer Div truncates (onnxruntime), as C does
        for index in np.ndindex(*a.shape):
            expected[index] = int(a[index] / b[index[axis : axis + b.ndim]])
    else:
        expected = _spec_broadcast(op, a, b, axis)
    (actual,), _ = run_model(converted, {"a": a, "b": b})
    assert bit_equal(expected, actual)


def test_broadcast_with_axis_and_unknown_rank_is_refused():
    """Where B's dims start depends on both ranks: without them no Unsqueeze says it."""
    model = _broadcast_model("Add", (2, 3, 4), None, TensorProto.FLOAT, 6, broadcast=1, axis=1)
    with pytest.raises(ConversionError) as info:
        maxlower.convert(model, 13)
    message = str(info.value)
    assert message.startswith("node 'legacy_binary' (Add): broadcast=1 with axis=1")
    assert "the rank of 'b' is unknown" in message
    assert "To make it possible: known ranks for 'b' (value_info), or a target opset below 7" in (
        message
    )
    assert "\n" not in message


def test_broadcast_without_axis_needs_no_rank():
    """Suffix matching is numpy's trailing alignment whatever the ranks: converted."""
    model = _broadcast_model("Mul", (2, 3, 4), None, TensorProto.FLOAT, 6, broadcast=1)
    converted = maxlower.convert(model, 13)
    _, node = converted.graph.node
    assert node.op_type == "Mul" and not node.attribute
    a = np.random.default_rng(1).random((2, 3, 4)).astype(np.float32)
    b = np.random.default_rng(2).random((3, 4)).astype(np.float32)
    feeds = {"a": a, "b_data": b.reshape(-1), "b_dims": np.array([3, 4], dtype=np.int64)}
    (actual,), _ = run_model(converted, feeds)
    assert bit_equal(_spec_broadcast("Mul", a, b, 1), actual)


def test_is_test_with_extra_outputs_read_is_refused():
    """Test mode defines Y alone: a BatchNormalization-6 whose mean output is read has no
    exact form at 7 and later."""
    inputs = ["x", "s", "bias", "mean", "var"]
    outputs = ["y", "m", "v", "saved_m", "saved_v"]  # BatchNormalization-6 gives 1 or 5
    node = helper.make_node("BatchNormalization", inputs, outputs, name="bn", is_test=1)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 3, 4))]
        + [helper.make_tensor_value_info(n, TensorProto.FLOAT, (3,)) for n in inputs[1:]],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, (2, 3, 4)),
            helper.make_tensor_value_info("m", TensorProto.FLOAT, (3,)),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 6)])
    with pytest.raises(ConversionError, match=r"node 'bn' \(BatchNormalization\): is_test=1"):
        maxlower.convert(model, 9)


def test_report_says_what_was_said():
    """Each legacy step is reported as adapted, with what it did, not as a relabel."""
    case = next(c.values[0] for c in CASES if c.values[0].name == "add_broadcast_axis_1_to_13")
    _, report = maxlower.convert_with_report(case.source_model(), case.target)
    assert "adapted" in report.counts() and "relabelled" not in report.counts()
    assert "the second input unsqueezed by 1 trailing dims" in "\n".join(report.lines())
