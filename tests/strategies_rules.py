"""Hypothesis strategies for the prover's methods: pairs of small graphs that compare,
select and move data (the order-type fragment), the second a one-step mutation of the
first, so that most pairs differ and some do not.

    graph_pairs(dtype)  ->  (reference, candidate) ModelProtos on inputs a, b of [3]

A graph is a chain of steps over a pool of values (the inputs, and an extreme, NaN or an
ordinary constant): Max, Min, Where over a comparison or IsNaN, ReduceMax/ReduceMin (a
[1] that broadcasts back), and now and then a step outside the fragment (Neg, Add) that
the order method must decline. A mutation swaps Max and Min, a comparison for another,
the branches of a Where, or one operand for another value of the pool.
"""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto as TP
from onnx import helper

COMPARISONS = ["Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Equal"]
SIZE = 3


def _constant(dtype: int, kind: str):
    np_dtype = helper.tensor_dtype_to_np_dtype(dtype)
    floats = np.issubdtype(np_dtype, np.floating)
    info = np.finfo(np_dtype) if floats else np.iinfo(np_dtype)
    value = {
        "low": -np.inf if floats else info.min,
        "high": np.inf if floats else info.max,
        "nan": np.nan if floats else 0,
        "one": 1,
    }[kind]
    return np.array([value], dtype=np_dtype)


@st.composite
def steps(draw):
    """A list of (op, operand indices, extra) over a growing pool of values."""
    count = draw(st.integers(1, 4))
    out = []
    for k in range(count):
        pool = 3 + k  # a, b, the constant, and each step's result
        op = draw(st.sampled_from(["Max", "Min", "Where", "Reduce", "Max", "Where", "Outside"]))
        x, y = draw(st.integers(0, pool - 1)), draw(st.integers(0, pool - 1))
        extra = draw(st.sampled_from([*COMPARISONS, "IsNaN"]))
        out.append([op, x, y, extra])
    return out


def build(dtype: int, constant: str, program: list) -> onnx.ModelProto:
    names = ["a", "b", "k"]
    nodes = []
    for i, (op, x, y, extra) in enumerate(program):
        u, v, out = names[x], names[y], f"s{i}"
        if op in ("Max", "Min"):
            nodes.append(helper.make_node(op, [u, v], [out]))
        elif op == "Where":
            cond = f"c{i}"
            if extra == "IsNaN" and dtype in (TP.FLOAT, TP.FLOAT16):
                nodes.append(helper.make_node("IsNaN", [u], [cond]))
            else:
                comparison = extra if extra != "IsNaN" else "Greater"
                nodes.append(helper.make_node(comparison, [u, v], [cond]))
            nodes.append(helper.make_node("Where", [cond, u, v], [out]))
        elif op == "Reduce":
            reduce = "ReduceMax" if extra in ("Greater", "GreaterOrEqual", "IsNaN") else "ReduceMin"
            nodes.append(helper.make_node(reduce, [u], [f"r{i}"], axes=[0], keepdims=1))
            nodes.append(helper.make_node("Max", [f"r{i}", v], [out]))
        else:  # outside the order fragment: reads values
            signed = dtype not in (TP.UINT8, TP.UINT16, TP.UINT32, TP.UINT64)
            kind = "Neg" if signed and extra in ("Greater", "Less", "Equal") else "Add"
            inputs = [u] if kind == "Neg" else [u, v]
            nodes.append(helper.make_node(kind, inputs, [f"o{i}"]))
            nodes.append(helper.make_node("Max", [f"o{i}", v], [out]))
        names.append(out)
    nodes.append(helper.make_node("Identity", [names[-1]], ["y"]))
    inputs = [helper.make_tensor_value_info(n, dtype, [SIZE]) for n in ("a", "b")]
    init = [onnx.numpy_helper.from_array(_constant(dtype, constant), "k")]
    graph = helper.make_graph(
        nodes, "g", inputs, [helper.make_tensor_value_info("y", dtype, None)], init
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    return model


@st.composite
def graph_pairs(draw, dtype: int):
    program = draw(steps())
    constant = draw(st.sampled_from(["low", "high", "nan", "one"]))
    mutant = [list(s) for s in program]
    step = mutant[draw(st.integers(0, len(mutant) - 1))]
    how = draw(st.sampled_from(["op", "comparison", "operand", "branches"]))
    if how == "op":
        step[0] = {"Max": "Min", "Min": "Max"}.get(step[0], step[0])
    elif how == "comparison":
        step[3] = draw(st.sampled_from(COMPARISONS))
    elif how == "operand":
        step[2] = draw(st.integers(0, 2 + mutant.index(step)))
    else:
        step[1], step[2] = step[2], step[1]
    return build(dtype, constant, program), build(dtype, constant, mutant)
