"""Exact decompositions of ReduceMax and of ReduceMin (axes an attribute before opset 18, an
input from 18): one set of rewrites for both families (passes.extremum). For ReduceMin read
min for max and the type's maximum (+inf, True) for its minimum; names are `reduce_min_...`.

    ReduceMax(x){axes=[0, 2]}          →  ReduceMax(ReduceMax(x){axes=[2]}){axes=[0]}
                                          one axis at a time, the highest first, so that
                                          keepdims=0 does not move the axes still to come
    ReduceMax(x){no axes}              →  the same chain over every axis (needs the rank);
                                          with noop_with_empty_axes=1: Identity(x)
    ReduceMax(x, axes), axes computed
    at run time                        →  per axis, the Tile/Concat select of
                                          passes.version.reduce_max (exact for every value of
                                          axes; needs the rank); its ReduceMax nodes have
                                          constant axes
    ReduceMax(x: T)                    →  Cast(pin(ReduceMax(Cast(x, W))), T), W an exact
                                          widening; pin = at least T's minimum (Clip, or
                                          Where/Less), so that an empty set still gives T's
                                          minimum. Not needed for floats (-inf narrows to
                                          -inf), bool → uint8 (0 is False), or reduced dims
                                          that are static and positive.
    ReduceMax(x){axes=[a]}, n = x.shape[a] static
                                       →  n > 1: x ← max(Slice(x, 0, h), Slice(x, n-h, n)),
                                          h = ⌈n/2⌉, until one element is left: ⌈log2 n⌉
                                          levels (for odd n the halves share an element,
                                          which max does not mind); n = 0: T's minimum,
                                          Expand-ed to the kept shape
    ReduceMax(x){axes=[a]}, n dynamic  →  Loop n times: acc ← max(acc, x[i] on axis a), from
                                          acc = T's minimum (so n = 0 gives the minimum)

max is Or for bool, Max where the opset's Max takes the type (lowered in turn when the
profile has no Max), else the select form of passes.decompose.max. NaN propagates through
both forms, as through onnx.reference's ReduceMax (design note 5). keepdims=0 ends the tree
and the loop with Squeeze(a).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.decompose.common import (
    DT,
    FLOATS,
    Decomposition,
    current_version,
    elementwise,
    filled,
    kept_shape,
    non_negative_axes,
    reduced_shape,
    widening_decompositions,
)
from passes.extremum import FAMILIES, FAMILY_OF, Extremum
from passes.graph_utils import (
    constant_ints,
    replace_node,
    require_dtype,
    require_rank,
    static_dim,
    static_rank,
)
from passes.version import reduce_axes


def read_axes(node: ir.Node) -> tuple[list[int] | None, int, int]:
    """(axes, keepdims, noop_with_empty_axes); axes is None when computed at run time and
    [] when absent or empty (all axes, or none with noop_with_empty_axes=1)."""
    keepdims = node.attributes.get_int("keepdims", 1)
    noop = node.attributes.get_int("noop_with_empty_axes", 0)
    if len(node.inputs) > 1 and node.inputs[1] is not None:
        axes = constant_ints(node.inputs[1])
    else:
        attribute = node.attributes.get_ints("axes", None)
        axes = list(attribute) if attribute is not None else []
    return axes, keepdims, noop


def reduce_one_axis(b: Builder, op: str, x: ir.Value, axis: int, keepdims: int) -> ir.Value:
    """A single-axis `op` (ReduceMax or ReduceMin) spelt for the builder's opset (a family
    node)."""
    return b.with_axes(
        op,
        [x],
        [axis],
        {"keepdims": keepdims},
        family_version=current_version(op, b.opset),
        dtype=x.dtype,
    )


def axes_to_chain(node: ir.Node, b: Builder) -> str | None:
    axes, keepdims, noop = read_axes(node)
    if axes is None or len(axes) == 1:
        return None
    x = node.inputs[0]
    if not axes and noop:
        replace_node(node, b.op("Identity", [x], dtype=x.dtype))
        return "empty axes with noop_with_empty_axes=1 is the identity"
    if not axes or (keepdims == 0 and any(a < 0 for a in axes)):
        rank = require_rank(node, x, "the axes to reduce one at a time depend on it")
    else:
        rank = static_rank(x)
    if not axes:
        axes = list(range(rank))
        if rank == 0:
            replace_node(node, b.op("Identity", [x], dtype=x.dtype))
            return f"{node.op_type} of a scalar is the identity"
    if rank is not None:
        axes = non_negative_axes(node, axes, rank, b)
    order = sorted(set(axes), reverse=True)
    result = x
    for axis in order:
        result = reduce_one_axis(b, node.op_type, result, axis, keepdims)
    replace_node(node, result)
    return f"axes {order} reduced one at a time ({len(order)} single-axis {node.op_type})"


def runtime_axes_to_constant(node: ir.Node, b: Builder) -> str | None:
    axes, _, _ = read_axes(node)
    if axes is not None:
        return None
    return reduce_axes.axes_input_to_attribute(node, b)


def _single_axis(
    node: ir.Node, b: Builder, why: str
) -> tuple[ir.Value, int, int, DT, Extremum] | None:
    """(data, axis made non-negative, rank, element type, family) when the node reduces one
    constant axis, else None."""
    axes, _, _ = read_axes(node)
    if axes is None or len(axes) != 1:
        return None
    x = node.inputs[0]
    rank = require_rank(node, x, why)
    dtype = require_dtype(node, x, "the empty-set value and the comparison depend on it")
    return x, non_negative_axes(node, axes, rank, b)[0], rank, dtype, FAMILY_OF[node.op_type]


def slice_tree(node: ir.Node, b: Builder) -> str | None:
    single = _single_axis(node, b, "the Slice tree needs the axis made non-negative")
    if single is None:
        return None
    x, axis, rank, dtype, family = single
    length = static_dim(x, axis)
    if length is None:
        raise b.refuse(
            f"axis {axis} of {x.name!r} has no static length, which a Slice tree needs",
            "a static dim on the reduced axis (the Loop form takes dynamic ones)",
        )
    keepdims = node.attributes.get_int("keepdims", 1)
    if length == 0:
        result = filled(b, family.identity(dtype), reduced_shape(b, x, axis, rank), None)
        what = f"an empty reduced axis gives {node.op_type}'s identity"
    else:
        result, n, levels = x, length, 0
        while n > 1:
            half = (n + 1) // 2
            low = b.slice(result, [0], [half], [axis])
            high = b.slice(result, [n - half], [n], [axis])
            result, n, levels = elementwise(b, family, low, high), half, levels + 1
        what = f"axis {axis} of length {length} reduced by a {levels}-level Slice tree"
    if not keepdims:
        result = b.squeeze(result, [axis])
    elif result is x:
        result = b.op("Identity", [x], dtype=dtype)
    replace_node(node, result)
    return what


def loop(node: ir.Node, b: Builder) -> str | None:
    single = _single_axis(node, b, "the Loop form needs the kept shape")
    if single is None:
        return None
    x, axis, rank, dtype, family = single
    keep_shape = kept_shape(x.shape, axis)
    start = filled(b, family.identity(dtype), reduced_shape(b, x, axis, rank), keep_shape)
    count = b.axis_length(x, axis)
    body = b.sub_builder()
    iteration = ir.Value(
        name=b.namer.unique(f"{start.name}_i"), type=ir.TensorType(DT.INT64), shape=ir.Shape([])
    )
    condition = ir.Value(
        name=b.namer.unique(f"{start.name}_c"), type=ir.TensorType(DT.BOOL), shape=ir.Shape([])
    )
    accumulator = ir.Value(
        name=b.namer.unique(f"{start.name}_acc"), type=ir.TensorType(dtype), shape=keep_shape
    )
    piece = body.op("Gather", [x, iteration], {"axis": axis}, dtype=dtype)
    piece = body.unsqueeze(piece, [axis])
    updated = elementwise(body, family, accumulator, piece)
    body_graph = ir.Graph(
        inputs=[iteration, condition, accumulator],
        outputs=[body.op("Identity", [condition], dtype=DT.BOOL), updated],
        nodes=body.nodes,
        name=f"{start.name}_body",  # (a graph name: no value is called so)
    )
    # An explicit cond=True: onnx.reference (1.23) runs no iteration when cond is omitted.
    keep_going = b.const(np.array(True))
    result = b.op("Loop", [count, keep_going, start], {"body": body_graph}, dtype=dtype)
    if not node.attributes.get_int("keepdims", 1):
        result = b.squeeze(result, [axis])
    replace_node(node, result)
    return f"axis {axis} reduced by a Loop over its slices (dynamic length)"


def _needs_pin(node: ir.Node, wide: DT) -> bool:
    narrow = node.inputs[0].dtype
    # Floats: ±inf narrows to ±inf. bool in uint8: 0 is False and 255 is True.
    if narrow in FLOATS or (narrow == DT.BOOL and wide == DT.UINT8):
        return False
    return not reduces_nonempty_set(node)


def reduces_nonempty_set(node: ir.Node) -> bool:
    """Whether every reduced axis provably has a positive length (static dims)."""
    axes, _, noop = read_axes(node)
    x = node.inputs[0]
    if axes is None or x.shape is None:
        return False
    if not axes:
        if noop:
            return True
        axes = list(range(len(x.shape)))
    rank = len(x.shape)
    dims = [static_dim(x, a + rank if a < 0 else a) for a in axes if -rank <= a < rank]
    return len(dims) == len(axes) and all(d is not None and d > 0 for d in dims)


def decompositions(family: Extremum) -> list[Decomposition]:
    """The family's reduction decompositions, named `reduce_max_...` / `reduce_min_...`."""
    op, name = family.reduce, f"reduce_{family.name}"
    return [
        Decomposition(
            f"{name}_axes_to_chain",
            op,
            axes_to_chain,
            f"{op}(x){{axes=[a, b]}} → {op}({op}(x){{axes=[b]}}){{axes=[a]}}",
        ),
        Decomposition(
            f"{name}_runtime_axes_to_constant",
            op,
            runtime_axes_to_constant,
            f"{op}(x, axes) → per axis i: Concat(Tile({op}(x){{axes=[i]}}, r), "
            "Tile(x, 1-r)), r = [i in axes]",
        ),
        Decomposition(
            f"{name}_slice_tree",
            op,
            slice_tree,
            f"{op}(x){{axes=[a]}} → log-depth tree of {family.name}(Slice, Slice) (static dim)",
        ),
        Decomposition(
            f"{name}_loop",
            op,
            loop,
            f"{op}(x){{axes=[a]}} → Loop: acc = {family.name}(acc, x[i]) from the type's "
            + ("minimum" if family.direction > 0 else "maximum"),
        ),
        *widening_decompositions(op, pin=_needs_pin),
    ]


DECOMPOSITIONS = [d for family in FAMILIES for d in decompositions(family)]
