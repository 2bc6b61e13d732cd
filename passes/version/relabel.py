"""RelabelOtherOpsPass: check that every non-family default-domain node is valid at the target.

    Relu-14(x) in a model moved to opset 13  →  Relu-13(x)   (the node is accepted as it is)
    Squeeze-13(x, axes) moved to opset 11    →  ConversionError (axes must become an attribute)

Changing the model's opset import relabels every node at once; this pass makes sure that is
exact for the nodes outside the Max family. A node is accepted when the target version's
schema accepts its attributes and input/output counts (`onnx.checker.check_node`) and the
op's meaning did not change between the two versions. Anything else is refused with the
range of opsets the node could go to.

This is deliberately conservative: whole-model conversion of other ops (adapters,
function-body expansion, onnx.version_converter) is a separate capability.
"""

from __future__ import annotations

import onnx
import onnx_ir as ir

from passes.builder import FAMILY, schema_version
from passes.errors import ConversionError
from passes.graph_utils import containers, node_label

# Versions whose meaning changed while the signature stayed the same, so that relabelling
# across them would silently change results: (op, first version with the new meaning).
_SILENT_SEMANTIC_CHANGES = {
    ("Softmax", 13),
    ("LogSoftmax", 13),
    ("Hardmax", 13),  # coerce-to-2D became per-axis
}


class RelabelOtherOpsPass(ir.passes.InPlacePass):
    """Refuse a target opset at which some other node would be invalid or change meaning."""

    def __init__(self, target_opset: int, source_opsets: dict[int, int] | None = None) -> None:
        """`source_opsets` ({id(graph or function): opset}, from `source_opsets_of`) lets the
        pass run after ConvertFamilyPass has already moved the opset imports."""
        super().__init__()
        self.target_opset = target_opset
        self.source_opsets = source_opsets or {}

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        for _, container, opsets in containers(model):
            source = self.source_opsets.get(id(container), opsets.get(""))
            if source is None or source == self.target_opset:
                continue
            for node in ir.traversal.RecursiveGraphIterator(container):
                if node.domain == "" and node.op_type not in FAMILY:
                    self._check(node, source, model.ir_version)
        return ir.passes.PassResult(model, False)

    def _check(self, node: ir.Node, source: int, ir_version: int) -> None:
        old, new = (
            schema_version(node.op_type, source),
            schema_version(node.op_type, self.target_opset),
        )
        if old == new:
            return
        reason = _why_not_relabel(node, old, new, self.target_opset, ir_version)
        if reason:
            low, high = _opset_range(node.op_type, old)
            raise ConversionError(
                node_label(node),
                node.op_type,
                reason,
                f"a target opset in {low}..{high}, where this node keeps its meaning",
            )


def _why_not_relabel(
    node: ir.Node, old: int | None, new: int | None, target: int, ir_version: int
) -> str | None:
    if new is None:
        return f"{node.op_type} does not exist at opset {target}"
    low, high = sorted((old or 0, new))
    if any(
        op == node.op_type and low < version <= high for op, version in _SILENT_SEMANTIC_CHANGES
    ):
        return f"{node.op_type}'s meaning changed between versions {low} and {high}"
    if any(
        attr.type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS)
        for attr in node.attributes.values()
    ):
        # check_node cannot see outer-scope names from inside a body; the body's own nodes
        # are checked one by one, and the final full check covers the node's structure.
        return None
    proto = ir.serde.serialize_node(node)
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = ir_version
    ctx.opset_imports = {"": target}
    try:
        onnx.checker.check_node(proto, ctx)
    except onnx.checker.ValidationError as error:
        first_line = str(error).strip().splitlines()[0]
        return f"{node.op_type}-{new} does not accept this node ({first_line})"
    return None


def _opset_range(op_type: str, version: int | None) -> tuple[int, int]:
    """The opsets in which `op_type` resolves to schema `version`."""
    latest = onnx.defs.onnx_opset_version()
    inside = [o for o in range(1, latest + 1) if schema_version(op_type, o) == version]
    return (min(inside), max(inside)) if inside else (version or 1, version or 1)


def source_opsets_of(model: ir.Model) -> dict[int, int]:
    """The default-domain opset of the main graph and of each function, by identity."""
    return {id(c): opsets[""] for _, c, opsets in containers(model) if "" in opsets}
