"""What `maxlower inspect` reports: the Max- and Min-family nodes of a model
(maxlower.family_nodes) and, for a target opset, what conversion would do to each of them
(computed on a copy; the model is not changed)."""

from __future__ import annotations

import dataclasses

import onnx

from maxlower.family_nodes import FamilyNode, family_nodes, in_graph_order
from maxlower.pipeline import Job, run
from passes.errors import ConversionError
from passes.version.convert import Rewrite


@dataclasses.dataclass
class Plan:
    """What converting a copy of the model to `opset` did, or the error it raised."""

    opset: int
    rewrites: list[Rewrite]
    error: ConversionError | None = None

    def rewrites_of(self, node: FamilyNode) -> list[Rewrite]:
        return [r for r in self.rewrites if r.where == node.container and r.node == node.node]

    def other_rewrites(self, nodes: list[FamilyNode]) -> list[Rewrite]:
        """Rewrites of nodes the conversion itself created (e.g. the ArgMax of a reversal)."""
        listed = {(n.container, n.node) for n in nodes}
        return [r for r in self.rewrites if (r.where, r.node) not in listed]


def plan_conversion(prepared: onnx.ModelProto, base_dir: str, opset: int) -> Plan:
    """Convert a copy of `prepared` (what maxlower.pipeline.prepare returns) to `opset`, as
    `maxlower convert` would, and record the outcome.

    InvalidModelError (e.g. an opset out of range) propagates; ConversionError is kept.
    """
    copy = onnx.ModelProto()
    copy.CopyFrom(prepared)
    try:
        return Plan(opset, run(copy, Job(opset), base_dir).report.rewrites)
    except ConversionError as error:
        return Plan(opset, [], error)


__all__ = ["FamilyNode", "Plan", "family_nodes", "in_graph_order", "plan_conversion"]
