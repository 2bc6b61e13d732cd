"""Max and Min adapters between neighbouring schema versions (1, 6, 8, 12, 13): one set of
adapters, which read the family (passes.extremum) from the node, so Min is Max's mirror.

    1 → 6, consumed_inputs              →  the attribute is dropped (it never had meaning)
    8 → 6, inputs of different shapes   →  Unsqueeze + Tile each input to the common shape
    12 → 8, int8/int16/uint8/uint16     →  Cast to float32, Max, Cast back   (exact: < 2^24)
    12 → 8, int32/uint32                →  Cast to float64, Max, Cast back   (exact: < 2^53)
    12 → 8, int64/uint64, opset ≥ 9     →  Where(Greater(a, b), a, b), chained (Min: Less)
    12 → 8, int64/uint64, opset 7-8     →  exact comparison from float64 order plus the
                                            int64 difference of near-equal values; select by
                                            a*m + b*(1-m)
    13 → 12, bfloat16                   →  refused: nothing below opset 13 reads bfloat16
    every other step                    →  unchanged

int32 → float32 and int64 → float64 are not exact, so they are never used. Casting to a
float type is monotonic, which is why `float64(a) > float64(b)` proves `a > b`; when the
two round to the same float64 they differ by less than 2^12, so their int64 difference is
exact and decides. Min is not Max of the negated inputs: -INT64_MIN wraps, so each form
names the family's own comparison instead.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.extremum import FAMILIES, FAMILY_OF, Extremum
from passes.graph_utils import replace_node, require_rank
from passes.version import common

DT = ir.DataType
_FLOATS = {DT.FLOAT16, DT.FLOAT, DT.DOUBLE, DT.BFLOAT16}
_EXACT_IN_FLOAT32 = {DT.INT8, DT.INT16, DT.UINT8, DT.UINT16}
_EXACT_IN_FLOAT64 = {DT.INT32, DT.UINT32}


def drop_consumed_inputs(node: ir.Node, b: Builder) -> str | None:
    if node.attributes.pop("consumed_inputs", None) is None:
        return None
    return "dropped consumed_inputs"


def broadcasting_to_explicit(node: ir.Node, b: Builder) -> str | None:
    """Max-6 and Min-6 and older need equal shapes: tile every input to the broadcast shape."""
    inputs = list(node.inputs)
    if len(inputs) == 1 or _all_same_static_shape(inputs):
        return None
    ranks = [
        require_rank(node, v, f"{node.op_type} below opset 8 needs its broadcasting made explicit")
        for v in inputs
    ]
    out_rank = max(ranks)
    padded = [
        b.unsqueeze(v, range(out_rank - r)) if r < out_rank else v for v, r in zip(inputs, ranks)
    ]
    dims = [list(v.shape)[-r:] if r else [] for v, r in zip(inputs, ranks)]
    dims = [[1] * (out_rank - len(d)) + d for d in dims]
    if all(isinstance(d, int) for ds in dims for d in ds):
        tiled = _tile_static(b, padded, dims)
    else:
        tiled = _tile_dynamic(node, b, padded)
    for i, value in enumerate(tiled):
        node.replace_input_with(i, value)
    return "broadcasting made explicit with Unsqueeze/Tile"


def _all_same_static_shape(values: list[ir.Value]) -> bool:
    # Equal dim_params name equal sizes, so symbolic shapes may match too; unknown dims never.
    shapes = [v.shape for v in values]
    if any(
        s is None or any(d is None or getattr(d, "value", 0) is None for d in s) for s in shapes
    ):
        return False
    return all(tuple(s) == tuple(shapes[0]) for s in shapes)


def _tile_static(b: Builder, padded: list[ir.Value], dims: list[list[int]]) -> list[ir.Value]:
    target = np.broadcast_shapes(*[tuple(d) for d in dims])
    out = []
    for value, d in zip(padded, dims):
        repeats = [t if s == 1 else 1 for s, t in zip(d, target)]
        out.append(b.tile(value, repeats) if any(r != 1 for r in repeats) else value)
    return out


def _tile_dynamic(node: ir.Node, b: Builder, padded: list[ir.Value]) -> list[ir.Value]:
    """Repeats from run-time shapes: common = s + (t - s)*[s == 1]; r = 1 + (common-1)*[t == 1]."""
    if b.opset < 6:
        raise b.refuse(
            f"{node.op_type} below opset 8 needs its broadcasting made explicit, and with "
            "dynamic dims that needs integer arithmetic, which ONNX has from opset 6",
            "static input shapes, or target opset 6 or later",
        )
    i64 = DT.INT64
    one = b.const(np.array(1, dtype=np.int64))
    shapes = [b.op("Shape", [v], dtype=i64) for v in padded]

    ones: dict[int, ir.Value] = {}

    def where_one(s: ir.Value) -> ir.Value:  # [s == 1] as int64, made once per shape
        if id(s) not in ones:
            ones[id(s)] = b.cast(b.binary("Equal", s, one, dtype=DT.BOOL), i64)
        return ones[id(s)]

    common_shape = shapes[0]
    for s in shapes[1:]:
        step = b.binary(
            "Mul", b.binary("Sub", s, common_shape, dtype=i64), where_one(common_shape), dtype=i64
        )
        common_shape = b.binary("Add", common_shape, step, dtype=i64)
    growth = b.binary("Sub", common_shape, one, dtype=i64)
    out = []
    for value, s in zip(padded, shapes):
        repeats = b.binary("Add", one, b.binary("Mul", growth, where_one(s), dtype=i64), dtype=i64)
        out.append(b.op("Tile", [value, repeats], dtype=value.dtype))
    return out


@common.type_only
def integers_to_exact_form(node: ir.Node, b: Builder) -> str | None:
    """Max-8 and Min-8 are float-only: widen small integers exactly; compare 64-bit ones
    exactly."""
    op = node.op_type
    dtype = common.require_known_dtype(node, b, f"{op} below opset 12 is rewritten for integers")
    if dtype in _FLOATS:
        return None
    if len(node.inputs) == 1:
        replace_node(node, b.op("Identity", [node.inputs[0]], dtype=dtype))
        return f"single-input {op} on integers is the identity"
    if dtype in _EXACT_IN_FLOAT32 | _EXACT_IN_FLOAT64:
        wide = DT.FLOAT if dtype in _EXACT_IN_FLOAT32 else DT.DOUBLE
        common.compute_in_wider_type(node, b, wide, family_version=8)
        return f"{dtype.name} {op} computed exactly in {wide.name}"
    if b.opset >= 9:
        select = _where_pick
    elif b.opset >= 7 or (b.opset == 6 and _all_same_static_shape(list(node.inputs))):
        select = _arithmetic_pick
    else:
        raise b.refuse(
            f"{dtype.name} {op} below opset 12 needs exact integer arithmetic, which ONNX has "
            "from opset 6 (from 7 with broadcasting)",
            "target opset 7 or later (6 if all inputs have the same static shape)",
        )
    family = FAMILY_OF[op]
    result = node.inputs[0]
    for other in node.inputs[1:]:
        result = select(b, family, result, other, dtype)
    replace_node(node, result)
    return f"{dtype.name} {op} rewritten as an exact comparison and select"


def _where_pick(b: Builder, family: Extremum, x: ir.Value, y: ir.Value, dtype: DT) -> ir.Value:
    wins = b.op(family.beats, [x, y], dtype=DT.BOOL)
    return b.op("Where", [wins, x, y], dtype=dtype)


def _arithmetic_pick(b: Builder, family: Extremum, x: ir.Value, y: ir.Value, dtype: DT) -> ir.Value:
    f64 = DT.DOUBLE
    fx, fy = b.cast(x, f64), b.cast(y, f64)
    mirror = next(f for f in FAMILIES if f is not family)  # its beats: the other order
    wins = b.op(family.beats, [fx, fy], dtype=DT.BOOL)
    loses = b.op(mirror.beats, [fx, fy], dtype=DT.BOOL)
    tied = b.op("Not", [b.op("Or", [wins, loses], dtype=DT.BOOL)], dtype=DT.BOOL)
    # Among tied values x wins when winner - loser is positive: x - y for Max, y - x for Min.
    # |x - y| < 2^12 there; for uint64 a negative difference wraps above 2^63.
    ahead, behind = (x, y) if family.direction > 0 else (y, x)
    difference = b.cast(b.op("Sub", [ahead, behind], dtype=dtype), f64)
    small_positive = b.op(
        "And",
        [
            b.binary("Greater", difference, b.const(np.array(0.0)), dtype=DT.BOOL),
            b.binary("Less", difference, b.const(np.array(2.0**63)), dtype=DT.BOOL),
        ],
        dtype=DT.BOOL,
    )
    x_wins = b.op("Or", [wins, b.op("And", [tied, small_positive], dtype=DT.BOOL)], dtype=DT.BOOL)
    return b.arithmetic_select(x_wins, x, y, dtype)


_STEPS = {
    (1, 6): drop_consumed_inputs,
    (6, 1): common.unchanged,
    (6, 8): common.unchanged,
    (8, 6): broadcasting_to_explicit,
    (8, 12): common.unchanged,
    (12, 8): integers_to_exact_form,
    (12, 13): common.unchanged,
    (13, 12): common.refuse_bfloat16,
}
ADAPTERS = {(f.elementwise, *step): adapter for f in FAMILIES for step, adapter in _STEPS.items()}
