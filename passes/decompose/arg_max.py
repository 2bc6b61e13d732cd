"""Exact decompositions of ArgMax and of ArgMin (axis, keepdims; select_last_index from opset
12): one set of rewrites for both families (passes.extremum). For ArgMin read ReduceMin for
ReduceMax in m (the ReduceMin over positions stays: it picks the first hit in both).

    ArgMax(x){axis=a}               →  m   = ReduceMax(x){axes=[a], keepdims=1}
                                       hit = Or(Equal(x, m), IsNaN(x))      (floats)
                                             Equal(x, m)                    (integers)
                                       ReduceMin(Where(hit, p, MAX)){axes=[a]}
                                       p: the positions 0..n-1 along a (an int32 constant
                                       for a static n, else int64 Range), MAX p's maximum:
                                       the first hit wins
    ... with select_last_index=1    →  the same with p' = n-1-p, and n-1 minus the result:
                                       the last hit wins
    ArgMax(x){select_last_index=1}  →  n-1 - ArgMax(Slice(x, step -1 on a)): the version
                                       adapter 12 → 11 (passes.version.arg_max)
    ArgMax(x: rank 1){axis=a}       →  Squeeze(ArgMax(Unsqueeze(x, [0])){axis=a+1}, [0])
    ArgMax(x: T)                    →  ArgMax(Cast(x, W)), W an exact widening: casting is
                                       monotonic and one-to-one, so ties and order are kept

NaN: onnx.reference's ReduceMax propagates NaN, so m is NaN exactly when the slice holds
one; then Equal finds nothing and IsNaN marks the NaNs, so the first (or last) NaN wins, as
in onnx.reference's ArgMax (design note 5). -0.0 and +0.0 are equal, so they tie. The
ReduceMax runs on x widened exactly where the opset's ReduceMax does not take x's type
(int16, uint16). An empty axis is an error for ArgMax, and stays undefined here.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.decompose.common import (
    DT,
    EXACT_WIDENINGS,
    FLOATS,
    Decomposition,
    current_version,
    schema_accepts,
    widening_decompositions,
)
from passes.decompose.reduce_max import reduce_one_axis
from passes.extremum import FAMILIES, FAMILY_OF, Extremum
from passes.graph_utils import replace_node, require_dtype, require_rank, static_dim
from passes.version import arg_max as arg_max_adapters


def _axis(node: ir.Node, b: Builder, why: str) -> tuple[int, int]:
    rank = require_rank(node, node.inputs[0], why)
    axis = node.attributes.get_int("axis", 0)
    if not -rank <= axis < rank:
        raise b.refuse(f"axis {axis} is out of range for rank {rank}", "a valid axis")
    return axis + rank if axis < 0 else axis, rank


def to_reduce(node: ir.Node, b: Builder) -> str:
    x = node.inputs[0]
    dtype = require_dtype(node, x, "the comparison form depends on it")
    axis, rank = _axis(node, b, "the positions along the axis must broadcast against it")
    keepdims = node.attributes.get_int("keepdims", 1)
    last = node.attributes.get_int("select_last_index", 0) == 1
    reduce = FAMILY_OF[node.op_type].reduce
    if not schema_accepts(reduce, b.opset, dtype):
        wide = next(
            (w for w in EXACT_WIDENINGS.get(dtype, ()) if schema_accepts(reduce, b.opset, w)),
            None,
        )
        if wide is None:
            raise b.refuse(
                f"{reduce} at opset {b.opset} does not take {dtype.name}, nor an exact "
                "widening of it",
                "a later target opset",
            )
        x = b.cast(x, wide)
    peak = reduce_one_axis(b, reduce, x, axis, 1)
    hit = b.op("Equal", [x, peak], dtype=DT.BOOL)
    if x.dtype in FLOATS:
        hit = b.op("Or", [hit, b.op("IsNaN", [x], dtype=DT.BOOL)], dtype=DT.BOOL)
    position, last_position = _positions(b, x, axis, rank, last)
    sentinel = np.array(np.iinfo(position.dtype.numpy()).max, dtype=position.dtype.numpy())
    candidates = b.op("Where", [hit, position, b.const(sentinel)], dtype=position.dtype)
    index = b.with_axes(
        "ReduceMin", [candidates], [axis], {"keepdims": keepdims}, dtype=position.dtype
    )
    index = b.cast(index, DT.INT64)
    if last:
        index = b.binary("Sub", last_position, index, dtype=DT.INT64)
    replace_node(node, index)
    which = "last" if last else "first"
    extreme = "maximum" if reduce == "ReduceMax" else "minimum"
    return (
        f"{node.op_type} as {reduce} + Equal + Where + ReduceMin ({which} index of the {extreme})"
    )


def _positions(
    b: Builder, x: ir.Value, axis: int, rank: int, last: bool
) -> tuple[ir.Value, ir.Value | None]:
    """Positions 0..n-1 along `axis` (n-1..0 for the last index), shaped to broadcast against
    x, and n-1 as an int64 scalar (only for the last index). A static n gives an int32
    constant (half the bytes for Where and ReduceMin to move), a dynamic one Range."""
    trailing = [1] * (rank - axis - 1)
    length = static_dim(x, axis)
    if length is not None and length <= np.iinfo(np.int32).max:
        positions = np.arange(length, dtype=np.int32)
        position = b.const((positions[::-1] if last else positions).reshape([length, *trailing]))
        return position, b.const(np.array(length - 1, dtype=np.int64)) if last else None
    b.require("Range")
    n = b.axis_length(x, axis)
    zero, one = b.const(np.array(0, dtype=np.int64)), b.const(np.array(1, dtype=np.int64))
    position = b.op("Range", [zero, n, one], dtype=DT.INT64)
    if trailing:
        position = b.unsqueeze(position, range(1, len(trailing) + 1))
    if not last:
        return position, None
    last_position = b.binary("Sub", n, one, dtype=DT.INT64)
    return b.binary("Sub", last_position, position, dtype=DT.INT64), last_position


def select_last_index_to_reversal(node: ir.Node, b: Builder) -> str | None:
    """The version adapter 12 → 11's reversal (passes.version.arg_max), for a backend
    without select_last_index=1 (ArgMax or ArgMin)."""
    if node.attributes.get_int("select_last_index", 0) != 1:
        return None
    return arg_max_adapters.select_last_index_to_reversal(node, b)


def rank1_to_rank2(node: ir.Node, b: Builder) -> str | None:
    x = node.inputs[0]
    if x.shape is None or len(x.shape) != 1:
        return None
    attributes = {name: attr.value for name, attr in node.attributes.items()}
    attributes["axis"] = 1  # axis 0 and -1 are the only valid ones
    index = b.op(
        node.op_type,
        [b.unsqueeze(x, [0])],
        attributes,
        family_version=current_version(node.op_type, b.opset),
        dtype=DT.INT64,
    )
    replace_node(node, b.squeeze(index, [0]))
    return f"rank-1 {node.op_type} on the input unsqueezed to rank 2"


def decompositions(family: Extremum) -> list[Decomposition]:
    """The family's arg decompositions, named `arg_max_...` / `arg_min_...`."""
    op, reduce, name = family.arg, family.reduce, f"arg_{family.name}"
    return [
        Decomposition(
            f"{name}_to_reduce_{family.name}",
            op,
            to_reduce,
            f"{op}(x) → ReduceMin(Where(Or(Equal(x, {reduce}(x)), IsNaN(x)), positions, "
            "MAX)) (last index: reversed positions)",
        ),
        Decomposition(
            f"{name}_select_last_index_to_reversal",
            op,
            select_last_index_to_reversal,
            f"{op}(x){{select_last_index=1}} → n-1 - {op}(reverse(x))",
        ),
        Decomposition(
            f"{name}_rank1_to_rank2",
            op,
            rank1_to_rank2,
            f"{op}(x[n]) → Squeeze({op}(Unsqueeze(x, [0])){{axis=1}}, [0])",
        ),
        *widening_decompositions(op),
    ]


DECOMPOSITIONS = [d for family in FAMILIES for d in decompositions(family)]
