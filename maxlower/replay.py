"""Nodes that convert alike: convert the first in onnx_ir, copy the result onto the others.

    signature_groups(graph, nodes, indices)    {first index: [later indices]} of the nodes
                                                whose conversion depends on equal things
    Template.of(original, node, ...)            what conversion did to the first one, if it
                                                can be copied: None otherwise
    template.apply(other)                       the other node, converted the same way

A wide graph holds thousands of nodes that differ only in the names of their values
(ReduceMax with axes [1] on float[2, 3, 4] data, again and again); maxlower.sparse
converts the first of each group and copies the result onto the rest, at the cost of a
protobuf copy instead of a pass through onnx_ir.

What an adapter does to a node depends on the node's op, attributes and opset, on the
types and shapes of its inputs and outputs, on the values of its constant inputs (an
initializer or a Constant node) and on whether its outputs are read; never on value or
node names, except to name what it creates (passes/version/registry.py says so). Those
make the signature. A template is taken only where the copy is the conversion itself:

- the node was changed in place (no node added or removed, its name and outputs kept,
  their types unchanged), and it still reads every input it read;
- any input it reads besides those is an initializer the conversion made (a constant
  such as ReduceMax-18's axes): the others then read the same initializer, which the
  full conversion would also share, since equal constants are made once (Builder.const).

tests/test_io_sparse.py checks, on every fixture, conformance case and a wide graph, that
the result is what converting the whole model in onnx_ir gives.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import onnx
import onnx_ir as ir

SMALL_TENSOR_BYTES = 4096  # constant inputs up to this size are compared by value


def signature_groups(
    graph: onnx.GraphProto, nodes: list[onnx.NodeProto], indices: list[int]
) -> dict[int, list[int]]:
    """{first index: [later indices]} for the groups of more than one node among
    `indices` (in graph order) whose signatures are equal."""
    named = {name for i in indices for name in (*nodes[i].input, *nodes[i].output)}
    keys = _SignatureKeys(graph, nodes, named)
    groups: dict[tuple, list[int]] = {}
    for i in indices:
        groups.setdefault(keys.of(nodes[i]), []).append(i)
    return {members[0]: members[1:] for members in groups.values() if len(members) > 1}


class _SignatureKeys:
    """What a node's conversion depends on, as a hashable key (see the module docstring)."""

    def __init__(
        self, graph: onnx.GraphProto, nodes: list[onnx.NodeProto], named: set[str]
    ) -> None:
        """`named`: the values whose types the keys will be asked for."""
        self.types = {
            v.name: v.type.SerializeToString()
            for v in [*graph.value_info, *graph.input, *graph.output]
            if v.name in named
        }
        self.initializers = {t.name: t for t in graph.initializer}
        self.graph_inputs = {v.name for v in graph.input}
        self.constants = {
            name: node for node in nodes if node.op_type == "Constant" for name in node.output
        }
        self.read = {name for node in nodes for name in node.input}
        self.read.update(v.name for v in graph.output)
        self._values: dict[str, tuple] = {}

    def of(self, node: onnx.NodeProto) -> tuple:
        inputs = list(node.input)
        return (
            node.domain,
            node.op_type,
            tuple(a.SerializeToString() for a in node.attribute),
            tuple((inputs.index(name), self._input(name)) if name else None for name in inputs),
            tuple((self.types.get(name), name in self.read) for name in node.output),
        )

    def _input(self, name: str) -> tuple:
        key = self._values.get(name)
        if key is None:
            key = self._values[name] = (self.types.get(name), self._kind(name))
        return key

    def _kind(self, name: str) -> tuple:
        """Where the value comes from, and its contents if it is a small constant."""
        tensor = self.initializers.get(name)
        if tensor is not None:
            small = (
                tensor.data_location != onnx.TensorProto.EXTERNAL
                and tensor.ByteSize() <= SMALL_TENSOR_BYTES
            )
            # A large or external one stands for itself: only nodes reading it share it.
            content = _unnamed(tensor).SerializeToString() if small else ("name", name)
            return ("initializer", name in self.graph_inputs, content)
        constant = self.constants.get(name)
        if constant is not None:
            return ("Constant", tuple(a.SerializeToString() for a in constant.attribute))
        return ("graph input",) if name in self.graph_inputs else ("node output",)


def _unnamed(tensor: onnx.TensorProto) -> onnx.TensorProto:
    copy = onnx.TensorProto()
    copy.CopyFrom(tensor)
    copy.name = ""
    return copy


@dataclasses.dataclass
class Template:
    """A converted node, and which of its inputs are the original node's (by position)."""

    converted: onnx.NodeProto
    from_original: dict[int, int]  # input position in `converted` -> in the original

    @classmethod
    def of(
        cls,
        original: onnx.NodeProto,
        node: ir.Node,
        group: list[ir.Node],
        new_initializers: set[str],
        unchanged_output: Callable[[ir.Value], bool],
        droppable: set[str] = frozenset(),
    ) -> Template | None:
        """The template of `original`, converted into `node` (the same onnx_ir node, which
        is all of `group`, what stands in its place now), or None if the conversion cannot
        be copied. `unchanged_output(value)` tells whether an output kept its type. An
        original input the conversion no longer reads must be in `droppable`: an initializer
        that is no graph input (ReduceMax-18's constant axes, which become an attribute)."""
        if group != [node] or (node.name or "") != original.name:
            return None
        if [v.name for v in node.outputs] != list(original.output):
            return None
        if not all(unchanged_output(v) for v in node.outputs):
            return None
        names = [v.name if v is not None else "" for v in node.inputs]
        originals = list(original.input)
        dropped = tuple(j for j, name in enumerate(originals) if name and name not in names)
        if any(originals[j] not in droppable for j in dropped):
            return None  # an input no longer read whose maker the full conversion may drop
        from_original = {}
        for k, name in enumerate(names):
            if name in originals and name:
                from_original[k] = originals.index(name)
            elif name and name not in new_initializers:
                return None
        converted = ir.serde.serialize_node(node)
        # Each copy keeps its own doc_string and metadata (PyTorch's stack traces, say),
        # which a round trip through onnx_ir must have left as they were.
        if (
            converted.HasField("doc_string") != original.HasField("doc_string")
            or converted.doc_string != original.doc_string
            or list(converted.metadata_props) != list(original.metadata_props)
        ):
            return None
        return cls(converted, from_original)

    def apply(self, other: onnx.NodeProto) -> onnx.NodeProto:
        node = onnx.NodeProto()
        node.CopyFrom(self.converted)
        for field in ("name", "doc_string"):  # absent stays absent (proto2 keeps the difference)
            node.ClearField(field)
            if other.HasField(field):
                setattr(node, field, getattr(other, field))
        for k, j in self.from_original.items():
            node.input[k] = other.input[j]
        del node.output[:]
        node.output.extend(other.output)
        del node.metadata_props[:]
        node.metadata_props.extend(other.metadata_props)
        return node


__all__ = ["Template", "signature_groups"]
