"""ReduceMax adapters between neighbouring schema versions (1, 11, 12, 13, 18, 20).

20 → 18, bool data                  →  Cast(uint8) → ReduceMax → Cast(bool)
                                        (uint8's minimum 0 maps back to False, so an
                                        empty set still gives False)
18 ↔ 13, `axes` attribute / input  →  shared with every reduction: reduce_axes.py
                                        (constant axes, empty axes, noop_with_empty_axes,
                                        run-time axes by a Tile/Concat select per axis)
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
from passes.version import common, reduce_axes

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


ADAPTERS = {
    ("ReduceMax", 1, 11): common.unchanged,
    ("ReduceMax", 11, 1): common.normalise_axes_attribute,
    ("ReduceMax", 11, 12): common.unchanged,
    ("ReduceMax", 12, 11): small_ints_through_float,
    ("ReduceMax", 12, 13): common.unchanged,
    ("ReduceMax", 13, 12): common.refuse_bfloat16,
    **reduce_axes.family_step_adapters("ReduceMax"),
    ("ReduceMax", 18, 20): common.unchanged,
    ("ReduceMax", 20, 18): bool_through_uint8,
}
