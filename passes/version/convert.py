"""ConvertFamilyPass: bring every Max / ReduceMax / ArgMax node, and every Min / ReduceMin /
ArgMin node, to a target opset.

    Max-8(a, b) at opset 8, target 13   →  Max-13(a, b)
    ReduceMax-18(x, axes) at 18, target 13  →  ReduceMax-13(x) {axes=[...]}
    ArgMax-13(x){select_last_index=1}, target 11  →  Slice(step -1) → ArgMax-11 → n-1-index

The pass walks the main graph, every subgraph (If/Loop/Scan bodies and GRAPHS attributes)
and every model-local function. A node moves one schema version at a time, through the
adapters in `passes.version.registry`; an adapter may hand back new family nodes (say, the
ReduceMax inside an exact bool form), and those are walked to the target in turn. Helper ops
are written directly at the target opset by `passes.builder.Builder`.

Preconditions: value types and ranks are known where an adapter depends on them (run shape
inference first; `maxlower.convert` does). Other ops of the default domain are not touched
here; `ConvertOtherOpsPass` (passes/version/other_ops.py) brings them to the target.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import TYPE_CHECKING

import onnx_ir as ir

from passes.builder import FAMILY, Builder, schema_version
from passes.function_attrs import unchanged_for_every_call, unresolved_reference
from passes.graph_utils import (
    containers,
    drop_trailing_omitted_inputs,
    node_label,
    subgraph_place,
)
from passes.names import Namer
from passes.version.registry import ADAPTERS, version_path


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """One adapter step that changed a node, for summaries and `inspect`."""

    where: str
    node: str
    op_type: str
    from_version: int
    to_version: int
    what: str


@dataclasses.dataclass
class FamilyResult(ir.passes.PassResult):
    """ConvertFamilyPass's result: the model, whether it changed, and each adapter step
    that changed a node, in the order they were made."""

    rewrites: list[Rewrite] = dataclasses.field(default_factory=list)
    # The model's family nodes whose schema version changed with no step changing them
    # (type-only steps: ReduceMax-18 without axes to 11, say): one entry each, `what` empty,
    # so that summaries list them as relabelled, as they list the other ops.
    relabelled: list[Rewrite] = dataclasses.field(default_factory=list)


class ConvertFamilyPass(ir.passes.InPlacePass):
    """Convert both families to `target_opset` exactly, or raise ConversionError.

    It moves the default-domain opset import of each graph and function to the target
    (ConvertToOpsetPass, which runs it, owns the import and normalises it)."""

    def __init__(self, target_opset: int, *, namer: Namer | None = None) -> None:
        """`namer`: where new names come from (default: one that knows the model's)."""
        super().__init__()
        self.target_opset = target_opset
        self.namer = namer

    if TYPE_CHECKING:  # onnx_ir's __call__ returns what `call` returns: say so to type checkers

        def __call__(self, model: ir.Model | ir.passes.PassResult, /) -> FamilyResult: ...

    def call(self, model: ir.Model) -> FamilyResult:
        result = FamilyResult(model, False)
        namer = self.namer if self.namer is not None else Namer.of_model(model)
        for where, container, opsets in containers(model):
            source = opsets.get("")
            if source is None:
                continue
            result.modified |= self._convert_container(where, container, source, result, namer)
            if source != self.target_opset:
                opsets[""] = self.target_opset
                result.modified = True
        return result

    def _convert_container(
        self, where: str, container, source_opset: int, result: FamilyResult, namer: Namer
    ) -> bool:
        worklist, places = _family_nodes_and_places(
            where, container, source_opset, self.target_opset
        )
        originals = {id(node) for node, _ in worklist}  # (not the nodes adapters make)
        constants: dict = {}
        modified = False
        while worklist:
            node, version = worklist.popleft()
            place = places.get(id(node.graph), where)
            target_version = schema_version(node.op_type, self.target_opset)
            steps = version_path(node.op_type, version, target_version)
            relabel = Rewrite(place, node_label(node), node.op_type, version, target_version, "")
            adapters = [ADAPTERS[(node.op_type, *step)] for step in steps]
            type_only = all(getattr(a, "type_only", False) for a in adapters)
            if not type_only:  # (type-only steps keep the node as it is, "" inputs too)
                modified |= drop_trailing_omitted_inputs(node)
            refusal = unresolved_reference(node)
            if refusal is not None and not type_only:
                # The steps read attribute values: fine if none changes the node for any
                # value the calls give, else no one form fits every call.
                if not unchanged_for_every_call(node, adapters, self.target_opset):
                    raise refusal
                if id(node) in originals:
                    result.relabelled.append(relabel)
                continue
            changed = False
            for from_version, to_version in steps:
                builder = Builder(
                    self.target_opset,
                    node,
                    culprit=node,
                    on_family=lambda n, v: worklist.append((n, v)),
                    namer=namer,
                    in_function=isinstance(container, ir.Function),
                    constants=constants,
                )
                what = ADAPTERS[node.op_type, from_version, to_version](node, builder)
                if what:
                    modified = changed = True
                    result.rewrites.append(
                        Rewrite(
                            place, node_label(node), node.op_type, from_version, to_version, what
                        )
                    )
                if node.graph is None:  # replaced: its new family nodes are on the worklist
                    break
            if not changed and id(node) in originals:
                result.relabelled.append(relabel)
        return modified


def _family_nodes_and_places(
    where: str, container, source_opset: int, target_opset: int
) -> tuple[collections.deque, dict[int, str]]:
    """In one walk of the container and its subgraphs (on 20,000 nodes each walk costs a
    tenth of a second): the family nodes whose schema version differs at the target, with
    that version, in graph order so that rewrites are reported in that order (the others
    have no step to take), and {id(subgraph): "main graph > If 'pick' > then_branch"}
    for every body inside."""
    worklist: collections.deque = collections.deque()
    places: dict[int, str] = {}

    def walk(graph, place: str) -> None:
        for node in graph:
            if node.domain == "" and node.op_type in FAMILY:
                version = schema_version(node.op_type, source_opset)
                if version != schema_version(node.op_type, target_opset):
                    worklist.append((node, version))
            for attr in node.attributes.values():
                if attr.type == ir.AttributeType.GRAPH:
                    inner = places[id(attr.value)] = subgraph_place(place, node, attr.name)
                    walk(attr.value, inner)
                elif attr.type == ir.AttributeType.GRAPHS:
                    for i, graph_i in enumerate(attr.value):
                        inner = places[id(graph_i)] = subgraph_place(place, node, attr.name, i)
                        walk(graph_i, inner)

    walk(container, where)
    return worklist, places


__all__ = ["ConvertFamilyPass", "FamilyResult", "Rewrite"]
