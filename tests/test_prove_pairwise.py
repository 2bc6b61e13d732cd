"""The pairwise lemma (maxlower.prove.pairwise): a fold of one two-input form, proved once
on scalars and composed structurally at every size and arity."""

from __future__ import annotations

import pytest
from onnx import TensorProto as TP

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove.pairwise import composed_equal, pairwise_lemma
from maxlower.prove.rules import apply_adapter_to, templates
from tests.test_prove_planted import _model


def _instance(op, dtype, n, label, opset=12):
    return next(i for i in templates(op, dtype, n, opset) if i.label == label)


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_the_lemma_of_int32_through_float64_composes_to_every_size_and_arity(op):
    pair = _instance(op, TP.INT32, 1, "2-ary")
    lemma = pairwise_lemma(pair.model, apply_adapter_to(pair, 8), timeout=60)
    assert lemma is not None
    for n, label in ((4, "3-ary"), (2, "broadcast"), (3, "2-ary")):
        instance = _instance(op, TP.INT32, n, label)
        assert composed_equal(lemma, instance.model, apply_adapter_to(instance, 8)), (n, label)


def test_composition_does_not_prove_a_candidate_that_drops_an_input():
    pair = _instance("Max", TP.INT32, 1, "2-ary")
    lemma = pairwise_lemma(pair.model, apply_adapter_to(pair, 8), timeout=60)
    three = _instance("Max", TP.INT32, 2, "3-ary")
    # the candidate of Max(x0, x1) given x2 too, unread: same inputs, same output shape
    two = _instance("Max", TP.INT32, 2, "2-ary")
    dropped = apply_adapter_to(two, 8)
    dropped.graph.input.append(three.model.graph.input[2])
    assert composed_equal(lemma, three.model, dropped) is False


SIGNATURE = "({t}[1] a, {t}[1] b) => ({t}[1] y)"


def test_a_wrong_binary_form_gives_no_lemma():
    """int32 through float32 rounds above 2^24: refuted, so no lemma."""
    sig = SIGNATURE.format(t="int32")
    reference = _model(sig, "y = Max(a, b)")
    wrong = _model(
        sig,
        "fa = Cast <to = 1> (a)\nfb = Cast <to = 1> (b)\nm = Max(fa, fb)\ny = Cast <to = 6> (m)",
    )
    assert pairwise_lemma(reference, wrong, timeout=60) is None


def test_the_lemma_must_hold_bit_for_bit_not_only_up_to_the_sign_of_zero():
    """The select form keeps b on a tie; numpy's float16 maximum keeps a. Max(-0, +0)
    differs only in the sign of zero, which the comparison policy accepts, but a lemma
    must be a congruence: none is given."""
    sig = SIGNATURE.format(t="float16")
    reference = _model(sig, "y = Max(a, b)")
    select = _model(sig, "g = Greater(a, b)\nn = IsNaN(a)\nc = Or(g, n)\ny = Where(c, a, b)")
    assert pairwise_lemma(reference, select, timeout=60) is None
