"""Equal and TopK below the opsets that widened them: exact forms in what the target has.

    Equal-11(a, b: float), to 9..10    →  Not(Or(Or(Less(a, b), Greater(a, b)),
                                                  Or(IsNaN(a), IsNaN(b))))
    Equal-11(a, b: float), to 7..8     →  the same, x not NaN as Or(Less(x, +inf), Greater(x, -inf))
    Equal-11(a, b: int8/int16/uint8/uint16), to ≤ 10  →  Equal(Cast(a, int32), Cast(b, int32))
    Equal-11(a, b: uint32), to ≤ 10    →  Equal(Cast(a, int64), Cast(b, int64))
    Equal-11(a, b: uint64), to 9..10   →  Not(Or(Less(a, b), Greater(a, b)))
    TopK-11(x, k){largest=1, sorted=1}, to ≤ 10  →  TopK(x, k){axis ≥ 0}
      (below 10, attribute_inputs.py then moves a constant k to the attribute)

Before opset 11 Equal takes bool, int32 and int64 only. Two floats are equal exactly when
neither is less than nor greater than the other and neither is NaN (-0.0 equals +0.0, as
in Equal). IsNaN exists from opset 9; before it, a value is NaN exactly when it is neither
below +inf nor above -inf. Before opset 7 the comparisons broadcast only through their
legacy attribute, so float Equal is refused there.

TopK-11 added `largest` and `sorted` (defaults 1, 1): TopK before 11 gives the largest,
sorted. Each adapter returns what it did, or None when the node did not need it.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.graph_utils import require_dtype, static_rank

_EQUAL_7_TYPES = {ir.DataType.BOOL, ir.DataType.INT32, ir.DataType.INT64}
_WIDER = {
    ir.DataType.INT8: ir.DataType.INT32,
    ir.DataType.INT16: ir.DataType.INT32,
    ir.DataType.UINT8: ir.DataType.INT32,
    ir.DataType.UINT16: ir.DataType.INT32,
    ir.DataType.UINT32: ir.DataType.INT64,
}
_FLOATS = {ir.DataType.FLOAT16, ir.DataType.FLOAT, ir.DataType.DOUBLE}


def equal_below_11(node: ir.Node, old: int, b: Builder) -> str | None:
    """Equal-11's new types before opset 11 (see the module docstring)."""
    if old < 11 or b.opset >= 11:
        return None
    a, c = node.inputs
    dtype = require_dtype(node, a, "Equal before opset 11 takes bool, int32 and int64 only")
    if dtype in _EQUAL_7_TYPES or dtype not in (*_WIDER, *_FLOATS, ir.DataType.UINT64):
        return None  # accepted as it is, or no form here (bfloat16, string): the check says
    if dtype in _WIDER:
        wide = _WIDER[dtype]
        node.replace_input_with(0, b.cast(a, wide))
        node.replace_input_with(1, b.cast(c, wide))
        return f"{dtype.name} compared as {wide.name} (exact)"
    if b.opset < 7 or (dtype not in _FLOATS and b.opset < 9):
        since = 7 if dtype in _FLOATS else 9
        raise b.refuse(
            f"Equal before opset 11 does not take {dtype.name}, and its exact form by Less "
            f"and Greater needs opset {since} (numpy broadcasting"
            + (", and Less/Greater on integers)" if since == 9 else ")"),
            f"target opset {since} or later",
        )
    boolean = {"dtype": ir.DataType.BOOL}
    differ = b.op(
        "Or", [b.op("Less", [a, c], **boolean), b.op("Greater", [a, c], **boolean)], **boolean
    )
    if dtype in _FLOATS:
        nan = b.op("Or", [_is_nan(a, b), _is_nan(c, b)], **boolean)
        differ = b.op("Or", [differ, nan], **boolean)
    node.replace_input_with(0, differ)
    node.resize_inputs(1)
    node.op_type = "Not"
    if dtype not in _FLOATS:
        return f"{dtype.name}: Not(Or(Less, Greater))"
    by = "IsNaN" if b.opset >= 9 else "comparisons with ±inf"
    return f"{dtype.name}: Not(Or(Less, Greater, NaN by {by}))"


def _is_nan(x: ir.Value, b: Builder) -> ir.Value:
    if b.opset >= 9:
        return b.op("IsNaN", [x], dtype=ir.DataType.BOOL)
    boolean = {"dtype": ir.DataType.BOOL}
    inf = np.array(np.inf, dtype=x.dtype.numpy())
    below = b.op("Less", [x, b.const(inf)], **boolean)
    above = b.op("Greater", [x, b.const(-inf)], **boolean)
    return b.op("Not", [b.op("Or", [below, above], **boolean)], **boolean)


def top_k_below_11(node: ir.Node, old: int, b: Builder) -> str | None:
    """TopK-10/11 to 10 or below (see the module docstring)."""
    if old < 10 or b.opset >= 11 or (old < 11 and b.opset >= 10):
        return None
    done = []
    for name in ("largest", "sorted"):
        attr = node.attributes.pop(name, None)
        if attr is not None and attr.value != 1:
            node.attributes[name] = attr
            raise b.refuse(
                f"TopK-{old} has {name}={attr.value}, and TopK before opset 11 always "
                "gives the largest values, sorted",
                "target opset 11 or later",
            )
        if attr is not None:
            done.append(f"{name}=1 dropped")
    axis = node.attributes["axis"].value if "axis" in node.attributes else -1
    if axis < 0:
        rank = static_rank(node.inputs[0])
        if rank is not None:
            axis += rank
            node.attributes["axis"] = ir.AttrInt64("axis", axis)
            done.append(f"axis → {axis}")
        elif axis != -1:  # -1 is the default of TopK-1 and TopK-10: the last axis there too
            raise b.refuse(
                f"TopK-{old}'s axis {axis} counts from the back, which TopK before opset 11 "
                f"only does for -1, and the rank of {node.inputs[0].name!r} is unknown",
                "give the input a static rank, or target opset 11 or later",
            )
    # (k moving from input to attribute below 10 is attribute_inputs.py's, which runs next)
    return ", ".join(done) or None


COMPARE_ADAPTERS = {"Equal": [equal_below_11], "TopK": [top_k_below_11]}
