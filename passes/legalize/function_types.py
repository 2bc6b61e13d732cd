"""Give the values inside model-local functions the types their call sites imply.

ONNX shape inference types a function's body only while it infers a call, and keeps nothing;
rewrites inside a function (a Max that must become Where(Greater, ...)) need element types.
For each function whose body has untyped values, its body is inferred as a graph whose inputs
have the types of the call sites; the element types found are written onto the body's
values when every typed call site agrees, and the shapes when they agree too.
"""

from __future__ import annotations

import onnx
import onnx_ir as ir


def type_function_bodies(model: ir.Model) -> int:
    """Fill in types inside functions from their call sites; returns how many values."""
    calls: dict[tuple, list[ir.Node]] = {}
    for graph in [*model.graphs(), *(f.graph for f in model.functions.values())]:
        for node in ir.traversal.RecursiveGraphIterator(graph):
            calls.setdefault((node.domain, node.op_type, node.overload), []).append(node)
    typed = 0
    for key, function in model.functions.items():
        untyped = [v for v in _body_values(function) if v.dtype is None]
        sites = [
            tuple((v.dtype, _shape(v)) if v is not None else None for v in call.inputs)
            for call in calls.get(key, [])
        ]
        if not untyped or not sites:
            continue
        if len({tuple(e[0] if e else None for e in site) for site in sites}) != 1:
            continue  # the call sites disagree on element types
        signature = sites[0]
        if any(entry is None or entry[0] is None for entry in signature):
            continue
        inferred = _infer_body(model, function, signature)
        same_shapes = len(set(sites)) == 1
        for value in untyped:
            found = inferred.get(value.name)
            if found is None:
                continue
            value.type = ir.TensorType(found[0])
            if same_shapes and found[1] is not None and value.shape is None:
                value.shape = found[1]
            typed += 1
    return typed


def _body_values(function: ir.Function) -> list[ir.Value]:
    values = {id(v): v for v in function.inputs}
    for node in ir.traversal.RecursiveGraphIterator(function):
        values.update((id(v), v) for v in node.outputs)
    return list(values.values())


def _shape(value: ir.Value) -> tuple | None:
    return None if value.shape is None else tuple(value.shape)


def _infer_body(model: ir.Model, function: ir.Function, signature: tuple) -> dict:
    """{value name: (dtype, shape)} inferred for the body with inputs typed by `signature`."""
    inputs = []
    for value, (dtype, shape) in zip(function.inputs, signature):
        dims = None if shape is None else [d if isinstance(d, int) else str(d) for d in shape]
        inputs.append(onnx.helper.make_tensor_value_info(value.name, dtype.value, dims))
    graph = onnx.helper.make_graph(
        [ir.serde.serialize_node(node) for node in function],
        "function_body",
        inputs,
        [onnx.helper.make_empty_tensor_value_info(v.name) for v in function.outputs],
    )
    opsets = {**model.opset_imports, **function.opset_imports}
    proto = onnx.helper.make_model(
        graph,
        opset_imports=[onnx.helper.make_opsetid(d, v) for d, v in opsets.items()],
        functions=[ir.serde.serialize_function(f) for f in model.functions.values()],
        ir_version=max(model.ir_version, 8),
    )
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=False)
    except Exception:  # attribute references and the like: leave the body as it is
        return {}
    found = {}
    for info in [*inferred.graph.value_info, *inferred.graph.output]:
        tensor = info.type.tensor_type
        if not tensor.elem_type:
            continue
        shape = None
        if tensor.HasField("shape"):
            shape = ir.Shape(
                [
                    d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                    for d in tensor.shape.dim
                ]
            )
        found[info.name] = (ir.DataType(tensor.elem_type), shape)
    return found
