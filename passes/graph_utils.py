"""Small queries and edits on onnx_ir graphs that several passes share."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnx_ir as ir

from passes.errors import ConversionError

# Graph-like containers a pass walks: the main graph, then each model-local function.
Container = ir.Graph | ir.Function


def containers(model: ir.Model) -> Iterator[tuple[str, Container, dict[str, int]]]:
    """(where, graph-like, opset imports) for the main graph and every local function."""
    yield "main graph", model.graph, model.opset_imports
    for function in model.functions.values():
        yield f"function {function.domain}::{function.name}", function, function.opset_imports


def const_tensor(value: ir.Value | None) -> ir.TensorProtocol | None:
    """The constant behind `value` (an initializer, or a Constant node), else None.

    Like onnx_ir.convenience.get_const_tensor, but it never renames the tensor: that one
    does, and a tensor read from a ModelProto writes the new name back into the caller's
    proto.
    """
    if value is None:
        return None
    if value.const_value is not None:
        return value.const_value
    node = value.producer()
    if node is None or node.op_type != "Constant" or node.domain != "":
        return None
    if len(node.attributes) != 1:
        return None
    attr = next(iter(node.attributes.values()))
    if attr.is_ref():
        return None
    if attr.name == "value":
        return attr.as_tensor()
    dtypes = {
        "value_int": np.int64,
        "value_ints": np.int64,
        "value_float": np.float32,
        "value_floats": np.float32,
    }
    if attr.name in dtypes:
        return ir.tensor(np.array(attr.value, dtype=dtypes[attr.name]))
    return None


def constant_ints(value: ir.Value | None) -> list[int] | None:
    """The integer contents of a constant (initializer, or Constant node), else None."""
    tensor = const_tensor(value)
    if tensor is None:
        return None
    return [int(v) for v in np.asarray(tensor.numpy()).reshape(-1)]


def static_rank(value: ir.Value) -> int | None:
    return None if value.shape is None else len(value.shape)


def static_dim(value: ir.Value, axis: int) -> int | None:
    if value.shape is None:
        return None
    dim = value.shape[axis]
    return dim if isinstance(dim, int) else None


def node_label(node: ir.Node) -> str:
    return node.name or f"<unnamed {node.op_type}>"


def require_rank(node: ir.Node, value: ir.Value, why: str) -> int:
    rank = static_rank(value)
    if rank is None:
        raise ConversionError(
            node_label(node),
            node.op_type,
            f"the rank of input {value.name!r} is unknown, and {why}",
            "give the input a static rank (a shape in the graph's value_info or inputs), "
            "e.g. by running shape inference on the model",
        )
    return rank


def require_dtype(node: ir.Node, value: ir.Value, why: str) -> ir.DataType:
    if value.dtype is None:
        raise ConversionError(
            node_label(node),
            node.op_type,
            f"the element type of input {value.name!r} is unknown, and {why}",
            "declare the type in the graph (inputs or value_info)",
        )
    return value.dtype


def replace_node(node: ir.Node, replacement: ir.Value) -> None:
    """Make `replacement` stand for `node`'s only output everywhere, then delete `node`.

    The output keeps its name, type and shape, so graph outputs and later references to the
    name are undisturbed.
    """
    old = node.outputs[0]
    name, dtype, shape = old.name, old.dtype, old.shape
    ir.convenience.replace_all_uses_with(old, replacement, replace_graph_outputs=True)
    graph = node.graph
    graph.remove(node, safe=True)
    replacement.name = name
    if dtype is not None:
        replacement.dtype = dtype
    if shape is not None:
        replacement.shape = shape
    remove_if_orphaned(graph, *[v for v in node.inputs if v is not None])


def remove_if_orphaned(graph: ir.Graph, *values: ir.Value) -> None:
    """Delete Constant nodes and initializers that a rewrite left without users."""
    for value in values:
        if value.uses() or value.is_graph_output() or value.is_graph_input():
            continue
        producer = value.producer()
        if producer is not None and producer.op_type == "Constant" and producer.domain == "":
            producer.graph.remove(producer, safe=True)
        elif value.is_initializer() and value.graph is not None:
            value.graph.initializers.pop(value.name, None)
