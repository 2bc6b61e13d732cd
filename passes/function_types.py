"""InferFunctionTypesPass: types and shapes inside model-local functions, from their calls.

    f(x: float[3,5]) called as f(a) with a: float[3,5]   →  values in f's body get types
    f called once with int32[2] and once with float[2]   →  f's inputs stay untyped

A function's inputs carry no types in ONNX, so the adapters would not know, inside a
function, whether a Max is on integers or an input is bfloat16. This pass takes the element
type and shape that every call site agrees on (dims that differ become unknown), gives them
to the function's inputs, and runs ONNX shape inference over the body to type the rest.
Nothing but value types and shapes changes; calls that disagree leave the function untyped.
"""

from __future__ import annotations

import collections

import onnx
import onnx_ir as ir

from passes.graph_utils import containers


class InferFunctionTypesPass(ir.passes.InPlacePass):
    """Annotate function inputs and body values with the types their call sites imply."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        calls = collections.defaultdict(list)
        for _, container, _ in containers(model):
            for node in ir.traversal.RecursiveGraphIterator(container):
                calls[node.op_identifier()].append(node)
        modified = False
        for key, function in model.functions.items():
            if _type_inputs(function, calls.get(key, [])):
                _infer_body(model, function)
                modified = True
        return ir.passes.PassResult(model, modified)


def _type_inputs(function: ir.Function, sites: list[ir.Node]) -> bool:
    changed = False
    for i, value in enumerate(function.inputs):
        args = [site.inputs[i] if i < len(site.inputs) else None for site in sites]
        if not args or any(a is None or a.dtype is None for a in args):
            continue
        if len({a.dtype for a in args}) != 1 or value.dtype is not None:
            continue
        value.dtype = args[0].dtype
        value.shape = _agreed_shape([a.shape for a in args])
        changed = True
    return changed


def _agreed_shape(shapes: list[ir.Shape | None]) -> ir.Shape | None:
    if any(s is None for s in shapes) or len({len(s) for s in shapes}) != 1:
        return None
    dims = [d[0] if len(set(d)) == 1 else None for d in zip(*[tuple(s) for s in shapes])]
    return ir.Shape(dims)


def _infer_body(model: ir.Model, function: ir.Function) -> None:
    """ONNX shape inference over the body, as a graph whose inputs are the typed inputs."""
    proto = ir.serde.serialize_function(function)
    inputs = [ir.serde.serialize_value(v) for v in function.inputs if v.dtype is not None]
    if len(inputs) != len(function.inputs):  # an untyped input: leave the body as it is
        return
    graph = onnx.helper.make_graph(list(proto.node), "body", inputs, [])
    opsets = [onnx.helper.make_opsetid(d, v) for d, v in proto_opsets(function).items()]
    temp = onnx.helper.make_model(graph, opset_imports=opsets)
    temp.functions.extend(ir.serde.serialize_function(f) for f in model.functions.values())
    try:
        inferred = onnx.shape_inference.infer_shapes(temp, strict_mode=False)
    except Exception:  # inference could not run: the body stays untyped, adapters refuse
        return
    values = ir.convenience.create_value_mapping(function.graph)
    for info in inferred.graph.value_info:
        value = values.get(info.name)
        if value is None or value.dtype is not None:
            continue
        typed = ir.serde.deserialize_value_info_proto(info, None)
        value.dtype, value.shape = typed.dtype, typed.shape


def proto_opsets(function: ir.Function) -> dict[str, int]:
    return dict(function.opset_imports)
