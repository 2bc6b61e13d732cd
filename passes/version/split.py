"""Split across opset 13, where `split` moved from an attribute to an input, both ways.
(Opset 18's num_outputs is in other_adapters.py; its adapters run first.)

    Split-11(x){split=[2, 3]}, to ≥ 13              →  Split(x, int64 initializer [2, 3])
    Split-13(x, constant split), to ≤ 12           →  Split(x){split}
    Split-13(x, run-time split), to 10..12         →  output k = Slice(x, s_k, s_k + split[k],
                                                      axis), s_0 = 0, s_k+1 = s_k + split[k]
                                                      (N outputs: N Slices, no Split)
    Split-13(x){axis=-1}, to ≤ 10                   →  axis + rank (needs the rank)
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.graph_utils import remove_if_orphaned, require_rank
from passes.version import common
from passes.version.attribute_inputs import (
    Moved,
    adapter,
    attribute_to_input,
    input_to_attribute,
)

DT = ir.DataType
_SINCE = 13


def _runtime_split(node: ir.Node, b: Builder, split: ir.Value, _moved: Moved) -> str:
    """One Slice per output, its bounds the running sums of the run-time sizes."""
    if b.opset < 10:
        raise b.refuse(
            f"the split sizes {split.name!r} are computed at run time, and before opset 13 "
            "Split takes them as an attribute; the exact form slices each output at run-time "
            "bounds, which Slice only takes as inputs from opset 10",
            "make split a constant (an initializer or a Constant node), or target opset 10 "
            "or later",
        )
    x = node.inputs[0]
    axis = node.attributes.get_int("axis", 0)
    if axis < 0:
        axis += require_rank(node, x, f"the negative axis {axis} must be made non-negative")
    axes = b.const(np.array([axis], dtype=np.int64))
    start = b.const(np.array([0], dtype=np.int64))
    outputs = list(node.outputs)
    parts = []
    for k, out in enumerate(outputs):
        size = b.op("Slice", [split, *_bounds(b, k)], dtype=DT.INT64)
        end = b.binary("Add", start, size, dtype=DT.INT64)
        parts.append(b.op("Slice", [x, start, end, axes], dtype=x.dtype))
        ir.convenience.replace_all_uses_with(out, parts[-1], replace_graph_outputs=True)
        start = end
    graph = node.graph
    graph.remove(node, safe=True)
    for out, part in zip(outputs, parts):  # the parts take over the outputs' names
        part.name, part.dtype, part.shape = out.name, out.dtype, out.shape
    remove_if_orphaned(graph, *[v for v in node.inputs if v is not None])
    return f"run-time split sizes: {len(outputs)} Slices at their running sums"


def _bounds(b: Builder, k: int) -> list[ir.Value]:
    """Slice-10 inputs (starts, ends, axes) that take element k of a 1-D tensor."""
    return [b.const(np.array([v], dtype=np.int64)) for v in (k, k + 1, 0)]


move_split = adapter(
    _SINCE,
    lambda node, b: attribute_to_input(node, b, "split"),
    lambda node, b: input_to_attribute(node, b, "split", _runtime_split),
    common.normalise_axis_attribute,
)
ADAPTERS = {"Split": [move_split]}
