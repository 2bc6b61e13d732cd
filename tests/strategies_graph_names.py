"""Hypothesis strategies for models that trip name generation and constant-ness (issue 12).

Each draws a FuzzCase (tests/strategies.py) from a drawn family model changed one way:

    colliding_names_cases    values named like the ones the pipeline generates: the names
                             that converting (and lowering) the model makes, harvested by
                             running it, and the generators' patterns (`<node>__<op><n>`,
                             `..._out`, `<node>__const<n>`), as graph inputs, initializers,
                             initializers that are inputs, or node outputs, each returned
                             through an Identity so that the verifier sees its value
    default_input_cases      initializers that are also graph inputs (IR 4+: defaults a
                             caller may override), ReduceMax-18 axes among them, and
                             ReduceMax-18 with its axes given as "" (omitted)
    attribute_reference_cases  family nodes in function bodies taking axis, axes, keepdims
                             or select_last_index from the call (`@attr`), the calls giving
                             one value, a default, or (a second call) another value

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
from maxlower.lower import lower
from passes.errors import ConversionError
from passes.graph_utils import graph_protos
from tests.strategies import LATEST, FuzzCase, fuzz_cases

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
    low = draw(st.sampled_from([18, 18, 1]))  # ReduceMax-18 (axes input) most of the time
    case = draw(fuzz_cases(opsets=(low, LATEST)))
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    graph = model.graph
    inputs = {v.name for v in graph.input}
    for tensor in graph.initializer:
        if tensor.name not in inputs and draw(st.booleans() | st.just(True)):
            graph.input.append(
                helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims))
            )
    if _opset(model) >= 18:  # ReduceMax-18 without axes: sometimes spelt with "" (omitted)
        for node in graph.node:
            if node.op_type == "ReduceMax" and len(node.input) == 1 and draw(st.booleans()):
                node.input.append("")
    onnx.checker.check_model(model, full_check=True)
    return dataclasses.replace(case, model=model, via=None)


# Attributes of the family that a function body may take from its call.
_REFERABLE = {
    "ArgMax": ("axis", "keepdims", "select_last_index"),
    "ReduceMax": ("axes", "keepdims"),
}


@st.composite
def attribute_reference_cases(draw) -> FuzzCase:
    case = draw(fuzz_cases(opsets=(7, LATEST)))
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    if not model.functions:
        return dataclasses.replace(case, via=None)
    every_node = [n for graph in graph_protos(model.graph) for n in graph.node]
    for function in model.functions:
        calls = [n for n in every_node if n.op_type == function.name]
        for node in function.node:
            for attribute in list(node.attribute):
                if attribute.name not in _REFERABLE.get(node.op_type, ()):
                    continue
                if not draw(st.booleans() | st.just(True)):
                    continue
                _refer(function, node, attribute, calls, draw)
    _add_second_call(model, draw)
    onnx.checker.check_model(model, full_check=True)
    return dataclasses.replace(case, model=model, via=None)


def _refer(function, node, attribute, calls, draw) -> None:
    """`node`'s attribute read from the call as @<name>: the calls give the value, or the
    function's default does."""
    name = f"{node.op_type.lower()}_{attribute.name}"
    value = helper.get_attribute_value(attribute)
    reference = onnx.AttributeProto(name=attribute.name, ref_attr_name=name, type=attribute.type)
    node.attribute.remove(attribute)
    node.attribute.append(reference)
    if name in function.attribute or any(a.name == name for a in function.attribute_proto):
        return
    if draw(st.booleans()):  # a default in the function, the calls leave it out
        function.attribute_proto.append(helper.make_attribute(name, value))
    else:
        function.attribute.append(name)
        for call in calls:
            call.attribute.append(helper.make_attribute(name, value))


def _add_second_call(model: onnx.ModelProto, draw) -> None:
    """Sometimes a second call of a function, with another value for one attribute that
    keeps the output's rank (axis in its other sign, select_last_index flipped)."""
    calls = [n for n in model.graph.node if n.domain == "fuzz.local" and n.attribute]
    if not calls or not draw(st.booleans()):
        return
    call = draw(st.sampled_from(calls))
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type for v in [*inferred.graph.value_info, *inferred.graph.output]}
    out = call.output[0]
    if out not in types or not types[out].tensor_type.HasField("shape"):
        return
    second = onnx.NodeProto()
    second.CopyFrom(call)
    second.name, second.output[0] = f"{call.name}_again", f"{out}_again"
    for attribute in second.attribute:
        if attribute.name.endswith("select_last_index"):
            attribute.i = 1 - attribute.i
        elif attribute.name.endswith("_axis") and _opset(model) >= 11:  # negative from 11
            rank = _rank_of(call.input[0], inferred)
            if rank:
                attribute.i = attribute.i - rank if attribute.i >= 0 else attribute.i + rank
    model.graph.node.append(second)
    rank = len(types[out].tensor_type.shape.dim)
    elem = types[out].tensor_type.elem_type
    model.graph.output.append(helper.make_tensor_value_info(second.output[0], elem, [None] * rank))


def _opset(model: onnx.ModelProto) -> int:
    """The default-domain opset onnx's checker reads: the last '' entry, else 'ai.onnx'."""
    versions = {o.domain: o.version for o in model.opset_import}
    return versions.get("", versions.get("ai.onnx"))


def _rank_of(name: str, model: onnx.ModelProto) -> int | None:
    for value in [*model.graph.input, *model.graph.value_info]:
        if value.name == name and value.type.tensor_type.HasField("shape"):
            return len(value.type.tensor_type.shape.dim)
    return None


__all__ = [
    "LATEST",
    "attribute_reference_cases",
    "colliding_names_cases",
    "default_input_cases",
    "harvested_names",
    "pattern_names",
]
