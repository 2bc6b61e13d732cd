"""Red team 2 (G6): a semantics the interpreter had apart from onnx.reference.

- G6: Clip-6 (opsets 6..10) without min/max clamps to the schema's defaults, -/+3.402823e+38
  (onnx.reference and onnxruntime: inf -> 3.4028235e+38); the interpreter took no bound,
  and proved Clip(x) equal to x (and `convert --opset 11 --prove` refuted the exact
  conversion of Clip-6 to Clip-11, whose adapter makes the defaults inputs).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper
from onnx.reference import ReferenceEvaluator

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove import prove
from maxlower.prove.core import COUNTEREXAMPLE, PROVED


def _model(nodes, opset: int, dtype: int, out: int | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", dtype, [2])],
        [helper.make_tensor_value_info("y", out or dtype, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.mark.parametrize("dtype", [TP.FLOAT, TP.DOUBLE])
@pytest.mark.parametrize("opset", [6, 10])
def test_clip_6_without_bounds_clamps_to_the_schemas_defaults(dtype, opset):
    clip = _model([helper.make_node("Clip", ["x"], ["y"])], opset, dtype)
    same = _model([helper.make_node("Identity", ["x"], ["y"])], opset, dtype)
    x = np.array([np.inf, -np.inf], helper.tensor_dtype_to_np_dtype(dtype))
    clipped = ReferenceEvaluator(clip).run(None, {"x": x})[0]
    assert np.isfinite(clipped).all()  # the premise: onnx.reference clamps inf
    report = prove(clip, same, timeout=60)
    assert report.status == COUNTEREXAMPLE, report.summary()
    assert report.counterexample is not None and report.counterexample.reproduced


def test_clip_6_without_bounds_leaves_float16_as_it_is():
    # the defaults overflow float16 to -/+inf (numpy's cast): no clamp there
    clip = _model([helper.make_node("Clip", ["x"], ["y"])], 6, TP.FLOAT16)
    same = _model([helper.make_node("Identity", ["x"], ["y"])], 6, TP.FLOAT16)
    assert prove(clip, same, timeout=60).status == PROVED


def test_clip_6_with_one_bound_keeps_the_others_default():
    clip = _model([helper.make_node("Clip", ["x"], ["y"], min=0.0)], 6, TP.FLOAT)
    relu = _model([helper.make_node("Relu", ["x"], ["y"])], 6, TP.FLOAT)
    assert prove(clip, relu, timeout=60).status == COUNTEREXAMPLE  # +inf -> 3.4e38


def test_convert_prove_proves_clip_6_to_11_with_the_defaults_made_inputs():
    import maxlower

    clip = _model([helper.make_node("Clip", ["x"], ["y"])], 6, TP.FLOAT)
    converted = maxlower.convert(clip, 11, prove=True)  # raised CounterexampleFound before
    x = np.array([np.inf, -np.inf, 1.5], np.float32)
    clip.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 3
    clip.graph.output[0].type.tensor_type.shape.dim[0].dim_value = 3
    for value in (converted.graph.input[0], converted.graph.output[0]):
        value.type.tensor_type.shape.dim[0].dim_value = 3
    expected = ReferenceEvaluator(clip).run(None, {"x": x})[0]
    assert np.array_equal(ReferenceEvaluator(converted).run(None, {"x": x})[0], expected)


@pytest.mark.parametrize("dtype", [TP.INT32, TP.INT64, TP.UINT32, TP.UINT64])
def test_an_integer_to_bfloat16_rounds_as_the_installed_ml_dtypes_does(dtype):
    # G7: ml_dtypes 0.7 rounds once (2^24 + 2^16 + 1 -> 2^24 + 2^17); the interpreter
    # rounded through float32 (-> 2^24) and proved the two casts below equal
    numpy_type = helper.tensor_dtype_to_np_dtype(dtype)
    x = np.array([2**24 + 2**16 + 1, 5], numpy_type)
    direct = _model([helper.make_node("Cast", ["x"], ["y"], to=TP.BFLOAT16)], 19, dtype, 16)
    nodes = [
        helper.make_node("Cast", ["x"], ["f"], to=TP.FLOAT),
        helper.make_node("Cast", ["f"], ["y"], to=TP.BFLOAT16),
    ]
    through = _model(nodes, 19, dtype, TP.BFLOAT16)
    a, b = (ReferenceEvaluator(m).run(None, {"x": x})[0] for m in (direct, through))
    once = not np.array_equal(a.astype(np.float64), b.astype(np.float64))
    report = prove(direct, through, timeout=60)
    if once:  # onnx.reference shows them differ: refuted, reproduced
        assert report.status == COUNTEREXAMPLE, report.summary()
        assert report.counterexample is not None and report.counterexample.reproduced
    else:  # an ml_dtypes that rounds through float32: equal
        assert report.status == PROVED, report.summary()
