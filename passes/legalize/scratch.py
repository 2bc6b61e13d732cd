"""One-node scratch models, where candidate rewrites are tried, and splicing the winner back.

    Scratch(node): a one-node model (passes.one_node.OneNodeModel): a copy of `node` alone,
                   each distinct input a graph input ("mirror"), or an initializer holding
                   the same tensor when it is a small constant (rewrites see constant axes)
    splice(form, node): the form's nodes go before `node` in its graph, the mirrors are
                   replaced by the node's real inputs (also inside subgraph bodies), the
                   form's outputs take over the node's output names, and `node` goes

A rewrite tried in a scratch model cannot damage the real graph, and a form found for one
node can be cloned for every node with the same signature (op, attributes, input types,
shapes and constant values).
"""

from __future__ import annotations

import hashlib

import onnx
import onnx_ir as ir
from onnx_ir.passes.common import CheckerPass

from passes.errors import ConversionError, error_text
from passes.graph_utils import infer_shapes, is_used, node_label, remove_if_orphaned
from passes.names import Namer
from passes.one_node import MIRROR, OneNodeModel, present_outputs, small_constant


class Scratch(OneNodeModel):
    """A copy of `node` alone in a model at `opset` (passes.one_node), to be rewritten
    freely."""

    def check_and_infer(self) -> None:
        """Full onnx.checker (types included), then shape inference for the new values.

        The checker wants shapes on a main graph's inputs and outputs; where the rank of a
        mirror is unknown, strict shape inference alone checks the types and ops.
        """
        try:
            if all(v.shape is not None for v in [*self.graph.inputs, *self.graph.outputs]):
                CheckerPass(full_check=True)(self.model)
            else:
                onnx.shape_inference.infer_shapes(
                    ir.serde.serialize_model(self.model), check_type=True, strict_mode=True
                )
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
            raise ConversionError(
                node_label(self.original),
                self.original.op_type,
                f"the rewritten form is not valid ONNX at opset "
                f"{self.graph.opset_imports['']} ({error_text(error)})",
                "a later target opset",
            ) from error
        infer_shapes(self.model)


def signature(node: ir.Node, opset: int, in_function: bool) -> tuple:
    """What a rewrite of `node` depends on: two nodes with equal signatures get equal forms."""
    positions: dict[int, int] = {}
    inputs = []
    for value in node.inputs:
        if value is None:
            inputs.append(None)
            continue
        first = positions.setdefault(id(value), len(positions))
        tensor = small_constant(value)
        const = None
        if tensor is not None:
            const = hashlib.sha256(tensor.tobytes()).hexdigest() + str(tensor.shape)
        inputs.append((first, value.dtype, _shape_key(value.shape), const))
    attributes = []
    for name, attr in sorted(node.attributes.items()):
        if attr.type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS):
            attributes.append((name, id(attr.value)))  # never equal: no sharing of bodies
        else:
            attributes.append((name, repr(attr.value)))
    outputs = tuple((bool(v.name), v.dtype, _shape_key(v.shape)) for v in node.outputs)
    return (
        node.domain,
        node.op_type,
        opset,
        in_function,
        tuple(attributes),
        tuple(inputs),
        outputs,
    )


def _shape_key(shape: ir.Shape | None) -> tuple | None:
    if shape is None:
        return None
    return tuple(d if isinstance(d, int) else str(d) for d in shape)


def rename(namer: Namer, label: str, nodes: list[ir.Node], values: list[ir.Value]) -> None:
    """Name every node, node output and subgraph input of `nodes` (recursively), and
    `values`, after `label` (the node they replace), fresh in the model."""
    for value in values:
        value.name = namer.fresh(f"{label}__const")
    for node in _recursive(nodes):
        node.name = namer.fresh(f"{label}__{node.op_type.lower()}")
        for i, value in enumerate(node.outputs):
            suffix = f"_out{i}" if len(node.outputs) > 1 else "_out"
            value.name = namer.unique(f"{node.name}{suffix}")
        for attr in node.attributes.values():
            for graph in _graphs_of(attr):
                for value in [*graph.inputs, *graph.initializers.values()]:
                    value.name = namer.fresh(f"{label}__body_in")


def _graphs_of(attr: ir.Attr) -> list[ir.Graph]:
    if attr.type == ir.AttributeType.GRAPH:
        return [attr.value]
    if attr.type == ir.AttributeType.GRAPHS:
        return list(attr.value)
    return []


def _recursive(nodes: list[ir.Node]):
    for node in nodes:
        yield node
        for attr in node.attributes.values():
            for graph in _graphs_of(attr):
                yield from _recursive(list(graph))


def splice(form: ir.Graph, mirrors: list[ir.Value], node: ir.Node, namer: Namer) -> None:
    """Replace `node` by the nodes of `form` (a Scratch graph, or a clone of one), whose
    mirror values stand for `mirrors`, the node's distinct inputs in order."""
    graph = node.graph
    label = node_label(node)
    by_name = {v.name: v for v in [*form.inputs, *form.initializers.values()]}
    real_of = {
        id(by_name[f"{MIRROR}{k}"]): real
        for k, real in enumerate(mirrors)
        if f"{MIRROR}{k}" in by_name
    }
    outputs = list(form.outputs)
    form.outputs.clear()
    new_nodes = list(form)
    for new_node in new_nodes:
        form.remove(new_node)
    # Constants that the form no longer uses (a helper of a rewrite lowered away) are dropped.
    constants = [
        v for name, v in form.initializers.items() if not name.startswith(MIRROR) and is_used(v)
    ]
    form.initializers.clear()
    rename(namer, label, new_nodes, constants)
    for value in constants:
        graph.register_initializer(value)
    graph.insert_before(node, new_nodes)
    for k, real in enumerate(mirrors):
        mirror = by_name.get(f"{MIRROR}{k}")
        if mirror is not None:
            ir.convenience.replace_all_uses_with(mirror, real)
    for old, new in zip(present_outputs(node), outputs, strict=True):
        new = real_of.get(id(new), new)  # the form passes an input through
        if new.producer() is None or new.producer().graph is not graph:
            identity = ir.node("Identity", [new], name=namer.fresh(f"{label}__identity"))
            graph.insert_before(node, identity)
            new = identity.outputs[0]
        name, dtype, shape = old.name, old.dtype, old.shape
        ir.convenience.replace_all_uses_with(old, new, replace_graph_outputs=True)
        old.name = None
        new.name = name
        new.dtype = new.dtype or dtype
        if shape is not None:
            new.shape = shape
    graph.remove(node, safe=True)
    remove_if_orphaned(graph, *mirrors)
