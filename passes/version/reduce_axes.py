"""Where a reduction's `axes` moved from an attribute to an input, both ways, for every
Reduce* op: ReduceSum at 13; ReduceMax, ReduceMin, ReduceMean, ReduceProd, ReduceL1,
ReduceL2, ReduceLogSum, ReduceLogSumExp and ReduceSumSquare at 18 (`since` below).

    ≥ since → < since, axes absent or empty  →  reduce all; with noop_with_empty_axes=1
                                               the op's "no reduction" (NOOP below)
    ≥ since → < since, constant axes         →  the `axes` attribute (initializer, Constant
                                               node or outer-scope initializer)
    ≥ since → < since, run-time axes, ReduceMax / ReduceMin (order-free: reducing one axis
        after another gives the same bits)   →  per axis i, with r = [i in axes]:
                                               Concat(Tile(Reduce(axes=[i]), r), Tile(x, 1-r))
                                               then, for keepdims=0, the reduced axes
                                               removed (Reshape, or If+Squeeze at 11-13
                                               where a dim may be 0). Needs the rank.
    ≥ since → < since, run-time axes, the others (a float sum's rounding depends on the
        axes it is given at once)            →  a tree of If on "axis i is reduced", one
                                               leaf per subset of axes, each the same op
                                               with that subset as constant axes (rank ≤
                                               MAX_BRANCH_RANK, If-11 for leaves of
                                               different shapes)
    < since → ≥ since, `axes` attribute      →  an int64 initializer input (a Constant in
                                               functions)
    ≥ 11 → < 11, negative axes               →  axes + rank (needs a static rank)

NOOP: noop_with_empty_axes=1 with empty axes is not the identity for every op: onnx.reference
and onnxruntime both give |x| for ReduceL1 and ReduceL2, log(x) for ReduceLogSum, x² for
ReduceSumSquare and, at ±inf, different things for ReduceLogSumExp; each gives exactly what
it gives for the same op over a unit axis, Reduce(Unsqueeze(x, [0]), axes=[0],
keepdims=0), which is the form used for them. For ReduceMax, ReduceMin, ReduceSum,
ReduceMean and ReduceProd it is Identity (tests/test_axes_family_numeric.py checks both
claims in both runtimes). Empty sets (a reduced axis of length 0) keep each op's own value
(ReduceMax -inf / dtype min, ReduceMin +inf / dtype max, ReduceSum 0, ReduceProd 1,
ReduceMean NaN in onnx.reference and 0 in onnxruntime) because every form calls the same
op over the same axes.

ReduceMax runs through ConvertFamilyPass one schema version at a time (reduce_max.py
registers the two step adapters); the others through ConvertOtherOpsPass in one jump
(`move_axes`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx_ir as ir

from passes.builder import FAMILY, Builder, axes_input_since, schema_version
from passes.graph_utils import constant_ints, drop_inputs, replace_node, require_rank
from passes.version import common
from passes.version.attribute_inputs import attribute_to_input, step_across

DT = ir.DataType

# Reductions whose result does not depend on the order in which elements are combined, so
# that reducing one axis after another is bit-exact.
ORDER_FREE = frozenset({"ReduceMax", "ReduceMin"})
# Reductions whose noop_with_empty_axes=1 result is their input as it is.
NOOP_IS_IDENTITY = frozenset({"ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean", "ReduceProd"})
REDUCTIONS = (
    "ReduceMax",
    "ReduceMin",
    "ReduceSum",
    "ReduceMean",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
)
# The If tree has 2**rank leaves; beyond this rank the model would grow too much.
MAX_BRANCH_RANK = 5


def move_axes(node: ir.Node, old: int, b: Builder) -> str | None:
    """ConvertOtherOpsPass's adapter: from schema version `old` to the target in one jump."""
    return step_across(
        node,
        old,
        b,
        axes_input_since(node.op_type),
        axes_attribute_to_input,
        axes_input_to_attribute,
        common.normalise_axes_attribute,
    )


def axes_attribute_to_input(node: ir.Node, b: Builder) -> str | None:
    return attribute_to_input(node, b, "axes")


def axes_input_to_attribute(node: ir.Node, b: Builder) -> str | None:
    axes_value = node.inputs[1] if len(node.inputs) > 1 else None
    noop = node.attributes.get_int("noop_with_empty_axes", 0)
    axes = constant_ints(axes_value) if axes_value is not None else []
    if axes is None:
        return _runtime_axes_form(node, b, axes_value, noop)
    had_noop = node.attributes.pop("noop_with_empty_axes", None) is not None
    if axes_value is not None:
        drop_inputs(node, 1)
    if not axes and noop:
        replace_node(node, _no_reduction(b, node.op_type, node.inputs[0]))
        if node.op_type in NOOP_IS_IDENTITY:
            return "empty axes with noop_with_empty_axes=1 is the identity"
        return "empty axes with noop_with_empty_axes=1: the op over a unit axis"
    if not axes:
        return "empty axes: reduce over all axes" if axes_value is not None or had_noop else None
    node.attributes["axes"] = ir.AttrInt64s("axes", axes)
    return f"constant axes input moved to the attribute axes={axes}"


def _no_reduction(b: Builder, op_type: str, x: ir.Value) -> ir.Value:
    """What `op_type` gives with noop_with_empty_axes=1 and empty axes (see NOOP above)."""
    if op_type in NOOP_IS_IDENTITY:
        return b.op("Identity", [x], dtype=x.dtype, shape=x.shape)
    unit = b.unsqueeze(x, [0])
    return _reduce(b, op_type, unit, [0], keepdims=0)


def _reduce(b: Builder, op_type: str, x: ir.Value, axes: list[int], keepdims: int) -> ir.Value:
    """`op_type` over constant `axes`; a family op is made at its last attribute version
    and handed to the driver, any other one spelt for the target."""
    if op_type in FAMILY:
        version = schema_version(op_type, axes_input_since(op_type) - 1)
        attributes = {"axes": axes, "keepdims": keepdims}
        return b.op(op_type, [x], attributes, family_version=version, dtype=x.dtype)
    return b.with_axes(op_type, [x], axes, {"keepdims": keepdims}, dtype=x.dtype)


def _runtime_axes_form(node: ir.Node, b: Builder, axes: ir.Value, noop: int) -> str:
    data = node.inputs[0]
    rank = require_rank(node, data, "axes computed at run time need one step per axis")
    if node.op_type not in ORDER_FREE:
        return branch_per_subset(node, b, axes, noop, rank)
    if b.opset < 6:
        raise b.refuse(
            "axes computed at run time need Tile with a repeats input (opset 6) "
            "to choose between reduced and unreduced data",
            "target opset 6 or later, or make axes a constant",
        )
    keepdims = node.attributes.get_int("keepdims", 1)
    if not keepdims and b.opset < 11 and not all_dims_positive(data):
        raise b.refuse(
            "axes computed at run time with keepdims=0 need the reduced axes removed at run "
            "time; below opset 11 that is a Reshape, which is only exact when no dimension of "
            f"{data.name!r} can be 0, and its shape is not static and positive",
            "static positive dims, keepdims=1, constant axes, or target opset 11 or later",
        )
    reduced = axes_flags(b, axes, rank, None if noop else _is_empty(b, axes))
    take = [b.unsqueeze(b.cast(flag, DT.INT64), [0]) for flag in reduced]
    keep = [
        b.unsqueeze(b.cast(b.op("Not", [flag], dtype=DT.BOOL), DT.INT64), [0]) for flag in reduced
    ]
    result = data
    for i in range(rank):
        result = _reduce_axis_if(b, node.op_type, result, i, rank, take[i], keep[i])
    if not keepdims:
        result = drop_axes(b, result, reduced, keep, all_dims_positive(data))
    replace_node(node, result)
    return f"run-time axes rewritten exactly for all {rank} axes (Tile/Concat select per axis)"


def branch_per_subset(node: ir.Node, b: Builder, axes: ir.Value, noop: int, rank: int) -> str:
    """A tree of If: level i asks whether axis i is reduced; each leaf is the op over one
    constant subset of axes, so the kernel sees the very axes the original was given."""
    op = node.op_type
    if rank > MAX_BRANCH_RANK:
        raise b.refuse(
            f"axes computed at run time on a rank-{rank} input need one branch per subset of "
            f"axes ({2**rank}), more than the {2**MAX_BRANCH_RANK} allowed, and {op} is not "
            "exact reduced one axis at a time (float rounding depends on the order)",
            "make axes a constant (an initializer or a Constant node)",
        )
    if b.opset < 11:
        raise b.refuse(
            "axes computed at run time need one If branch per subset of axes, whose results "
            "differ in shape, and If only allows that from opset 11",
            "target opset 11 or later, or make axes a constant",
        )
    data = node.inputs[0]
    keepdims = node.attributes.get_int("keepdims", 1)
    flags = axes_flags(b, axes, rank, None if noop else _is_empty(b, axes))

    def subtree(builder: Builder, chosen: list[int], i: int) -> ir.Value:
        if i == rank:
            if not chosen:  # only reached with noop_with_empty_axes=1 and empty axes
                return _no_reduction(builder, op, data)
            return _reduce(builder, op, data, chosen, keepdims)
        then, other = builder.sub_builder(), builder.sub_builder()
        return builder.if_(
            flags[i],
            (then, subtree(then, [*chosen, i], i + 1)),
            (other, subtree(other, chosen, i + 1)),
            data.dtype,
        )

    replace_node(node, subtree(b, [], 0))
    return f"run-time axes: one If branch per subset of the {rank} axes, constant axes in each"


def _reduce_axis_if(
    b: Builder, op_type: str, x: ir.Value, axis: int, rank: int, take: ir.Value, keep: ir.Value
) -> ir.Value:
    """The reduction over `axis` (keepdims) if take=[1] (then keep=[0]), else x, without
    branches.

    Concat(Tile(reduced, r), Tile(x, 1 - r), axis): a zero repeat empties one side, so the
    result is exactly one of the two, whatever their lengths on `axis`.
    """
    i64 = DT.INT64
    reduced = _reduce(b, op_type, x, [axis], keepdims=1)

    def repeats(count: ir.Value) -> ir.Value:
        ones_before = b.const(np.ones(axis, dtype=np.int64))
        ones_after = b.const(np.ones(rank - axis - 1, dtype=np.int64))
        return b.op("Concat", [ones_before, count, ones_after], {"axis": 0}, dtype=i64)

    return b.op(
        "Concat",
        [
            b.op("Tile", [reduced, repeats(take)], dtype=x.dtype),
            b.op("Tile", [x, repeats(keep)], dtype=x.dtype),
        ],
        {"axis": axis},
        dtype=x.dtype,
    )


def drop_axes(
    b: Builder, x: ir.Value, dropped: list[ir.Value], keep: list[ir.Value], no_zero_dims: bool
) -> ir.Value:
    """Remove the axes of `x` whose flag in `dropped` holds (they have length 1); `keep`
    holds [1 - flag] as int64 vectors.

    Reshape to the kept lengths; before opset 14 Reshape reads a 0 as "copy this input dim",
    so there it is exact only when no dim can be 0, and otherwise If+Squeeze (11-13) does it.
    Plain Reshape is preferred whenever it is exact: it moves between opsets as it is.
    """
    if not no_zero_dims and 11 <= b.opset < 14:
        for i in reversed(range(len(dropped))):
            then = b.sub_builder()
            x = b.if_(dropped[i], (then, then.squeeze(x, [i])), (b.sub_builder(), x), x.dtype)
        return x
    shape = b.op("Shape", [x], dtype=DT.INT64)
    kept = []
    for i, keep_axis in enumerate(keep):
        length = b.op(
            "Gather", [shape, b.const(np.array([i], dtype=np.int64))], {"axis": 0}, dtype=DT.INT64
        )
        kept.append(b.op("Tile", [length, keep_axis], dtype=DT.INT64))
    new_shape = b.op("Concat", kept, {"axis": 0}, dtype=DT.INT64)
    attributes = {"allowzero": 1} if b.opset >= 14 and not no_zero_dims else {}
    return b.op("Reshape", [x, new_shape], attributes, dtype=x.dtype)


def all_dims_positive(value: ir.Value) -> bool:
    return value.shape is not None and all(isinstance(d, int) and d > 0 for d in value.shape)


def _is_empty(b: Builder, axes: ir.Value) -> ir.Value:
    size = b.op("Size", [axes], dtype=DT.INT64)
    return b.binary("Equal", size, b.const(np.array(0, dtype=np.int64)), dtype=DT.BOOL)


def axes_flags(b: Builder, axes: ir.Value, rank: int, empty: ir.Value | None) -> list[ir.Value]:
    """Per axis i of a rank-`rank` tensor, a bool scalar: i is listed in the run-time
    `axes` (as i or i - rank), or `empty` (a bool scalar, None: never) holds."""
    return [_axis_is_listed(b, axes, i, rank, empty) for i in range(rank)]


def _axis_is_listed(
    b: Builder, axes: ir.Value, i: int, rank: int, empty: ir.Value | None
) -> ir.Value:
    i64 = DT.INT64
    listed = b.op(
        "Or",
        [
            b.binary("Equal", axes, b.const(np.array(i, dtype=np.int64)), dtype=DT.BOOL),
            b.binary("Equal", axes, b.const(np.array(i - rank, dtype=np.int64)), dtype=DT.BOOL),
        ],
        dtype=DT.BOOL,
    )
    count = b.op("ReduceSum", [b.cast(listed, i64)], {"keepdims": 0}, dtype=i64)
    zero = b.const(np.array(0, dtype=np.int64))
    reduced = b.op("Not", [b.binary("Equal", count, zero, dtype=DT.BOOL)], dtype=DT.BOOL)
    if empty is None:
        return reduced
    return b.op("Or", [reduced, empty], dtype=DT.BOOL)


def family_step_adapters(op_type: str) -> dict[tuple[str, int, int], Callable]:
    """The two ConvertFamilyPass step adapters across `op_type`'s axes boundary."""
    since = axes_input_since(op_type)
    before = schema_version(op_type, since - 1)
    return {
        (op_type, before, since): axes_attribute_to_input,
        (op_type, since, before): axes_input_to_attribute,
    }


ADAPTERS = {op: [move_axes] for op in REDUCTIONS if op not in FAMILY}
