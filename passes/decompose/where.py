"""Exact decomposition of Where on integer types, which some runtimes lack.

    Where(c, a, b), T an integer type  →  Add(Mul(a, Cast(c, T)), Mul(b, Cast(Not(c), T)))

Not a member of the Max family, but the exact forms of Max emit it (the select form, and
passes.version.max's int64/uint64 form below opset 12), and onnxruntime's CPU kernels of
Where skip int16, uint16 and uint64. The select (Builder.arithmetic_select) is also Max's
integer form without Where (passes.decompose.max; passes.version.max below opset 9). For
integers the arithmetic is exact: one product is
the value times 1, the other is times 0, and adding 0 never overflows. Floats are left
alone: inf * 0 is NaN. Broadcasting is Where's: Mul and Add broadcast the same way.
"""

from __future__ import annotations

import onnx_ir as ir

from passes.builder import Builder
from passes.decompose.common import SIGNED, UNSIGNED, Decomposition, require_accepts
from passes.graph_utils import replace_node


def integers_to_arithmetic(node: ir.Node, b: Builder) -> str | None:
    condition, a, c = node.inputs
    dtype = a.dtype
    if dtype not in SIGNED | UNSIGNED:
        return None
    replace_node(node, arithmetic_select(b, condition, a, c, dtype))
    return f"{dtype.name} Where as a*c + b*(1-c)"


def arithmetic_select(
    b: Builder, condition: ir.Value, x: ir.Value, y: ir.Value, dtype: ir.DataType
) -> ir.Value:
    """Where(condition, x, y) for integer x and y, without Where (Builder.arithmetic_select),
    refused where the opset's Mul or Add does not take `dtype`."""
    for op_type in ("Mul", "Add"):  # before 14 neither takes int8, int16, uint8, uint16
        require_accepts(b, op_type, dtype, "the arithmetic select")
    return b.arithmetic_select(condition, x, y, dtype)


DECOMPOSITIONS = [
    Decomposition(
        "where_integers_to_arithmetic",
        "Where",
        integers_to_arithmetic,
        "Where(c, a, b) → Add(Mul(a, Cast(c)), Mul(b, Cast(Not(c)))) (integer types)",
    ),
]
