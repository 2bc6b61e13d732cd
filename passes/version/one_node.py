"""A node taken out on its own, converted elsewhere, and put back: the hand-off helpers.

    Unsqueeze-13(x, axes=const), target 11  →  one-node model at 13
                                            →  onnx.version_converter → Unsqueeze-11 {axes}
                                            →  spliced where the node was

`one_node_model` builds a model holding just the node: its constant inputs become
initializers (the converter's adapters read constant axes from there), the others graph
inputs typed as in the big graph, and its outputs typed by ONNX shape inference.
`splice` puts a converted small model's nodes in the node's place, wired to the node's
values; the node's outputs keep their names, and an output that is used must keep its
element type. Inside functions, which have no initializers, constants become Constant nodes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import onnx
import onnx.version_converter
import onnx_ir as ir

from passes.errors import ConversionError
from passes.graph_utils import const_tensor, node_label, remove_if_orphaned

# Prefixes for what replaces an unnamed node (the converter's own names, _v_4, repeat).
_UNNAMED = itertools.count()

# (small model, default-domain opset its nodes are at) → converted in place to the target
ConvertModel = Callable[[ir.Model, int], None]


def one_node_model(node: ir.Node, opset: int) -> onnx.ModelProto:
    inputs, initializers = [], []
    for value in node.inputs:
        if value is None or value.name in {i.name for i in inputs + initializers}:
            continue
        tensor = const_tensor(value)
        if tensor is not None:
            initializers.append(onnx.numpy_helper.from_array(tensor.numpy(), value.name))
        elif value.type is not None:
            inputs.append(ir.serde.serialize_value(value))
        else:
            raise ValueError(f"the type of input {value.name!r} is unknown")
    outputs = [onnx.ValueInfoProto(name=v.name) for v in node.outputs if v.name]
    graph = onnx.helper.make_graph(
        [ir.serde.serialize_node(node)], "one_node", inputs, outputs, initializer=initializers
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
    model.ir_version = max(8, onnx.helper.find_min_ir_version_for(list(model.opset_import)))
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    types = {v.name: v.type for v in inferred.graph.value_info}
    for output in model.graph.output:
        if output.name not in types:
            raise ValueError(f"ONNX shape inference gives no type for {output.name!r}")
        output.type.CopyFrom(types[output.name])
    return model


def delegate_to_version_converter(
    node: ir.Node, source: int, target: int, in_function: bool, convert: ConvertModel
) -> str | None:
    """Convert `node` alone with onnx.version_converter and splice the result in its place.

    When the converter cannot go all the way (it lacks many downward adapters, say
    ReduceMean 13 → 12, where the op only lost bfloat16), it is asked to go to each opset
    where the op changed between the two, nearest the target first, and `convert` (the
    caller's pipeline) takes the small model on from there. Returns None on success, else
    why it failed (the node is then left untouched)."""
    try:
        small = one_node_model(node, source)
    except Exception as error:
        return first_line(error)
    stops = [
        v for v in _schema_versions(node.op_type) if min(source, target) < v < max(source, target)
    ]
    stops.sort(key=lambda v: abs(v - target))
    failure = None
    for stop in [target, *stops]:
        try:
            converted = onnx.version_converter.convert_version(small, stop)
            onnx.checker.check_model(converted, full_check=True)
            model = ir.serde.deserialize_model(converted)
            if stop != target:
                convert(model, stop)
        except Exception as error:  # the converter raises RuntimeError, ValidationError, ...
            failure = failure or first_line(error)
            continue
        splice(node, model, in_function)
        return None
    return failure


def _schema_versions(op_type: str) -> list[int]:
    return sorted(
        {
            s.since_version
            for s in onnx.defs.get_all_schemas_with_history()
            if s.name == op_type and s.domain == ""
        }
    )


def splice(node: ir.Node, converted: ir.Model, in_function: bool) -> None:
    """Put the converted one-node model's nodes where `node` was, wired to its values;
    `in_function`: the node is in a function body, where constants must be nodes."""
    _check_output_types(node, converted)
    outer = {v.name: v for v in node.inputs if v is not None}
    graph = node.graph
    prefix = node.name or f"{node.op_type.lower()}{next(_UNNAMED)}"
    new_nodes = list(converted.graph)
    constants = []
    for value in list(converted.graph.inputs) + list(converted.graph.initializers.values()):
        if value.name in outer:
            ir.convenience.replace_all_uses_with(value, outer[value.name])
        elif value.const_value is not None:  # a constant the converter introduced
            constants.append(value)
    converted.graph.initializers.clear()
    new_outputs = list(converted.graph.outputs)
    converted.graph.outputs.clear()
    for new_node in new_nodes:
        converted.graph.remove(new_node)
        for value in new_node.outputs:  # the converter's own names (_v_4) may repeat
            value.name = f"{prefix}__{value.name}"
    for value in constants:
        value.name = f"{prefix}__{value.name}"
        if in_function:
            constant = ir.node("Constant", [], {"value": value.const_value}, name=value.name)
            ir.convenience.replace_all_uses_with(value, constant.outputs[0])
            constant.outputs[0].name = value.name
            new_nodes.insert(0, constant)
        else:
            graph.register_initializer(value)
    graph.insert_before(node, new_nodes)
    for old_output, new_output in zip(node.outputs, new_outputs, strict=True):
        name = old_output.name
        ir.convenience.replace_all_uses_with(old_output, new_output, replace_graph_outputs=True)
        new_output.name = name
    graph.remove(node, safe=True)
    remove_if_orphaned(graph, *outer.values())


def _check_output_types(node: ir.Node, converted: ir.Model) -> None:
    for old, new in zip(node.outputs, converted.graph.outputs, strict=True):
        used = old.uses() or old.is_graph_output()
        if used and old.dtype is not None and new.dtype is not None and old.dtype != new.dtype:
            raise ConversionError(
                node_label(node),
                node.op_type,
                f"at the target opset its output {old.name!r} is {new.dtype.name}, not "
                f"{old.dtype.name}, and the graph uses it",
                "a target opset where the output keeps its type, or a graph that does not "
                "use this output",
            )


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
