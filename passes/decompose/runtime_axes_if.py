"""A reduction over axes computed at run time, as one If per axis: no copy of the data.

    ReduceMax(x, axes){keepdims=k}, axes computed at run time, rank r
        →  for i in 0..r-1:  x = If(i is listed in axes (as i or i-r), or axes is empty
                                    and noop_with_empty_axes=0,
                                    then ReduceMax(x){axes=[i], keepdims=1},
                                    else x)
           keepdims=0: the reduced axes removed (Reshape; If+Squeeze at opsets 11-13 where
           a dim may be 0), as in passes.version.reduce_axes

`passes.version.reduce_axes` selects between the reduced and the unreduced data with Tile
and Concat, which copies the data twice per axis (6.5-11x native in onnxruntime on
[64, 4096]); here the untaken branch costs nothing and the taken one is the very reduction
over a constant axis. Reducing one axis after another gives the same bits for the extremum
families (order-free: each output element is one of the inputs), empty sets included: a
reduced axis of length 0 gives the identity through the constant-axis reduction itself.
Needs If with branches of different shapes (opset 11) and the rank; the Tile/Concat form
stays for profiles or opsets without If.
"""

from __future__ import annotations

import onnx_ir as ir

from passes.builder import Builder
from passes.decompose.common import DT, Decomposition, current_version
from passes.decompose.reduce_max import read_axes
from passes.extremum import FAMILIES, Extremum
from passes.graph_utils import replace_node, require_rank
from passes.version import reduce_axes
from passes.version.reduce_axes import _is_empty, all_dims_positive, axes_flags, drop_axes


def if_per_axis(family: Extremum):
    def rewrite(node: ir.Node, b: Builder) -> str | None:
        axes, keepdims, noop = read_axes(node)
        if axes is not None:
            return None
        x = node.inputs[0]
        rank = require_rank(node, x, "axes computed at run time need one If per axis")
        b.require("If")
        if b.opset < 11:
            raise b.refuse(
                "an If per axis has branches of different shapes (reduced or not), which If "
                "only allows from opset 11",
                "target opset 11 or later (the Tile/Concat form needs no If)",
            )
        empty = None if noop else _is_empty(b, node.inputs[1])
        flags = axes_flags(b, node.inputs[1], rank, empty)
        result = x
        for i, flag in enumerate(flags):
            then = b.sub_builder()
            reduced = then.with_axes(
                family.reduce,
                [result],
                [i],
                {"keepdims": 1},
                family_version=current_version(family.reduce, b.opset),
                dtype=x.dtype,
            )
            result = b.if_(flag, (then, reduced), (b.sub_builder(), result), x.dtype)
        if not keepdims:
            keep = [
                b.unsqueeze(b.cast(b.op("Not", [flag], dtype=DT.BOOL), DT.INT64), [0])
                for flag in flags
            ]
            result = drop_axes(b, result, flags, keep, all_dims_positive(x))
        replace_node(node, result)
        return f"run-time axes: one If per axis ({rank}), each a constant-axis reduction or x"

    return rewrite


def branch_per_subset(node: ir.Node, b: Builder) -> str | None:
    axes, _, noop = read_axes(node)
    if axes is not None:
        return None
    rank = require_rank(node, node.inputs[0], "axes computed at run time need the rank")
    if rank > reduce_axes.MAX_BRANCH_RANK:
        raise b.refuse(
            f"one If leaf per subset of the axes of a rank-{rank} input is {2**rank} leaves, "
            f"more than the {2**reduce_axes.MAX_BRANCH_RANK} allowed",
            "the If-per-axis form (any rank), or constant axes",
        )
    return reduce_axes.branch_per_subset(node, b, node.inputs[1], noop, rank)


def decompositions(family: Extremum) -> list[Decomposition]:
    reduce = family.reduce
    return [
        Decomposition(
            f"reduce_{family.name}_runtime_axes_subset_if",
            reduce,
            branch_per_subset,
            f"{reduce}(x, axes) → a tree of If on 'axis i is reduced', one leaf per subset "
            f"of axes: {reduce} over that constant subset (rank ≤ "
            f"{reduce_axes.MAX_BRANCH_RANK})",
        ),
        Decomposition(
            f"reduce_{family.name}_runtime_axes_if",
            reduce,
            if_per_axis(family),
            f"{reduce}(x, axes) → per axis i: If(i in axes, {reduce}(x){{axes=[i]}}, x)",
        ),
    ]


DECOMPOSITIONS = [d for family in FAMILIES for d in decompositions(family)]
