"""ArgMax and ArgMin adapters between neighbouring schema versions (1, 11, 12, 13): the same
adapters for both (the family of a node is its op_type; nothing here compares values).

    up,   any step                      →  unchanged (each version only widened the op)
    13 → 12, bfloat16 input             →  refused: no op below opset 13 reads bfloat16
    12 → 11, select_last_index=1        →  reverse the axis, ArgMax (first), index n-1-i
                                            (ArgMin: reverse, ArgMin, n-1-i)
    12 → 11, select_last_index=0        →  the attribute is dropped
    11 → 1, negative axis               →  axis + rank (needs a static rank)

Reversing: a Slice with step -1 from opset 10 (any length; about 8x faster in onnxruntime
than a Gather); below 10 a Gather with the constant reversed index list (static length).
Mapping back: a Gather of that same list where the length is static (no arithmetic, so
valid at every opset, and a model converted to 10+ still converts down), else `(n - 1) - i`
with n read from Shape.
Ties give the last index, and the first NaN of the reversed axis is the last NaN, which is
what `onnx.reference` returns for select_last_index=1.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.extremum import FAMILIES
from passes.graph_utils import replace_node, require_rank, static_dim
from passes.version import common

INT64_MIN = np.iinfo(np.int64).min
# Longest axis reversed through a constant index list (one int64 per position).
MAX_INDEX_CONSTANT = 1 << 16


def select_last_index_to_reversal(node: ir.Node, b: Builder) -> str | None:
    """ArgMax{select_last_index=1} as n-1 minus the first index of the reversed axis, the
    inner node an ArgMax-11 (ArgMin likewise); also the decompositions
    `arg_max_select_last_index_to_reversal` and `arg_min_...` (passes.legalize.apply walks
    that inner node up to the opset)."""
    attrs = node.attributes
    if attrs.get_int("select_last_index", 0) == 0:
        return "dropped select_last_index=0" if attrs.pop("select_last_index", None) else None
    x = node.inputs[0]
    axis = attrs.get_int("axis", 0)
    keepdims = attrs.get_int("keepdims", 1)
    length = static_dim(x, axis) if x.shape is not None else None
    if b.opset >= 10:  # Slice with step -1: any length, and far faster than a Gather
        flipped = b.slice(x, [-1], [INT64_MIN], [_axis_at_opset(node, b, x, axis)], [-1])
    elif length is not None and length <= MAX_INDEX_CONSTANT:
        reversed_positions = b.const(np.arange(length - 1, -1, -1, dtype=np.int64))
        gather_axis = _axis_at_opset(node, b, x, axis)
        flipped = b.op("Gather", [x, reversed_positions], {"axis": gather_axis}, dtype=x.dtype)
    else:
        raise b.refuse(
            f"select_last_index=1 needs the axis reversed; below opset 10 that needs a static "
            f"length of at most {MAX_INDEX_CONSTANT} for axis {axis} of {x.name!r} (it is "
            f"{'unknown' if length is None else length})",
            "a static dimension on that axis, or target opset 10 or later",
        )
    flipped.shape = x.shape  # reversing keeps the shape; later steps may need the rank
    first = b.op(
        node.op_type,
        [flipped],
        {"axis": axis, "keepdims": keepdims},
        family_version=11,
        dtype=ir.DataType.INT64,
    )
    if length is not None and length <= MAX_INDEX_CONSTANT:
        # The reversed positions map the index back without arithmetic, valid at every
        # opset, so a model converted to opset 10+ still converts down to 1 (an int64 Sub
        # has no form before opset 7); the table is as long as the axis, the lookup as
        # small as the result.
        if b.opset >= 10:
            reversed_positions = b.const(np.arange(length - 1, -1, -1, dtype=np.int64))
        index = b.op("Gather", [reversed_positions, first], {"axis": 0}, dtype=ir.DataType.INT64)
    else:  # opset 10 and later, a dynamic or very long axis: n-1-i
        if length is not None:
            last = b.const(np.array(length - 1, dtype=np.int64))
        else:
            n = b.axis_length(x, _axis_at_opset(node, b, x, axis))
            one = b.const(np.array(1, dtype=np.int64))
            last = b.binary("Sub", n, one, dtype=ir.DataType.INT64)
        index = b.binary("Sub", last, first, dtype=ir.DataType.INT64)
    replace_node(node, index)
    return f"select_last_index=1 rewritten as reverse + {node.op_type} + index mapping"


def _axis_at_opset(node: ir.Node, b: Builder, x: ir.Value, axis: int) -> int:
    """`axis` as Slice and Gather take it at the builder's opset: non-negative below 11."""
    if axis >= 0 or b.opset >= 11:
        return axis
    return axis + require_rank(node, x, f"the negative axis {axis} must be made non-negative")


_STEPS = {
    (1, 11): common.unchanged,
    (11, 1): common.normalise_axis_attribute,
    (11, 12): common.unchanged,
    (12, 11): select_last_index_to_reversal,
    (12, 13): common.unchanged,
    (13, 12): common.refuse_bfloat16,
}
ADAPTERS = {(f.arg, *step): adapter for f in FAMILIES for step, adapter in _STEPS.items()}
