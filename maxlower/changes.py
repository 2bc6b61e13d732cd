"""What a run changed: its stages, the pipeline's records of them, and the rewrite sites
found by comparing the model before and after each stage.

    stages(before, outcome, job)   the stages of a run (conversion, lowering), each with
                                   its model before and after and its records
    sites(before, after, records)  the rewrite sites of one stage
    scopes(model)                  every graph of a model, as the sites read it

The prover (maxlower.prove.sites) proves these sites, and the report (maxlower.report)
draws them: both read the one record here, and neither imports the other.

The passes already say which node they changed and why (`Rewrite`, `OtherOpConversion`,
`Lowering`: where, node, message). What a site looked like is read from the two protobufs
instead of being recorded inside the passes, so the passes stay as they are:

- *before*: the node of that name in the graph the record's `where` names, with its
  inputs and outputs;
- *after*: the nodes that now compute its outputs, followed back until values that
  already existed before. A pass never renames a value a consumer reads, and the names it
  creates are fresh against the whole model (passes.names.Namer), so that cone is the
  replacement and its edge is exactly the values the two drawings share.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import onnx

from passes.graph_utils import subgraph_place

if TYPE_CHECKING:
    from maxlower.pipeline import Job, Outcome, Report

RELABELLED = "relabelled"  # (passes.version.other_ops.RELABELLED: a version change only)


@dataclasses.dataclass
class Scope:
    """One graph of a model (main graph, a function, a subgraph), as the report reads it."""

    where: str
    nodes: list[onnx.NodeProto]
    producer: dict[str, onnx.NodeProto]
    types: collections.ChainMap  # value name -> "float32[2,3]" (outer scopes included)
    inputs: list[str]
    outputs: list[str]
    constants: set[str]  # initializers (and Constant outputs are nodes: drawn as nodes)
    # value name -> its TypeProto, and initializer name -> its TensorProto (outer scopes
    # included): what the prover needs to rebuild a site as a model of its own
    type_protos: collections.ChainMap = dataclasses.field(default_factory=collections.ChainMap)
    tensors: collections.ChainMap = dataclasses.field(default_factory=collections.ChainMap)
    # the inputs of this graph and of every graph around it: an initializer so named is a
    # default a caller may override, never a constant, also where a subgraph reads it
    overridable: frozenset[str] = frozenset()
    # the graph's outputs as the model declares them, where the prover types a scope by
    # inference alone (maxlower.prove.sites._typed_scopes): a site's outputs, as conditions
    declared_outputs: dict = dataclasses.field(default_factory=dict)

    def order(self) -> dict[int, int]:
        """{id(node): its place in the graph}."""
        if not hasattr(self, "_order"):
            self._order = {id(n): k for k, n in enumerate(self.nodes)}
        return self._order

    def labelled(self) -> dict[str, onnx.NodeProto]:
        """{label: the first node so labelled} (as the passes name nodes in records)."""
        if not hasattr(self, "_labelled"):
            self._labelled: dict[str, onnx.NodeProto] = {}
            for node in self.nodes:
                self._labelled.setdefault(node_label(node), node)
        return self._labelled


@dataclasses.dataclass
class Record:
    """One entry of the pipeline's report, in the report's words."""

    where: str
    node: str
    op_type: str
    kind: str  # rewritten, relabelled, adapted, delegated, expanded, lowered
    step: str  # "18→11", or the profile
    message: str


@dataclasses.dataclass
class Site:
    """One rewritten node: its messages, the node before and the nodes after."""

    where: str
    node: str
    op_type: str
    kinds: list[str]
    messages: list[str]
    before: list[onnx.NodeProto]
    after: list[onnx.NodeProto]
    before_types: dict[str, str]
    after_types: dict[str, str]
    inputs: list[str]  # the values both drawings start from, in the node's order
    outputs: list[str]  # the node's outputs (those still computed after)
    new_constants: list[str]  # initializers the rewrite added, read by the after nodes


@dataclasses.dataclass
class Stage:
    """One stage of a job (conversion, lowering): the model before and after, and what
    the pipeline's report says it changed."""

    name: str
    before: onnx.ModelProto
    after: onnx.ModelProto
    records: list[Record]


_LOWERED = "lowered"


def records(report: Report) -> list[Record]:
    """Every entry of the pipeline's report, with its kind, in the report's order."""
    found = []
    for kind, entries in report.kinds().items():
        for entry in entries:
            if kind == _LOWERED:
                step = f"profile {report.profile!r}"
                steps = " → ".join(entry.steps)
                message = f"{entry.rejection}: {steps}, {entry.nodes_after} nodes"
            else:
                to = entry.to_version
                step = f"{entry.from_version}→{to if to is not None else '-'}"
                message = getattr(entry, "what", None) or getattr(entry, "how", None) or kind
            found.append(Record(entry.where, entry.node, entry.op_type, kind, step, message))
    return found


def stages(before: onnx.ModelProto, outcome: Outcome, job: Job) -> list[Stage]:
    """The stages of `job` (conversion, lowering, or both), each with the model it started
    from, the model it gave, and its entries of the pipeline's report."""
    found = records(outcome.report)
    converted = outcome.converted
    if job.opset is not None and job.profile is not None and converted is not None:
        return [
            Stage("conversion", before, converted, [r for r in found if r.kind != _LOWERED]),
            Stage("lowering", converted, outcome.proto, [r for r in found if r.kind == _LOWERED]),
        ]
    name = "conversion" if job.opset is not None else "lowering"
    return [Stage(name, before, outcome.proto, found)]


def node_label(node: onnx.NodeProto) -> str:
    """The name the passes give a node in their records (passes.graph_utils.node_label)."""
    return node.name or f"<unnamed {node.op_type}>"


def scopes(model: onnx.ModelProto) -> dict[str, Scope]:
    """{where: Scope} for every graph of `model`, named as the passes name them
    ("main graph > If 'pick' > then_branch", "function example.local::LastArgMax"):
    passes.graph_utils.subgraph_place, the one naming of places."""
    found: dict[str, Scope] = {}
    _add_scope(found, "main graph", model.graph, _Types())
    for function in model.functions:
        where = f"function {function.domain}::{function.name}"
        _add_scope(found, where, function, _Types())
    for function in model.functions:
        _type_from_calls(found, function)
    return found


def _type_from_calls(found: dict[str, Scope], function: onnx.FunctionProto) -> None:
    """A function's inputs and outputs have no types of their own: the types its calls
    give them, where every call agrees."""
    calls = [
        (scope, node)
        for scope in found.values()
        for node in scope.nodes
        if (node.domain, node.op_type) == (function.domain, function.name)
    ]
    scope = found[f"function {function.domain}::{function.name}"]
    for formals, actual_of in ((function.input, "input"), (function.output, "output")):
        for k, formal in enumerate(formals):
            seen = {
                caller.type_protos[actual].SerializeToString(deterministic=True)
                if actual in caller.type_protos
                else None
                for caller, node in calls
                for actual in getattr(node, actual_of)[k : k + 1]
            }
            if len(seen) == 1 and None not in seen:
                type_proto = onnx.TypeProto.FromString(seen.pop())
                scope.type_protos.maps[0].setdefault(formal, type_proto)
                scope.types.maps[0].setdefault(formal, type_text(type_proto))


@dataclasses.dataclass
class _Types:
    """The types (as text and as TypeProto) and initializers visible in one graph."""

    text: collections.ChainMap = dataclasses.field(default_factory=collections.ChainMap)
    protos: collections.ChainMap = dataclasses.field(default_factory=collections.ChainMap)
    tensors: collections.ChainMap = dataclasses.field(default_factory=collections.ChainMap)

    def inner(self, graph) -> _Types:
        """The types seen in `graph` (a graph or a function), nested in these."""
        protos = {
            v.name: v.type
            for v in [*getattr(graph, "value_info", []), *graph.input, *graph.output]
            if not isinstance(v, str)
        }
        tensors = {t.name: t for t in getattr(graph, "initializer", [])}
        text = {name: type_text(t) for name, t in protos.items()}
        for tensor in tensors.values():
            text.setdefault(tensor.name, _tensor_type(tensor))
            protos.setdefault(tensor.name, _tensor_type_proto(tensor))
        return _Types(
            self.text.new_child(text),
            self.protos.new_child(protos),
            self.tensors.new_child(tensors),
        )


def _add_scope(
    found: dict[str, Scope],
    where: str,
    graph,
    outer: _Types,
    outer_inputs: frozenset[str] = frozenset(),
) -> None:
    initializers = getattr(graph, "initializer", [])
    types = outer.inner(graph)
    inputs = [v if isinstance(v, str) else v.name for v in graph.input]
    overridable = outer_inputs | frozenset(inputs)
    found[where] = Scope(
        where,
        list(graph.node),
        {output: node for node in graph.node for output in node.output if output},
        types.text,
        inputs,
        [v if isinstance(v, str) else v.name for v in graph.output],
        {t.name for t in initializers},
        types.protos,
        types.tensors,
        overridable,
    )
    for node in graph.node:
        for attr in node.attribute:
            subgraphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else []
            if attr.type == onnx.AttributeProto.GRAPHS:
                subgraphs = list(attr.graphs)
            for i, body in enumerate(subgraphs):
                index = i if attr.type == onnx.AttributeProto.GRAPHS else None
                place = subgraph_place(where, node, attr.name, index)
                _add_scope(found, place, body, types, overridable)


def all_value_names(model: onnx.ModelProto) -> set[str]:
    """Every value name of every graph of `model`."""
    names: set[str] = set()
    for scope in scopes(model).values():
        names.update(scope.inputs, scope.outputs, scope.constants, scope.producer)
    return names


def sites(
    before: onnx.ModelProto, after: onnx.ModelProto, records: Iterable[Record]
) -> tuple[list[Site], list[Record]]:
    """The rewrite sites of one stage (every record but a relabelling, grouped by node),
    and the records whose node was not in `before` (made by an earlier step of the same
    stage) nor in any site's replacement: those are listed, not drawn."""
    before_scopes, after_scopes = scopes(before), scopes(after)
    existed = all_value_names(before)
    by_node: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        if record.kind != RELABELLED:
            by_node.setdefault((record.where, record.node), []).append(record)
    found: list[Site] = []
    unplaced: list[Record] = []
    for (where, label), group in by_node.items():
        scope = before_scopes.get(where)
        node = scope.labelled().get(label) if scope else None
        if node is None or where not in after_scopes:
            unplaced += group
            continue
        found.append(_site(node, group, scope, after_scopes[where], existed))
    still_unplaced = []
    for record in unplaced:
        home = next((s for s in found if _holds(s, record)), None) or _maker(found, record)
        if home is None:
            still_unplaced.append(record)
        else:
            home.messages.append(_message(record))
            home.kinds.append(record.kind)
    return found, still_unplaced


def _maker(found: list[Site], record: Record) -> Site | None:
    """The site whose node made the record's node, by the name passes give what they make
    (passes.builder.Builder.fresh: the rewritten node's name, "__", the op, a number),
    when a later step replaced that node too (so no drawing holds it)."""
    makers = [s for s in found if s.where == record.where and record.node.startswith(f"{s.node}__")]
    return max(makers, key=lambda s: len(s.node), default=None)


def _holds(site: Site, record: Record) -> bool:
    return site.where == record.where and any(node_label(n) == record.node for n in site.after)


def _site(
    node: onnx.NodeProto, group: list[Record], before: Scope, after: Scope, existed: set[str]
) -> Site:
    outputs = [o for o in node.output if o and o in after.producer]
    cone, new_constants = replacement(after, outputs, existed)
    return Site(
        where=before.where,
        node=node_label(node),
        op_type=node.op_type,
        kinds=[r.kind for r in group],
        messages=[_message(r) for r in group],
        before=[node],
        after=cone,
        before_types=_types_of([node], before),
        after_types=_types_of(cone, after),
        inputs=[i for i in node.input if i],
        outputs=outputs,
        new_constants=new_constants,
    )


def replacement(
    scope: Scope, outputs: list[str], existed: set[str]
) -> tuple[list[onnx.NodeProto], list[str]]:
    """The nodes of `scope` that compute `outputs` from values in `existed` (in graph
    order), and the initializers they read that are new."""
    chosen: dict[int, onnx.NodeProto] = {}
    constants: list[str] = []
    stack = list(outputs)
    seen: set[str] = set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        producer = scope.producer.get(name)
        if producer is None:
            if name not in existed and name in scope.constants:
                constants.append(name)
            continue
        if id(producer) in chosen:
            continue
        chosen[id(producer)] = producer
        stack += [i for i in producer.input if i and i not in existed]
    order = scope.order()
    return sorted(chosen.values(), key=lambda n: order[id(n)]), sorted(constants)


def _types_of(nodes: list[onnx.NodeProto], scope: Scope) -> dict[str, str]:
    return {
        name: scope.types[name]
        for node in nodes
        for name in [*node.input, *node.output]
        if name and name in scope.types
    }


def _message(record: Record) -> str:
    return f"{record.op_type} {record.step}: {record.message}"


# --- types as text ------------------------------------------------------------------------

_DTYPE_NAMES = {"FLOAT": "float32", "DOUBLE": "float64", "FLOAT16": "float16"}


def dtype_name(elem_type: int) -> str:
    name = onnx.TensorProto.DataType.Name(elem_type)
    return _DTYPE_NAMES.get(name, name.lower())


def type_text(type_proto: onnx.TypeProto) -> str:
    """ "float32[2,N]", "int64[]" (a scalar), "float32" (shape unknown), "seq(...)"."""
    which = type_proto.WhichOneof("value")
    if which == "tensor_type":
        tensor = type_proto.tensor_type
        text = dtype_name(tensor.elem_type)
        if tensor.HasField("shape"):
            dims = [_dim_text(d) for d in tensor.shape.dim]
            text += f"[{','.join(dims)}]"
        return text
    if which == "sequence_type":
        return f"seq({type_text(type_proto.sequence_type.elem_type)})"
    if which == "optional_type":
        return f"optional({type_text(type_proto.optional_type.elem_type)})"
    return which or "?"


def _dim_text(dim: onnx.TensorShapeProto.Dimension) -> str:
    if dim.dim_param:
        return dim.dim_param
    return str(dim.dim_value) if dim.HasField("dim_value") else "?"


def _tensor_type(tensor: onnx.TensorProto) -> str:
    return f"{dtype_name(tensor.data_type)}[{','.join(str(d) for d in tensor.dims)}]"


def _tensor_type_proto(tensor: onnx.TensorProto) -> onnx.TypeProto:
    return onnx.helper.make_tensor_type_proto(tensor.data_type, list(tensor.dims))


def op_counts(model: onnx.ModelProto) -> collections.Counter:
    """Nodes by op type ("domain::Op" outside the default domain), in every graph."""
    return collections.Counter(
        n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}"
        for scope in scopes(model).values()
        for n in scope.nodes
    )


def producers_of(model: onnx.ModelProto, value: str) -> Iterator[tuple[str, onnx.NodeProto]]:
    """(where, node) of every node of `model` whose output is named `value`."""
    for where, scope in scopes(model).items():
        if value in scope.producer:
            yield where, scope.producer[value]
