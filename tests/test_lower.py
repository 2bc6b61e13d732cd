"""maxlower.lower and LegalizePass: kinds of input and output, the input left untouched, the
report, `modified` exactly right, idempotence, subgraphs and functions, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx.reference
import onnx_ir as ir
import pytest

import maxlower
from maxlower.api import convert_and_lower, lower, lower_with_report
from maxlower.profiles import ProfileError, load_profile
from maxlower.runtime import bit_equal
from passes import ConversionError
from passes.legalize import LegalizePass
from tests.test_lower_conformance import FAMILY, all_op_types

ROOT = Path(__file__).resolve().parents[1]
NESTED = ROOT / "examples" / "models" / "nested_opset18.onnx"

MODEL = onnx.parser.parse_model("""
<ir_version: 9, opset_import: ["" : 13]>
g (float[3,5] x, float[3,5] y, float[5] z) => (float[3,5] out, int64[3] am, float[3,1] rm) {
  out = Max(x, y, z)
  am = ArgMax <axis = 1, keepdims = 0, select_last_index = 1> (x)
  rm = ReduceMax <axes = [1]> (x)
}""")


def feeds(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, (3, 5)).astype(np.float32)
    x[0, 1] = x[0, 3] = np.nan
    x[1, 2] = -np.inf
    return {
        "x": x,
        "y": rng.integers(-2, 3, (3, 5)).astype(np.float32),
        "z": np.array([np.nan, 1, -0.0, 3, -np.inf], np.float32),
    }


def reference(model: onnx.ModelProto, inputs) -> list:
    return onnx.reference.ReferenceEvaluator(model).run(None, inputs)


@pytest.mark.parametrize("profile", ["primitives", "no-argmax", "webnn", "tensorrt"])
def test_lowering_is_exact_on_nan_inf_and_ties(profile):
    lowered = lower(MODEL, profile)
    for seed in range(3):
        for e, a in zip(reference(MODEL, feeds(seed)), reference(lowered, feeds(seed))):
            assert bit_equal(e, a)


def test_proto_in_proto_out_and_the_input_is_untouched():
    before = MODEL.SerializeToString()
    lowered = lower(MODEL, "primitives")
    assert isinstance(lowered, onnx.ModelProto)
    assert MODEL.SerializeToString() == before
    ir_model = ir.serde.deserialize_model(MODEL)
    ir_lowered = lower(ir_model, "primitives")
    assert isinstance(ir_lowered, ir.Model) and ir_lowered is not ir_model
    assert {n.op_type for n in ir_model.graph} == {"Max", "ArgMax", "ReduceMax"}


def test_report_names_each_lowered_node_and_its_steps():
    lowerings = lower_with_report(MODEL, "primitives")[1].lowerings
    assert [(x.op_type, x.where) for x in lowerings] == [
        ("Max", "main graph"),
        ("ArgMax", "main graph"),
        ("ReduceMax", "main graph"),
    ]
    assert lowerings[0].rejection == "Max is absent"
    # float Max without either family: the binary chain of select forms (no Min for the
    # negated form, which needs a backend with Min)
    assert lowerings[0].steps == ("max_nary_to_binary_chain", "max_binary_to_select")
    assert lowerings[1].steps[0] == "arg_max_to_reduce_max"
    assert all(x.nodes_after > 1 for x in lowerings)


def test_modified_is_exact_and_lowering_twice_changes_nothing():
    model = ir.serde.deserialize_model(MODEL)
    assert LegalizePass(load_profile("tensorrt"))(model).modified is False
    assert LegalizePass(load_profile("primitives"))(model).modified is True
    again = LegalizePass(load_profile("primitives"))(model)
    assert again.modified is False
    lowerings = lower_with_report(lower(MODEL, "webnn"), "webnn")[1].lowerings
    assert lowerings == []


def test_subgraphs_and_functions_are_lowered():
    model = onnx.load(NESTED)
    lowered, report = lower_with_report(model, "primitives")
    lowerings = report.lowerings
    assert not FAMILY & all_op_types(lowered)
    wheres = sorted(x.where for x in lowerings)
    assert wheres == [
        "function example.local::LastArgMax",
        "main graph > If 'pick' > else_branch",  # the ReduceMin: primitives has no Min family
        "main graph > If 'pick' > then_branch",
    ]
    x = np.array([[1, 3, 3, 0, -1], [np.nan, 2, 2, np.nan, 0]], np.float32)
    for pick in (True, False):
        inputs = {"x": x, "pick_max": np.array(pick)}
        for e, a in zip(reference(model, inputs), reference(lowered, inputs)):
            assert bit_equal(e, a)


def test_convert_and_lower_in_one_step():
    lowered, report = convert_and_lower(MODEL, 11, "webnn")
    rewrites, lowerings = report.rewrites, report.lowerings
    assert {o.domain: o.version for o in lowered.opset_import}[""] == 11
    assert rewrites and lowerings == []  # select_last_index is gone at 11 already
    assert "select_last_index" not in str(lowered)


def test_a_profile_file_of_your_own(tmp_path):
    path = tmp_path / "binary_max.toml"
    path.write_text('description = "binary Max only"\n[ops.Max]\nmax_inputs = 2\n')
    lowered, report = lower_with_report(MODEL, path)
    lowerings = report.lowerings
    assert [x.op_type for x in lowerings] == ["Max"]
    assert sorted(n.op_type for n in lowered.graph.node).count("Max") == 2


def test_errors():
    with pytest.raises(ProfileError, match="no profile named"):
        lower(MODEL, "nope")
    bad = onnx.parser.parse_model("""
<ir_version: 9, opset_import: ["" : 13]>
g (float[3] x) => (float[3] y) { y = NoSuchOp(x) }""")
    with pytest.raises(maxlower.InvalidModelError, match=r"not valid ONNX"):
        lower(bad, "primitives")
    below_9 = maxlower.convert(MODEL, 8)
    with pytest.raises(ConversionError, match="To make it possible: a profile that accepts"):
        lower(below_9, "primitives")


@pytest.mark.parametrize("opset", [7])
def test_stacked_float_max_propagates_nan_in_onnxruntime(opset):
    """onnxruntime has no double Max-6 kernel and opset 7 has no Where: the double Max
    becomes a stacked ReduceMax, whose NaN result ONNX leaves open; the NaN term restores
    Max's NaN, in onnxruntime itself."""
    from maxlower.runtime import run_model

    model = onnx.parser.parse_model(f"""<ir_version: 3, opset_import: ["" : {opset}]>
        g (double[5] a, double[5] b) => (double[5] out) {{ out = Max (a, b) }}""")
    lowered = maxlower.lower(model, "onnxruntime")
    assert "ReduceMax" in {n.op_type for n in lowered.graph.node}
    a = np.array([np.nan, 1.0, -np.inf, np.inf, -0.0])
    b = np.array([2.0, np.nan, -np.inf, np.nan, 0.0])
    outputs, runner = run_model(lowered, {"a": a, "b": b})
    assert runner == "onnxruntime"
    expected = np.array([np.nan, np.nan, -np.inf, np.nan, 0.0])
    np.testing.assert_array_equal(outputs[0], expected)
