"""ReduceMax adapters between neighbouring schema versions (1, 11, 12, 13, 18, 20).

20 → 18, bool data                  →  Cast(uint8) → ReduceMax → Cast(bool)
                                        (uint8's minimum 0 maps back to False, so an
                                        empty set still gives False)
18 → 13, axes absent or empty       →  reduce all; with noop_with_empty_axes=1, Identity
18 → 13, constant axes              →  the `axes` attribute (initializer, Constant node
                                        or outer-scope initializer)
18 → 13, axes computed at run time  →  per axis i, with r = [i in axes]:
                                        Concat(Tile(ReduceMax(axes=[i]), r), Tile(x, 1-r))
                                        then, for keepdims=0, Reshape to the kept dims
                                        (allowzero=1, or If+Squeeze at 11-13, where a dim
                                        may be 0). Exact for every run-time value of axes;
                                        needs the rank.
13 → 18, `axes` attribute           →  an int64 initializer input (a Constant in functions)
13 → 12, bfloat16                   →  refused: nothing below opset 13 reads bfloat16
12 → 11, int8/uint8                 →  Cast(float32) → ReduceMax → Clip(min=type min) →
                                        Cast back (Clip pins the empty set's -inf)
11 → 1, negative axes               →  axes + rank (needs a static rank)
every other step                    →  unchanged
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.graph_utils import constant_ints, remove_if_orphaned, replace_node, require_rank
from passes.version import common

DT = ir.DataType


@common.type_only
def bool_through_uint8(node: ir.Node, b: Builder) -> str | None:
    why = "ReduceMax below opset 20 is rewritten for bool"
    if common.require_known_dtype(node, b, why) != DT.BOOL:
        return None
    common.compute_in_wider_type(node, b, DT.UINT8, family_version=18)
    return "bool ReduceMax computed in uint8 (empty set stays False)"


@common.type_only
def small_ints_through_float(node: ir.Node, b: Builder) -> str | None:
    dtype = common.require_known_dtype(node, b, "ReduceMax below 12 is rewritten for int8/uint8")
    if dtype not in (DT.INT8, DT.UINT8):
        return None
    minimum = float(np.iinfo(dtype.numpy()).min)
    common.compute_in_wider_type(
        node, b, DT.FLOAT, family_version=11, finish=lambda y: b.clip_min(y, minimum)
    )
    return f"{dtype.name} ReduceMax computed exactly in FLOAT, empty set pinned to {minimum:g}"


def axes_attribute_to_input(node: ir.Node, b: Builder) -> str | None:
    axes = node.attributes.pop("axes", None)
    if axes is None:
        return None
    node.resize_inputs(2)
    node.replace_input_with(1, b.int64_initializer(list(axes.as_ints())))
    return f"axes {list(axes.as_ints())} moved to an int64 input"


def axes_input_to_attribute(node: ir.Node, b: Builder) -> str | None:
    axes_value = node.inputs[1] if len(node.inputs) > 1 else None
    noop = node.attributes.get_int("noop_with_empty_axes", 0)
    axes = constant_ints(axes_value) if axes_value is not None else []
    if axes is None:
        return _runtime_axes_form(node, b, axes_value, noop)
    had_noop = node.attributes.pop("noop_with_empty_axes", None) is not None
    if axes_value is not None:
        node.replace_input_with(1, None)
        node.resize_inputs(1)
        remove_if_orphaned(node.graph, axes_value)
    if not axes and noop:
        replace_node(node, b.op("Identity", [node.inputs[0]], dtype=node.inputs[0].dtype))
        return "empty axes with noop_with_empty_axes=1 is the identity"
    if not axes:
        return "empty axes: reduce over all axes" if axes_value is not None or had_noop else None
    node.attributes["axes"] = ir.AttrInt64s("axes", axes)
    return f"constant axes input moved to the attribute axes={axes}"


def _runtime_axes_form(node: ir.Node, b: Builder, axes: ir.Value, noop: int) -> str:
    data = node.inputs[0]
    rank = require_rank(node, data, "axes computed at run time need one step per axis")
    if b.opset < 6:
        raise b.refuse(
            "axes computed at run time need Tile with a repeats input (opset 6) "
            "to choose between reduced and unreduced data",
            "target opset 6 or later",
        )
    keepdims = node.attributes.get_int("keepdims", 1)
    if not keepdims and b.opset < 11 and not _all_dims_positive(data):
        raise b.refuse(
            "axes computed at run time with keepdims=0 need the reduced axes removed at run "
            "time; below opset 11 that is a Reshape, which is only exact when no dimension of "
            f"{data.name!r} can be 0, and its shape is not static and positive",
            "static positive dims, keepdims=1, constant axes, or target opset 11 or later",
        )
    empty = (
        None
        if noop
        else b.binary(
            "Equal",
            b.op("Size", [axes], dtype=DT.INT64),
            b.const(np.array(0, dtype=np.int64)),
            dtype=DT.BOOL,
        )
    )
    reduced = [_axis_is_reduced(b, axes, i, rank, empty) for i in range(rank)]
    take = [b.unsqueeze(b.cast(flag, DT.INT64), [0]) for flag in reduced]
    keep = [
        b.unsqueeze(b.cast(b.op("Not", [flag], dtype=DT.BOOL), DT.INT64), [0]) for flag in reduced
    ]
    result = data
    for i in range(rank):
        result = _reduce_axis_if(b, result, i, rank, take[i], keep[i])
    if not keepdims:
        result = _drop_reduced_axes(b, result, reduced, keep, _all_dims_positive(data))
    replace_node(node, result)
    return f"run-time axes rewritten exactly for all {rank} axes (Tile/Concat select per axis)"


def _reduce_axis_if(
    b: Builder, x: ir.Value, axis: int, rank: int, take: ir.Value, keep: ir.Value
) -> ir.Value:
    """ReduceMax over `axis` (keepdims) if take=[1] (then keep=[0]), else x, without branches.

    Concat(Tile(reduced, r), Tile(x, 1 - r), axis): a zero repeat empties one side, so the
    result is exactly one of the two, whatever their lengths on `axis`.
    """
    i64 = DT.INT64
    reduced = b.op(
        "ReduceMax", [x], {"axes": [axis], "keepdims": 1}, family_version=13, dtype=x.dtype
    )

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


def _drop_reduced_axes(
    b: Builder, x: ir.Value, reduced: list[ir.Value], keep: list[ir.Value], no_zero_dims: bool
) -> ir.Value:
    """keepdims=0: remove the axes whose flag holds (they have length 1 by now).

    Reshape to the kept lengths; before opset 14 Reshape reads a 0 as "copy this input dim",
    so there it is exact only when no dim can be 0, and otherwise If+Squeeze (11-13) does it.
    Plain Reshape is preferred whenever it is exact: it moves between opsets as it is.
    """
    if not no_zero_dims and 11 <= b.opset < 14:
        for i in reversed(range(len(reduced))):
            then = b.sub_builder()
            x = b.if_(reduced[i], (then, then.squeeze(x, [i])), (b.sub_builder(), x), x.dtype)
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


def _all_dims_positive(value: ir.Value) -> bool:
    return value.shape is not None and all(isinstance(d, int) and d > 0 for d in value.shape)


def _axis_is_reduced(
    b: Builder, axes: ir.Value, i: int, rank: int, empty: ir.Value | None
) -> ir.Value:
    """A bool scalar: axis i is listed (as i or i - rank), or axes is empty and noop=0."""
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
    if empty is None:  # noop_with_empty_axes=1: empty axes reduce nothing
        return reduced
    return b.op("Or", [reduced, empty], dtype=DT.BOOL)


ADAPTERS = {
    ("ReduceMax", 1, 11): common.unchanged,
    ("ReduceMax", 11, 1): common.normalise_axes_attribute,
    ("ReduceMax", 11, 12): common.unchanged,
    ("ReduceMax", 12, 11): small_ints_through_float,
    ("ReduceMax", 12, 13): common.unchanged,
    ("ReduceMax", 13, 12): common.refuse_bfloat16,
    ("ReduceMax", 13, 18): axes_attribute_to_input,
    ("ReduceMax", 18, 13): axes_input_to_attribute,
    ("ReduceMax", 18, 20): common.unchanged,
    ("ReduceMax", 20, 18): bool_through_uint8,
}
