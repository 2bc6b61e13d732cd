"""Exact decompositions of Max (elementwise, variadic, numpy broadcasting from opset 8).

    Max(a)                        →  Identity(a)
    Max(a, b, c)                  →  Max(Max(a, b), c)                      n-ary → binary chain
    Max(a, b), floats             →  Where(Or(Greater(a, b), IsNaN(a)), a, b)
    Max(a, b), integers           →  Where(Greater(a, b), a, b)
    Max(a, b), integers           →  a*Cast(c) + b*Cast(Not(c)), c = Greater(a, b): no Where
                                     (one product is the value times 1, the other times 0,
                                     so nothing overflows; onnxruntime's Where branches per
                                     element and costs 5x this on data-dependent conditions)
    Max(a[2,1], b[3])             →  Max(Expand(a, [2,3]), Expand(b, [2,3]))   static shapes
    Max(a, b: T)                  →  Cast(Max(Cast(a, W), Cast(b, W)), T)   W: exact widening
    Max(a, b, ...) equal shapes   →  ReduceMax(Concat(Unsqueeze(a, 0), ...), axes=[0],
                                                keepdims=0) [+ (NaN if any NaN, else 0) for floats]

NaN: Max propagates it. In the select form a NaN `a` is picked by IsNaN(a), and a NaN `b`
because every comparison with NaN is false; ties (and -0.0 against +0.0) may pick either,
which gives an equal value. ReduceMax's result on a NaN is unspecified by ONNX and runtimes
differ there (microsoft/onnxruntime#10514), so for floats the stacked form adds
a term that is NaN where some input is NaN and +0.0 elsewhere. It is the form of
last resort (`last_resort`: chosen only when nothing else fits, e.g. at opset 7-8, which
have no Where). Widening is exact because the result is one of the inputs, which the narrow type
holds.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.decompose.common import (
    DT,
    FLOATS,
    SIGNED,
    UNSIGNED,
    Decomposition,
    current_version,
    require_accepts,
    schema_accepts,
    widening_decompositions,
)
from passes.graph_utils import replace_node

SELECT_FORM = "Where(Or(Greater(a, b), IsNaN(a)), a, b) (integers: Where(Greater(a, b), a, b))"


def nary_to_binary_chain(node: ir.Node, b: Builder) -> str | None:
    inputs = list(node.inputs)
    if len(inputs) == 2:
        return None
    if len(inputs) == 1:
        replace_node(node, b.op("Identity", inputs, dtype=inputs[0].dtype))
        return "single-input Max is the identity"
    version = current_version("Max", b.opset)
    result = inputs[0]
    for other in inputs[1:]:
        result = b.op("Max", [result, other], family_version=version, dtype=inputs[0].dtype)
    replace_node(node, result)
    return f"{len(inputs)}-input Max as a chain of {len(inputs) - 1} binary Max"


def binary_to_select(node: ir.Node, b: Builder) -> str | None:
    if len(node.inputs) != 2:
        return None
    a, c = node.inputs
    replace_node(node, select_max(b, a, c, a.dtype))
    return f"binary Max as {SELECT_FORM}"


def binary_to_arithmetic(node: ir.Node, b: Builder) -> str | None:
    from passes.decompose.where import arithmetic_select  # where.py imports common only

    if len(node.inputs) != 2 or node.inputs[0].dtype not in SIGNED | UNSIGNED:
        return None
    a, c = node.inputs
    require_accepts(b, "Greater", a.dtype, "the arithmetic form")
    greater = b.op("Greater", [a, c], dtype=DT.BOOL)
    replace_node(node, arithmetic_select(b, greater, a, c, a.dtype))
    return f"binary {a.dtype.name} Max as a*[a > b] + b*[a <= b]"


def select_max(b: Builder, x: ir.Value, y: ir.Value, dtype: DT | None) -> ir.Value:
    """max(x, y) without Max, NaN propagating; broadcasting as Max's (Where broadcasts)."""
    b.require("Where")
    if dtype is not None and not schema_accepts("Greater", b.opset, dtype):
        raise b.refuse(
            f"the select form compares {dtype.name} values, and Greater at opset {b.opset} "
            "does not take that type",
            "a later target opset (Greater takes every numeric type from opset 9, bfloat16 "
            "from 13)",
        )
    greater = b.op("Greater", [x, y], dtype=DT.BOOL)
    if dtype in FLOATS:
        greater = b.op("Or", [greater, b.op("IsNaN", [x], dtype=DT.BOOL)], dtype=DT.BOOL)
    elif dtype is None:  # type unknown: x != x is IsNaN for floats and false for integers
        not_self = b.op("Not", [b.op("Equal", [x, x], dtype=DT.BOOL)], dtype=DT.BOOL)
        greater = b.op("Or", [greater, not_self], dtype=DT.BOOL)
    return b.op("Where", [greater, x, y], dtype=dtype)


def broadcasting_to_explicit(node: ir.Node, b: Builder) -> str | None:
    shapes = [v.shape for v in node.inputs]
    if len(shapes) < 2 or same_shapes(list(node.inputs)):
        return None
    if any(s is None or not all(isinstance(d, int) for d in s) for s in shapes):
        raise b.refuse(
            "making broadcasting explicit needs the static shapes of all inputs",
            "static input shapes (run shape inference; replace symbolic dims)",
        )
    target = tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    expanded = 0
    for i, value in enumerate(list(node.inputs)):
        if tuple(value.shape) != target:
            shape = b.const(np.array(target, dtype=np.int64))
            node.replace_input_with(
                i, b.op("Expand", [value, shape], dtype=value.dtype, shape=ir.Shape(target))
            )
            expanded += 1
    return f"broadcasting made explicit: {expanded} input(s) Expand-ed to {list(target)}"


def same_shapes(values: list[ir.Value]) -> bool:
    """All shapes known and equal, dim by dim (equal symbolic names count as equal)."""
    shapes = [v.shape for v in values]
    if any(s is None or any(getattr(d, "value", d) is None for d in s) for s in shapes):
        return False
    return all(tuple(s) == tuple(shapes[0]) for s in shapes)


def stack_and_reduce(node: ir.Node, b: Builder) -> str | None:
    inputs = list(node.inputs)
    if len(inputs) < 2:
        return None
    dtype = inputs[0].dtype
    if dtype is None:
        raise b.refuse("the stacked ReduceMax form needs the input type", "typed inputs")
    if not same_shapes(inputs):
        raise b.refuse(
            "stacking the inputs for one ReduceMax needs them to have equal shapes",
            "equal input shapes (broadcasting made explicit first)",
        )
    stacked = b.op("Concat", [b.unsqueeze(v, [0]) for v in inputs], {"axis": 0}, dtype=dtype)
    result = b.with_axes(
        "ReduceMax",
        [stacked],
        [0],
        {"keepdims": 0},
        family_version=current_version("ReduceMax", b.opset),
        dtype=dtype,
    )
    if dtype.is_floating_point():
        result = b.binary("Add", result, _nan_where_any_nan(b, inputs), dtype=dtype)
    replace_node(node, result)
    return f"{len(inputs)}-input Max as ReduceMax over the inputs stacked on a new axis"


def _nan_where_any_nan(b: Builder, inputs: list[ir.Value]) -> ir.Value:
    """NaN where some input is NaN, else +0.0.

    ReduceMax's result on a NaN is unspecified (onnxruntime drops it), but Max must give NaN;
    adding this restores it, and adds +0.0 elsewhere (which only turns -0.0 into +0.0, an
    equal value). x is NaN when neither x < +inf nor x > -inf: this needs no IsNaN, Equal on
    floats or Where, so it works wherever the stacked form is needed (opset 7-8).
    """
    dtype = inputs[0].dtype
    bool_ = ir.DataType.BOOL
    inf = b.scalar_like(np.inf, dtype)
    minus_inf = b.scalar_like(-np.inf, dtype)
    any_nan = None
    for value in inputs:
        ordered = b.op(
            "Or",
            [
                b.binary("Less", value, inf, dtype=bool_),
                b.binary("Greater", value, minus_inf, dtype=bool_),
            ],
            dtype=bool_,
        )
        is_nan = b.op("Not", [ordered], dtype=bool_)
        any_nan = is_nan if any_nan is None else b.op("Or", [any_nan, is_nan], dtype=bool_)
    # c / c * 0 with c = [no NaN]: 0/0 * 0 = NaN, 1/1 * 0 = +0.0 (scalars only as the
    # second operand, which is all broadcasting allows before opset 7).
    no_nan = b.cast(b.op("Not", [any_nan], dtype=bool_), dtype)
    ones_or_nan = b.op("Div", [no_nan, no_nan], dtype=dtype)
    return b.binary("Mul", ones_or_nan, b.scalar_like(0.0, dtype), dtype=dtype)


DECOMPOSITIONS = [
    Decomposition(
        "max_nary_to_binary_chain",
        "Max",
        nary_to_binary_chain,
        "Max(a, b, c) → Max(Max(a, b), c); Max(a) → Identity(a)",
    ),
    Decomposition("max_binary_to_select", "Max", binary_to_select, f"Max(a, b) → {SELECT_FORM}"),
    Decomposition(
        "max_binary_to_arithmetic",
        "Max",
        binary_to_arithmetic,
        "Max(a, b), integers → a*Cast(c) + b*Cast(Not(c)), c = Greater(a, b)",
    ),
    Decomposition(
        "max_broadcasting_to_explicit",
        "Max",
        broadcasting_to_explicit,
        "Max(a, b) → Max(Expand(a, S), Expand(b, S)), S the static broadcast shape",
    ),
    Decomposition(
        "max_stack_and_reduce",
        "Max",
        stack_and_reduce,
        "Max(a, b) → ReduceMax(Concat(Unsqueeze(a, 0), Unsqueeze(b, 0)), axes=[0], keepdims=0)",
        last_resort=True,
    ),
    *widening_decompositions("Max"),
]
