"""Hypothesis strategies for models that trip name generation and constant-ness (issue 12).

Each draws a FuzzCase (tests/strategies.py) of one class:

    colliding_names_cases    values named like the ones the pipeline generates: the names
                             that converting (and lowering) the model makes, harvested by
                             running it, and the generators' patterns (`<node>__<op><n>`,
                             `..._out`, `<node>__const<n>`), as graph inputs, initializers,
                             initializers that are inputs, or node outputs, each returned
                             through an Identity so that the verifier sees its value
    default_input_cases      ReduceMax-18+ whose axes are an initializer that is also a
                             graph input (IR 4+: a default a caller may override), a plain
                             input, or "" (omitted); Max of an input and a weight with a
                             default
    attribute_reference_cases  a function whose ArgMax or ReduceMax takes axis, axes,
                             keepdims or select_last_index from its call (`@attr`), called
                             up to three times with equal or different values, or with the
                             function's default; sometimes passed on through a second
                             function (`Inner <axis = @axis>`)

tests/test_hostile_graphs.py runs each case through tests/test_fuzz_pipeline.check_case:
convert to the drawn target, lower with the drawn profile, full check, verify, and the
command line and the library agree; an exit-3 refusal must be one well-formed line.
"""

from __future__ import annotations

import dataclasses

import hypothesis.strategies as st
import numpy as np
import onnx
from onnx import helper, numpy_helper

import maxlower
from maxlower.api import lower
from passes.errors import ConversionError
from tests.strategies import LATEST, PROFILES, FuzzCase, accepted_types, fuzz_cases

# What the generators put after a node's name (passes/builder.py Builder.op and .const,
# passes/legalize/scratch.py rename, passes/version/one_node.py splice,
# passes/version/other_adapters.py _follow_output, passes/decompose/reduce_max.py loop).
GENERATED_OPS = (
    "const",
    "cast",
    "equal",
    "greater",
    "where",
    "or",
    "not",
    "isnan",
    "max",
    "reducemax",
    "reducemin",
    "argmax",
    "slice",
    "gather",
    "unsqueeze",
    "squeeze",
    "tile",
    "concat",
    "size",
    "shape",
    "identity",
    "if",
    "loop",
)


def pattern_names(model: onnx.ModelProto, draw) -> list[str]:
    """Names the generators' patterns give for this model's family nodes."""
    bases = {
        node.name or node.op_type
        for nodes in [model.graph.node, *(f.node for f in model.functions)]
        for node in nodes
        if node.op_type in ("Max", "ReduceMax", "ArgMax")
    } or {"ReduceMax"}
    names = []
    for base in sorted(bases):
        op = draw(st.sampled_from(GENERATED_OPS))
        number = draw(st.integers(0, 40))
        names.append(f"{base}__{op}{number}" + draw(st.sampled_from(["", "_out"])))
    return names


def harvested_names(case: FuzzCase) -> list[str]:
    """The names converting (and lowering) the case's model makes, which it does not hold."""
    try:
        result = maxlower.convert(case.model, case.target)
        if case.profile is not None:
            result = lower(result, case.profile)
    except ConversionError:
        return []
    return sorted(_names(result) - _names(case.model))


def _names(model: onnx.ModelProto) -> set[str]:
    names = set()
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        names |= {v.name for v in [*graph.input, *graph.output, *graph.value_info]}
        names |= {t.name for t in graph.initializer}
        for node in graph.node:
            names.update(node.output)
            graphs += [a.g for a in node.attribute if a.HasField("g")]
            graphs += [g for a in node.attribute for g in a.graphs]
    for function in model.functions:
        names |= {o for node in function.node for o in node.output}
    return names - {""}


@st.composite
def colliding_names_cases(draw) -> FuzzCase:
    case = draw(fuzz_cases())
    case = dataclasses.replace(case, via=None)
    taken = _names(case.model) | {n.name for n in case.model.graph.node}
    candidates = [n for n in harvested_names(case) + pattern_names(case.model, draw)]
    candidates = sorted(set(candidates) - taken)
    if not candidates:
        return case
    picked = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=4, unique=True))
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    kinds = ["input", "initializer and input", "node output"]
    if model.ir_version >= 4:
        kinds.append("initializer")
    for i, name in enumerate(picked):
        _add_bystander(model, name, draw(st.sampled_from(kinds)), i)
    onnx.checker.check_model(model, full_check=True)
    return dataclasses.replace(case, model=model)


def _add_bystander(model: onnx.ModelProto, name: str, kind: str, i: int) -> None:
    """A float[3] value called `name`, returned as an output through an Identity."""
    graph = model.graph
    info = helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, [3])
    if kind == "node output":
        source = f"bystander_source{i}"
        graph.input.append(helper.make_tensor_value_info(source, onnx.TensorProto.FLOAT, [3]))
        graph.node.append(helper.make_node("Neg", [source], [name], name=f"bystander_neg{i}"))
    if kind in ("input", "initializer and input"):
        graph.input.append(info)
    if kind in ("initializer", "initializer and input"):
        values = np.array([1.5, -2.0, 7.25], dtype=np.float32) + i
        graph.initializer.append(numpy_helper.from_array(values, name))
    seen = f"bystander_seen{i}"
    graph.node.append(helper.make_node("Identity", [name], [seen], name=f"bystander_id{i}"))
    graph.output.append(helper.make_tensor_value_info(seen, onnx.TensorProto.FLOAT, [3]))


@st.composite
def default_input_cases(draw) -> FuzzCase:
    """ReduceMax-18+ whose axes are a default (an initializer that is also an input), a
    plain input, or "" (omitted); and sometimes Max of an input and a weight with a
    default."""
    opset = draw(st.integers(18, LATEST))
    rank = draw(st.integers(1, 3))
    dims = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    elem = draw(st.sampled_from(_types("ReduceMax", opset)))
    inputs = [helper.make_tensor_value_info("x", elem, dims)]
    initializers, nodes, outputs = [], [], []
    how = draw(st.sampled_from(["default", "default", "empty string", "input"]))
    keepdims = draw(st.sampled_from([0, 1]))
    noop = draw(st.sampled_from([0, 1]))
    attrs = {"keepdims": keepdims, "noop_with_empty_axes": noop}
    if how == "empty string":
        nodes.append(helper.make_node("ReduceMax", ["x", ""], ["y"], name="r", **attrs))
        out_rank = rank if keepdims or noop else 0
    else:
        axes = draw(_axes_lists(-rank, rank))
        inputs.append(helper.make_tensor_value_info("axes", onnx.TensorProto.INT64, [len(axes)]))
        if how == "default":
            tensor = helper.make_tensor("axes", onnx.TensorProto.INT64, [len(axes)], axes)
            initializers.append(tensor)
        nodes.append(helper.make_node("ReduceMax", ["x", "axes"], ["y"], name="r", **attrs))
        out_rank = rank if keepdims else rank - len(axes)
    outputs.append(helper.make_tensor_value_info("y", elem, [None] * out_rank))
    if draw(st.booleans()):  # a weight with a default, read by Max
        numpy_type = helper.tensor_dtype_to_np_dtype(elem)
        weight = (np.arange(int(np.prod(dims))).reshape(dims) - 1).astype(numpy_type)
        initializers.append(numpy_helper.from_array(weight, "w"))
        inputs.append(helper.make_tensor_value_info("w", elem, dims))
        nodes.append(helper.make_node("Max", ["x", "w"], ["m"], name="m"))
        outputs.append(helper.make_tensor_value_info("m", elem, dims))
    graph = helper.make_graph(nodes, "defaults", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return _case(draw, model)


def _axes_lists(low: int, rank: int):
    return st.lists(
        st.integers(low, rank - 1), min_size=1, max_size=rank, unique_by=lambda a: a % rank
    )


def _types(op: str, opset: int) -> list[int]:
    """Element types onnxruntime runs `op` on, among those ONNX admits at `opset` (so that
    the verifier compares most cases)."""
    usual = [onnx.TensorProto.FLOAT, onnx.TensorProto.INT32, onnx.TensorProto.INT64]
    return [t for t in usual if t in accepted_types(op, opset)]


def _case(draw, model: onnx.ModelProto) -> FuzzCase:
    """The model with a target and profile. Targets from opset 7 three times in four:
    hypothesis favours small integers, and below 6 run-time axes have no exact form and
    onnxruntime runs nothing below 7."""
    profile = draw(st.sampled_from([None, *PROFILES]))
    usual = st.integers(7, LATEST)
    target = draw(st.one_of(usual, usual, usual, st.integers(1, LATEST)))
    return FuzzCase(model, target, profile, draw(st.integers(0, 2**16)))


@st.composite
def attribute_reference_cases(draw) -> FuzzCase:
    """A function whose ArgMax or ReduceMax takes attributes from its call (@attr), called
    one to three times, each call giving the first call's values or its own, or leaving
    them to the function's default; sometimes through a second function that passes the
    attributes on (`Inner <axis = @axis>`)."""
    opset = draw(st.integers(7, LATEST))
    op = draw(st.sampled_from(["ArgMax", "ReduceMax"]))
    rank = draw(st.integers(1, 3))
    dims = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    elem = draw(st.sampled_from(_types(op, opset)))
    refs = draw(st.lists(st.sampled_from(_referable(op, opset)), min_size=1, unique=True))
    defaulted = {name for name in refs if draw(st.booleans())}
    first = _attribute_values(draw, op, opset, rank)
    calls, outputs = [], []
    for k in range(draw(st.integers(1, 3))):
        values = (
            first if k == 0 or draw(st.booleans()) else _attribute_values(draw, op, opset, rank)
        )
        given = {n: values[n] for n in refs if n not in defaulted}
        calls.append(
            helper.make_node("F", ["x"], [f"y{k}"], domain="local", name=f"call{k}", **given)
        )
        # The body fixes what it does not refer to; a defaulted one is the first's too.
        effective = {**first, **given}
        dims_out = _out_dims(op, dims, effective)
        elem_out = onnx.TensorProto.INT64 if op == "ArgMax" else elem
        outputs.append(helper.make_tensor_value_info(f"y{k}", elem_out, dims_out))
    body = helper.make_node(
        op, ["X"], ["Y"], name="body", **{n: v for n, v in first.items() if n not in refs}
    )
    body.attribute.extend(_references(refs))
    function = helper.make_function(
        "local",
        "F",
        ["X"],
        ["Y"],
        [body],
        [helper.make_opsetid("", opset)],
        attributes=[n for n in refs if n not in defaulted],
    )
    function.attribute_proto.extend(helper.make_attribute(n, first[n]) for n in sorted(defaulted))
    functions = [function]
    if draw(st.booleans()):  # F calls Inner, passing its attributes on
        inner = onnx.FunctionProto()
        inner.CopyFrom(function)
        inner.name = "Inner"
        del inner.attribute_proto[:]
        del inner.attribute[:]
        inner.attribute.extend(refs)
        passing = helper.make_node("Inner", ["X"], ["Y"], domain="local", name="pass_on")
        passing.attribute.extend(_references(refs))
        del function.node[:]
        function.node.append(passing)
        function.opset_import.append(helper.make_opsetid("local", 1))
        functions.append(inner)
    x = helper.make_tensor_value_info("x", elem, dims)
    graph = helper.make_graph(calls, "references", [x], outputs)
    imports = [helper.make_opsetid("", opset), helper.make_opsetid("local", 1)]
    model = helper.make_model(graph, opset_imports=imports, functions=functions)
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return _case(draw, model)


_ATTRIBUTE_TYPES = {
    "axis": onnx.AttributeProto.INT,
    "keepdims": onnx.AttributeProto.INT,
    "select_last_index": onnx.AttributeProto.INT,
    "axes": onnx.AttributeProto.INTS,
}


def _references(names: list[str]) -> list[onnx.AttributeProto]:
    return [onnx.AttributeProto(name=n, ref_attr_name=n, type=_ATTRIBUTE_TYPES[n]) for n in names]


def _referable(op: str, opset: int) -> list[str]:
    if op == "ArgMax":
        return ["axis", "keepdims"] + (["select_last_index"] if opset >= 12 else [])
    return ["keepdims"] + (["axes"] if opset < 18 else [])


def _attribute_values(draw, op: str, opset: int, rank: int) -> dict:
    low = -rank if opset >= 11 else 0  # negative axes from opset 11
    values = {"keepdims": draw(st.sampled_from([0, 1]))}
    if op == "ArgMax":
        values["axis"] = draw(st.integers(low, rank - 1))
        if opset >= 12:
            values["select_last_index"] = draw(st.sampled_from([0, 1]))
    elif opset < 18:
        values["axes"] = draw(_axes_lists(low, rank))
    return values


def _out_dims(op: str, dims: list[int], values: dict) -> list[int]:
    rank = len(dims)
    if op == "ArgMax":
        reduced = {values["axis"] % rank}
    else:
        reduced = {a % rank for a in values["axes"]} if "axes" in values else set(range(rank))
    if values["keepdims"]:
        return [1 if i in reduced else d for i, d in enumerate(dims)]
    return [d for i, d in enumerate(dims) if i not in reduced]


__all__ = [
    "LATEST",
    "attribute_reference_cases",
    "colliding_names_cases",
    "default_input_cases",
    "harvested_names",
    "pattern_names",
]
