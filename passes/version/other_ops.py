"""ConvertOtherOpsPass: bring every non-family default-domain node to the target opset.

    Relu-14(x), model moved to opset 13          →  Relu-13(x)      (relabelled as it is)
    Unsqueeze-13(x, axes=const), moved to 11     →  Unsqueeze-11(x) {axes=[...]}
                                                    (onnx.version_converter, one node)
    Softmax-13(x), moved to 11                   →  ConversionError (meaning changed at 13)

Changing the opset import relabels every node at once. For each node outside the Max family
whose schema version differs between the source and the target, in this order:

1. Relabel: the target schema accepts the node (`onnx.checker.check_node`: attributes and
   input/output counts) and the op's meaning did not change in between.
2. Delegate: the node alone, in a one-node model whose constant inputs are initializers, goes
   through `onnx.version_converter`, and the nodes it returns take its place. Only this node's
   adapters run, so the converter's faults elsewhere (dropped functions, missing adapters for
   other ops) cannot touch the rest of the model.
3. Refuse, naming the opsets where the node keeps its meaning.

Nodes that carry subgraphs (If, Loop, Scan) are relabelled; their bodies are walked like any
graph, and the final full check covers their structure.
"""

from __future__ import annotations

import onnx
import onnx.version_converter
import onnx_ir as ir

from passes.builder import FAMILY, schema_version
from passes.errors import ConversionError
from passes.graph_utils import containers, node_label, remove_if_orphaned

# Versions whose meaning changed while the signature stayed the same, so that relabelling
# across them would silently change results: (op, first version with the new meaning).
_SILENT_SEMANTIC_CHANGES = {
    ("Softmax", 13),
    ("LogSoftmax", 13),
    ("Hardmax", 13),  # coerce-to-2D became per-axis
}


class ConvertOtherOpsPass(ir.passes.InPlacePass):
    """Relabel, delegate one node at a time, or refuse: never a node that changes meaning."""

    def __init__(self, target_opset: int, source_opsets: dict[int, int] | None = None) -> None:
        """`source_opsets` ({id(graph or function): opset}, from `source_opsets_of`) lets the
        pass run after ConvertFamilyPass has already moved the opset imports."""
        super().__init__()
        self.target_opset = target_opset
        self.source_opsets = source_opsets or {}

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        for _, container, opsets in containers(model):
            source = self.source_opsets.get(id(container), opsets.get(""))
            if source is None or source == self.target_opset:
                continue
            for node in list(ir.traversal.RecursiveGraphIterator(container)):
                if node.domain == "" and node.op_type not in FAMILY:
                    modified |= self._convert(node, source, model.ir_version)
        return ir.passes.PassResult(model, modified)

    def _convert(self, node: ir.Node, source: int, ir_version: int) -> bool:
        old = schema_version(node.op_type, source)
        new = schema_version(node.op_type, self.target_opset)
        if old == new:
            return False
        reason = _why_not_relabel(node, old, new, self.target_opset, ir_version)
        if reason is None:
            return False
        if new is not None and not _changes_meaning(node.op_type, old, new):
            delegated = _delegate_to_version_converter(node, source, self.target_opset)
            if delegated is None:
                return True
            reason = f"{reason}; onnx.version_converter: {delegated}"
        low, high = _opset_range(node.op_type, old)
        raise ConversionError(
            node_label(node),
            node.op_type,
            reason,
            f"a target opset in {low}..{high}, where this node keeps its meaning",
        )


def _changes_meaning(op_type: str, old: int | None, new: int) -> bool:
    low, high = sorted((old or 0, new))
    return any(op == op_type and low < v <= high for op, v in _SILENT_SEMANTIC_CHANGES)


def _why_not_relabel(
    node: ir.Node, old: int | None, new: int | None, target: int, ir_version: int
) -> str | None:
    if new is None:
        return f"{node.op_type} does not exist at opset {target}"
    if _changes_meaning(node.op_type, old, new):
        return f"{node.op_type}'s meaning changed between versions {old} and {new}"
    if any(
        attr.type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS)
        for attr in node.attributes.values()
    ):
        # check_node cannot see outer-scope names from inside a body; the body's own nodes
        # are checked one by one, and the final full check covers the node's structure.
        return None
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = ir_version
    ctx.opset_imports = {"": target}
    try:
        onnx.checker.check_node(ir.serde.serialize_node(node), ctx)
    except onnx.checker.ValidationError as error:
        first_line = str(error).strip().splitlines()[0]
        return f"{node.op_type}-{new} does not accept this node as it is ({first_line})"
    return None


def _delegate_to_version_converter(node: ir.Node, source: int, target: int) -> str | None:
    """Convert `node` alone with onnx.version_converter and splice the result in its place.
    Returns None on success, else why it failed (the node is then left untouched)."""
    try:
        converted = onnx.version_converter.convert_version(_one_node_model(node, source), target)
        onnx.checker.check_model(converted, full_check=True)
    except Exception as error:  # the converter raises RuntimeError, ValidationError, ...
        return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    _splice(node, ir.serde.deserialize_model(converted))
    return None


def _one_node_model(node: ir.Node, source: int) -> onnx.ModelProto:
    inputs, initializers = [], []
    for value in node.inputs:
        if value is None:
            continue
        tensor = ir.convenience.get_const_tensor(value)
        if tensor is not None:
            initializers.append(onnx.numpy_helper.from_array(tensor.numpy(), value.name))
        else:
            inputs.append(ir.serde.serialize_value(value))
    graph = onnx.helper.make_graph(
        [ir.serde.serialize_node(node)],
        "one_node",
        inputs,
        [ir.serde.serialize_value(v) for v in node.outputs],
        initializer=initializers,
    )
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", source)])


def _splice(node: ir.Node, converted: ir.Model) -> None:
    """Put the converted one-node model's nodes where `node` was, wired to its values."""
    outer = {v.name: v for v in node.inputs if v is not None}
    graph = node.graph
    new_nodes = list(converted.graph)
    for value in list(converted.graph.inputs) + list(converted.graph.initializers.values()):
        if value.name in outer:
            ir.convenience.replace_all_uses_with(value, outer[value.name])
        elif value.const_value is not None:  # a constant the converter introduced
            value.name = f"{node_label(node)}__{value.name}"
            graph.register_initializer(value)
    converted.graph.initializers.clear()
    new_outputs = list(converted.graph.outputs)
    converted.graph.outputs.clear()
    for new_node in new_nodes:
        converted.graph.remove(new_node)
        for value in new_node.outputs:  # the converter's own names (_v_4) may repeat
            value.name = f"{node_label(node)}__{value.name}"
    graph.insert_before(node, new_nodes)
    for old_output, new_output in zip(node.outputs, new_outputs, strict=True):
        name = old_output.name
        ir.convenience.replace_all_uses_with(old_output, new_output, replace_graph_outputs=True)
        new_output.name = name
    graph.remove(node, safe=True)
    remove_if_orphaned(graph, *outer.values())


def _opset_range(op_type: str, version: int | None) -> tuple[int, int]:
    """The opsets in which `op_type` resolves to schema `version`."""
    latest = onnx.defs.onnx_opset_version()
    inside = [o for o in range(1, latest + 1) if schema_version(op_type, o) == version]
    return (min(inside), max(inside)) if inside else (version or 1, version or 1)


def source_opsets_of(model: ir.Model) -> dict[int, int]:
    """The default-domain opset of the main graph and of each function, by identity."""
    return {id(c): opsets[""] for _, c, opsets in containers(model) if "" in opsets}
