"""Planted wrong rewrites: `maxlower prove` refutes each with a counterexample that
onnx.reference reproduces (the inputs are replayed in it), and proves the right forms.

Two sets: hand-written wrong forms from the issue (a + Relu(b - a), halves that miss an
element for odd n, int32 through float32, the select and ArgMax forms without IsNaN, a
widening through float16), and every mutant of tests/mutants.py (wrong version adapters
installed in the real converter), at small sizes of their symbolic dims.
"""

from __future__ import annotations

import onnx
import pytest

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove.core import COUNTEREXAMPLE, PROVED, prove
from tests.mutants import MUTANTS


def _model(signature: str, body: str, opset: int = 13) -> onnx.ModelProto:
    text = f'<ir_version: 8, opset_import: ["" : {opset}]>\ng {signature} {{\n{body}\n}}'
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model, full_check=True)
    return model


def _through(t: str, wide: int, back: int) -> onnx.ModelProto:
    """Max of two `t` vectors computed in the type `wide`, cast back to `back`."""
    casts = f"fa = Cast <to = {wide}> (a)\nfb = Cast <to = {wide}> (b)\nm = Max(fa, fb)"
    return _model(f"({t}[N] a, {t}[N] b) => ({t}[N] y)", f"{casts}\ny = Cast <to = {back}> (m)")


ARGMAX = "(float[2, M] x) => (int64[2, 1] y)"


def _argmax_form(hit: str) -> str:
    """ArgMax as the first position where `hit` holds (ReduceMin over Where)."""
    return "\n".join(
        [
            "m = ReduceMax <axes = [1], keepdims = 1> (x)",
            hit,
            "s = Shape(x)",
            "one = Constant <value = int64[1] {1}> ()",
            "two = Constant <value = int64[1] {2}> ()",
            "n = Slice(s, one, two)",
            "z = Constant <value = int64 {0}> ()",
            "d = Constant <value = int64 {1}> ()",
            "n0 = Squeeze(n)",
            "p = Range(z, n0, d)",
            "big = Constant <value = int64 {9223372036854775807}> ()",
            "c = Where(hit, p, big)",
            "y = ReduceMin <axes = [1], keepdims = 1> (c)",
        ]
    )


BINARY = "(float[N] a, float[N] b) => (float[N] y)"
MAX = _model(BINARY, "y = Max(a, b)")
# (reference, wrong candidate, right candidate or None)
PLANTED = {
    "a_plus_relu_b_minus_a": (
        MAX,
        _model(BINARY, "d = Sub(b, a)\nr = Relu(d)\ny = Add(a, r)"),
        None,
    ),
    "select_without_isnan": (
        MAX,
        _model(BINARY, "c = Greater(a, b)\ny = Where(c, a, b)"),
        _model(BINARY, "g1 = Greater(a, b)\nn = IsNaN(a)\nc = Or(g1, n)\ny = Where(c, a, b)"),
    ),
    "halves_miss_the_middle_for_odd_n": (
        _model("(float[5] x) => (float y)", "y = ReduceMax <keepdims = 0> (x)"),
        _model(
            "(float[5] x) => (float y)",
            "lo = Slice <starts = [0], ends = [2], axes = [0]> (x)\n"
            "hi = Slice <starts = [3], ends = [5], axes = [0]> (x)\n"
            "m = Max(lo, hi)\ny = ReduceMax <keepdims = 0> (m)",
            opset=9,
        ),
        _model(
            "(float[5] x) => (float y)",
            "lo = Slice <starts = [0], ends = [3], axes = [0]> (x)\n"
            "hi = Slice <starts = [2], ends = [5], axes = [0]> (x)\n"
            "m = Max(lo, hi)\ny = ReduceMax <keepdims = 0> (m)",
            opset=9,
        ),
    ),
    "int32_through_float32": (
        _model("(int32[N] a, int32[N] b) => (int32[N] y)", "y = Max(a, b)"),
        _through("int32", 1, 6),
        _through("int32", 11, 6),
    ),
    "widening_through_float16": (
        _model("(int16[N] a, int16[N] b) => (int16[N] y)", "y = Max(a, b)"),
        _through("int16", 10, 5),
        _through("int16", 1, 5),
    ),
    "argmax_form_without_isnan": (
        _model(ARGMAX, "y = ArgMax <axis = 1, keepdims = 1> (x)"),
        _model(ARGMAX, _argmax_form("hit = Equal(x, m)")),
        _model(ARGMAX, _argmax_form("hit0 = Equal(x, m)\nnan = IsNaN(x)\nhit = Or(hit0, nan)")),
    ),
}


@pytest.mark.parametrize("name", PLANTED)
def test_planted_wrong_form_is_refuted_and_onnx_reference_reproduces_it(name):
    reference, wrong, right = PLANTED[name]
    report = prove(reference, wrong, max_dim=3, timeout=120)
    assert report.status == COUNTEREXAMPLE, report.summary()
    assert report.counterexample.reproduced, report.summary()
    if right is not None:
        report = prove(reference, right, max_dim=3, timeout=120)
        assert report.status == PROVED, report.summary()


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_every_mutant_adapter_is_refuted(mutant):
    broken = mutant.apply()
    report = prove(mutant.source_model(), broken, max_dim=2, timeout=120)
    assert report.status == COUNTEREXAMPLE, report.summary()
    cex = report.counterexample
    assert cex.reproduced or cex.kind == "undefined", report.summary()
