"""Family node giving a graph output → the same node, its output passed on by an Identity.

    ArgMax(x) → out        ⇒   Identity(ArgMax(x)) → out

Exact (Identity copies). For backends that cannot give a graph output from the op itself:
onnxruntime's QNN EP on HTP keeps ArgMax's int64 indices as uint32 inside the graph and so
refuses an ArgMax whose output is a graph output, and runs one that feeds another node.
Applies only to a node with one output that is a graph output. One table-driven rewrite for
each op of the family (FAMILY_OPS below; the Min family adds its ops there).
"""

from __future__ import annotations

import onnx_ir as ir

from passes.builder import Builder
from passes.decompose.common import Decomposition, current_version, snake_case
from passes.extremum import FAMILIES
from passes.graph_utils import replace_node

# op -> the prefix of its decompositions' names, for both families
FAMILY_OPS = {op: snake_case(op) for family in FAMILIES for op in family.ops}


def output_through_identity(node: ir.Node, b: Builder) -> str | None:
    if len(node.outputs) != 1 or not node.outputs[0].is_graph_output():
        return None
    attributes = {name: attr.value for name, attr in node.attributes.items()}
    value = b.op(
        node.op_type,
        list(node.inputs),
        attributes,
        family_version=current_version(node.op_type, b.opset),
        dtype=node.outputs[0].dtype,
    )
    replace_node(node, b.op("Identity", [value]))
    return f"{node.op_type} whose graph output an Identity passes on"


DECOMPOSITIONS = [
    Decomposition(
        f"{prefix}_output_through_identity",
        op,
        output_through_identity,
        f"{op}(x) giving a graph output → Identity({op}(x))",
    )
    for op, prefix in FAMILY_OPS.items()
]
