"""Property tests: every decomposition against the op it replaces, over dtypes, shapes (0-size
included), axes and attributes, on values full of ties, extremes, ±inf, -0.0 and NaN.

1. One random family node, one random decomposition of its op applied to it directly: the
   result is refused with a clear ConversionError, or passes the full checker and gives
   bit-identical outputs in onnx.reference (the semantics the design note fixes: NaN
   propagates through ReduceMax, ArgMax returns the first NaN; ReduceMin and ArgMin alike).
   Nodes of both families are drawn, so every Min twin is checked as its Max one is.
2. The same nodes lowered with a random profile: every node left is accepted by the profile,
   and the outputs are bit-identical.

Budget: EXAMPLES cases per test in the slow tier, a small share in the default tier
(tests/budget.py).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.reference
import onnx_ir as ir
import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st
from onnx import TensorProto, helper

from maxlower.api import lower
from maxlower.profiles import load_profile, shipped_profiles
from maxlower.runtime import bit_equal
from passes import ConversionError
from passes.decompose import DECOMPOSITIONS
from passes.extremum import FAMILIES, FAMILY_OPS
from passes.legalize import apply_decomposition
from tests import budget

LATEST = onnx.defs.onnx_opset_version()
EXAMPLES = 150

FLOATS = [TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE]
INTS = [
    TensorProto.INT8,
    TensorProto.INT16,
    TensorProto.INT32,
    TensorProto.INT64,
    TensorProto.UINT8,
    TensorProto.UINT16,
    TensorProto.UINT32,
    TensorProto.UINT64,
]


def allowed_types(op: str, opset: int) -> list[int]:
    """Element types the op's schema takes at `opset` (bfloat16 left out: no runner here)."""
    schema = onnx.defs.get_schema(op, opset, "")
    allowed = next(c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == "T")
    return [t for t in [*FLOATS, *INTS, TensorProto.BOOL] if f"tensor({_type_name(t)})" in allowed]


def _type_name(t: int) -> str:
    name = TensorProto.DataType.Name(t).lower()
    return {"float": "float", "double": "double"}.get(name, name)


def values(draw, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Few distinct values (many ties) from the type's extremes and small numbers."""
    if dtype == np.bool_:
        pool = [False, True]
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        pool = [info.min, info.max, 0, 1, 2, info.max - 1, info.min + 1]
        if info.bits >= 32:
            pool += [2**24 + 1, 2**24]
    else:
        pool = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 65504.0]
    chosen = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique_by=repr))
    size = int(np.prod(shape))
    picks = draw(st.lists(st.integers(0, len(chosen) - 1), min_size=size, max_size=size))
    return np.array([chosen[i] for i in picks], dtype=dtype).reshape(shape)


@st.composite
def family_models(draw):
    """(model, feeds): one Max / ReduceMax / ArgMax node or a Min twin at a random opset."""
    family = draw(st.sampled_from(FAMILIES))
    op = getattr(family, draw(st.sampled_from(["elementwise", "reduce", "arg"])))
    opset = draw(st.integers(11, LATEST))
    elem = draw(st.sampled_from(allowed_types(op, opset)))
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    inputs, initializers, feeds, attributes = [], [], {}, {}
    names = ["x"]
    if op == family.elementwise:
        count = draw(st.integers(1, 3))
        names = [f"x{i}" for i in range(count)]
        shapes = [shape]
        for _ in range(count - 1):  # numpy-broadcastable partners: drop leading dims, 1s
            tail = list(shape[draw(st.integers(0, rank - 1)) :])
            shapes.append(tuple(1 if draw(st.booleans()) else d for d in tail))
        for name, s in zip(names, shapes):
            inputs.append(helper.make_tensor_value_info(name, elem, s))
            feeds[name] = values(draw, dtype, s)
        out_shape = np.broadcast_shapes(*shapes)
        output = helper.make_tensor_value_info("out", elem, out_shape)
    else:
        inputs.append(helper.make_tensor_value_info("x", elem, shape))
        feeds["x"] = values(draw, dtype, shape)
        keepdims = draw(st.integers(0, 1))
        attributes["keepdims"] = keepdims
        if op == family.arg:
            axis = draw(st.integers(-rank, rank - 1))
            if shape[axis] == 0:  # ArgMax/ArgMin over an empty axis is an error in the spec
                shape = tuple(d if i != axis % rank else 2 for i, d in enumerate(shape))
                inputs[0] = helper.make_tensor_value_info("x", elem, shape)
                feeds["x"] = values(draw, dtype, shape)
            attributes["axis"] = axis
            if opset >= 12:
                attributes["select_last_index"] = draw(st.integers(0, 1))
            output = helper.make_tensor_value_info("out", TensorProto.INT64, None)
        else:
            axes = draw(
                st.lists(st.integers(-rank, rank - 1), max_size=rank, unique_by=lambda a: a % rank)
            )
            if opset >= 18:
                if draw(st.booleans()):
                    attributes["noop_with_empty_axes"] = draw(st.integers(0, 1))
                how = draw(st.sampled_from(["absent", "initializer", "runtime"]))
                if how != "absent" or axes:
                    names.append("axes")
                    axes_array = np.array(axes, dtype=np.int64)
                    if how == "runtime":
                        inputs.append(
                            helper.make_tensor_value_info("axes", TensorProto.INT64, [len(axes)])
                        )
                        feeds["axes"] = axes_array
                    else:
                        initializers.append(onnx.numpy_helper.from_array(axes_array, "axes"))
            elif axes:
                attributes["axes"] = axes
            output = helper.make_tensor_value_info("out", elem, None)
    node = helper.make_node(op, names, ["out"], name="family", **attributes)
    graph = helper.make_graph([node], "g", inputs, [output], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model)
    if not model.graph.output[0].type.tensor_type.HasField("shape"):
        # The rank depends on run-time axes, and a graph output needs one: output the
        # values flattened, and the shape.
        elem = model.graph.output[0].type.tensor_type.elem_type
        graph = model.graph
        graph.initializer.append(onnx.numpy_helper.from_array(np.array([-1]), "flat_shape"))
        graph.node.extend(
            [
                helper.make_node("Reshape", ["out", "flat_shape"], ["flat"]),
                helper.make_node("Shape", ["out"], ["out_shape"]),
            ]
        )
        del graph.output[:]
        graph.output.extend(
            [
                helper.make_tensor_value_info("flat", elem, ["n"]),
                helper.make_tensor_value_info("out_shape", TensorProto.INT64, ["r"]),
            ]
        )
    return model, feeds


def reference(model: onnx.ModelProto, feeds) -> list:
    return onnx.reference.ReferenceEvaluator(model).run(None, feeds)


@budget.fuzz(EXAMPLES)
@given(case=family_models(), data=st.data())
def test_decomposition_equals_the_op_it_replaces(case, data):
    model, feeds = case
    note(onnx.printer.to_text(model))
    op = model.graph.node[0].op_type
    decomposition = data.draw(st.sampled_from(DECOMPOSITIONS[op]), label="decomposition")
    rewritten = ir.serde.deserialize_model(model)
    node = next(iter(rewritten.graph))
    opset = rewritten.opset_imports[""]
    try:
        what = apply_decomposition(node, decomposition, opset)
    except ConversionError as error:
        event(f"refused: {decomposition.name}")
        assert "To make it possible:" in str(error) and error.op_type == op
        return
    if what is None:
        event(f"not applicable: {decomposition.name}")
        return
    event(f"applied: {decomposition.name}")
    proto = ir.serde.serialize_model(rewritten)
    onnx.checker.check_model(proto, full_check=True)
    expected, actual = reference(model, feeds), reference(proto, feeds)
    for e, a in zip(expected, actual, strict=True):
        assert bit_equal(e, a), f"{decomposition.name}: {e!r} != {a!r}"


PROFILES = sorted(set(shipped_profiles()) - {"onnxruntime"})


@budget.fuzz(EXAMPLES)
@given(case=family_models(), profile=st.sampled_from(PROFILES))
def test_lowering_leaves_only_accepted_nodes_and_equal_outputs(case, profile):
    model, feeds = case
    note(onnx.printer.to_text(model))
    try:
        lowered = lower(model, profile)
    except ConversionError as error:
        event(f"refused by {profile}")
        assert "To make it possible:" in str(error)
        return
    event(f"lowered for {profile}")
    rules = load_profile(profile)
    lowered_ir = ir.serde.deserialize_model(lowered)
    opset = lowered_ir.opset_imports[""]
    for node in ir.traversal.RecursiveGraphIterator(lowered_ir.graph):
        assert rules.rejection(node, opset) is None, node
    for e, a in zip(reference(model, feeds), reference(lowered, feeds), strict=True):
        assert bit_equal(e, a), f"{profile}: {e!r} != {a!r}"


@pytest.mark.parametrize("op", sorted(FAMILY_OPS))
def test_every_op_has_decompositions(op):
    assert len(DECOMPOSITIONS[op]) >= 4


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_the_min_twins_have_the_max_names_mirrored(family):
    """One set of rewrites serves both families: the same decompositions under mirrored
    names (reduce_max_slice_tree / reduce_min_slice_tree), each applying to its own op."""
    other = next(f for f in FAMILIES if f is not family)

    def generic(name: str, own: str, mirror: str) -> str:
        # the negated forms name the other family too: max_negated_min / min_negated_max
        return name.replace(own, "{f}").replace(f"negated_{mirror}", "negated_{m}")

    names = {
        generic(d.name, family.name, other.name) for op in family.ops for d in DECOMPOSITIONS[op]
    }
    mirrored = {
        generic(d.name, other.name, family.name) for op in other.ops for d in DECOMPOSITIONS[op]
    }
    assert names == mirrored
    for op in family.ops:
        assert all(d.op_type == op for d in DECOMPOSITIONS[op])


@pytest.mark.parametrize(("dtype", "opset"), [("int8", 12), ("uint16", 13)])
def test_arithmetic_max_refuses_types_mul_does_not_take(dtype: str, opset: int):
    """Found by the property test above: Max's a*[a > b] + b*[a <= b] form emitted Mul on
    int8 at opset 12, an invalid model (Mul and Add take int8, int16, uint8 and uint16
    from opset 14). It is refused now, naming the opset that would make it possible."""
    model = onnx.parser.parse_model(
        f'<ir_version: 8, opset_import: ["" : {opset}]>'
        f"g ({dtype}[1] x0, {dtype}[1] x1) => ({dtype}[1] out) {{ out = Max (x0, x1) }}"
    )
    rewritten = ir.serde.deserialize_model(model)
    node = next(iter(rewritten.graph))
    (arithmetic,) = [d for d in DECOMPOSITIONS["Max"] if d.name == "max_binary_to_arithmetic"]
    with pytest.raises(ConversionError) as caught:
        apply_decomposition(node, arithmetic, opset)
    assert "Mul" in caught.value.reason and caught.value.remedy == "target opset 14 or later"
    lowered = lower(model, "primitives")  # another exact form is still found
    onnx.checker.check_model(lowered, full_check=True)
    assert "Max" not in {n.op_type for n in lowered.graph.node}


def test_stacked_form_refuses_a_type_its_reduce_does_not_take():
    """Found by the property test above (class: a form emits an op on a type that op's
    schema at the target does not take): the stacked form of int16 Max at opset 12 emitted
    ReduceMax on int16, which no ReduceMax takes, and the model failed the full checker.
    The builder now checks every emitted node's input types against its schema, so the
    form is refused, and lowering still finds another exact form."""
    model = onnx.parser.parse_model(
        '<ir_version: 7, opset_import: ["" : 12]>'
        "g (int16[3] x0, int16[3] x1) => (int16[3] out) { out = Max (x0, x1) }"
    )
    node = next(iter(ir.serde.deserialize_model(model).graph))
    (stacked,) = [d for d in DECOMPOSITIONS["Max"] if d.name == "max_stack_and_reduce"]
    with pytest.raises(ConversionError) as caught:
        apply_decomposition(node, stacked, 12)
    assert "ReduceMax on INT16" in caught.value.reason
    assert caught.value.remedy == "another type than INT16"
    lowered = lower(model, "primitives")
    onnx.checker.check_model(lowered, full_check=True)
