"""The order method against the full-precision proof on random pairs of graphs
(tests/strategies_rules.py): whatever the order method proves, the full proof proves too.
This draws the class the method's soundness rests on (every op checked to only compare,
select or move data; the extremes and NaN the only data constants), not single rows.
Budgets: tests/budget.py (deadline and health checks: tests/conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto as TP
from onnx.reference import ReferenceEvaluator

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

import z3

from maxlower.prove.core import PROVED, prove
from maxlower.prove.order import NotOrderInvariant, OrderInterpreter, order_equal, width_for
from maxlower.prove.semantics import Tensor
from tests import budget
from tests.strategies_rules import SIZE, graph_pairs

MAGNITUDE = st.floats(0.5, 1e6, width=32)


def _check(pair):
    reference, candidate = pair
    dtype = reference.graph.input[0].type.tensor_type.elem_type
    if order_equal(reference, candidate, dtype, timeout=30):
        report = prove(reference, candidate, timeout=60)
        assert report.status == PROVED, report.summary()


@budget.fuzz(40)
@given(pair=graph_pairs(TP.FLOAT))
def test_order_proves_only_what_the_full_proof_proves_float32(pair):
    _check(pair)


@budget.fuzz(25)
@given(pair=graph_pairs(TP.INT8))
def test_order_proves_only_what_the_full_proof_proves_int8(pair):
    _check(pair)


@budget.fuzz(25)
@given(pair=graph_pairs(TP.UINT64))
def test_order_proves_only_what_the_full_proof_proves_uint64(pair):
    _check(pair)


@budget.fuzz(80)
@given(pair=graph_pairs(TP.FLOAT), data=st.data())
def test_the_rank_semantics_commute_with_an_increasing_map_in_onnx_reference(pair, data):
    """The abstraction's own semantics, differentially: run a graph of the fragment on
    concrete ranks r, and onnx.reference on φ(r) for an odd increasing φ that keeps NaN,
    ±inf and 0 (random magnitudes for the ranks between): the outputs are φ of the ranks'
    (Neg included)."""
    model, _ = pair
    width = width_for(TP.FLOAT, 2 * SIZE)
    half = 1 << (width - 1)  # ranks -half (NaN), ±(half - 1) (±inf), 0, ±1..±(half - 2)
    magnitudes = data.draw(st.lists(MAGNITUDE, min_size=half - 2, max_size=half - 2, unique=True))
    phi = {-half: np.nan, half - 1: np.inf, 1 - half: -np.inf, 0: 0.0}
    for k, m in enumerate(sorted(magnitudes), start=1):
        phi[k], phi[-k] = m, -m
    rank = st.integers(-half, half - 1)
    ranks = {n: data.draw(st.lists(rank, min_size=SIZE, max_size=SIZE)) for n in "ab"}
    interpreter = OrderInterpreter(TP.FLOAT, width)
    tensors = {
        n: Tensor(TP.FLOAT, np.array([z3.BitVecVal(r, width) for r in rs], dtype=object))
        for n, rs in ranks.items()
    }
    try:
        (out,) = interpreter.interpret(model, tensors).outputs
        got = [z3.simplify(interpreter.to_rank(t)).as_signed_long() for t in out.arr.reshape(-1)]
    except NotOrderInvariant:
        return  # outside the fragment (or a constant output): the order method declines it
    inputs = {n: np.array([phi[r] for r in rs], np.float32) for n, rs in ranks.items()}
    (expected,) = ReferenceEvaluator(model).run(None, inputs)
    mapped = np.array([phi[r] for r in got], np.float32).reshape(np.shape(expected))
    same = (mapped == expected) | (np.isnan(mapped) & np.isnan(expected))
    assert same.all(), (ranks, got, expected)
