"""Convert a model file by building onnx_ir only for the nodes that change.

    nodes whose schema version is the same at source and target   stay protobuf, untouched
    the others, with the Constant nodes that feed them             become a small onnx_ir
                                                                   model, converted by
                                                                   `ConvertToOpsetPass`
    the result                                                     is spliced back in place

Converting to another opset changes only default-domain nodes whose schema version differs
between the two opsets: ConvertFamilyPass has no step to take for the others, and
ConvertOtherOpsPass leaves them as they are. On a graph of 20,000 nodes, building onnx_ir
for all of them and serialising them back costs about a second, most of the conversion;
a 20 → 18 conversion changes the schema of a quarter of them, an LLM export's far fewer.

The small model holds every value those nodes touch, typed from the full model's shape
inference, so that the passes see what they would see in the full graph:

- values made outside it are graph inputs (an initializer stays an initializer; both if
  the full graph has both), so no pass removes them;
- values it makes or holds that the rest of the graph reads, or the graph returns, are
  graph outputs, so `uses() or is_graph_output()` answers as it would in the full graph;
  a pass that takes a value's place keeps its name (`replace_node`), which the rest of the
  graph reads it by;
- an anchor node (domain `maxlower.sparse`, which no pass touches) follows each original
  node, so that every node the passes insert lands where it would in the full graph:
  between the anchor before it and the anchor after it, at the original node's place.

Nodes that convert alike (maxlower.replay: same op, attributes, value types, constant
inputs) go through onnx_ir once: the first of each group is converted, the others copy its
result, where that result is the node changed in place (ReduceMax 13 → 18 on thousands of
nodes); otherwise every node of the group goes through onnx_ir.

Models with model-local functions or subgraphs (If, Loop, Scan) take the full path, as
does a conversion whose passes change the small model's boundary (a value outside read
under a name that is gone): `convert_sparse` returns None and nothing has been changed.
tests/test_io_sparse.py checks, on every fixture and conformance case, that the result is
the full path's: the same nodes in the same order, the same initializers, value types
and opset imports.
"""

from __future__ import annotations

import copy
import dataclasses

import onnx
import onnx_ir as ir

from maxlower.errors import check_target_opset
from maxlower.external import set_base_dirs
from maxlower.family_nodes import family_nodes_of_graph_proto, in_graph_order
from maxlower.replay import Template, signature_groups
from maxlower.serde import deserialize
from passes.builder import FAMILY, schema_version
from passes.graph_utils import node_label, subgraphs
from passes.names import proto_names
from passes.version.convert import Rewrite
from passes.version.other_ops import RELABELLED, OtherOpConversion
from passes.version.registry import ADAPTERS, kept_as_is, version_path
from passes.version.to_opset import DEFAULT_DOMAINS, ConvertToOpsetPass

ANCHOR_DOMAIN = "maxlower.sparse"
_Step = Rewrite | OtherOpConversion  # one line of the report, about one node


@dataclasses.dataclass
class SparseConversion:
    proto: onnx.ModelProto  # converted in place; not checked yet
    rewrites: list[Rewrite]  # in graph order
    conversions: list[OtherOpConversion]  # in graph order
    changed_nodes: int  # how many nodes went through onnx_ir


def convert_sparse(
    proto: onnx.ModelProto, opset: int, base_dir: str, *, expand_functions: bool = False
) -> SparseConversion | None:
    """Convert `proto` (checked, with inferred value types) to `opset` in place, as
    ConvertToOpsetPass would convert the whole model. External tensors are read lazily
    from `base_dir`. Returns None, having changed nothing, when the model needs the full
    path. Raises what ConvertToOpsetPass raises."""
    check_target_opset(opset)
    source = default_opset(proto)
    graph = proto.graph
    if source is None or not _eligible(proto):
        return None
    nodes = list(graph.node)
    changing, kept = _changing_nodes(graph, nodes, source, opset)
    # The family nodes kept as they are: listed as relabelled, as ConvertFamilyPass lists
    # them on the full path (before splicing, which overwrites NodeProtos of `nodes`).
    relabelled = {
        i: OtherOpConversion(
            "main graph",
            node_label(nodes[i]),
            nodes[i].op_type,
            schema_version(nodes[i].op_type, source),
            schema_version(nodes[i].op_type, opset),
            RELABELLED,
        )
        for i in sorted(kept)
    }
    result = _convert_changing(proto, nodes, changing, opset, base_dir, expand_functions)
    if result is not None and relabelled:
        result.conversions = _in_node_order(result.conversions, nodes, relabelled)
    return result


def _convert_changing(
    proto: onnx.ModelProto,
    nodes: list[onnx.NodeProto],
    changing: set[int],
    opset: int,
    base_dir: str,
    expand_functions: bool,
) -> SparseConversion | None:
    # Nodes that convert alike: the first of each group goes through onnx_ir, the others
    # copy its result (maxlower.replay). A group whose first result cannot be copied (a
    # node replaced by several, Softmax 11 -> 13) goes through onnx_ir node by node in a
    # second small model, where the other groups are still copied; if copying fails there
    # too, or for a reason no group can help, every node goes through onnx_ir.
    graph = proto.graph
    alike = signature_groups(graph, nodes, sorted(changing)) if len(changing) > 1 else {}
    for _ in range(2):
        if not alike:
            break
        followers = {i for others in alike.values() for i in others}
        small = _SmallConversion.convert_in_small_model(
            proto, nodes, changing - followers, opset, base_dir, expand_functions
        )
        if small is None:
            return None
        found = small.copies(nodes, alike)
        if found is None:
            break
        copies, uncopied = found
        if not uncopied:
            return small.splice(proto, nodes, copies)
        alike = {first: others for first, others in alike.items() if first not in uncopied}
    small = _SmallConversion.convert_in_small_model(
        proto, nodes, changing, opset, base_dir, expand_functions
    )
    return None if small is None else small.splice(proto, nodes, {})


def _in_node_order(
    conversions: list[OtherOpConversion],
    nodes: list[onnx.NodeProto],
    placed: dict[int, OtherOpConversion] | None = None,
) -> list[OtherOpConversion]:
    """`conversions`, each at its node's place (by label; unknown labels last), and the
    `placed` entries ({node index: entry}), in graph order (a stable sort)."""
    position: dict[str, int] = {}
    for i, node in enumerate(nodes):
        position.setdefault(node_label(node), i)
    pairs = [(position.get(c.node, len(nodes)), c) for c in conversions]
    pairs += (placed or {}).items()
    return [c for _, c in sorted(pairs, key=lambda pair: pair[0])]


@dataclasses.dataclass
class _SmallConversion:
    """Some of a graph's nodes, converted in a small onnx_ir model, not spliced back yet."""

    indices: list[int]  # the nodes the small model holds, in graph order
    partial: onnx.ModelProto
    model: ir.Model
    originals: list[ir.Node]  # those nodes in onnx_ir, as they were deserialised
    groups: list[list[ir.Node]]  # what stands where each of them stood now
    initial: dict[str, ir.TensorProtocol]
    typed_before: dict[str, tuple]
    rewrites: list[Rewrite]  # in graph order
    conversions: list[OtherOpConversion]  # in graph order

    @classmethod
    def convert_in_small_model(
        cls,
        proto: onnx.ModelProto,
        nodes: list[onnx.NodeProto],
        changing: set[int],
        opset: int,
        base_dir: str,
        expand_functions: bool,
    ) -> _SmallConversion | None:
        indices, partial, typing = _partial_model(proto, nodes, changing)
        model = deserialize(partial)
        _type_values(model.graph, typing)
        set_base_dirs(model, base_dir)  # initializers and a Constant's value alike
        originals = list(model.graph)
        anchors = [_anchor_after(model.graph, node) for node in originals]
        boundary = _boundary(model)
        initial = {name: value.const_value for name, value in model.graph.initializers.items()}
        typed_before = {
            value.name: (value, value.type, value.shape)
            for node in originals
            for value in node.outputs
        }
        # Only the small model's nodes can be rewritten, and it holds them in graph order.
        # New names must be fresh against the whole graph, not only the small model.
        result = ConvertToOpsetPass(
            opset, expand_functions=expand_functions, reserved_names=lambda: proto_names(proto)
        )(model)
        rewrites = in_graph_order(result.rewrites, family_nodes_of_graph_proto(partial.graph.node))
        groups = _groups(model.graph, anchors)
        if groups is None or not _boundary_kept(model, boundary):
            return None
        return cls(
            indices,
            partial,
            model,
            originals,
            groups,
            initial,
            typed_before,
            rewrites,
            result.conversions,
        )

    def copies(
        self, nodes: list[onnx.NodeProto], alike: dict[int, list[int]]
    ) -> tuple[dict[int, tuple[onnx.NodeProto, list[_Step]]], set[int]] | None:
        """({index: (converted node, its report entries)} for the nodes that copy the first
        of their group, set()); or ({}, {first index of each group whose first node's
        conversion cannot be copied}); or None if no copy can be made (a result every group
        may depend on)."""
        now = self.model.graph.initializers
        if any(name in now and now[name].const_value is not t for name, t in self.initial.items()):
            return None  # an initializer replaced: copies might have to follow
        # Constants a node may stop reading (they become attributes): initializers the
        # small model held, but not those that are also graph inputs (default values).
        graph_inputs = {v.name for v in self.model.graph.inputs}
        droppable = {name for name in self.initial if name not in graph_inputs}
        position = {i: k for k, i in enumerate(self.indices)}
        for i, k in position.items():  # the Constant nodes that feed them stay as they are
            if nodes[i].op_type == "Constant" and self.groups[k] != [self.originals[k]]:
                return None
        new_initializers = set(now) - set(self.initial)

        def unchanged(value: ir.Value) -> bool:
            old = self.typed_before.get(value.name)
            return old is not None and old == (value, value.type, value.shape)

        templates, uncopied = {}, set()
        for first in alike:
            k = position[first]
            template = Template.of(
                nodes[first],
                self.originals[k],
                self.groups[k],
                new_initializers,
                unchanged,
                droppable,
            )
            if template is None:
                uncopied.add(first)
            else:
                templates[first] = template
        if uncopied:  # (the caller converts again: copies made now would be thrown away)
            return {}, uncopied
        steps_of: dict[str, list[_Step]] = {}
        for step in [*self.rewrites, *self.conversions]:
            steps_of.setdefault(step.node, []).append(step)
        copies = {}
        for first, others in alike.items():
            template = templates[first]
            steps = steps_of.get(node_label(self.originals[position[first]]), [])
            for i in others:
                other = template.apply(nodes[i])
                copies[i] = (other, [dataclasses.replace(r, node=node_label(other)) for r in steps])
        return copies, uncopied

    def splice(
        self,
        proto: onnx.ModelProto,
        nodes: list[onnx.NodeProto],
        copies: dict[int, tuple[onnx.NodeProto, list[_Step]]],
    ) -> SparseConversion:
        graph = proto.graph
        rewrites, conversions = self.rewrites, self.conversions
        if copies:  # (before splicing, which renames the nodes of `nodes` it replaces)
            steps = [r for _, copied in copies.values() for r in copied]
            copied_rewrites = [r for r in steps if isinstance(r, Rewrite)]
            rewrites = in_graph_order(
                [*rewrites, *copied_rewrites], family_nodes_of_graph_proto(nodes)
            )
            copied_conversions = [c for c in steps if isinstance(c, OtherOpConversion)]
            conversions = _in_node_order([*conversions, *copied_conversions], nodes)
        replaced = {
            i: [ir.serde.serialize_node(n) for n in group]
            for i, group in zip(self.indices, self.groups)
        }
        replaced.update((i, [node]) for i, (node, _) in copies.items())
        # (before splicing, which overwrites the NodeProtos of `nodes` it replaces)
        stopped = {
            name
            for i, group in replaced.items()
            for name in nodes[i].input
            if name and all(name not in node.input for node in group)
        }
        _splice_nodes(graph, nodes, replaced)
        _splice_initializers(graph, self.model.graph, self.initial)
        if stopped:
            _drop_unread_initializers(graph, stopped)
        _splice_value_info(graph, self.partial, self.model.graph, self.initial, self.typed_before)
        _splice_opsets(proto, self.model)
        proto.ir_version = self.model.ir_version
        return SparseConversion(proto, rewrites, conversions, len(self.indices))


def default_opset(proto: onnx.ModelProto) -> int | None:
    """The version of the default-domain import (one entry, once normalised)."""
    return next((o.version for o in proto.opset_import if o.domain in DEFAULT_DOMAINS), None)


def _eligible(proto: onnx.ModelProto) -> bool:
    if len(proto.functions) or len(proto.graph.sparse_initializer):
        return False
    return next(subgraphs(proto.graph), None) is None


def _changing_nodes(
    graph: onnx.GraphProto, nodes: list[onnx.NodeProto], source: int, target: int
) -> tuple[set[int], set[int]]:
    """Default-domain nodes whose schema version differs between the opsets, but for family
    nodes that conversion keeps as they are (a step that only added types, such as
    ReduceMax 20 → 18 on float data): those stay protobuf, untouched, and are the second
    set."""
    differs: dict[str, bool] = {}
    type_only: dict[str, bool] = {}
    changing, judged_by_types = set(), []
    for i, node in enumerate(nodes):
        domain = node.domain
        if domain not in DEFAULT_DOMAINS:
            continue
        op_type = node.op_type
        if op_type not in differs:
            differs[op_type] = schema_version(op_type, source) != schema_version(op_type, target)
        if not differs[op_type]:
            continue
        if op_type not in type_only:
            type_only[op_type] = _type_only_path(op_type, source, target)
        if domain == "" and type_only[op_type]:
            judged_by_types.append(i)
        else:
            changing.add(i)
    if judged_by_types:
        # The model passed the full check, so a family node's output types follow from its
        # input types (T): the inputs' are enough.
        types = _elem_types(graph, {n for i in judged_by_types for n in nodes[i].input})
        kept: dict[tuple, bool] = {}  # a wide graph has few distinct signatures
        for i in judged_by_types:
            node = nodes[i]
            key = (node.op_type, tuple(types.get(n, 0) if n else None for n in node.input))
            if key not in kept:
                kept[key] = _kept_as_is(node.op_type, source, target, key[1])
            if not kept[key]:
                changing.add(i)
    return changing, set(judged_by_types) - changing


def _elem_types(graph: onnx.GraphProto, names: set[str]) -> dict[str, int]:
    """{name: element type} for those of `names` whose element type the graph states."""
    types = {t.name: t.data_type for t in graph.initializer if t.name in names}
    for info in [*graph.value_info, *graph.input]:
        if info.name in names:
            types[info.name] = info.type.tensor_type.elem_type  # 0 if not a tensor
    return types


def _type_only_path(op_type: str, source: int, target: int) -> bool:
    """Whether every step from source to target is type-only (common.type_only) for a
    family op, so that a node's types can show that conversion keeps it."""
    if op_type not in FAMILY:
        return False
    steps = version_path(op_type, schema_version(op_type, source), schema_version(op_type, target))
    return all(getattr(ADAPTERS[op_type, a, b], "type_only", False) for a, b in steps)


def _kept_as_is(op_type: str, source: int, target: int, inputs: tuple) -> bool:
    """registry.kept_as_is on the input element types (0: unknown, None: an omitted
    input), with the outputs typed as the schema types them."""

    names = onnx.TensorProto.DataType.DESCRIPTOR.values_by_number  # (damaged files hold others)

    def type_string(elem_type: int | None) -> str | None:
        if elem_type is None:
            return None
        known = names.get(elem_type) if elem_type else None
        return f"tensor({known.name.lower()})" if known is not None else "?"

    return kept_as_is(
        op_type,
        schema_version(op_type, source),
        schema_version(op_type, target),
        [type_string(t) for t in inputs],
        None,
    )


def _partial_model(
    proto: onnx.ModelProto, nodes: list[onnx.NodeProto], changing: set[int]
) -> tuple[list[int], onnx.ModelProto, dict[str, onnx.ValueInfoProto]]:
    """The indices of the nodes the small model holds (the changing ones and the Constant
    nodes that feed them), the small model, and the types its values are to have."""
    graph = proto.graph
    if not changing:  # nothing goes through onnx_ir: only the opset import changes
        partial = onnx.ModelProto(ir_version=proto.ir_version)
        partial.opset_import.extend(proto.opset_import)
        partial.graph.name = graph.name
        return [], partial, {}
    producer = {}
    for i, node in enumerate(nodes):
        for name in node.output:
            producer[name] = i
    chosen = set(changing)
    for i in changing:
        for name in nodes[i].input:
            j = producer.get(name)
            if (
                j is not None
                and nodes[j].op_type == "Constant"
                and nodes[j].domain in DEFAULT_DOMAINS
            ):
                chosen.add(j)
    indices = sorted(chosen)

    made = {name for i in indices for name in nodes[i].output if name}
    read = [name for i in indices for name in nodes[i].input if name]
    read_outside = {name for i, node in enumerate(nodes) if i not in chosen for name in node.input}
    read_outside.update(v.name for v in graph.output)
    initializers = {t.name: t for t in graph.initializer}
    graph_inputs = {v.name for v in graph.input}
    # value_info last: for a graph output it holds what inference adds to the declared type
    types = {v.name: v for v in graph.input}
    types.update((v.name, v) for v in graph.output)
    types.update((v.name, v) for v in graph.value_info)

    held = list(dict.fromkeys(n for n in read if n in initializers and n not in made))
    inputs = list(
        dict.fromkeys(
            n for n in read if n not in made and (n not in initializers or n in graph_inputs)
        )
    )
    outputs = [n for n in [*made, *held] if n in read_outside]
    partial = onnx.ModelProto(ir_version=proto.ir_version)
    partial.opset_import.extend(proto.opset_import)
    small = partial.graph
    small.name = graph.name
    small.node.extend(nodes[i] for i in indices)
    small.initializer.extend(initializers[n] for n in held)
    # The small model's values are typed after deserialisation (_type_values), not by
    # value_info: deserialising 10,000 equal TypeProtos one by one costs a tenth of a second.
    small.input.extend(onnx.ValueInfoProto(name=n) for n in inputs)
    small.output.extend(onnx.ValueInfoProto(name=n) for n in dict.fromkeys(outputs))
    typing = {n: types[n] for n in [*inputs, *outputs] if n in types}
    typing.update((n, types[n]) for n in made if n in types and n not in read_outside)
    # An initializer the small model holds and also returns (the rest of the graph reads it)
    # would lose its type to the untyped output ValueInfoProto: it gets its tensor's.
    typing.update(
        (n, _tensor_value_info(initializers[n])) for n in outputs if n in held and n not in typing
    )
    return indices, partial, typing


def _tensor_value_info(tensor: onnx.TensorProto) -> onnx.ValueInfoProto:
    return onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims))


def _type_values(graph: ir.Graph, typing: dict[str, onnx.ValueInfoProto]) -> None:
    """Give the small model's values the types and shapes of their ValueInfoProtos, as
    deserialising them would, deserialising each distinct TypeProto once."""
    values = {v.name: v for v in graph.inputs}
    values.update(graph.initializers)
    values.update((v.name, v) for node in graph for v in node.outputs)
    cache: dict[bytes, tuple] = {}
    for name, info in typing.items():
        value = values.get(name)
        if value is None:
            continue
        if info.doc_string or len(info.metadata_props):
            ir.serde.deserialize_value_info_proto(info, value)
            continue
        key = info.type.SerializeToString()
        if key not in cache:
            cache[key] = (
                ir.serde.deserialize_type_proto_for_type(info.type),
                ir.serde.deserialize_type_proto_for_shape(info.type),
            )
        type_, shape = cache[key]
        # Each value its own objects: onnx_ir changes a type in place when a value's dtype
        # is set, and a shape when it is refined.
        plain = type(type_) is ir.TensorType and type_.denotation is None
        value.type = ir.TensorType(type_.dtype) if plain else copy.copy(type_)
        value.shape = None if shape is None else shape.copy()


def _anchor_after(graph: ir.Graph, node: ir.Node) -> ir.Node:
    anchor = ir.Node(ANCHOR_DOMAIN, "Anchor", inputs=[], num_outputs=0)
    graph.insert_after(node, anchor)
    return anchor


def _boundary(model: ir.Model) -> tuple[list[tuple[ir.Value, str]], list[str]]:
    """What the rest of the graph relies on: graph inputs by identity and name, graph
    outputs by name and position."""
    graph = model.graph
    return [(v, v.name) for v in graph.inputs], [v.name for v in graph.outputs]


def _boundary_kept(model: ir.Model, boundary) -> bool:
    inputs, outputs = boundary
    graph = model.graph
    if len(graph.inputs) != len(inputs) or [v.name for v in graph.outputs] != outputs:
        return False
    return all(a is b and a.name == name for a, (b, name) in zip(graph.inputs, inputs))


def _groups(graph: ir.Graph, anchors: list[ir.Node]) -> list[list[ir.Node]] | None:
    """The nodes between consecutive anchors: what stands, after conversion, where each
    original node stood. None if a pass put a node after the last anchor or moved one."""
    groups: list[list[ir.Node]] = [[] for _ in anchors]
    position = {id(anchor): k for k, anchor in enumerate(anchors)}
    current: list[ir.Node] = []
    seen = 0
    for node in graph:
        k = position.get(id(node))
        if k is None:
            current.append(node)
            continue
        if k != seen:
            return None
        groups[k], current = current, []
        seen += 1
    if current or seen != len(anchors):
        return None
    return groups  # (the small model, anchors and all, is thrown away)


def _splice_nodes(
    graph: onnx.GraphProto,
    nodes: list[onnx.NodeProto],
    replaced: dict[int, list[onnx.NodeProto]],
) -> None:
    """Put what stands in each replaced node's place there, in graph order."""
    if all(len(group) == 1 for group in replaced.values()):  # one for one: in place
        for i, (node,) in replaced.items():
            graph.node[i].CopyFrom(node)
        return
    result: list[onnx.NodeProto] = []
    for i, node in enumerate(nodes):
        group = replaced.get(i)
        if group is None:
            result.append(node)
        else:
            result.extend(group)
    del graph.node[:]
    graph.node.extend(result)


def _splice_initializers(
    graph: onnx.GraphProto, small: ir.Graph, initial: dict[str, ir.TensorProtocol]
) -> None:
    """Drop the initializers the passes removed, replace those they changed, append the
    ones they made (onnx_ir appends new initializers too)."""
    now = small.initializers
    changed = {
        name: now[name].const_value
        for name, tensor in initial.items()
        if name in now and now[name].const_value is not tensor
    }
    removed = {name for name in initial if name not in now}
    if removed or changed:
        for i in reversed(range(len(graph.initializer))):
            name = graph.initializer[i].name
            if name in removed:
                del graph.initializer[i]
            elif name in changed:
                graph.initializer[i].CopyFrom(ir.serde.serialize_tensor(changed[name]))
    graph.initializer.extend(
        ir.serde.serialize_tensor(value.const_value)
        for name, value in now.items()
        if name not in initial and value.const_value is not None
    )


def _drop_unread_initializers(graph: onnx.GraphProto, names: set[str]) -> None:
    """Remove the initializers among `names` that no node and no graph output reads any
    more, as the passes remove a constant only the converted node used (a copied
    conversion stops reading its own copy of it)."""
    read = {name for node in graph.node for name in node.input}
    read.update(v.name for v in graph.output)
    inputs = {v.name for v in graph.input}
    unread = {name for name in names if name not in read and name not in inputs}
    if not unread:
        return
    kept = [t for t in graph.initializer if t.name not in unread]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    infos = [v for v in graph.value_info if v.name not in unread]
    del graph.value_info[:]
    graph.value_info.extend(infos)


def _splice_value_info(
    graph: onnx.GraphProto,
    partial: onnx.ModelProto,
    small: ir.Graph,
    initial: dict[str, ir.TensorProtocol],
    typed_before: dict[str, tuple],
) -> None:
    """value_info and graph outputs as onnx_ir would write them: no value_info for values
    that are gone, the passes' types for the values the small model's nodes make. Entries
    of values that kept their object, type and shape are left as they are."""
    before = {name for node in partial.graph.node for name in node.output} | set(initial)
    made = {}
    for node in small:
        for value in node.outputs:
            if value.name:
                made[value.name] = value
    outputs = {v.name for v in graph.output}
    gone = before - set(made) - set(small.initializers)

    def changed(name: str, value: ir.Value) -> bool:
        old = typed_before.get(name)
        return old is None or old[0] is not value or old[1:] != (value.type, value.shape)

    # Graph outputs stay as the model declares them (maxlower.io.check_and_infer).
    retyped = {
        name: value for name, value in made.items() if name not in outputs and changed(name, value)
    }
    if not gone and not retyped:
        return
    entries = [v for v in graph.value_info if v.name not in gone and v.name not in retyped]
    entries += [
        ir.serde.serialize_value(value) for value in retyped.values() if value.type is not None
    ]
    del graph.value_info[:]
    graph.value_info.extend(entries)


def _splice_opsets(proto: onnx.ModelProto, model: ir.Model) -> None:
    versions = dict(model.opset_imports)
    for entry in proto.opset_import:
        if entry.domain in versions:
            entry.version = versions.pop(entry.domain)
    for domain, version in versions.items():
        proto.opset_import.add(domain=domain, version=version)


__all__ = ["SparseConversion", "convert_sparse"]
