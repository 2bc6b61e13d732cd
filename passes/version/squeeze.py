"""Squeeze and Unsqueeze across opset 13, where `axes` moved from an attribute to an input,
both ways, and across 11, where negative axes came in.

    Squeeze/Unsqueeze-11(x){axes}, to ≥ 13           →  (x, int64 initializer axes)
    Squeeze/Unsqueeze-13(x, constant axes), to ≤ 12  →  (x){axes}
    Squeeze-13(x, constant empty axes), to ≤ 12     →  refused (see below)
    Squeeze-13(x, run-time axes), to 6..12          →  per axis i, d_i = [i in axes, or axes
                                                       empty and dim i is 1]; the d_i axes
                                                       removed: Reshape to the kept dims, or
                                                       If(d_i, Squeeze(·, [i]), ·) at 11-12
                                                       where a dim may be 0
    Unsqueeze-13(x, run-time axes), to 6..12        →  per output axis j (the output rank
                                                       must be static), u_j = [j in axes]:
                                                       If(u_j, Unsqueeze(·, [j]), ·) at
                                                       11-12; below 11 Reshape(·, dims with
                                                       a 1 at j), exact when no dim is 0
    either, to ≤ 10, negative axes                  →  axes + rank (Squeeze: the input's,
                                                       Unsqueeze: the output's)

Squeeze-13 given an empty `axes`: the spec only says what an absent one means (remove every
dim of length 1); onnxruntime does the same for an empty one, and onnx.reference and onnx's
shape inference remove none. A constant empty axes is refused (the result's declared shape
would contradict one or the other); for run-time axes the form follows onnxruntime, the
runtime the model runs in (an empty value cannot be refused ahead of time).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.graph_utils import replace_node, require_rank, static_dim
from passes.version import common
from passes.version.attribute_inputs import Moved, adapter, input_to_attribute
from passes.version.reduce_axes import (
    all_dims_positive,
    axes_attribute_to_input,
    axes_flags,
    drop_axes,
)

DT = ir.DataType
_SINCE = 13


def _normalise_and_sort_axes(node: ir.Node, b: Builder) -> str | None:
    done = _normalise_negative_axes(node, b)
    _sort_axes(node)
    return done


def _sort_axes(node: ir.Node) -> None:
    """Below 11 onnx's shape inference of Squeeze/Unsqueeze misreads axes out of order
    (Squeeze-1 axes=[1, 0] on [1, 1] gives rank 1); their order means nothing."""
    axes = node.attributes.get_ints("axes", None)
    if axes is not None and all(a >= 0 for a in axes):
        node.attributes["axes"] = ir.AttrInt64s("axes", sorted(axes))


def _runtime_axes(node: ir.Node, b: Builder, axes: ir.Value, _moved: Moved) -> str:
    if node.op_type == "Squeeze":
        return _squeeze_runtime_axes(node, b, axes)
    return _unsqueeze_runtime_axes(node, b, axes)


def _refuse_empty_axes(node: ir.Node, b: Builder, axes_value: ir.Value, axes: list[int]) -> None:
    if not axes:
        raise b.refuse(
            f"its axes {axes_value.name!r} are empty, which onnx's shape inference and "
            "onnx.reference read as 'remove no dim' and onnxruntime as 'remove every dim of "
            "length 1'; no Squeeze before opset 13 says either for both",
            "leave axes out (every dim of length 1 goes), or list the axes to remove",
        )


def _require_run_time_form(node: ir.Node, b: Builder, x: ir.Value) -> None:
    if b.opset < 6:
        raise b.refuse(
            f"axes computed at run time need {node.op_type} spelt as a Reshape to a shape "
            "computed with Tile, which takes its repeats as an input from opset 6",
            "make axes a constant (an initializer or a Constant node), or target opset 6 or later",
        )
    if b.opset < 11 and not all_dims_positive(x):
        raise b.refuse(
            f"axes computed at run time need {node.op_type} spelt as a Reshape, which before "
            f"opset 14 reads a 0 in the shape as 'copy this dim', and {x.name!r} is not "
            "known to have no dim of 0",
            "make axes a constant, give the input static positive dims, or target opset 11 "
            "or later",
        )


def _squeeze_runtime_axes(node: ir.Node, b: Builder, axes: ir.Value) -> str:
    x = node.inputs[0]
    rank = require_rank(node, x, "axes computed at run time need one step per axis")
    _require_run_time_form(node, b, x)
    empty = b.binary(
        "Equal",
        b.op("Size", [axes], dtype=DT.INT64),
        b.const(np.array(0, dtype=np.int64)),
        dtype=DT.BOOL,
    )
    listed = axes_flags(b, axes, rank, None)
    dropped = []
    for i, flag in enumerate(listed):
        dim = static_dim(x, i)
        if dim is not None and dim != 1:  # empty axes leave it: only a listed one goes
            dropped.append(flag)
            continue
        unit = empty
        if dim is None:
            one = b.const(np.array(1, dtype=np.int64))
            is_one = b.binary("Equal", b.axis_length(x, i), one, dtype=DT.BOOL)
            unit = b.op("And", [empty, is_one], dtype=DT.BOOL)
        dropped.append(b.op("Or", [flag, unit], dtype=DT.BOOL))
    keep = [
        b.unsqueeze(b.cast(b.op("Not", [flag], dtype=DT.BOOL), DT.INT64), [0]) for flag in dropped
    ]
    replace_node(node, drop_axes(b, x, dropped, keep, all_dims_positive(x)))
    return f"run-time axes: each of the {rank} axes removed where listed"


def _unsqueeze_runtime_axes(node: ir.Node, b: Builder, axes: ir.Value) -> str:
    x = node.inputs[0]
    rank = require_rank(node, x, "axes computed at run time need one step per axis")
    count = static_dim(axes, 0) if axes.shape is not None and len(axes.shape) == 1 else None
    if count is None:
        raise b.refuse(
            f"axes computed at run time make the output rank {rank} + len(axes), and the "
            f"length of {axes.name!r} is not static, so the output axes to insert at are not "
            "known",
            "make axes a constant, or give it a static length",
        )
    _require_run_time_form(node, b, x)
    out_rank = rank + count
    inserted = axes_flags(b, axes, out_rank, None)
    result = x
    for j, flag in enumerate(inserted):
        if b.opset >= 11:
            then = b.sub_builder()
            result = b.if_(
                flag, (then, then.unsqueeze(result, [j])), (b.sub_builder(), result), x.dtype
            )
        else:
            result = _insert_unit_dim(b, result, j, flag)
    replace_node(node, result)
    return f"run-time axes: a unit dim inserted where listed, at each of {out_rank} positions"


def _insert_unit_dim(b: Builder, x: ir.Value, j: int, flag: ir.Value) -> ir.Value:
    """Reshape x to its dims with a 1 inserted at j when `flag` holds (no dim is 0)."""
    shape = b.op("Shape", [x], dtype=DT.INT64)
    head = b.slice(shape, [0], [j], [0])
    tail = b.slice(shape, [j], [np.iinfo(np.int64).max], [0])
    unit = b.op(
        "Tile",
        [b.const(np.array([1], dtype=np.int64)), b.unsqueeze(b.cast(flag, DT.INT64), [0])],
        dtype=DT.INT64,
    )
    new_shape = b.op("Concat", [head, unit, tail], {"axis": 0}, dtype=DT.INT64)
    return b.op("Reshape", [x, new_shape], dtype=x.dtype)


def _normalise_negative_axes(node: ir.Node, b: Builder) -> str | None:
    if node.op_type == "Squeeze":
        return common.normalise_axes_attribute(node, b)
    axes = node.attributes.get_ints("axes", None)
    if axes is None or all(a >= 0 for a in axes):
        return None
    rank = require_rank(
        node, node.inputs[0], f"the negative axes {list(axes)} must become non-negative"
    )
    out_rank = rank + len(axes)
    normalised = [a + out_rank if a < 0 else a for a in axes]
    node.attributes["axes"] = ir.AttrInt64s("axes", normalised)
    return f"axes {list(axes)} normalised to {normalised}"


move_axes = adapter(
    _SINCE,
    axes_attribute_to_input,
    lambda node, b: input_to_attribute(node, b, "axes", _runtime_axes, _refuse_empty_axes),
    _normalise_and_sort_axes,
)
ADAPTERS = {"Squeeze": [move_axes], "Unsqueeze": [move_axes]}
