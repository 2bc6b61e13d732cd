"""Float extrema through the mirror family: max(x) = -min(-x), exact for floats only.

    Max(a, b, ...), floats          →  Neg(Min(Neg(a), Neg(b), ...))
    ReduceMax(x){axes=[a]}, floats,
    n = x.shape[a] static           →  Neg(tree of Min(Slice, Slice) over Neg(x)): halves
                                       that do not overlap where the length is even, and
                                       overlap by one where it is odd; n = 0: -inf Expand-ed
                                       to the kept shape; keepdims=0: Squeeze(a)

(and for the Min family the same with Max.) For floats negation is exact: it flips the sign
bit, so ±inf and NaN map to themselves mirrored and back, and -(-x) is x. Min propagates NaN
as Max does, so NaN propagates (as onnx.reference's ReduceMax); -0.0 and +0.0 compare equal
in both families and either may come out of a tie (design note 6). For integers it is not
exact (the negation of INT_MIN wraps), and the forms do not apply.

Why: a backend without the Max family but with Min (the `primitives` profile) otherwise gets
the select form Where(Or(Greater, IsNaN)), whose Where branches on every element in
onnxruntime and costs 8-40 Adds on data-dependent conditions; here one Neg of the data (one
Add's cost) and a tree of Min do it, at 4-6x native instead of 18x. The reduction negates
once, before the tree, instead of three times per level (as the tree of negated Max would).
"""

from __future__ import annotations

import onnx_ir as ir

from passes.builder import Builder
from passes.decompose.common import (
    FLOATS,
    Decomposition,
    current_version,
    elementwise,
    filled,
    reduced_shape,
    schema_accepts,
)
from passes.decompose.reduce_max import _single_axis
from passes.extremum import FAMILIES, MAX, MIN, Extremum
from passes.graph_utils import replace_node, static_dim


def mirror_of(family: Extremum) -> Extremum:
    return MIN if family is MAX else MAX


def negated_elementwise(family: Extremum):
    mirror = mirror_of(family)

    def rewrite(node: ir.Node, b: Builder) -> str | None:
        inputs = list(node.inputs)
        dtype = inputs[0].dtype
        if dtype not in FLOATS or not schema_accepts(mirror.elementwise, b.opset, dtype):
            return None
        negated = [b.op("Neg", [v], dtype=dtype) for v in inputs]
        version = current_version(mirror.elementwise, b.opset)
        picked = b.op(mirror.elementwise, negated, family_version=version, dtype=dtype)
        replace_node(node, b.op("Neg", [picked], dtype=dtype))
        return f"float {node.op_type} as Neg({mirror.elementwise}(Neg(x), ...))"

    return rewrite


def reduction_tree(family: Extremum):
    mirror = mirror_of(family)

    def rewrite(node: ir.Node, b: Builder) -> str | None:
        x = node.inputs[0]
        if x.dtype not in FLOATS:
            return None
        single = _single_axis(node, b, "the Slice tree needs the axis made non-negative")
        if single is None:
            return None
        x, axis, rank, dtype, _ = single
        length = static_dim(x, axis)
        if length is None:
            return None  # the halving Loop takes run-time lengths
        if not schema_accepts(mirror.elementwise, b.opset, dtype):
            raise b.refuse(
                f"{mirror.elementwise} at opset {b.opset} does not take {dtype.name}",
                "a later target opset",
            )
        if length == 0:
            result = filled(b, family.identity(dtype), reduced_shape(b, x, axis, rank), None)
        else:
            result = b.op("Neg", [_tree(b, mirror, b.op("Neg", [x], dtype=dtype), axis, length)])
            result.dtype = dtype
        if not node.attributes.get_int("keepdims", 1):
            result = b.squeeze(result, [axis])
        replace_node(node, result)
        return (
            f"float {node.op_type} over axis {axis} as Neg of a {mirror.elementwise} tree on Neg(x)"
        )

    return rewrite


def _tree(b: Builder, family: Extremum, x: ir.Value, axis: int, length: int) -> ir.Value:
    """The family's reduction of x over `axis` (static `length` ≥ 1), keepdims: halves that
    do not overlap for an even length, and overlap by one element for an odd one."""
    while length > 1:
        half = (length + 1) // 2
        low = b.slice(x, [0], [half], [axis])
        high = b.slice(x, [length - half], [length], [axis])
        x, length = elementwise(b, family, low, high), half
    return x


def decompositions(family: Extremum) -> list[Decomposition]:
    mirror = mirror_of(family)
    return [
        Decomposition(
            f"{family.name}_negated_{mirror.name}",
            family.elementwise,
            negated_elementwise(family),
            f"{family.elementwise}(a, b), floats → Neg({mirror.elementwise}(Neg(a), Neg(b)))",
        ),
        Decomposition(
            f"reduce_{family.name}_negated_{mirror.name}_tree",
            family.reduce,
            reduction_tree(family),
            f"{family.reduce}(x){{axes=[a]}}, floats, static length → Neg(tree of "
            f"{mirror.elementwise}(Slice, Slice) over Neg(x))",
        ),
    ]


DECOMPOSITIONS = [d for family in FAMILIES for d in decompositions(family)]
