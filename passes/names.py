"""Fresh names: the one place where passes and builders invent names.

    namer = Namer.of_model(model)        every name the model holds is taken
    namer.fresh("r__const")              "r__const<n>" for the namer's next n that is free
    namer.unique("r__max3_out")          the name itself if free, else "r__max3_out_<n>"

A name a pass makes must not be one the model already has: a value named like a generated
one (`r__const0`) would otherwise be read in place of the new value, or an initializer
registered twice. So the namer starts from every name in the model: values (node outputs,
graph inputs and outputs, initializers), node names, in the main graph, every subgraph and
every function body. A pass that works on part of a model (maxlower.sparse builds onnx_ir
only for the nodes that change) passes the names of the rest as `reserved`, read lazily:
only when a name is first asked for.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator

import onnx
import onnx_ir as ir

from passes.graph_utils import graph_protos


class Namer:
    """Fresh node and value names, unique in the whole model (subgraphs and functions too)."""

    def __init__(
        self, names: Iterable[str] = (), reserved: Callable[[], Iterable[str]] | None = None
    ) -> None:
        self._used: set[str] = set(names)
        self._reserved = reserved  # read on first use
        self._counter = itertools.count()  # one for all bases, as names read best

    @classmethod
    def of_model(
        cls, model: ir.Model, reserved: Callable[[], Iterable[str]] | None = None
    ) -> Namer:
        """Read when the first name is asked for (most conversions ask for none)."""
        graphs = [model.graph, *(f.graph for f in model.functions.values())]

        def names() -> Iterator[str]:
            yield from _names_of_graphs(graphs)
            if reserved is not None:
                yield from reserved()

        return cls((), names)

    @classmethod
    def of_graph(cls, graph: ir.Graph) -> Namer:
        """For a model of its own (a scratch model): `graph` and its subgraphs."""
        return cls(_names_of_graphs([graph]))

    def _taken(self, name: str) -> bool:
        if self._reserved is not None:
            self._used.update(self._reserved())
            self._reserved = None
        return name in self._used

    def fresh(self, base: str) -> str:
        """`base` followed by the namer's next number that makes a name not used yet."""
        while True:
            name = f"{base}{next(self._counter)}"
            if not self._taken(name):
                self._used.add(name)
                return name

    def unique(self, name: str) -> str:
        """`name` if it is free, else `name_<n>` for the lowest free n."""
        if not self._taken(name):
            self._used.add(name)
            return name
        return self.fresh(f"{name}_")


def _names_of_graphs(graphs: list[ir.Graph]) -> Iterator[str]:
    for graph in graphs:
        yield from _names_of_graph(graph)


def _names_of_graph(graph: ir.Graph) -> Iterator[str]:
    for value in [*graph.inputs, *graph.outputs]:
        if value.name:
            yield value.name
    yield from graph.initializers
    for node in graph:
        if node.name:
            yield node.name
        for value in node.outputs:
            if value.name:
                yield value.name
        for attr in node.attributes.values():
            if attr.is_ref():
                continue
            if attr.type == ir.AttributeType.GRAPH:
                yield from _names_of_graph(attr.value)
            elif attr.type == ir.AttributeType.GRAPHS:
                for subgraph in attr.value:
                    yield from _names_of_graph(subgraph)


def proto_names(model: onnx.ModelProto) -> Iterator[str]:
    """Every name in a ModelProto, as Namer.of_model collects them from onnx_ir (for
    maxlower.sparse, whose onnx_ir model holds only the nodes that change)."""
    roots = [model.graph, *(_function_graphs(f) for f in model.functions)]
    for graph in (g for root in roots for g in graph_protos(root)):
        for info in [*graph.input, *graph.output, *graph.value_info]:
            yield info.name
        for tensor in graph.initializer:
            yield tensor.name
        for node in graph.node:
            yield node.name
            yield from node.output


def _function_graphs(function: onnx.FunctionProto) -> onnx.GraphProto:
    """A function body as a graph, to walk its names (and its subgraphs') like a graph's."""
    graph = onnx.GraphProto(node=function.node)
    graph.input.extend(onnx.ValueInfoProto(name=n) for n in function.input)
    graph.output.extend(onnx.ValueInfoProto(name=n) for n in function.output)
    return graph


__all__ = ["Namer", "proto_names"]
