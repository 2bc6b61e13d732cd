"""The Max- and Min-family nodes of a model, and the order the reports list them in.

    family_nodes(model)            every family node, described (inputs, attributes)
    place_of(container, node)      a FamilyNode that only says where and which node it is
    in_graph_order(rewrites, ...)  rewrites sorted by where their node stands

`maxlower inspect` prints these; the pipeline orders its report by them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

import onnx
import onnx_ir as ir

from passes import graph_utils
from passes.builder import FAMILY, schema_version
from passes.function_types import InferFunctionTypesPass
from passes.graph_utils import constant_ints, containers, node_label, subgraph_place
from passes.version.convert import Rewrite


@dataclasses.dataclass(frozen=True)
class FamilyNode:
    """One node of either family (Max, ReduceMax, ArgMax, Min, ...) as found in the model."""

    container: str  # "main graph" or "function dom::name": where conversion reports it
    where: str  # container, or "main graph > If 'pick' > then_branch" (subgraph_place)
    node: str
    op_type: str
    opset: int | None  # the default-domain opset of the container
    version: int | None  # the schema version the node resolves to at that opset
    inputs: tuple[str, ...]  # "x: FLOAT[2,3,4]" per input, with "(constant [1])" if known
    attributes: tuple[str, ...]  # "keepdims=1"


def family_nodes(model: ir.Model, *, infer_shapes: bool = True) -> list[FamilyNode]:
    """Every family node in the main graph, local functions and their subgraphs, in order.

    With `infer_shapes`, runs shape inference on `model` (in place) first, so that the
    dtypes and shapes of intermediate values are known.
    """
    if infer_shapes:
        graph_utils.infer_shapes(model)
    elif model.functions:  # function bodies: the types their calls imply
        InferFunctionTypesPass()(model)
    found = []
    for container_name, container, opsets in containers(model):
        opset = opsets.get("")
        for where, node in _walk(container, container_name):
            if node.domain == "" and node.op_type in FAMILY:
                found.append(
                    FamilyNode(
                        container=container_name,
                        where=where,
                        node=node_label(node),
                        op_type=node.op_type,
                        opset=opset,
                        version=schema_version(node.op_type, opset) if opset else None,
                        inputs=tuple(_describe_input(v) for v in node.inputs),
                        attributes=tuple(
                            f"{name}={_attribute_value(attr)}"
                            for name, attr in node.attributes.items()
                        ),
                    )
                )
    return found


def in_graph_order(rewrites: list[Rewrite], nodes: list[FamilyNode]) -> list[Rewrite]:
    """`rewrites` sorted by where their node stood in the model (stable, so one node's steps
    keep their order); nodes that conversion created go after the node they came from,
    whose name their own starts with (`Builder` names them `<culprit>__<op><n>`)."""
    position = {(n.container, n.node): i for i, n in enumerate(nodes)}

    def key(rewrite: Rewrite) -> int:
        origin = rewrite.node.split("__", 1)[0]
        return position.get(
            (rewrite.where, rewrite.node), position.get((rewrite.where, origin), len(nodes))
        )

    return sorted(rewrites, key=key)


def _walk(graph_like: ir.Graph | ir.Function, where: str) -> Iterator[tuple[str, ir.Node]]:
    for node in graph_like:
        yield where, node
        for attr in node.attributes.values():
            if attr.type == ir.AttributeType.GRAPH:
                graphs = [attr.as_graph()]
            elif attr.type == ir.AttributeType.GRAPHS:
                graphs = list(attr.as_graphs())
            else:
                continue
            for k, subgraph in enumerate(graphs):
                index = k if attr.type == ir.AttributeType.GRAPHS else None
                yield from _walk(subgraph, subgraph_place(where, node, attr.name, index))


def _describe_input(value: ir.Value | None) -> str:
    if value is None:
        return "(omitted)"
    if value.dtype is None:  # e.g. inputs of a function, which are untyped
        return f"{value.name}: (type unknown)"
    shape = "" if value.shape is None else "[" + ",".join(str(d) for d in value.shape) + "]"
    text = f"{value.name}: {value.dtype.name}{shape}"
    if value.dtype == ir.DataType.INT64:
        ints = constant_ints(value)
        if ints is not None:
            return f"{text} (constant {ints})"
        if value.is_graph_input():
            return f"{text} (graph input, known only at run time)"
    return text


def _attribute_value(attr: ir.Attr) -> str:
    if attr.is_ref():  # set by the function's caller
        return f"@{attr.ref_attr_name}"
    if attr.type == ir.AttributeType.INTS:
        return str(list(attr.as_ints()))
    if attr.type == ir.AttributeType.FLOATS:
        return str(list(attr.as_floats()))
    if attr.type == ir.AttributeType.STRING:
        return repr(attr.as_string())
    return str(attr.value)


def place_of(container: str, node: ir.Node | onnx.NodeProto) -> FamilyNode:
    """A FamilyNode that only says where and which node it is: what in_graph_order needs
    (`family_nodes` also describes every input, a third of a second on 20,000 nodes)."""
    return FamilyNode(
        container=container,
        where=container,
        node=node_label(node),
        op_type=node.op_type,
        opset=None,
        version=None,
        inputs=(),
        attributes=(),
    )


def family_nodes_of_graph_proto(nodes: Iterable[onnx.NodeProto]) -> list[FamilyNode]:
    """`place_of` the family nodes among a main graph's `nodes`, in order (what
    maxlower.sparse converts: a graph without subgraphs)."""
    return [
        place_of("main graph", node)
        for node in nodes
        if node.domain in ("", "ai.onnx") and node.op_type in FAMILY
    ]


__all__ = [
    "FamilyNode",
    "family_nodes",
    "family_nodes_of_graph_proto",
    "in_graph_order",
    "place_of",
]
