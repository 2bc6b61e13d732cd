"""The order-type abstraction (maxlower.prove.order): sound where it decides, and cheap.

It may only say True (proved); everything else falls back to the full-precision proof. So
the tests that matter are that it never proves a pair the full proof refutes (the planted
wrong forms and every mutant adapter, at each small size), that it declines graphs that
read a data value other than by comparing it, and that it reaches sizes the full proof
does not.
"""

from __future__ import annotations

import time

import onnx
import pytest
from onnx import TensorProto as TP

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove.core import PROVED, prove
from maxlower.prove.order import order_equal, width_for
from tests.mutants import MUTANTS
from tests.test_prove_planted import PLANTED, _model


def _bound(model: onnx.ModelProto, size: int) -> onnx.ModelProto:
    """The model with every symbolic dim of its inputs and outputs set to `size`."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for value in [*out.graph.input, *out.graph.output]:
        for dim in value.type.tensor_type.shape.dim:
            if not dim.HasField("dim_value"):
                dim.dim_value = size
    return out


def _dtype(model: onnx.ModelProto) -> int:
    return model.graph.input[0].type.tensor_type.elem_type


PAIRS = [(f"planted:{k}", ref, wrong) for k, (ref, wrong, _) in PLANTED.items()]
PAIRS += [(f"mutant:{m.name}", m.source_model(), m.apply()) for m in MUTANTS]


@pytest.mark.parametrize("name, reference, candidate", PAIRS, ids=[p[0] for p in PAIRS])
def test_order_never_proves_what_the_full_proof_refutes(name, reference, candidate):
    for size in (0, 1, 2, 3):
        a, b = _bound(reference, size), _bound(candidate, size)
        if order_equal(a, b, _dtype(a), timeout=30):
            report = prove(a, b, timeout=60)
            assert report.status == PROVED, (name, size, report.summary())


@pytest.mark.parametrize("name", ["select_without_isnan", "argmax_form_without_isnan"])
def test_order_proves_the_right_forms_and_not_the_wrong_ones(name):
    reference, wrong, right = (_bound(m, 3) for m in PLANTED[name])
    assert order_equal(reference, right, _dtype(reference), timeout=30) is True
    assert order_equal(reference, wrong, _dtype(reference), timeout=30) is None


BINARY = "(float[3] a, float[3] b) => (float[3] y)"


@pytest.mark.parametrize(
    "body",
    [
        "d = Sub(b, a)\nr = Relu(d)\ny = Add(a, r)",  # arithmetic on the data
        "z = Constant <value = float {0}> ()\nc = Greater(a, z)\ny = Where(c, a, b)",  # 0
        "w = Cast <to = 11> (a)\nv = Cast <to = 11> (b)\nm = Max(w, v)\ny = Cast <to = 1> (m)",
    ],
)
def test_a_graph_that_reads_values_is_not_decided(body):
    reference = _model(BINARY, "y = Max(a, b)")
    assert order_equal(reference, _model(BINARY, body), TP.FLOAT, timeout=30) is None


def test_widths_fit_the_distinct_values_and_are_no_integer_type():
    for count in range(1, 300):
        floats, integers = width_for(TP.FLOAT, count), width_for(TP.INT64, count)
        assert (1 << (floats - 1)) - 2 >= count  # the magnitudes, signed
        assert (1 << integers) - 2 >= count  # between the minimum and the maximum
        assert floats not in (8, 16, 32, 64) and integers not in (8, 16, 32, 64)


@pytest.mark.slow  # half a minute of solving (the forms at small n: the tests above)
def test_order_proves_the_argmax_form_at_n_16():
    """The issue's figure: the order-type abstraction reaches about n = 16. ArgMax through
    ReduceMax, Equal/IsNaN, Where and ReduceMin over [2, 16] float32 is proved in seconds
    (the full-precision proof takes minutes at n = 8), and the form without IsNaN is not."""
    from maxlower.prove.rules import apply_decomposition_to, templates
    from passes.decompose import BY_NAME

    instance = next(
        i for i in templates("ArgMax", TP.FLOAT, 16, 13) if i.label.startswith("axis=1")
    )
    after = apply_decomposition_to(instance, BY_NAME["arg_max_to_reduce_max"])
    start = time.perf_counter()
    assert order_equal(instance.model, after, TP.FLOAT, timeout=60) is True
    assert time.perf_counter() - start < 60
    _, wrong, _ = PLANTED["argmax_form_without_isnan"]
    reference = _model(
        "(float[2, 16] x) => (int64[2, 1] y)", "y = ArgMax <axis = 1, keepdims = 1> (x)"
    )
    assert order_equal(reference, _bound(wrong, 16), TP.FLOAT, timeout=60) is None
