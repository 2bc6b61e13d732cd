"""Apply one decomposition to one node, and bring the family nodes it emits to the opset.

A decomposition may reuse a version adapter (the run-time-axes form of ReduceMax, the
reversal of ArgMax's select_last_index) that writes family nodes at an older schema version
(ReduceMax-13 with an `axes` attribute, ArgMax-11). Those are walked to the model's opset
through `passes.version`'s adapters, exactly as `ConvertFamilyPass` walks them, so every node
left behind is valid at the opset.
"""

from __future__ import annotations

import collections

import onnx_ir as ir

from passes.builder import Builder, schema_version
from passes.decompose.common import Decomposition
from passes.names import Namer
from passes.version.registry import ADAPTERS, version_path


def apply_decomposition(
    node: ir.Node,
    decomposition: Decomposition,
    opset: int,
    *,
    in_function: bool = False,
    namer: Namer | None = None,
) -> str | None:
    """Rewrite `node` (in its graph) with `decomposition` at `opset`, in place.

    Returns what was done, or None when the decomposition does not apply (nothing changed).
    Raises ConversionError when it applies but has no exact form at `opset`; the graph may
    then hold helper nodes without users (the legaliser works on scratch copies).
    """
    namer = namer if namer is not None else Namer.of_graph(node.graph)
    announced: collections.deque[tuple[ir.Node, int]] = collections.deque()

    def builder(anchor: ir.Node) -> Builder:
        return Builder(
            opset,
            anchor,
            culprit=node,
            on_family=lambda n, v: announced.append((n, v)),
            namer=namer,
            in_function=in_function,
        )

    what = decomposition.rewrite(node, builder(node))
    if what is None:
        return None
    while announced:
        family_node, version = announced.popleft()
        target = schema_version(family_node.op_type, opset)
        for step in version_path(family_node.op_type, version, target):
            ADAPTERS[(family_node.op_type, *step)](family_node, builder(family_node))
            if family_node.graph is None:  # replaced; its own new nodes are announced
                break
    return what
