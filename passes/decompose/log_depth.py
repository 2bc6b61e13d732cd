"""A reduction over one axis of run-time length in ⌈log2 n⌉ Loop iterations, for a family.

    ReduceMax(x){axes=[a]}, n = x.shape[a] dynamic
        →  acc = x
           Loop while length(acc, a) > 1:            (⌈log2 n⌉ iterations, n ≥ 2)
               m = length(acc, a), h = ⌈m/2⌉
               acc = max(Slice(acc, 0, h), Slice(acc, m-h, m))     on axis a
           c = Concat(E, acc) on a,  E = the family's identity Expand-ed to the kept shape
           max(Slice(c, 0, 1), Slice(c, -1, ∞)) on a  [Squeeze(a) for keepdims=0]

It replaces the n-iteration Loop of `reduce_max.loop` (one Gather and one max per element of
the axis, 118-159x native in onnxruntime on [64, 4096]) where the profile accepts Loop,
Slice and Concat. The halves overlap by one element when m is odd; max does not mind
(idempotent, and NaN propagates either way), so no padding copy is needed. The identity
makes the empty set exact: for n = 0 the Loop does not run, acc is empty on a and c is E
alone, whose two slices are E; for n ≥ 1 acc has one element, c has two and max(E, v) = v
(NaN included: Max and the select form propagate it, as onnx.reference's ReduceMax does).
-0.0 and +0.0 may meet in either order: either is accepted (design note 6).

The Loop's trip-count input is a constant bound (64: an int64 length halves to 1 in fewer
steps), its condition carries the exit; `passes.legalize.cost` costs such a loop as the
⌈log2⌉ of a nominal length.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.decompose.common import (
    DT,
    Decomposition,
    elementwise,
    filled,
    kept_shape,
    reduced_shape,
)
from passes.decompose.reduce_max import _single_axis
from passes.extremum import FAMILIES, Extremum
from passes.graph_utils import replace_node

MAX_HALVINGS = 64  # an axis of at most 2**63 elements halves to one in at most 63 steps


def halving_loop(family: Extremum):
    """The log-depth rewrite of `family.reduce` over one axis of run-time length."""

    def rewrite(node: ir.Node, b: Builder) -> str | None:
        single = _single_axis(node, b, "the halving Loop needs the kept shape")
        if single is None:
            return None
        x, axis, rank, dtype, _ = single
        if x.shape is not None and isinstance(x.shape[axis], int):
            return None  # a static length has the Loop-free Slice tree
        for op in ("Loop", "Concat"):
            b.require(op)
        b.require("Slice")
        if b.opset < 10:
            raise b.refuse(
                "the halving Loop slices at run-time positions, which Slice takes as inputs "
                "only from opset 10",
                "target opset 10 or later",
            )
        carried = list(x.shape) if x.shape is not None else None
        if carried is not None:
            carried[axis] = None  # the length halves from one iteration to the next
        acc_shape = ir.Shape(carried) if carried is not None else None
        more = b.binary("Greater", b.axis_length(x, axis), b.const(np.array(1)), dtype=DT.BOOL)
        body = b.sub_builder()
        name = b.fresh("_halve")
        trip = ir.Value(name=b.namer.unique(f"{name}_i"), type=ir.TensorType(DT.INT64))
        trip.shape = ir.Shape([])
        cond = ir.Value(name=b.namer.unique(f"{name}_c"), type=ir.TensorType(DT.BOOL))
        cond.shape = ir.Shape([])
        acc = ir.Value(name=b.namer.unique(f"{name}_acc"), type=ir.TensorType(dtype))
        acc.shape = acc_shape
        halved, half = _halve(body, family, acc, axis)
        again = body.binary("Greater", half, body.const(np.array(1)), dtype=DT.BOOL)
        graph = ir.Graph(inputs=[trip, cond, acc], outputs=[again, halved], nodes=body.nodes)
        graph.name = f"{name}_body"
        bound = b.const(np.array(MAX_HALVINGS, dtype=np.int64))
        last = b.op("Loop", [bound, more, x], {"body": graph}, dtype=dtype, shape=acc_shape)
        keep = kept_shape(x.shape, axis)
        identity = filled(b, family.identity(dtype), reduced_shape(b, x, axis, rank), keep)
        both = b.op("Concat", [identity, last], {"axis": axis}, dtype=dtype)
        first = b.slice(both, [0], [1], [axis])
        final = b.slice(both, [-1], [np.iinfo(np.int64).max], [axis])
        result = elementwise(b, family, first, final)
        if not node.attributes.get_int("keepdims", 1):
            result = b.squeeze(result, [axis])
        replace_node(node, result)
        return f"axis {axis} of run-time length reduced by a halving Loop (⌈log2 n⌉ iterations)"

    return rewrite


def _halve(b: Builder, family: Extremum, acc: ir.Value, axis: int) -> tuple[ir.Value, ir.Value]:
    """max of acc's two halves on `axis` (overlapping by one for an odd length), and the
    halves' length h = ⌈m/2⌉ as an int64 scalar."""
    i64 = DT.INT64
    one = b.const(np.array([1], dtype=np.int64))
    shape = b.op("Shape", [acc], dtype=i64)
    length = b.op("Gather", [shape, b.const(np.array([axis]))], {"axis": 0}, dtype=i64)
    half = b.op("Div", [b.binary("Add", length, one, dtype=i64), b.const(np.array([2]))], dtype=i64)
    start = b.binary("Sub", length, half, dtype=i64)
    axes = b.const(np.array([axis], dtype=np.int64))
    low = b.op("Slice", [acc, b.const(np.array([0])), half, axes], dtype=acc.dtype)
    high = b.op("Slice", [acc, start, length, axes], dtype=acc.dtype)
    return elementwise(b, family, low, high), b.squeeze(half, [0])


def decompositions(family: Extremum) -> list[Decomposition]:
    reduce = family.reduce
    return [
        Decomposition(
            f"reduce_{family.name}_halving_loop",
            reduce,
            halving_loop(family),
            f"{reduce}(x){{axes=[a]}}, dynamic length → Loop of ⌈log2 n⌉ "
            f"{family.elementwise}(Slice, Slice) halvings, then {family.elementwise} with the "
            "identity (an empty axis gives it)",
        )
    ]


DECOMPOSITIONS = [d for family in FAMILIES for d in decompositions(family)]
