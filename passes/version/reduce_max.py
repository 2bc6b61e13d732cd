"""ReduceMax and ReduceMin adapters between neighbouring schema versions (1, 11, 12, 13, 18,
20), one set for both families (passes.extremum; the family is read from the node).

20 → 18, bool data                  →  Cast(uint8) → ReduceMax → Cast(bool)
                                        (uint8's minimum 0 maps back to False, so an
                                        empty set still gives False; ReduceMin's empty
                                        set gives uint8's maximum 255, which is True)
18 ↔ 13, `axes` attribute / input  →  shared with every reduction: reduce_axes.py
                                        (constant axes, empty axes, noop_with_empty_axes,
                                        run-time axes by a Tile/Concat select per axis)
13 → 12, bfloat16                   →  refused: nothing below opset 13 reads bfloat16
12 → 11, int8/uint8                 →  Cast(float32) → ReduceMax → Clip(min=type min) →
                                        Cast back (Clip pins the empty set's -inf; for
                                        ReduceMin Clip(max=type max) pins +inf)
11 → 1, negative axes               →  axes + rank (needs a static rank)
every other step                    →  unchanged
"""

from __future__ import annotations

import onnx_ir as ir

from passes.builder import Builder
from passes.extremum import FAMILIES, FAMILY_OF
from passes.version import common, reduce_axes

DT = ir.DataType


@common.type_only
def bool_through_uint8(node: ir.Node, b: Builder) -> str | None:
    why = f"{node.op_type} below opset 20 is rewritten for bool"
    if common.require_known_dtype(node, b, why) != DT.BOOL:
        return None
    common.compute_in_wider_type(node, b, DT.UINT8, family_version=18)
    # uint8's identity (0 for max, 255 for min) casts to bool's (False, True).
    empty = bool(FAMILY_OF[node.op_type].identity(DT.BOOL))
    return f"bool {node.op_type} computed in uint8 (empty set stays {empty})"


@common.type_only
def small_ints_through_float(node: ir.Node, b: Builder) -> str | None:
    why = f"{node.op_type} below 12 is rewritten for int8/uint8"
    dtype = common.require_known_dtype(node, b, why)
    if dtype not in (DT.INT8, DT.UINT8):
        return None
    family = FAMILY_OF[node.op_type]
    bound = family.identity(dtype)  # pins float32's ±inf on an empty set to the narrow type's
    common.compute_in_wider_type(
        node, b, DT.FLOAT, family_version=11, finish=lambda y: b.clip_pick(y, bound, family)
    )
    return f"{dtype.name} {node.op_type} computed exactly in FLOAT, empty set pinned to {bound}"


def _adapters(op: str) -> dict:
    return {
        (op, 1, 11): common.unchanged,
        (op, 11, 1): common.normalise_axes_attribute,
        (op, 11, 12): common.unchanged,
        (op, 12, 11): small_ints_through_float,
        (op, 12, 13): common.unchanged,
        (op, 13, 12): common.refuse_bfloat16,
        **reduce_axes.family_step_adapters(op),
        (op, 18, 20): common.unchanged,
        (op, 20, 18): bool_through_uint8,
    }


ADAPTERS = {key: adapter for f in FAMILIES for key, adapter in _adapters(f.reduce).items()}
