"""The soundness fuzzer of `maxlower prove` (issue 26): random pairs of models in the prover's
fragment, and a judge that trusts no verdict it has not checked against the runtimes.

    pair = draw(pairs())            # a hypothesis strategy: a model, and a one-step mutation
    record = judge(pair)            # prove it, then check the verdict in onnx.reference and
    record.failure                  # onnxruntime: None, or why the verdict lies

Models (`models()`): one or two data inputs `x`, `y` of one element type (float32, float64,
float16, int64, int32) and a small shape with a symbolic dim `N`, optionally an int64 scalar
`k` that decides a shape (a Range bound, a Tile repeat, an Expand shape, a Slice step, a Loop
trip count, an If condition); then 1..5 steps from the fragment's op table
(maxlower/prove/semantics.py), with If branches, Loop bodies and model-local functions that
read outer values by name, and now and then an op outside the fragment (Abs) or wide inputs,
which send `maxlower prove` down its proof by regions.

Mutations (`MUTATIONS`): one step that may or may not change the function; each says whether
it keeps it by construction (True, False, or None for "it depends on the values"). The judge
does not believe either answer: it tests.

The judge (`judge`):
- runs the library's `prove_models` (what `maxlower prove` runs), `maxlower.prove.prove` (the
  whole-model proof), or the command line in a subprocess (its exit code), under a hard time
  limit; an internal error, exit 4, or a run past --timeout + 10 % is a failure;
- PROVED: the interfaces must be the same (input names, types and shapes; output names, order,
  types), and the models must give equal outputs in onnx.reference, and in onnxruntime where it
  agrees with onnx.reference on the reference, on many inputs at every size the verdict
  claims (the dim bindings it lists; when it lists none, sizes past --max-dim too), at every
  value of the shape-deciding input (past the prover's split values, which a verdict "for all
  inputs" covers), with edge values (±0, ±inf, NaN, integer extremes, ties). Equal means: NaN
  equal to NaN, ±0 equal unless the policy counts signed zeros (design.md, "What PROVED
  means"); an output element ONNX leaves undefined in the reference (a float → integer Cast
  of NaN or out of range) is not compared;
- REFUTED: the counterexample is replayed in onnx.reference and onnxruntime; one that shows no
  difference (and is not a candidate undefined there) is a false refutation. A refutation
  without model-level inputs (a region's, or an invalid candidate) is checked by testing.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import hashlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto as TP
from onnx import helper

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLOATS = (TP.FLOAT, TP.DOUBLE, TP.FLOAT16)
SIGNED = (TP.INT64, TP.INT32)
DTYPES = (TP.FLOAT, TP.FLOAT, TP.DOUBLE, TP.INT64, TP.INT32, TP.FLOAT16)
# The values of a shape-deciding input the judge runs: the prover splits at 0..4 (Range, Tile,
# Expand, Loop), -1..4 (Reshape), ±1 (Slice steps); a verdict for all values covers these too.
SHAPE_VALUES = (-3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16)
SIZES_PAST_BOUND = 2  # sizes past --max-dim tried when a verdict names no bound
HUGE = 3_000_000  # a constant that makes the interpreter's work large (the budget class)


# --- models --------------------------------------------------------------------------------
@dataclasses.dataclass
class Builder:
    """A graph being drawn: its nodes, constants, and the type of every value (shape: ints,
    "N", or None for a size computed at run time)."""

    opset: int
    nodes: list = dataclasses.field(default_factory=list)
    inits: list = dataclasses.field(default_factory=list)
    values: dict = dataclasses.field(default_factory=dict)
    counter: list = dataclasses.field(default_factory=lambda: [0])
    data_constants: list = dataclasses.field(default_factory=list)
    functions: list = dataclasses.field(default_factory=list)

    def fresh(self, stem: str) -> str:
        self.counter[0] += 1
        return f"{stem}{self.counter[0]}"

    def add(self, op, inputs, dtype, shape, *, domain="", **attrs) -> str:
        out = self.fresh(op[:1].lower() + op[1:3])
        self.nodes.append(helper.make_node(op, list(inputs), [out], domain=domain, **attrs))
        self.values[out] = (dtype, tuple(shape))
        return out

    def const(self, value, dtype, *, data: bool = False) -> str:
        name = self.fresh("c")
        array = np.asarray(value, dtype=helper.tensor_dtype_to_np_dtype(dtype))
        self.inits.append(onnx.numpy_helper.from_array(array, name))
        self.values[name] = (dtype, array.shape)
        if data:
            self.data_constants.append(name)
        return name

    def sub(self) -> Builder:
        """A builder for a subgraph: fresh names from the same counter, outer values visible."""
        return Builder(self.opset, counter=self.counter, values=dict(self.values))


@dataclasses.dataclass
class Drawn:
    """A drawn reference model and what the judge must know about it."""

    model: onnx.ModelProto
    values: dict  # main graph value -> (dtype, shape)
    data_constants: list
    shape_input: str | None  # the int64 scalar deciding a shape, if any
    dtype: int


def _value_info(name, dtype, shape):
    dims = [d if d is not None else None for d in shape]
    return helper.make_tensor_value_info(name, dtype, dims)


def _pick(draw, b: Builder, test: Callable) -> str | None:
    names = sorted(n for n, (d, s) in b.values.items() if test(d, s))
    return draw(st.sampled_from(names)) if names else None


def _known(shape) -> bool:
    return all(d is not None for d in shape)


def _numeric(d: int) -> bool:
    return d in FLOATS or d in SIGNED


def step_binary(draw, b: Builder, ctx) -> str | None:
    a = _pick(draw, b, lambda d, s: _numeric(d) and _known(s))
    if a is None:
        return None
    dtype, shape = b.values[a]
    other = _pick(draw, b, lambda d, s: d == dtype and (s == shape or s == ()))
    op = draw(st.sampled_from(["Max", "Min", "Add", "Sub", "Mul", "Max3"]))
    if op == "Max3":
        third = _pick(draw, b, lambda d, s: d == dtype and (s == shape or s == ()))
        return b.add(draw(st.sampled_from(["Max", "Min"])), [a, other, third], dtype, shape)
    return b.add(op, [a, other], dtype, shape)


def step_constant(draw, b: Builder, ctx) -> str | None:
    a = _pick(draw, b, lambda d, s: _numeric(d) and _known(s))
    if a is None:
        return None
    dtype, shape = b.values[a]
    value = draw(st.sampled_from(_edge_values(dtype)[:10]))
    c = b.const(value, dtype, data=True)
    return b.add(draw(st.sampled_from(["Max", "Min", "Add", "Mul"])), [a, c], dtype, shape)


def step_unary(draw, b: Builder, ctx) -> str | None:
    a = _pick(draw, b, lambda d, s: _numeric(d) and _known(s))
    if a is None:
        return None
    dtype, shape = b.values[a]
    ops = ["Neg", "Identity"] + (["Relu"] if dtype in (TP.FLOAT, TP.DOUBLE) else [])
    return b.add(draw(st.sampled_from(ops)), [a], dtype, shape)


def step_where(draw, b: Builder, ctx) -> str | None:
    a = _pick(draw, b, lambda d, s: _numeric(d) and _known(s))
    if a is None:
        return None
    dtype, shape = b.values[a]
    other = _pick(draw, b, lambda d, s: d == dtype and s == shape)
    op = draw(st.sampled_from(["Greater", "Less", "Equal", "GreaterOrEqual"]))
    cond = b.add(op, [a, other], TP.BOOL, shape)
    if draw(st.booleans()):
        return b.add("Where", [cond, other, a], dtype, shape)
    return b.add("Add", [a, b.add("Cast", [cond], dtype, shape, to=dtype)], dtype, shape)


def _reduce_node(b: Builder, op, x, axes, keepdims) -> str:
    dtype, shape = b.values[x]
    reduced = range(len(shape)) if axes is None else axes
    kept = (
        tuple(1 if i in reduced else d for i, d in enumerate(shape))
        if keepdims
        else tuple(d for i, d in enumerate(shape) if i not in reduced)
    )
    if op == "ReduceSum" or b.opset >= 18:  # axes as an input
        inputs = [x] if axes is None else [x, b.const(list(axes), TP.INT64)]
        return b.add(op, inputs, dtype, kept, keepdims=keepdims)
    extra = {} if axes is None else {"axes": list(axes)}
    return b.add(op, [x], dtype, kept, keepdims=keepdims, **extra)


def step_reduce(draw, b: Builder, ctx) -> str | None:
    x = _pick(draw, b, lambda d, s: _numeric(d) and _known(s) and len(s) >= 1)
    if x is None:
        return None
    rank = len(b.values[x][1])
    op = draw(st.sampled_from(["ReduceMax", "ReduceMin", "ReduceSum"]))
    axis = draw(st.integers(-rank, rank - 1))
    return _reduce_node(b, op, x, [axis % rank], draw(st.sampled_from([0, 1])))


def step_arg(draw, b: Builder, ctx) -> str | None:
    x = _pick(draw, b, lambda d, s: _numeric(d) and _known(s) and len(s) >= 1)
    if x is None:
        return None
    _dtype, shape = b.values[x]
    axis = draw(st.integers(0, len(shape) - 1))
    keepdims = draw(st.sampled_from([0, 1]))
    out = (
        tuple(1 if i == axis else d for i, d in enumerate(shape))
        if keepdims
        else tuple(d for i, d in enumerate(shape) if i != axis)
    )
    op = draw(st.sampled_from(["ArgMax", "ArgMin"]))
    last = draw(st.sampled_from([0, 1]))
    arg = b.add(op, [x], TP.INT64, out, axis=axis, keepdims=keepdims, select_last_index=last)
    if ctx.dtype == TP.INT64 or draw(st.booleans()):
        return arg
    return b.add("Cast", [arg], ctx.dtype, out, to=ctx.dtype)


def _reduce_all(draw, b: Builder, x) -> str:
    op = draw(st.sampled_from(["ReduceMax", "ReduceMin", "ReduceSum"]))
    return _reduce_node(b, op, x, None, 0)


def _k_as_1d(b: Builder, k) -> str:
    return b.add("Reshape", [k, b.const([1], TP.INT64)], TP.INT64, (1,))


def step_range(draw, b: Builder, ctx) -> str | None:
    if ctx.k is None:
        return None
    zero, one = b.const(0, TP.INT64), b.const(1, TP.INT64)
    r = b.add("Range", [zero, ctx.k, one], TP.INT64, (None,))
    s = _reduce_all(draw, b, r)
    return b.add("Cast", [s], ctx.dtype, (), to=ctx.dtype) if ctx.dtype != TP.INT64 else s


def step_tile(draw, b: Builder, ctx) -> str | None:
    x = _pick(draw, b, lambda d, s: _numeric(d) and _known(s) and len(s) >= 1)
    if ctx.k is None or x is None:
        return None
    dtype, shape = b.values[x]
    k1 = _k_as_1d(b, ctx.k)
    repeats = (
        k1
        if len(shape) == 1
        else b.add(
            "Concat",
            [k1, b.const([1] * (len(shape) - 1), TP.INT64)],
            TP.INT64,
            (len(shape),),
            axis=0,
        )
    )
    tiled = b.add("Tile", [x, repeats], dtype, (None,) * len(shape))
    return _reduce_all(draw, b, tiled)


def step_expand(draw, b: Builder, ctx) -> str | None:
    x = _pick(draw, b, lambda d, s: _numeric(d) and _known(s))
    if ctx.k is None or x is None:
        return None
    dtype, shape = b.values[x]
    k1 = _k_as_1d(b, ctx.k)
    target = b.add(
        "Concat", [k1, b.const([1] * len(shape), TP.INT64)], TP.INT64, (len(shape) + 1,), axis=0
    )
    expanded = b.add("Expand", [x, target], dtype, (None,) * (len(shape) + 1))
    return _reduce_all(draw, b, expanded)


def step_slice(draw, b: Builder, ctx) -> str | None:
    x = _pick(draw, b, lambda d, s: _numeric(d) and _known(s) and len(s) >= 1)
    if ctx.k is None or x is None:
        return None
    dtype, shape = b.values[x]
    start, end = draw(st.sampled_from([(0, 100), (-1, -100), (1, 100), (-1, 0)]))
    inputs = [x, b.const([start], TP.INT64), b.const([end], TP.INT64), b.const([0], TP.INT64)]
    sliced = b.add("Slice", [*inputs, _k_as_1d(b, ctx.k)], dtype, (None, *shape[1:]))
    return _reduce_all(draw, b, sliced)


def step_loop(draw, b: Builder, ctx) -> str | None:
    dtype = ctx.dtype
    trips = (
        ctx.k
        if ctx.k is not None and not ctx.huge
        else b.const(HUGE if ctx.huge else draw(st.integers(0, 6)), TP.INT64)
    )
    init = _pick(draw, b, lambda d, s: d == dtype and s == ()) or b.const(1, dtype, data=True)
    body = b.sub()
    i, cond, acc = body.fresh("i"), body.fresh("cond"), body.fresh("acc")
    body.values.update({i: (TP.INT64, ()), cond: (TP.BOOL, ()), acc: (dtype, ())})
    outer = _pick(draw, b, lambda d, s: d == dtype and s == ()) or acc
    op = draw(st.sampled_from(["Add", "Max", "Min", "Sub"]))
    acc_out = body.add(op, [acc, outer], dtype, ())
    cond_out = body.add("Identity", [cond], TP.BOOL, ())
    graph = helper.make_graph(
        body.nodes,
        b.fresh("body"),
        [_value_info(i, TP.INT64, ()), _value_info(cond, TP.BOOL, ()), _value_info(acc, dtype, ())],
        [_value_info(cond_out, TP.BOOL, ()), _value_info(acc_out, dtype, ())],
        body.inits,
    )
    return b.add("Loop", [trips, "", init], dtype, (), body=graph)


def step_if(draw, b: Builder, ctx) -> str | None:
    a = _pick(draw, b, lambda d, s: _numeric(d) and _known(s))
    if a is None:
        return None
    dtype, shape = b.values[a]
    other = _pick(draw, b, lambda d, s: d == dtype and s == shape)
    if ctx.k is not None and draw(st.booleans()):
        cond = b.add("Greater", [ctx.k, b.const(draw(st.integers(0, 6)), TP.INT64)], TP.BOOL, ())
    else:
        s = _reduce_node(b, "ReduceMax", a, None, 0)
        cond = b.add("Greater", [s, b.const(0, dtype)], TP.BOOL, ())
    branches = []
    for name in ("then", "else"):
        body = b.sub()
        op = draw(st.sampled_from(["Max", "Min", "Add", "Sub"]))
        out = body.add(op, [a, other], dtype, shape)
        branches.append(
            helper.make_graph(body.nodes, b.fresh(name), [], [_value_info(out, dtype, shape)])
        )
    return b.add("If", [cond], dtype, shape, then_branch=branches[0], else_branch=branches[1])


def step_function(draw, b: Builder, ctx) -> str | None:
    a = _pick(draw, b, lambda d, s: _numeric(d) and _known(s))
    if a is None:
        return None
    dtype, shape = b.values[a]
    other = _pick(draw, b, lambda d, s: d == dtype and s == shape)
    name = f"F{len(b.functions)}"
    op = draw(st.sampled_from(["Max", "Min", "Add", "Sub"]))
    body = [helper.make_node(op, ["p", "q"], ["r"])]
    b.functions.append(
        helper.make_function(
            "local", name, ["p", "q"], ["r"], body, [helper.make_opsetid("", b.opset)]
        )
    )
    return b.add(name, [a, other], dtype, shape, domain="local")


def step_outside(draw, b: Builder, ctx) -> str | None:
    """An op the interpreter has no semantics for: the proof goes by regions."""
    a = _pick(draw, b, lambda d, s: _numeric(d) and _known(s))
    if a is None:
        return None
    dtype, shape = b.values[a]
    return b.add("Abs", [a], dtype, shape)


def step_huge(draw, b: Builder, ctx) -> str | None:
    """A constant that makes the work large (a Range of millions, a big Expand): the budget
    (--timeout) must bound the interpreter too."""
    if not ctx.huge:
        return None
    if draw(st.booleans()):
        r = b.add(
            "Range",
            [b.const(0, TP.INT64), b.const(HUGE, TP.INT64), b.const(1, TP.INT64)],
            TP.INT64,
            (HUGE,),
        )
    else:
        one = b.const(np.ones((1,)), TP.INT64)
        r = b.add("Expand", [one, b.const([1500, 2000], TP.INT64)], TP.INT64, (1500, 2000))
    s = _reduce_node(b, "ReduceMax", r, None, 0)
    return b.add("Cast", [s], ctx.dtype, (), to=ctx.dtype) if ctx.dtype != TP.INT64 else s


STEPS = {
    "binary": step_binary,
    "constant": step_constant,
    "unary": step_unary,
    "where": step_where,
    "reduce": step_reduce,
    "arg": step_arg,
    "range": step_range,
    "tile": step_tile,
    "expand": step_expand,
    "slice": step_slice,
    "loop": step_loop,
    "if": step_if,
    "function": step_function,
    "outside": step_outside,
    "huge": step_huge,
}
# How often each step is drawn (the k steps only apply with a shape-deciding input).
WEIGHTS = {
    "binary": 4,
    "constant": 2,
    "unary": 1,
    "where": 2,
    "reduce": 3,
    "arg": 2,
    "range": 2,
    "tile": 1,
    "expand": 1,
    "slice": 2,
    "loop": 1,
    "if": 2,
    "function": 1,
    "outside": 1,
    "huge": 1,
}


@dataclasses.dataclass
class Context:
    dtype: int
    k: str | None
    huge: bool


def _weighted_steps():
    names = [name for name, weight in WEIGHTS.items() for _ in range(weight)]
    return st.sampled_from(names)


@st.composite
def models(draw, *, huge: bool | None = None) -> Drawn:
    """A model of the fragment: inputs x (and y) of one type, maybe k; 1..5 steps; 1-2 outputs."""
    opset = draw(st.sampled_from([13, 18]))
    dtype = draw(st.sampled_from(DTYPES))
    wide = draw(st.integers(0, 9)) == 9  # wide inputs: over the whole-model proof's size
    # 8 and 9: where numpy starts to sum floats pairwise (onnx.reference's ReduceSum)
    c = draw(st.integers(9, 12)) if wide else draw(st.sampled_from([1, 2, 3, 8]))
    shape = draw(st.sampled_from([("N",), ("N", c), (c,), (c, "N")]))
    b = Builder(opset)
    inputs = [("x", dtype, shape)]
    if draw(st.booleans()) or wide:
        inputs.append(("y", dtype, shape))
    k = "k" if draw(st.booleans()) else None
    if k:
        inputs.append((k, TP.INT64, ()))
    for name, d, s in inputs:
        b.values[name] = (d, s)
    ctx = Context(dtype, k, bool(huge) if huge is not None else draw(st.integers(0, 39)) == 39)
    produced = []
    for _ in range(draw(st.integers(1, 5))):
        out = STEPS[draw(_weighted_steps())](draw, b, ctx)
        if out is not None:
            produced.append(out)
    if ctx.huge and not any(
        n.op_type in ("Range", "Expand") and "c" in n.input[-1] for n in b.nodes
    ):
        produced.append(step_huge(draw, b, ctx))
    if not produced:
        produced.append(step_binary(draw, b, ctx) or b.add("Identity", ["x"], dtype, shape))
    outputs = [produced[-1]]
    if len(produced) > 1 and draw(st.booleans()):
        outputs.insert(draw(st.integers(0, 1)), draw(st.sampled_from(produced[:-1])))
    outputs = list(dict.fromkeys(outputs))
    # an initializer that is also a graph input: a default value a caller may override
    defaults = [] if not b.data_constants or draw(st.integers(0, 9)) < 9 else [b.data_constants[0]]
    graph = helper.make_graph(
        b.nodes,
        "fuzz",
        [_value_info(n, d, s) for n, d, s in inputs]
        + [_value_info(n, *b.values[n]) for n in defaults],
        [_value_info(o, *b.values[o]) for o in outputs],
        b.inits,
    )
    imports = [helper.make_opsetid("", opset)]
    if b.functions:
        imports.append(helper.make_opsetid("local", 1))
    model = helper.make_model(graph, opset_imports=imports, functions=b.functions)
    model.ir_version = 8
    return Drawn(model, b.values, b.data_constants, k, dtype)


# --- mutations -----------------------------------------------------------------------------
@dataclasses.dataclass
class Pair:
    reference: onnx.ModelProto
    candidate: onnx.ModelProto
    mutation: str
    keeps: bool | None  # whether the mutation keeps the function by construction
    shape_input: str | None
    signed_zeros: bool = False
    max_dim: int = 3

    def text(self) -> str:
        """Both models as ONNX text, for a report."""
        return (
            f"# mutation {self.mutation} (keeps the function: {self.keeps}); max_dim "
            f"{self.max_dim}, signed_zeros {self.signed_zeros}\n# reference\n"
            f"{onnx.printer.to_text(self.reference)}\n# candidate\n"
            f"{onnx.printer.to_text(self.candidate)}\n"
        )


COMMUTATIVE = {"Max", "Min", "Add", "Mul", "Equal", "And", "Or"}
FLIPS = {
    "Max": "Min",
    "Min": "Max",
    "ReduceMax": "ReduceMin",
    "ReduceMin": "ReduceMax",
    "ArgMax": "ArgMin",
    "ArgMin": "ArgMax",
    "Greater": "Less",
    "Less": "Greater",
    "Add": "Sub",
    "Sub": "Add",
}


def _all_graphs(
    model: onnx.ModelProto,
) -> Iterator[tuple[str, onnx.GraphProto | onnx.FunctionProto]]:
    """(where, graph) for the main graph, every subgraph, and every function body."""

    def walk(graph, where):
        yield where, graph
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    kind = "loop_body" if node.op_type == "Loop" else "if_body"
                    yield from walk(attr.g, kind)

    yield from walk(model.graph, "main")
    for function in model.functions:
        yield "function_body", function


def _nodes(model, test) -> list[tuple[str, object, int]]:
    return [
        (where, graph, i)
        for where, graph in _all_graphs(model)
        for i, node in enumerate(graph.node)
        if test(node)
    ]


def _fresh(model: onnx.ModelProto, stem: str) -> str:
    used = {name for _, g in _all_graphs(model) for n in g.node for name in [*n.input, *n.output]}
    used |= {i.name for i in model.graph.input} | {i.name for i in model.graph.initializer}
    k = 0
    while f"{stem}_{k}" in used:
        k += 1
    return f"{stem}_{k}"


def mutate_swap(draw, drawn: Drawn, cand) -> tuple[str, bool | None] | None:
    spots = _nodes(
        cand,
        lambda n: (
            (n.op_type in FLIPS or n.op_type in COMMUTATIVE or n.op_type == "Where")
            and len(n.input) >= 2
            and n.domain == ""
        ),
    )
    if not spots:
        return None
    where, graph, i = draw(st.sampled_from(spots))
    node = graph.node[i]
    a, b_ = (1, 2) if node.op_type == "Where" else (0, 1)
    if node.input[a] == node.input[b_]:
        return None
    node.input[a], node.input[b_] = node.input[b_], node.input[a]
    keeps = node.op_type in COMMUTATIVE or None
    return ("commute" if keeps else "swap_inputs") + _at(where), keeps


def _at(where: str) -> str:
    return "" if where == "main" else f"@{where}"


def mutate_flip(draw, drawn, cand):
    spots = _nodes(cand, lambda n: n.op_type in FLIPS and n.domain == "")
    if not spots:
        return None
    where, graph, i = draw(st.sampled_from(spots))
    node = graph.node[i]
    node.op_type = FLIPS[node.op_type]
    return f"flip_{node.op_type}" + _at(where), None


def mutate_attribute(draw, drawn, cand):
    spots = _nodes(
        cand,
        lambda n: any(
            a.name in ("keepdims", "select_last_index", "axis", "axes") for a in n.attribute
        ),
    )
    if not spots:
        return None
    where, graph, i = draw(st.sampled_from(spots))
    node = graph.node[i]
    attr = draw(
        st.sampled_from(
            sorted(
                a.name
                for a in node.attribute
                if a.name in ("keepdims", "select_last_index", "axis", "axes")
            )
        )
    )
    for a in node.attribute:
        if a.name == attr:
            if a.type == onnx.AttributeProto.INT:
                a.i = (1 - a.i) if attr != "axis" else (a.i + 1) % 2
            else:
                a.ints[:] = [(v + 1) % 2 for v in a.ints]
    return f"attribute_{attr}" + _at(where), None


def mutate_cast_cond(draw, drawn, cand):
    """`out + Cast(cond)`, cond true only for large values of a shape-deciding input (or a
    large dim): the models differ only there."""
    out = draw(st.sampled_from([o.name for o in cand.graph.output]))
    dtype = drawn.values[out][0]
    pre = _fresh(cand, out + "_pre")
    for _, graph in _all_graphs(cand):
        for node in graph.node:
            node.output[:] = [pre if o == out else o for o in node.output]
    nodes = cand.graph.node
    if drawn.shape_input is not None:
        k = drawn.shape_input
        op, bound = draw(
            st.sampled_from(
                [
                    ("Greater", 4),
                    ("Greater", 5),
                    ("Greater", 8),
                    ("Equal", 2),
                    ("Equal", 5),
                    ("Less", -1),
                ]
            )
        )
        what = f"k_{op}_{bound}"
    else:
        shape, index = _fresh(cand, "shape"), _fresh(cand, "index")
        axis = list(drawn.values["x"][1]).index("N") if "N" in drawn.values["x"][1] else 0
        cand.graph.initializer.append(onnx.numpy_helper.from_array(np.array(axis, np.int64), index))
        nodes.append(helper.make_node("Shape", ["x"], [shape]))
        k = _fresh(cand, "dim")
        nodes.append(helper.make_node("Gather", [shape, index], [k]))
        op, bound = "Greater", draw(st.sampled_from([3, 4, 8]))
        what = f"dims_Greater_{bound}"
    limit, cond, flag = (_fresh(cand, s) for s in ("limit", "cond", "flag"))
    cand.graph.initializer.append(onnx.numpy_helper.from_array(np.array(bound, np.int64), limit))
    nodes.append(helper.make_node(op, [k, limit], [cond]))
    if dtype == TP.BOOL:
        nodes.append(helper.make_node("Or", [pre, cond], [out]))
    else:
        nodes.append(helper.make_node("Cast", [cond], [flag], to=dtype))
        nodes.append(helper.make_node("Add", [pre, flag], [out]))
    return f"cast_cond_{what}", False


def mutate_rename_output(draw, drawn, cand):
    out = cand.graph.output[draw(st.integers(0, len(cand.graph.output) - 1))]
    new = _fresh(cand, out.name + "_renamed")
    for node in cand.graph.node:
        node.output[:] = [new if o == out.name else o for o in node.output]
        node.input[:] = [new if o == out.name else o for o in node.input]
    out.name = new
    return "rename_output", False


def mutate_reorder_outputs(draw, drawn, cand):
    if len(cand.graph.output) < 2:
        return None
    first, second = copy.deepcopy(cand.graph.output[0]), copy.deepcopy(cand.graph.output[1])
    cand.graph.output[0].CopyFrom(second)
    cand.graph.output[1].CopyFrom(first)
    return "reorder_outputs", False


def mutate_extra_output(draw, drawn, cand):
    names = {o.name for o in cand.graph.output}
    options = sorted(
        n
        for n in drawn.values
        if n not in names
        and any(n in node.output for node in cand.graph.node)
        and _known(drawn.values[n][1])
    )
    if not options:
        return None
    name = draw(st.sampled_from(options))
    cand.graph.output.append(_value_info(name, *drawn.values[name]))
    return "extra_output", False


def mutate_initializer(draw, drawn, cand):
    if not drawn.data_constants:
        return None
    name = draw(st.sampled_from(drawn.data_constants))
    init = next(i for i in cand.graph.initializer if i.name == name)
    old = onnx.numpy_helper.to_array(init)
    if draw(st.booleans()):  # the same value, stored another way
        stored = helper.make_tensor(name, init.data_type, old.shape, old.reshape(-1).tolist())
        init.CopyFrom(stored)
        return "initializer_reencoded", True
    pool = [v for v in _edge_values(init.data_type) if not _same_bits(v, old, init.data_type)]
    init.CopyFrom(
        onnx.numpy_helper.from_array(
            np.asarray(draw(st.sampled_from(pool)), dtype=old.dtype).reshape(old.shape), name
        )
    )
    return "initializer_value", None


def _same_bits(value, old, dtype) -> bool:
    np_dtype = helper.tensor_dtype_to_np_dtype(dtype)
    return np.asarray(value, np_dtype).tobytes() == np.asarray(old, np_dtype).tobytes()


ROUND_TRIPS = {
    TP.FLOAT: [(TP.DOUBLE, True), (TP.FLOAT16, False)],
    TP.DOUBLE: [(TP.FLOAT, False)],
    TP.FLOAT16: [(TP.FLOAT, True), (TP.DOUBLE, True)],
    TP.INT64: [(TP.INT32, False), (TP.DOUBLE, False)],
    TP.INT32: [(TP.INT64, True), (TP.DOUBLE, True)],
}


def mutate_dtype(draw, drawn, cand):
    """An output cast to another type and back (exact or not), or left in the other type."""
    out = draw(st.sampled_from([o for o in cand.graph.output]))
    dtype = drawn.values[out.name][0]
    if dtype not in ROUND_TRIPS:
        return None
    other, exact = draw(st.sampled_from(ROUND_TRIPS[dtype]))
    pre, mid = _fresh(cand, out.name + "_pre"), _fresh(cand, out.name + "_mid")
    for node in cand.graph.node:
        node.output[:] = [pre if o == out.name else o for o in node.output]
    back = draw(st.booleans())
    cand.graph.node.append(helper.make_node("Cast", [pre], [mid if back else out.name], to=other))
    if back:
        cand.graph.node.append(helper.make_node("Cast", [mid], [out.name], to=dtype))
        return "dtype_round_trip", exact or None
    out.type.tensor_type.elem_type = other
    return "dtype_changed", False


def mutate_input_shape(draw, drawn, cand):
    """The candidate's inputs declared at one size of N: a narrower interface."""
    changed = False
    for value in cand.graph.input:
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param == "N":
                dim.dim_value = 2
                changed = True
    return ("input_shape", False) if changed else None


def mutate_reduce_as_chain(draw, drawn, cand):
    """ReduceMax/Min/Sum over one axis of fixed size, spelled as Slices and a chain of
    Max/Min/Add from the first element (keeps the function by the schema; onnx.reference's
    ReduceSum sums 8 or more floats pairwise)."""
    spots = []
    for i, node in enumerate(cand.graph.node):
        if node.op_type not in ("ReduceMax", "ReduceMin", "ReduceSum"):
            continue
        axes = _reduce_axes(node, cand)
        if axes is None or len(axes) != 1:
            continue
        _dtype, shape = drawn.values[node.input[0]]
        if isinstance(shape[axes[0]], int) and shape[axes[0]] >= 1:
            spots.append((i, axes[0], shape[axes[0]]))
    if not spots:
        return None
    i, axis, n = draw(st.sampled_from(spots))
    node = cand.graph.node[i]
    keepdims = next((a.i for a in node.attribute if a.name == "keepdims"), 1)
    op = {"ReduceMax": "Max", "ReduceMin": "Min", "ReduceSum": "Add"}[node.op_type]
    new, acc = [], None
    axes_name = _fresh(cand, "axes")
    cand.graph.initializer.append(
        onnx.numpy_helper.from_array(np.array([axis], np.int64), axes_name)
    )
    for j in range(n):
        names = [_fresh(cand, f"s{j}{part}") for part in "abc"]
        for name, value in zip(names[:2], (j, j + 1)):
            cand.graph.initializer.append(
                onnx.numpy_helper.from_array(np.array([value], np.int64), name)
            )
        new.append(
            helper.make_node("Slice", [node.input[0], names[0], names[1], axes_name], [names[2]])
        )
        if acc is None:
            acc = names[2]
            continue
        step = _fresh(cand, "acc")
        new.append(helper.make_node(op, [acc, names[2]], [step]))
        acc = step
    if keepdims:
        new.append(helper.make_node("Identity", [acc], [node.output[0]]))
    else:
        new.append(helper.make_node("Squeeze", [acc, axes_name], [node.output[0]]))
    nodes = list(cand.graph.node)
    cand.graph.ClearField("node")
    cand.graph.node.extend(nodes[:i] + new + nodes[i + 1 :])
    return f"{node.op_type}_as_chain_{n}", True if op != "Add" else None


def _reduce_axes(node, model) -> list[int] | None:
    for a in node.attribute:
        if a.name == "axes":
            return list(a.ints)
    if len(node.input) > 1 and node.input[1]:
        init = next((i for i in model.graph.initializer if i.name == node.input[1]), None)
        return None if init is None else onnx.numpy_helper.to_array(init).tolist()
    return None


def mutate_rewrite(draw, drawn, cand):
    """A rewrite that keeps the function: Sub as Add of Neg, Min through Neg and Max (floats),
    Greater as a swapped Less, Where of Not, an Identity."""
    spots = _nodes(
        cand,
        lambda n: (
            n.op_type in ("Sub", "Min", "Greater", "Where")
            and n.domain == ""
            and len(n.input) in (2, 3)
        ),
    )
    where, graph, i = draw(st.sampled_from(spots)) if spots else ("main", cand.graph, None)
    node = None if i is None else graph.node[i]
    fresh = lambda stem: _fresh(cand, stem)  # noqa: E731
    if node is None or (
        node.op_type == "Min" and (len(node.input) != 2 or drawn.dtype not in FLOATS)
    ):
        target = cand.graph.node[draw(st.integers(0, len(cand.graph.node) - 1))]
        pre = fresh("pre")
        old = target.output[0]
        target.output[0] = pre
        cand.graph.node.append(helper.make_node("Identity", [pre], [old]))
        _toposort(cand.graph)
        return "identity", True
    new: list = []
    if node.op_type == "Sub":
        neg = fresh("neg")
        new = [
            helper.make_node("Neg", [node.input[1]], [neg]),
            helper.make_node("Add", [node.input[0], neg], list(node.output)),
        ]
    elif node.op_type == "Min":
        na, nb, m = fresh("na"), fresh("nb"), fresh("m")
        new = [
            helper.make_node("Neg", [node.input[0]], [na]),
            helper.make_node("Neg", [node.input[1]], [nb]),
            helper.make_node("Max", [na, nb], [m]),
            helper.make_node("Neg", [m], list(node.output)),
        ]
    elif node.op_type == "Greater":
        new = [helper.make_node("Less", [node.input[1], node.input[0]], list(node.output))]
    else:
        nc = fresh("nc")
        new = [
            helper.make_node("Not", [node.input[0]], [nc]),
            helper.make_node("Where", [nc, node.input[2], node.input[1]], list(node.output)),
        ]
    nodes = list(graph.node)
    graph.ClearField("node")
    graph.node.extend(nodes[:i] + new + nodes[i + 1 :])
    return f"rewrite_{node.op_type}" + _at(where), True


def _toposort(graph) -> None:
    known = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    pending, ordered = list(graph.node), []
    outer = set()  # names from outer scopes are read by subgraphs only
    while pending:
        for node in pending:
            if all(not n or n in known or n in outer for n in node.input):
                ordered.append(node)
                known.update(node.output)
                pending.remove(node)
                break
        else:
            ordered.extend(pending)
            break
    graph.ClearField("node")
    graph.node.extend(ordered)


def mutate_reorder_nodes(draw, drawn, cand):
    """Two independent nodes in the other order (keeps the function)."""
    nodes = list(cand.graph.node)
    for i in range(len(nodes) - 1):
        if not set(nodes[i].output) & set(nodes[i + 1].input):
            nodes[i], nodes[i + 1] = nodes[i + 1], nodes[i]
            cand.graph.ClearField("node")
            cand.graph.node.extend(nodes)
            return "reorder_nodes", True
    return None


def _default_opset(model: onnx.ModelProto) -> int:
    return next(i.version for i in model.opset_import if i.domain in ("", "ai.onnx"))


def mutate_dead_node(draw, drawn, cand):
    """A node only the candidate has, whose value nothing reads: an Unsqueeze of x at an
    axis in or out of range (onnx.reference runs every node: one that fails makes the
    whole candidate fail; the proof by regions once dropped it as dead code)."""
    rank = len(drawn.values["x"][1])
    axis = draw(st.sampled_from([0, rank, -1, rank + 1, -(rank + 2), 5]))
    dead = _fresh(cand, "dead")
    if _default_opset(cand) >= 13:
        axes = _fresh(cand, "dead_axes")
        cand.graph.initializer.append(onnx.numpy_helper.from_array(np.array([axis]), axes))
        cand.graph.node.append(helper.make_node("Unsqueeze", ["x", axes], [dead]))
    else:
        cand.graph.node.append(helper.make_node("Unsqueeze", ["x"], [dead], axes=[axis]))
    runs = -(rank + 1) <= axis <= rank
    return f"dead_unsqueeze_{'in' if runs else 'out_of'}_range", None


def mutate_axes_twice(draw, drawn, cand):
    """A reduction's axes with one axis named twice (an error in ONNX: onnx.reference
    rejects it; the interpreter once merged the two)."""
    spots = _nodes(
        cand,
        lambda n: (
            n.op_type in ("ReduceMax", "ReduceMin", "ReduceSum")
            and n.domain == ""
            and _reduce_axes(n, cand)
        ),
    )
    if not spots:
        return None
    where, graph, i = draw(st.sampled_from(spots))
    node = graph.node[i]
    axes = _reduce_axes(node, cand)
    twice = [axes[0], *axes]
    for a in node.attribute:
        if a.name == "axes":
            a.ints[:] = twice
            break
    else:  # axes as an input: a new initializer (the old one may be read elsewhere)
        name = _fresh(cand, "axes_twice")
        cand.graph.initializer.append(onnx.numpy_helper.from_array(np.array(twice), name))
        node.input[1] = name
    return f"axes_twice_{node.op_type}" + _at(where), None


def mutate_plus_zero(draw, drawn, cand):
    """`v + 0.0` in place of a float value v that a node reads (a Div's divisor where there
    is one): equal to v but for the sign of a zero (-0.0 + 0.0 is +0.0), which a Div tells
    apart (1/-0.0 is -inf): the ±0 policy holds at the model's outputs, not inside."""
    floats = {n for n, (d, _) in drawn.values.items() if d in FLOATS}
    spots = [
        (node, k)
        for node in cand.graph.node
        for k, name in enumerate(node.input)
        if name in floats and node.domain == ""
    ]
    if not spots:
        return None
    divisors = [(node, k) for node, k in spots if node.op_type == "Div" and k == 1]
    node, k = draw(st.sampled_from(divisors or spots))
    value = node.input[k]
    zero, shifted = _fresh(cand, "zero"), _fresh(cand, "plus_zero")
    dtype = helper.tensor_dtype_to_np_dtype(drawn.values[value][0])
    cand.graph.initializer.append(onnx.numpy_helper.from_array(np.array(0.0, dtype), zero))
    cand.graph.node.append(helper.make_node("Add", [value, zero], [shifted]))
    node.input[k] = shifted
    _toposort(cand.graph)
    return f"plus_zero_{node.op_type}", None


MUTATIONS = {
    "swap": mutate_swap,
    "flip": mutate_flip,
    "attribute": mutate_attribute,
    "cast_cond": mutate_cast_cond,
    "rename_output": mutate_rename_output,
    "reorder_outputs": mutate_reorder_outputs,
    "extra_output": mutate_extra_output,
    "initializer": mutate_initializer,
    "dtype": mutate_dtype,
    "input_shape": mutate_input_shape,
    "reduce_as_chain": mutate_reduce_as_chain,
    "rewrite": mutate_rewrite,
    "reorder_nodes": mutate_reorder_nodes,
    "dead_node": mutate_dead_node,
    "axes_twice": mutate_axes_twice,
    "plus_zero": mutate_plus_zero,
}


def _fix_output_types(model: onnx.ModelProto) -> None:
    """The candidate's declared output types as shape inference gives them after the
    mutation (a changed keepdims changes a shape: the candidate stays a valid model)."""
    bare = copy.deepcopy(model)
    for out in bare.graph.output:
        out.type.tensor_type.ClearField("shape")
    try:
        inferred = onnx.shape_inference.infer_shapes(bare, strict_mode=False)
    except Exception:
        return
    types = {v.name: v.type for v in [*inferred.graph.value_info, *inferred.graph.output]}
    for out in model.graph.output:
        new = types.get(out.name)
        if (
            new is not None
            and new.tensor_type.HasField("shape")
            and new.tensor_type.elem_type == out.type.tensor_type.elem_type
        ):
            out.type.CopyFrom(new)


@st.composite
def pairs(draw, *, huge: bool | None = None, max_dims=(2, 3)) -> Pair:
    """A drawn model and its one-step mutation."""
    drawn = draw(models(huge=huge))
    # one kind drawn evenly first (a permutation alone favours its shrink-towards order)
    first = draw(st.sampled_from(sorted(MUTATIONS)))
    for kind in [first, *draw(st.permutations(sorted(set(MUTATIONS) - {first})))]:
        candidate = copy.deepcopy(drawn.model)
        applied = MUTATIONS[kind](draw, drawn, candidate)
        if applied is not None:
            break
    else:  # nothing applies: the model against itself
        candidate, applied = copy.deepcopy(drawn.model), ("none", True)
    _fix_output_types(candidate)
    mutation, keeps = applied
    signed = draw(st.integers(0, 4)) == 4
    return Pair(
        drawn.model,
        candidate,
        mutation,
        keeps,
        drawn.shape_input,
        signed,
        draw(st.sampled_from(max_dims)),
    )


# --- input values ----------------------------------------------------------------------------
def _edge_values(dtype: int) -> list:
    if dtype == TP.BOOL:
        return [False, True]
    if dtype in FLOATS:
        info = np.finfo(helper.tensor_dtype_to_np_dtype(dtype))
        return [
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.5,
            np.inf,
            -np.inf,
            np.nan,
            -3.0,
            0.5,
            float(info.max),
            -float(info.max),
            float(info.tiny),
            16777217.0,
            -2.0,
        ]
    info = np.iinfo(helper.tensor_dtype_to_np_dtype(dtype))
    return [0, 1, -1, 2, int(info.max), int(info.min), -5, 7, int(info.max) - 1, int(info.min) + 1]


def input_sets(
    model: onnx.ModelProto, sizes: dict[str, int], shape_input, shape_value, rng, count: int
):
    """`count` feeds for `model` at `sizes`: edge values, small integers (ties), random."""
    feeds = []
    for n in range(count):
        feed = {}
        defaults = {i.name for i in model.graph.initializer}
        for value in model.graph.input:
            t = value.type.tensor_type
            np_dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
            if value.name in defaults and n % 2 == 0:
                continue  # its default value
            if value.name == shape_input:
                feed[value.name] = np.array(shape_value, np_dtype)
                continue
            shape = tuple(
                d.dim_value if d.HasField("dim_value") else sizes.get(d.dim_param, 2)
                for d in t.shape.dim
            )
            feed[value.name] = _values(t.elem_type, np_dtype, shape, rng, n)
        if n % 4 == 3 and "x" in feed and "y" in feed and feed["x"].shape == feed["y"].shape:
            feed["y"] = feed["x"].copy()  # ties everywhere
        feeds.append(feed)
    return feeds


def _values(dtype, np_dtype, shape, rng, n) -> np.ndarray:
    size = int(np.prod(shape, dtype=np.int64))
    kind = int(rng.integers(0, 4))
    if kind == 3:  # zeros of both signs: ties that only the sign of zero tells apart
        pool = [False, True] if dtype == TP.BOOL else [0.0, -0.0] if dtype in FLOATS else [0, 1]
        flat = [pool[i] for i in rng.integers(0, len(pool), size)]
    elif kind == 0:
        pool = _edge_values(dtype)
        flat = [pool[i] for i in rng.integers(0, len(pool), size)]
    elif kind == 1:
        flat = rng.integers(-3, 4, size).tolist()  # ties
    elif dtype in FLOATS:
        flat = (rng.standard_normal(size) * 10).tolist()
    else:
        flat = rng.integers(-1000, 1000, size).tolist()
    with np.errstate(all="ignore"):
        return (
            np.array(flat, dtype=np.float64 if dtype in FLOATS else object)
            .astype(np_dtype)
            .reshape(shape)
        )


# --- running the models ----------------------------------------------------------------------
class Runner:
    """A model run in onnx.reference and onnxruntime; sessions built once."""

    def __init__(self, model: onnx.ModelProto) -> None:
        from maxlower.runtime import onnxruntime_session, reference_evaluator

        self.model = model
        self.names = [o.name for o in model.graph.output]
        self.reference = self.ort = None
        self.reference_error = self.ort_error = None
        try:
            self.reference = reference_evaluator(model)
        except Exception as error:
            self.reference_error = _first_line(error)
        try:
            self.ort = onnxruntime_session(model)
        except Exception as error:
            self.ort_error = _first_line(error)
        self.casts = _undefined_casts(model)

    def run_reference(self, feed):
        """(outputs, None) or (None, error) in onnx.reference."""
        if self.reference is None:
            return None, self.reference_error
        try:
            with np.errstate(all="ignore"):
                names = self.names + [c[0] for c in self.casts]
                results = self.reference.run(names, feed)
        except Exception as error:
            return None, _first_line(error)
        return [np.asarray(r) for r in results], None

    def run_ort(self, feed):
        if self.ort is None:
            return None, self.ort_error
        try:
            return [np.asarray(r) for r in self.ort.run(None, feed)], None
        except Exception as error:
            return None, _first_line(error)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:200]


def _undefined_casts(model: onnx.ModelProto) -> list[tuple[str, int, str | None]]:
    """(input value, target type, graph output it is or None) of every float → integer Cast
    of the main graph: where its input is NaN or out of range, ONNX leaves the result
    undefined."""
    types = {v.name: v.type.tensor_type.elem_type for v in model.graph.input}
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    types.update({v.name: v.type.tensor_type.elem_type for v in inferred.graph.value_info})
    outputs = {o.name for o in model.graph.output}
    found = []
    for node in model.graph.node:
        if node.op_type != "Cast":
            continue
        to = next(a.i for a in node.attribute if a.name == "to")
        if types.get(node.input[0]) in FLOATS and to not in FLOATS and to != TP.BOOL:
            found.append((node.input[0], to, node.output[0] if node.output[0] in outputs else None))
    return found


def _defined_mask(runner: Runner, results, policy_outputs) -> dict[str, np.ndarray] | None:
    """Per graph output, where the reference is defined (True); None when an undefined
    Cast feeds other nodes on this input (the input is skipped)."""
    masks = {}
    for (_source, to, output), value in zip(runner.casts, results[len(runner.names) :]):
        info = np.iinfo(helper.tensor_dtype_to_np_dtype(to))
        with np.errstate(all="ignore"):
            v = np.trunc(value.astype(np.float64))
            ok = ~np.isnan(v) & (v >= info.min) & (v <= info.max)
        if ok.all():
            continue
        if output is None:
            return None
        masks[output] = ok & masks.get(output, True)
    return masks


def same(a: np.ndarray, b: np.ndarray, signed_zeros: bool) -> np.ndarray:
    """Elementwise equality under the policy: NaN equal to NaN; ±0 equal unless signed_zeros."""
    if a.dtype.kind == "f":
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        eq = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
        if signed_zeros:
            eq &= np.signbit(a64) == np.signbit(b64)
        return eq
    return a == b


def compare(ref_out, cand_out, names, signed_zeros, masks=None) -> str | None:
    """The first difference between two lists of outputs, in words, or None."""
    if len(ref_out) != len(cand_out):
        return f"{len(ref_out)} outputs against {len(cand_out)}"
    for name, r, c in zip(names, ref_out, cand_out):
        if r.dtype != c.dtype:
            return f"output {name!r}: dtype {r.dtype} against {c.dtype}"
        if r.shape != c.shape:
            return f"output {name!r}: shape {list(r.shape)} against {list(c.shape)}"
        differ = ~same(r, c, signed_zeros)
        if masks and name in masks:
            differ &= masks[name]
        if differ.any():
            index = tuple(int(i) for i in np.argwhere(differ)[0])
            return f"output {name!r} at {list(index)}: {r[index]!r} against {c[index]!r}"
    return None


# --- proving ---------------------------------------------------------------------------------
@dataclasses.dataclass
class Record:
    """What the judge found on one pair (one line of the campaign's jsonl)."""

    mutation: str
    keeps: bool | None
    door: str
    status: str  # proved, counterexample, inconclusive, refused (exit 2), error, overrun
    seconds: float
    timeout: float
    exit_code: int | None = None
    reason: str | None = None
    failure: str | None = None  # why the verdict is wrong (a soundness failure)
    false_refutation: str | None = None
    unconfirmed_refutation: str | None = (
        None  # refuted, nothing to replay, testing found no difference
    )
    # PROVED, equal in onnx.reference, and onnxruntime differs from onnx.reference on the
    # candidate alone (see _ort_difference)
    runtime_disagreement: str | None = None
    notes: list = dataclasses.field(default_factory=list)
    checked_inputs: int = 0
    verdict_text: str = ""

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), default=str)


class TimeLimit(BaseException):
    """The hard limit on one proof (a BaseException: no `except Exception` in the prover
    swallows it)."""


@contextlib.contextmanager
def hard_limit(seconds: float):
    """SIGALRM after `seconds` (the main thread's Python code is interrupted; z3's own
    timeout bounds its C code)."""

    def fire(signum, frame):
        raise TimeLimit

    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only: the run is timed, not cut short
        return
    previous = signal.signal(signal.SIGALRM, fire)
    # again every second: a TimeLimit raised inside a callback (a gc hook, z3's ctypes) is lost
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def prove_library(pair: Pair, timeout: float, door: str):
    """(report dict, summary, seconds) or raises: the library's verdict."""
    from maxlower.prove import prove
    from maxlower.prove.core import Policy
    from maxlower.prove.sites import prove_models

    function = prove_models if door == "prove_models" else prove
    start = time.perf_counter()
    report = function(
        pair.reference,
        pair.candidate,
        max_dim=pair.max_dim,
        timeout=timeout,
        policy=Policy(signed_zeros=pair.signed_zeros),
    )
    return report.to_dict(), report.summary(), time.perf_counter() - start


STATUS_OF_EXIT = {0: "proved", 1: "counterexample", 2: "refused", 5: "inconclusive"}


def prove_cli(pair: Pair, timeout: float):
    """(report dict or None, output, seconds, exit code): `maxlower prove` in a subprocess,
    run from an empty directory."""
    with tempfile.TemporaryDirectory(prefix="prove-fuzz-") as tmp:
        paths = [pathlib.Path(tmp) / f"{side}.onnx" for side in ("reference", "candidate")]
        for path, model in zip(paths, (pair.reference, pair.candidate)):
            onnx.save(model, path)
        json_path = pathlib.Path(tmp) / "report.json"
        command = [
            sys.executable,
            "-m",
            "maxlower",
            "prove",
            *map(str, paths),
            "--max-dim",
            str(pair.max_dim),
            "--timeout",
            str(timeout),
            "--json",
            str(json_path),
        ]
        if pair.signed_zeros:
            command.append("--signed-zeros")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        start = time.perf_counter()
        try:
            done = subprocess.run(
                command,
                cwd=tmp,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout * 1.1 + 30,
            )
        except subprocess.TimeoutExpired:
            return None, "killed", time.perf_counter() - start, None
        seconds = time.perf_counter() - start
        report = json.loads(json_path.read_text()) if json_path.exists() else None
        return report, done.stdout + done.stderr, seconds, done.returncode


# CLI start-up (imports of onnx, onnxruntime, z3) is not part of the proof's budget.
CLI_STARTUP = 8.0


def judge(
    pair: Pair,
    *,
    timeout: float = 5.0,
    door: str = "prove_models",
    inputs_per_case: int = 4,
    grace: float = 2.0,
) -> Record:
    """Prove the pair through `door` ("prove_models", "prove" or "cli") and check the verdict."""
    record = Record(pair.mutation, pair.keeps, door, "error", 0.0, timeout)
    if _invalid(pair.reference):  # a bug of the strategy, not of the prover
        record.status, record.notes = "skipped", [f"invalid reference: {_invalid(pair.reference)}"]
        return record
    report = summary = None
    if door == "cli":
        report, summary, seconds, code = prove_cli(pair, timeout)
        record.exit_code, record.seconds = code, seconds
        record.verdict_text = summary[-2000:]
        if code is None or seconds > timeout * 1.1 + CLI_STARTUP:
            record.status = "overrun"
            record.failure = f"maxlower prove ran {seconds:.1f} s with --timeout {timeout}"
            return record
        if code not in STATUS_OF_EXIT:
            record.failure = f"exit {code}: {summary[-600:]}"
            return record
        record.status = STATUS_OF_EXIT[code]
        if report is not None and report.get("status") != record.status and code != 2:
            record.failure = f"exit {code} but --json says {report.get('status')}"
            return record
        if code == 2:
            record.reason = summary.strip().splitlines()[-1][:300] if summary.strip() else ""
            return record
    else:
        from maxlower.errors import InvalidModelError

        gc.collect()
        start = time.perf_counter()
        try:
            with hard_limit(timeout * 1.1 + grace):
                report, summary, seconds = prove_library(pair, timeout, door)
        except TimeLimit:
            record.status, record.seconds = "overrun", time.perf_counter() - start
            gc.collect()  # the killed proof's terms, freed before the next one is timed
            record.failure = (
                f"prove ran past {timeout * 1.1 + grace:.1f} s (killed) with timeout {timeout}"
            )
            return record
        except InvalidModelError as error:
            record.status, record.reason = "refused", _first_line(error)
            record.seconds = time.perf_counter() - start
            return record
        except Exception as error:  # an internal error is a failure
            record.seconds = time.perf_counter() - start
            if "TimeLimit" in f"{type(error).__name__}: {error}":  # the kill, wrapped by ctypes
                record.status = "overrun"
                record.failure = f"prove ran past {timeout * 1.1 + grace:.1f} s (killed)"
                gc.collect()
                return record
            record.failure = f"internal error {type(error).__name__}: {_first_line(error)}"
            return record
        record.seconds, record.status = seconds, report["status"]
        record.verdict_text = summary[-2000:]
        if seconds > timeout * 1.1:
            record.status = "overrun"
            record.failure = f"prove took {seconds:.2f} s with timeout {timeout} (> +10 %)"
            return record
    record.reason = report.get("reason") if report else None
    if record.status == "proved":
        record.failure = check_proved(pair, report, summary or "", record, inputs_per_case)
    elif record.status == "counterexample":
        check_refuted(pair, report, record, inputs_per_case)
    return record


def _invalid(model) -> str | None:
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as error:
        return _first_line(error)
    return None


def interface_difference(reference, candidate) -> str | None:
    """Input names, types and shapes; output names, order and types."""

    def sig(values):
        return [
            (
                v.name,
                v.type.tensor_type.elem_type,
                tuple(
                    d.dim_value if d.HasField("dim_value") else d.dim_param
                    for d in v.type.tensor_type.shape.dim
                ),
            )
            for v in values
        ]

    inits = {i.name for i in reference.graph.initializer}
    ref_in = [s for s in sig(reference.graph.input) if s[0] not in inits]
    cand_in = [
        s
        for s in sig(candidate.graph.input)
        if s[0] not in {i.name for i in candidate.graph.initializer}
    ]
    if ref_in != cand_in:
        return f"inputs {ref_in} against {cand_in}"
    ref_out = [s[:2] for s in sig(reference.graph.output)]
    cand_out = [s[:2] for s in sig(candidate.graph.output)]
    if ref_out != cand_out:
        return f"outputs {ref_out} against {cand_out}"
    return None


def claimed_sizes(pair: Pair, report: dict, summary: str) -> tuple[list[dict[str, int]], bool]:
    """The dim bindings a PROVED verdict covers, and whether it names its bound: the sizes
    its `coverage` lists for each dim (every verdict's JSON has one, the whole-model
    proof's and the regions'), or, a verdict without one claiming every size, sizes past
    --max-dim too. `summary` is unused: the judge reads what the verdict states in data,
    not words, so that a claim cannot hide in wording the judge does not parse."""
    del summary
    names = sorted(
        {
            d.dim_param
            for v in pair.reference.graph.input
            for d in v.type.tensor_type.shape.dim
            if d.dim_param
        }
    )
    if not names:
        return [{}], True
    stated = (report.get("coverage") or {}).get("dims") or {}
    top = pair.max_dim + SIZES_PAST_BOUND
    sizes = [stated.get(name, range(top + 1)) for name in names]
    import itertools

    bindings = [dict(zip(names, chosen)) for chosen in itertools.product(*sizes)]
    return bindings, all(name in stated for name in names)


def claimed_values(pair: Pair, report: dict) -> list[int]:
    """The values of the shape-deciding input to try: every one (SHAPE_VALUES), unless the
    verdict's coverage states the values of its case split for that input (then those), less
    the values it names as unproved."""
    if pair.shape_input is None:
        return [0]
    coverage = report.get("coverage") or {}
    split = coverage.get("split") or {}
    stated = [
        v for key, values in split.items() if key.split("[")[0] == pair.shape_input for v in values
    ]
    # values the verdict names as unproved (the reference breaks its declared shapes there);
    # a proof by sites names the sites instead (a region's inputs are no model inputs), so
    # it excludes no value here and every value is tried
    unproved = {
        v
        for leaf in coverage.get("unproved") or []
        if isinstance(leaf, dict)
        for key, v in leaf["values"].items()
        if key.split("[")[0] == pair.shape_input and len(leaf["values"]) == 1
    }
    chosen = sorted(set(stated)) if stated else list(SHAPE_VALUES)
    return [v for v in chosen if v not in unproved]


def _rng(pair: Pair) -> np.random.Generator:
    digest = hashlib.sha256(pair.reference.SerializeToString() + pair.candidate.SerializeToString())
    return np.random.default_rng(int.from_bytes(digest.digest()[:8], "little"))


def find_difference(pair: Pair, bindings, values, inputs_per_case, record: Record) -> str | None:
    """The first input (at the bindings and shape values) on which the models differ where
    the reference is defined, in words, or None."""
    ref, cand = Runner(pair.reference), Runner(pair.candidate)
    if ref.reference is None:
        record.notes.append(f"onnx.reference cannot load the reference: {ref.reference_error}")
        return None
    rng = _rng(pair)
    per_value = max(2, inputs_per_case // 2) if len(values) > 1 else inputs_per_case
    for sizes in bindings:
        for value in values:
            for feed in input_sets(pair.reference, sizes, pair.shape_input, value, rng, per_value):
                found = _differs_on(ref, cand, feed, pair.signed_zeros, record)
                if found is not None:
                    return f"at {sizes or 'static shapes'}, {_feed_text(feed)}: {found}"
    return None


def _differs_on(ref: Runner, cand: Runner, feed, signed_zeros, record: Record) -> str | None:
    ref_out, _error = ref.run_reference(feed)
    if ref_out is None:
        return None  # the reference is undefined here (ONNX: an error)
    masks = _defined_mask(ref, ref_out, None)
    if masks is None:
        return None
    record.checked_inputs += 1
    ref_out = ref_out[: len(ref.names)]
    cand_out, cand_error = cand.run_reference(feed)
    if cand_out is None:
        return f"onnx.reference runs the reference and fails on the candidate ({cand_error})"
    cand_out = cand_out[: len(cand.names)]
    found = compare(ref_out, cand_out, ref.names, signed_zeros, masks)
    if found is not None:
        return f"onnx.reference: {found}"
    return _ort_difference(ref, cand, feed, (ref_out, cand_out), signed_zeros, masks, record)


def _ort_difference(ref, cand, feed, expected, signed_zeros, masks, record) -> str | None:
    """A difference onnxruntime shows, where it agrees with onnx.reference (the prover's
    stated base) on both models and no NaN is fed (ONNX leaves a NaN in ReduceMax/ArgMax
    open). Where it agrees on the reference and not on the candidate, onnxruntime computes
    some op of the candidate otherwise than onnx.reference (its int64 ReduceSum rounds
    through double past 2**53, say): a runtime disagreement, recorded apart and counted,
    not a verdict that is wrong by its base."""
    ref_expected, cand_expected = expected
    ref_ort, _ = ref.run_ort(feed)
    cand_ort, cand_error = cand.run_ort(feed)
    if ref_ort is None:
        return None
    if cand_ort is None:
        record.notes.append(f"onnxruntime runs the reference, not the candidate: {cand_error}")
        return None
    found = compare(ref_ort, cand_ort, ref.names, signed_zeros, masks)
    if found is None:
        return None
    agrees = compare(ref_expected, ref_ort, ref.names, signed_zeros, masks) is None
    has_nan = any(v.dtype.kind == "f" and np.isnan(v).any() for v in feed.values())
    if agrees and not has_nan:
        if compare(cand_expected, cand_ort, ref.names, signed_zeros, masks) is not None:
            record.runtime_disagreement = f"onnxruntime: {found}"[:300]
            return None
        return f"onnxruntime: {found}"
    record.notes.append(f"onnxruntime differs where it is not onnx.reference's: {found}"[:300])
    return None


def _feed_text(feed) -> str:
    return ", ".join(f"{k}={v.tolist()!r}"[:160] for k, v in feed.items())


def check_proved(
    pair: Pair, report: dict, summary: str, record: Record, inputs_per_case: int
) -> str | None:
    """Why the PROVED verdict is wrong, or None."""
    interface = interface_difference(pair.reference, pair.candidate)
    if interface is not None:
        return f"PROVED, and the interfaces differ: {interface}"
    bindings, stated = claimed_sizes(pair, report, summary)
    if not stated:
        record.notes.append("the verdict names no dims bound: sizes past --max-dim tried")
    values = claimed_values(pair, report)
    found = find_difference(pair, bindings, values, inputs_per_case, record)
    return None if found is None else f"PROVED, and the models differ {found}"


def check_refuted(pair: Pair, report: dict, record: Record, inputs_per_case: int) -> None:
    """Replay the counterexample; without one on the models' inputs, test for a difference."""
    cex = _counterexample(report)
    names = {v.name: v.type.tensor_type.elem_type for v in pair.reference.graph.input}
    required = set(names) - {i.name for i in pair.reference.graph.initializer}
    if cex is not None and required <= set(cex.get("inputs", {})) <= set(names):
        dims = cex.get("dims") or {}
        feed = {k: _array(v, names[k], pair.reference, k, dims) for k, v in cex["inputs"].items()}
        if replays(pair, feed, cex.get("kind")) or _invalid_candidate(pair):
            return  # (an invalid candidate of a valid reference is refuted by the spec)
        record.false_refutation = f"{cex.get('kind')} at {cex.get('dims')}: {_feed_text(feed)}"
        return
    if interface_difference(pair.reference, pair.candidate) is not None:
        return  # (an interface difference shows without inputs: nothing to test; a campaign
        # once spent over 10 minutes running such a pair's huge Tiles in onnxruntime)
    bindings, _ = claimed_sizes(pair, {}, "max_dim")
    found = find_difference(pair, bindings, claimed_values(pair, {}), inputs_per_case, record)
    if found is None and not _invalid_candidate(pair):
        what = "a region's counterexample" if cex is not None else "no counterexample"
        record.unconfirmed_refutation = f"{what}; testing finds no difference ({record.reason})"[
            :400
        ]


def _invalid_candidate(pair: Pair) -> bool:
    return _invalid(pair.candidate) is not None


def _fails_annotations(model: onnx.ModelProto, feed) -> bool:
    """Whether onnx.reference, checking the declared shapes (onnx's
    ShapeAnnotationSemantics.md: a runtime may rely on them), fails on `feed`."""
    from onnx.reference import ReferenceEvaluator

    try:
        with np.errstate(all="ignore"):
            ReferenceEvaluator(model, check_shape_annotations=True).run(None, feed)
    except Exception:
        return True
    return False


def _counterexample(report: dict) -> dict | None:
    if report.get("counterexample"):
        return report["counterexample"]
    for site in report.get("sites", []):
        proof = site.get("proof") or {}
        if site.get("status") == "counterexample" and proof.get("counterexample"):
            return proof["counterexample"]
    return None


def _array(values, dtype, model, name, dims) -> np.ndarray:
    """A counterexample's input from its JSON lists, in the input's declared shape at the
    counterexample's dims (an empty tensor's list does not say its shape)."""
    np_dtype = helper.tensor_dtype_to_np_dtype(dtype)
    flat = _floats(values)
    with np.errstate(all="ignore"):
        array = np.array(flat, dtype=np.float64 if dtype in FLOATS else object).astype(np_dtype)
    declared = next(v for v in model.graph.input if v.name == name).type.tensor_type.shape.dim
    shape = [d.dim_value if d.HasField("dim_value") else dims.get(d.dim_param) for d in declared]
    if all(isinstance(n, int) for n in shape) and int(np.prod(shape)) == array.size:
        return array.reshape(shape)
    return array


def _floats(values):
    if isinstance(values, list):
        return [_floats(v) for v in values]
    if isinstance(values, str):  # _jsonable's repr of inf/nan
        return float(values)
    return values


def replays(pair: Pair, feed, kind) -> bool:
    """Whether the counterexample's inputs show a difference in onnx.reference or
    onnxruntime (the candidate failing, or undefined, where the reference runs counts)."""
    ref, cand = Runner(pair.reference), Runner(pair.candidate)
    ref_out, _ = ref.run_reference(feed)
    if ref_out is None:
        ref_ort, _ = ref.run_ort(feed)
        return False if ref_ort is None else cand.run_ort(feed)[0] is None
    masks = _defined_mask(ref, ref_out, None)
    if masks is None:
        return False  # the reference is undefined there: no difference to show
    ref_out = ref_out[: len(ref.names)]
    cand_out, _ = cand.run_reference(feed)
    if cand_out is None:
        return True
    cand_defined = _defined_mask(cand, cand_out, None)
    if cand_defined is None or (kind == "undefined" and cand_defined):
        return True
    if (
        compare(ref_out, cand_out[: len(cand.names)], ref.names, pair.signed_zeros, masks)
        is not None
    ):
        return True
    if _fails_annotations(pair.candidate, feed) and not _fails_annotations(pair.reference, feed):
        return True  # the candidate breaks its declared shapes there: it cannot run (ONNX)
    ref_ort, _ = ref.run_ort(feed)
    cand_ort, _ = cand.run_ort(feed)
    if ref_ort is not None and cand_ort is None:
        return True
    return (
        ref_ort is not None
        and compare(ref_ort, cand_ort, ref.names, pair.signed_zeros, masks) is not None
    )


def pick_door(index: int, cli_every: int = 0) -> str:
    """Most pairs through prove_models (what `maxlower prove` runs), every 4th through the
    whole-model `maxlower.prove.prove`, every `cli_every`-th through the command line."""
    if cli_every and index % cli_every == cli_every - 1:
        return "cli"
    return "prove" if index % 4 == 1 else "prove_models"
