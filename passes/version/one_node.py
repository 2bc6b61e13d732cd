"""A node taken out on its own, converted elsewhere, and put back: the hand-off helpers.

    Unsqueeze-13(x, axes=const), target 11  →  one-node model at 13 (passes.one_node)
                                            →  onnx.version_converter → Unsqueeze-11 {axes}
                                            →  spliced where the node was

`splice` puts a converted one-node model's nodes in the node's place, its mirrors wired to
the node's inputs; the node's outputs keep their names, and an output that is used must
keep its element type. Inside functions, which have no initializers, constants become
Constant nodes.
"""

from __future__ import annotations

from collections.abc import Callable

import onnx
import onnx_ir as ir
from onnx.onnx_cpp2py_export import version_converter as onnx_converter

from passes.errors import ConversionError, error_text
from passes.graph_utils import captured_values, is_used, node_label, remove_if_orphaned
from passes.names import Namer
from passes.one_node import MIRROR, OneNodeModel, mirrors_of, present_outputs, release_holds
from passes.version.registry import schema_versions

# (small model, default-domain opset its nodes are at) → converted in place to the target
ConvertModel = Callable[[ir.Model, int], None]


def onnx_version_converter(model: onnx.ModelProto, target: int) -> onnx.ModelProto:
    """onnx's own converter, called below its Python name: a user who swaps
    `onnx.version_converter.convert_version` for `maxlower.convert_version` (one line, the
    drop-in way) must not make maxlower's hand-off call maxlower again (it recursed)."""
    converted = onnx_converter.convert_version(model.SerializeToString(), target)
    return onnx.load_from_string(converted)


def delegate_to_version_converter(
    node: ir.Node,
    source: int,
    target: int,
    in_function: bool,
    convert: ConvertModel,
    namer: Namer,
) -> str | None:
    """Convert `node` alone with onnx.version_converter and splice the result in its place.

    When the converter cannot go all the way (it lacks many downward adapters, say
    ReduceMean 13 → 12, where the op only lost bfloat16), it is asked to go to each opset
    where the op changed between the two, nearest the target first, and `convert` (the
    caller's pipeline) takes the small model on from there. Values of unknown rank are
    held (passes.one_node), so the converter and the checker see the node on the types the
    model gives it. Returns None on success, else why it failed (the node is then left
    untouched)."""
    try:
        small = OneNodeModel(node, source).proto(hold_unknown_ranks=True)
    except Exception as error:
        return error_text(error)
    stops = [
        v for v in schema_versions(node.op_type) if min(source, target) < v < max(source, target)
    ]
    stops.sort(key=lambda v: abs(v - target))
    failure = None
    for stop in [target, *stops]:
        try:
            converted = onnx_version_converter(small, stop)
            onnx.checker.check_model(converted, full_check=True)
            _require_same_interface(small, converted)
            model = ir.serde.deserialize_model(converted)
            if stop != target:
                convert(model, stop)
            release_holds(model)
        except Exception as error:  # the converter raises RuntimeError, ValidationError, ...
            failure = failure or error_text(error)
            continue
        splice(node, model, in_function, namer)
        return None
    return failure


def _require_same_interface(small: onnx.ModelProto, converted: onnx.ModelProto) -> None:
    """Raise ValueError when the converter changed what the node takes or gives, not only
    the node: Scan 8 → 9, for one, drops the batch axis from the graph's inputs and outputs,
    which the rest of the model still has (a splice would leave it inconsistent)."""
    for kind, before, after in (
        ("input", small.graph.input, converted.graph.input),
        ("output", small.graph.output, converted.graph.output),
    ):
        for old, new in zip(before, after, strict=True):
            old_shape, new_shape = _shape_of(old), _shape_of(new)
            if old_shape is None or new_shape is None or _dims_agree(old_shape, new_shape):
                continue
            raise ValueError(
                f"it changes the node's {kind} shape from {old_shape} to {new_shape}, "
                "not only the node"
            )


def _shape_of(info: onnx.ValueInfoProto) -> list[int | str | None] | None:
    tensor = info.type.tensor_type
    if not info.type.HasField("tensor_type") or not tensor.HasField("shape"):
        return None
    return [
        d.dim_value if d.HasField("dim_value") else d.dim_param or None for d in tensor.shape.dim
    ]


def _dims_agree(old: list, new: list) -> bool:
    """Same rank, and no dim known on both sides with two different sizes."""
    return len(old) == len(new) and all(
        a is None or b is None or a == b or isinstance(a, str) or isinstance(b, str)
        for a, b in zip(old, new, strict=True)
    )


def splice(node: ir.Node, converted: ir.Model, in_function: bool, namer: Namer) -> None:
    """Put the converted one-node model's nodes where `node` was, wired to its values;
    `in_function`: the node is in a function body, where constants must be nodes. The
    values it brings are named by `namer`, which knows the model's names."""
    _check_output_types(node, converted)
    outer = {f"{MIRROR}{k}": v for k, v in enumerate(mirrors_of(node))}
    outer.update({v.name: v for v in captured_values(node) if v.name})  # (OneNodeModel)
    graph = node.graph
    prefix = node.name or node.op_type.lower()
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
            value.name = namer.unique(f"{prefix}__{value.name}")
    for value in constants:
        value.name = namer.unique(f"{prefix}__{value.name}")
        if in_function:
            constant = ir.node("Constant", [], {"value": value.const_value}, name=value.name)
            ir.convenience.replace_all_uses_with(value, constant.outputs[0])
            constant.outputs[0].name = value.name
            new_nodes.insert(0, constant)
        else:
            graph.register_initializer(value)
    graph.insert_before(node, new_nodes)
    for old_output, new_output in zip(present_outputs(node), new_outputs, strict=True):
        name = old_output.name
        ir.convenience.replace_all_uses_with(old_output, new_output, replace_graph_outputs=True)
        new_output.name = name
    graph.remove(node, safe=True)
    remove_if_orphaned(graph, *outer.values())


def _check_output_types(node: ir.Node, converted: ir.Model) -> None:
    for old, new in zip(present_outputs(node), converted.graph.outputs, strict=True):
        used = is_used(old) or old.is_graph_output()
        if used and old.dtype is not None and new.dtype is not None and old.dtype != new.dtype:
            raise ConversionError(
                node_label(node),
                node.op_type,
                f"at the target opset its output {old.name!r} is {new.dtype.name}, not "
                f"{old.dtype.name}, and the graph uses it",
                "a target opset where the output keeps its type, or a graph that does not "
                "use this output",
            )
