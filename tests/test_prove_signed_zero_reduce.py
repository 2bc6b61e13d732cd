"""ReduceMax/ReduceMin under --signed-zeros: onnx.reference (numpy's SIMD reduce) keeps
another zero than the left fold on a -0.0/+0.0 tie at 17 float32 or 9 float64 elements, so
a fold spelled out as n-ary Max was PROVED equal to ReduceMax there while onnx.reference
shows +0.0 against -0.0 (found by the red team)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx.reference import ReferenceEvaluator

pytest.importorskip("z3")

from maxlower.prove.core import Policy, prove


def _model(n: int, dtype: int, reduce: bool, op: str) -> onnx.ModelProto:
    nodes, inits, names = [], [], []
    if reduce:
        nodes.append(h.make_node(f"Reduce{op}", ["x"], ["z"], keepdims=1))
    else:  # op(x[0:1], ..., x[n-1:n]): ONNX's n-ary op, a left fold
        for i in range(n):
            inits += [h.make_tensor(f"s{i}", TP.INT64, [1], [i])]
            inits += [h.make_tensor(f"e{i}", TP.INT64, [1], [i + 1])]
            nodes.append(h.make_node("Slice", ["x", f"s{i}", f"e{i}"], [f"v{i}"]))
            names.append(f"v{i}")
        nodes.append(h.make_node(op, names, ["z"]))
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", dtype, [n])],
        [h.make_tensor_value_info("z", dtype, [1])],
        inits,
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 18)], ir_version=8)


@pytest.mark.parametrize(
    ("n", "dtype", "np_dtype", "op"),
    [
        (17, TP.FLOAT, np.float32, "Max"),
        (9, TP.DOUBLE, np.float64, "Max"),
        (17, TP.FLOAT, np.float32, "Min"),
    ],
)
def test_fold_is_not_numpys_reduce_under_signed_zeros(n, dtype, np_dtype, op):
    reference, candidate = _model(n, dtype, True, op), _model(n, dtype, False, op)
    # the witness: do the two differ in onnx.reference on some one-zero-flipped row?
    signs = set()
    for pos in range(n):
        for base in (-0.0, 0.0):
            x = np.full(n, base, np_dtype)
            x[pos] = -base
            got = [ReferenceEvaluator(m).run(None, {"x": x})[0][0] for m in (reference, candidate)]
            signs.add(bool(np.signbit(got[0])) != bool(np.signbit(got[1])))
    differs = True in signs
    report = prove(reference, candidate, policy=Policy(signed_zeros=True))
    if differs:  # this machine's numpy: the models differ, so never proved
        assert report.status != "proved", report.to_dict()
    # counted equal, the zeros do not matter: still proved
    assert prove(reference, candidate).status == "proved"
