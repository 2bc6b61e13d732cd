"""Exact decompositions of Max and of Min (elementwise, variadic, numpy broadcasting from
opset 8): one set of rewrites, which read the family from the node (passes.extremum); for
Min read Less for Greater, ReduceMin for ReduceMax, and `min_` for `max_` in the names.

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
from passes.extremum import FAMILIES, FAMILY_OF, Extremum
from passes.graph_utils import replace_node


def select_form(family: Extremum) -> str:
    beats = family.beats
    return f"Where(Or({beats}(a, b), IsNaN(a)), a, b) (integers: Where({beats}(a, b), a, b))"


def nary_to_binary_chain(node: ir.Node, b: Builder) -> str | None:
    inputs = list(node.inputs)
    op = node.op_type
    if len(inputs) == 2:
        return None
    if len(inputs) == 1:
        replace_node(node, b.op("Identity", inputs, dtype=inputs[0].dtype))
        return f"single-input {op} is the identity"
    version = current_version(op, b.opset)
    result = inputs[0]
    for other in inputs[1:]:
        result = b.op(op, [result, other], family_version=version, dtype=inputs[0].dtype)
    replace_node(node, result)
    return f"{len(inputs)}-input {op} as a chain of {len(inputs) - 1} binary {op}"


def binary_to_select(node: ir.Node, b: Builder) -> str | None:
    if len(node.inputs) != 2:
        return None
    family = FAMILY_OF[node.op_type]
    a, c = node.inputs
    replace_node(node, select(b, family, a, c, a.dtype))
    return f"binary {node.op_type} as {select_form(family)}"


def binary_to_arithmetic(node: ir.Node, b: Builder) -> str | None:
    from passes.decompose.where import arithmetic_select  # where.py imports common only

    if len(node.inputs) != 2 or node.inputs[0].dtype not in SIGNED | UNSIGNED:
        return None
    family = FAMILY_OF[node.op_type]
    a, c = node.inputs
    require_accepts(b, family.beats, a.dtype, "the arithmetic form")
    wins = b.op(family.beats, [a, c], dtype=DT.BOOL)
    replace_node(node, arithmetic_select(b, wins, a, c, a.dtype))
    wins_if, loses_if = (">", "<=") if family.direction > 0 else ("<", ">=")
    return f"binary {a.dtype.name} {node.op_type} as a*[a {wins_if} b] + b*[a {loses_if} b]"


def select(b: Builder, family: Extremum, x: ir.Value, y: ir.Value, dtype: DT | None) -> ir.Value:
    """The family's pick of x and y without its op, NaN propagating; broadcasting as Max's
    (Where broadcasts)."""
    b.require("Where")
    if dtype is not None and not schema_accepts(family.beats, b.opset, dtype):
        raise b.refuse(
            f"the select form compares {dtype.name} values, and {family.beats} at opset "
            f"{b.opset} does not take that type",
            f"a later target opset ({family.beats} takes every numeric type from opset 9, "
            "bfloat16 from 13)",
        )
    wins = b.op(family.beats, [x, y], dtype=DT.BOOL)
    if dtype in FLOATS:
        wins = b.op("Or", [wins, b.op("IsNaN", [x], dtype=DT.BOOL)], dtype=DT.BOOL)
    elif dtype is None:  # type unknown: x != x is IsNaN for floats and false for integers
        not_self = b.op("Not", [b.op("Equal", [x, x], dtype=DT.BOOL)], dtype=DT.BOOL)
        wins = b.op("Or", [wins, not_self], dtype=DT.BOOL)
    return b.op("Where", [wins, x, y], dtype=dtype)


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
    reduce = FAMILY_OF[node.op_type].reduce
    if dtype is None:
        raise b.refuse(f"the stacked {reduce} form needs the input type", "typed inputs")
    if not same_shapes(inputs):
        raise b.refuse(
            f"stacking the inputs for one {reduce} needs them to have equal shapes",
            "equal input shapes (broadcasting made explicit first)",
        )
    stacked = b.op("Concat", [b.unsqueeze(v, [0]) for v in inputs], {"axis": 0}, dtype=dtype)
    result = b.with_axes(
        reduce,
        [stacked],
        [0],
        {"keepdims": 0},
        family_version=current_version(reduce, b.opset),
        dtype=dtype,
    )
    if dtype.is_floating_point():
        result = b.binary("Add", result, _nan_where_any_nan(b, inputs), dtype=dtype)
    replace_node(node, result)
    return f"{len(inputs)}-input {node.op_type} as {reduce} over the inputs stacked on a new axis"


def _nan_where_any_nan(b: Builder, inputs: list[ir.Value]) -> ir.Value:
    """NaN where some input is NaN, else +0.0.

    ReduceMax's (ReduceMin's) result on a NaN is unspecified (onnxruntime drops it), but Max
    (Min) must give NaN;
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


def decompositions(family: Extremum) -> list[Decomposition]:
    """The family's elementwise decompositions, named `max_...` / `min_...`."""
    op, reduce, name = family.elementwise, family.reduce, family.name
    return [
        Decomposition(
            f"{name}_nary_to_binary_chain",
            op,
            nary_to_binary_chain,
            f"{op}(a, b, c) → {op}({op}(a, b), c); {op}(a) → Identity(a)",
        ),
        Decomposition(
            f"{name}_binary_to_select",
            op,
            binary_to_select,
            f"{op}(a, b) → {select_form(family)}",
        ),
        Decomposition(
            f"{name}_binary_to_arithmetic",
            op,
            binary_to_arithmetic,
            f"{op}(a, b), integers → a*Cast(c) + b*Cast(Not(c)), c = {family.beats}(a, b)",
        ),
        Decomposition(
            f"{name}_broadcasting_to_explicit",
            op,
            broadcasting_to_explicit,
            f"{op}(a, b) → {op}(Expand(a, S), Expand(b, S)), S the static broadcast shape",
        ),
        Decomposition(
            f"{name}_stack_and_reduce",
            op,
            stack_and_reduce,
            f"{op}(a, b) → {reduce}(Concat(Unsqueeze(a, 0), Unsqueeze(b, 0)), axes=[0], "
            "keepdims=0)",
            last_resort=True,
        ),
        *widening_decompositions(op),
    ]


DECOMPOSITIONS = [d for family in FAMILIES for d in decompositions(family)]
