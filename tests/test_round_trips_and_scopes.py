"""Round trips through old opsets, and nodes that live in subgraphs and functions."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import onnx_ir as ir
import pytest

import maxlower
from maxlower.runtime import bit_equal, run_model
from passes import ConversionError, ConvertFamilyPass
from passes.extremum import FAMILY_OF, FAMILY_OPS
from passes.version.registry import ADAPTERS, kept_as_is, schema_versions
from tests.conformance import both_families_cases


@pytest.mark.parametrize(("low", "high"), [(13, 18), (7, 13)])
@pytest.mark.parametrize("case", both_families_cases(), ids=lambda c: c.name)
def test_round_trip_keeps_outputs(case, low, high):
    start = maxlower.convert(case.model, high)
    there = maxlower.convert(start, low)
    back = maxlower.convert(there, high)
    onnx.checker.check_model(back, full_check=True)
    inputs, expected = case.data_sets[0]
    for model in (start, there, back):
        feeds = {v.name: x for v, x in zip(model.graph.input, inputs)}
        outputs, _ = run_model(model, feeds)
        assert all(bit_equal(e, a) for e, a in zip(expected, outputs, strict=True))


def test_every_neighbouring_version_pair_has_an_adapter_both_ways():
    for op in sorted(FAMILY_OPS):
        versions = schema_versions(op)
        assert versions[0] == 1
        for low, high in itertools.pairwise(versions):
            assert (op, low, high) in ADAPTERS, (op, low, high)
            assert (op, high, low) in ADAPTERS, (op, high, low)
    assert len(ADAPTERS) == 2 * 2 * (4 + 5 + 3)  # both ways, both families


TYPE_ONLY_STEPS = [key for key, adapter in ADAPTERS.items() if getattr(adapter, "type_only", 0)]


def _data_types(op_type: str, version: int) -> list[str]:
    schema = onnx.defs.get_schema(op_type, version, "")
    return sorted(
        next(c for c in schema.type_constraints if c.type_param_str == "T").allowed_type_strs
    )


def _one_node_model(op_type: str, version: int, type_str: str) -> ir.Model:
    """One family node at schema version `version` on [2, 3] data of `type_str`."""
    elem = getattr(onnx.TensorProto, type_str[len("tensor(") : -1].upper())
    data = onnx.helper.make_tensor_value_info("x", elem, [2, 3])
    other = onnx.helper.make_tensor_value_info("z", elem, [2, 3])
    inits, attrs, inputs, out_elem = [], {}, ["x"], elem
    if op_type == FAMILY_OF[op_type].elementwise:
        inputs.append("z")
    elif op_type == FAMILY_OF[op_type].arg:
        attrs, out_elem = {"axis": 1}, onnx.TensorProto.INT64
    elif version >= 18:
        inits, inputs = (
            [onnx.numpy_helper.from_array(np.array([1], np.int64), "axes")],
            ["x", "axes"],
        )
    else:
        attrs = {"axes": [1]}
    node = onnx.helper.make_node(op_type, inputs, ["y"], name="n", **attrs)
    graph = onnx.helper.make_graph(
        [node],
        "g",
        [data, other] if op_type == FAMILY_OF[op_type].elementwise else [data],
        [onnx.helper.make_tensor_value_info("y", out_elem, None)],
        inits,
    )
    return ir.serde.deserialize_model(
        onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", version)])
    )


@pytest.mark.parametrize("step", TYPE_ONLY_STEPS, ids=lambda k: f"{k[0]}-{k[1]}-{k[2]}")
def test_a_type_only_step_keeps_every_node_whose_types_it_admits(step):
    """The sparse command-line path leaves the nodes `kept_as_is` admits in protobuf; this
    is the claim it relies on, checked on every type the source schema admits: where
    `kept_as_is` says yes, ConvertFamilyPass leaves the node as it was."""
    op_type, source, target = step
    assert len(TYPE_ONLY_STEPS) >= 24  # unchanged steps, bfloat16, bool, int8/uint8, integers
    family = FAMILY_OF[op_type]
    verdicts = {}
    for type_str in _data_types(op_type, source):
        model = _one_node_model(op_type, source, type_str)
        (node,) = model.graph
        types = [
            type_str if i < (2 if op_type == family.elementwise else 1) else "tensor(int64)"
            for i in range(len(node.inputs))
        ]
        outputs = ["tensor(int64)" if op_type == family.arg else type_str]
        verdicts[type_str] = kept_as_is(op_type, source, target, types, outputs)
        if not verdicts[type_str]:
            continue
        before = ir.serde.serialize_node(node).SerializeToString()
        assert ConvertFamilyPass(target)(model).rewrites == [], (step, type_str)
        assert [ir.serde.serialize_node(n).SerializeToString() for n in model.graph] == [before]
    # kept exactly when the destination schema admits the type (the step only added types)
    dropped = set(_data_types(op_type, source)) - set(_data_types(op_type, target))
    assert {t for t, kept in verdicts.items() if not kept} == dropped


SUBGRAPH_MODEL = """
<ir_version: 9, opset_import: ["" : 18]>
g (float[2,3,4] x, bool cond, int64 trips) => (float[2,4] from_if, float[2,1,4] from_loop) {
  from_if = If (cond) <
    then_branch = then_g () => (float[2,4] t) {
      axes = Constant <value_ints = [1]> ()
      t = ReduceMax <keepdims = 0> (x, axes)
    },
    else_branch = else_g () => (float[2,4] e) {
      axes = Constant <value_ints = [-2]> ()
      e = ReduceMax <keepdims = 0> (x, axes)
    }
  >
  init = Identity (x)
  final, from_loop = Loop (trips, cond, init) <
    body = loop_g (int64 i, bool c_in, float[2,3,4] acc) => (bool c_out, float[2,3,4] acc_out,
                                                            float[2,1,4] scan) {
      c_out = Identity (c_in)
      acc_out = Identity (acc)
      scan = ReduceMax <keepdims = 1> (acc, outer_axes)
    }
  >
}
"""


def _with_outer_axes(text: str) -> onnx.ModelProto:
    """The Loop body reads `outer_axes`, an initializer of the main graph (outer scope)."""
    model = onnx.parser.parse_model(text)
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array([1]), "outer_axes"))
    # A Loop's scan output gains a leading iteration axis.
    model.graph.output[1].type.tensor_type.shape.dim.insert(0, onnx.TensorShapeProto.Dimension())
    return model


@pytest.mark.parametrize("cond", [True, False])
def test_reduce_max_in_if_and_loop_converts_to_11(cond):
    model = _with_outer_axes(SUBGRAPH_MODEL)
    onnx.checker.check_model(model, full_check=True)
    converted = maxlower.convert(model, 11)
    onnx.checker.check_model(converted, full_check=True)
    text = onnx.printer.to_text(converted)
    assert "ReduceMax <keepdims: int = 0, axes: ints = [1]>" in text
    assert "ReduceMax <keepdims: int = 1, axes: ints = [1]>" in text
    rng = np.random.default_rng(0)
    feeds = {
        "x": rng.integers(-3, 3, size=(2, 3, 4)).astype(np.float32),
        "cond": np.array(cond),
        "trips": np.array(3),
    }
    expected, runner_a = run_model(model, feeds)
    actual, runner_b = run_model(converted, feeds)
    assert runner_a == runner_b == "onnxruntime"
    assert all(bit_equal(e, a) for e, a in zip(expected, actual, strict=True))


FUNCTION_MODEL = """
<ir_version: 9, opset_import: ["" : 13, "local" : 1]>
g (float[3,5] x) => (int64[3] y) {
  y = local.last_argmax (x)
}
<domain: "local", opset_import: ["" : 13]>
last_argmax (data) => (index) {
  index = ArgMax <axis = 1, keepdims = 0, select_last_index = 1> (data)
}
"""


def test_function_with_select_last_index_converts_to_11_and_stays():
    model = onnx.parser.parse_model(FUNCTION_MODEL)
    onnx.checker.check_model(model, full_check=True)
    converted = maxlower.convert(model, 11)
    onnx.checker.check_model(converted, full_check=True)
    assert [f.name for f in converted.functions] == ["last_argmax"]
    function = converted.functions[0]
    assert {o.domain: o.version for o in function.opset_import}[""] == 11
    assert all(a.name != "select_last_index" for n in function.node for a in n.attribute)
    x = np.array([[1, 3, 3, 0, 3], [2, 2, 2, 2, 2], [0, 1, 4, 4, -1]], dtype=np.float32)
    expected, _ = run_model(model, {"x": x})
    actual, runner = run_model(converted, {"x": x})
    assert runner == "onnxruntime"
    np.testing.assert_array_equal(expected[0], [4, 4, 3])
    assert bit_equal(expected[0], actual[0])


def test_library_accepts_and_returns_onnx_ir_models():
    model = ir.serde.deserialize_model(onnx.parser.parse_model(FUNCTION_MODEL))
    converted = maxlower.convert(model, 11)
    assert isinstance(converted, ir.Model)
    assert converted.opset_imports[""] == 11
    assert model.opset_imports[""] == 13, "the input model is left as it was"


def test_out_of_range_axes_are_refused_not_passed_on():
    """The API refuses such a model as invalid input; the pass itself refuses it too, for
    pipelines that skip the input check."""
    model = ir.from_onnx_text("""
        <ir_version: 6, opset_import: ["" : 11]>
        g (float[2,3] data) => (float[2,3,1] out) {
          out = ReduceMax <axes = [-3], keepdims = 1> (data)
        }""")
    with pytest.raises(ConversionError, match="out of range for rank 2"):
        ConvertFamilyPass(10)(model)
    with pytest.raises(maxlower.InvalidModelError, match=r"not valid ONNX"):
        maxlower.convert(model, 10)


SCAN_AND_CUSTOM_MODEL = """
<ir_version: 9, opset_import: ["" : 18, "custom.domain" : 1]>
g (float[4,3,5] xs) => (float[3] last, float[4,3] rows, float[4,3,5] kept) {
  zero = Constant <value = float[3] {0, 0, 0}> ()
  last, rows = Scan (zero, xs) <num_scan_inputs = 1, body = scan_g (float[3] carry,
                                                                   float[3,5] x)
                                                        => (float[3] carry_out, float[3] row) {
      axes = Constant <value_ints = [-1]> ()
      row = ReduceMax <keepdims = 0> (x, axes)
      carry_out = Max (carry, row)
  }>
  kept = custom.domain.Opaque (xs)
}
"""


def test_scan_body_converts_and_custom_domain_nodes_stay():
    model = onnx.parser.parse_model(SCAN_AND_CUSTOM_MODEL)
    converted, report = maxlower.convert_with_report(model, 13)
    assert [r.where for r in report.rewrites] == ["main graph > Scan '<unnamed Scan>' > body"]
    assert {o.domain: o.version for o in converted.opset_import} == {"": 13, "custom.domain": 1}
    opaque = [n for n in converted.graph.node if n.domain == "custom.domain"]
    assert len(opaque) == 1 and opaque[0].op_type == "Opaque"
    body = next(a.g for n in converted.graph.node for a in n.attribute if a.name == "body")
    reduce_node = next(n for n in body.node if n.op_type == "ReduceMax")
    assert [(a.name, list(a.ints)) for a in reduce_node.attribute if a.name == "axes"] == [
        ("axes", [-1])
    ]


def _function_model(main_inputs: str, calls: str, body: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(f"""
        <ir_version: 9, opset_import: ["" : 13, "local" : 1]>
        g ({main_inputs}) => (int8[3,5] y) {{
          {calls}
        }}
        <domain: "local", opset_import: ["" : 13]>
        f (data) => (out) {{
          {body}
        }}""")


def test_function_types_come_from_call_sites():
    """An int8 Max inside a function goes below 12 through float32: the function's input
    type is only known from the call."""
    model = _function_model("int8[3,5] x", "y = local.f (x)", "out = Max (data, data)")
    converted = maxlower.convert(model, 11)
    assert [n.op_type for n in converted.functions[0].node] == ["Cast", "Cast", "Max", "Cast"]
    x = np.arange(-7, 8, dtype=np.int8).reshape(3, 5)
    expected, _ = run_model(model, {"x": x})
    actual, runner = run_model(converted, {"x": x})
    assert runner == "onnxruntime" and bit_equal(expected[0], actual[0])


def test_function_called_with_different_types_is_refused_not_guessed():
    model = _function_model(
        "int8[3,5] x, float[3,5] z",
        "y = local.f (x)\n          unused = local.f (z)",
        "out = Max (data, data)",
    )
    with pytest.raises(ConversionError, match="element type of 'data' is unknown"):
        maxlower.convert(model, 11)
