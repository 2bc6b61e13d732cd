"""What `maxlower inspect` reports: the Max- and Min-family nodes of a model
(maxlower.family_nodes) and, for a target opset, what conversion would do to each of them
(computed on a copy; the model is not changed)."""

from __future__ import annotations

import dataclasses

import onnx

from maxlower.check import op_counts
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


@dataclasses.dataclass(frozen=True)
class OpUse:
    """One op of a model: its domain (\"\" for ai.onnx), the version of its schema at the
    model's opset of that domain (None where onnx.defs has none), and its node count."""

    op: str
    domain: str
    version: int | None
    count: int

    def label(self) -> str:
        name = f"{self.domain}::{self.op}" if self.domain else self.op
        return name + (f"-{self.version}" if self.version is not None else "")


def op_inventory(model: onnx.ModelProto) -> list[OpUse]:
    """Every op of `model` (the main graph, subgraphs and local functions, as
    `maxlower.check.op_counts` counts them), most used first, with its schema version."""
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    uses = []
    for key, count in op_counts(model).items():
        domain, _, op = key.rpartition("::")
        uses.append(OpUse(op, domain, _schema_version(op, domain, opsets.get(domain)), count))
    return sorted(uses, key=lambda use: (-use.count, use.domain, use.op))


def _schema_version(op: str, domain: str, opset: int | None) -> int | None:
    if opset is None:
        return None
    try:
        return onnx.defs.get_schema(op, opset, domain).since_version
    except onnx.defs.SchemaError:
        return None


__all__ = [
    "FamilyNode",
    "OpUse",
    "Plan",
    "family_nodes",
    "in_graph_order",
    "op_inventory",
    "plan_conversion",
]
