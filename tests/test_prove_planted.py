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
        _model(
            "(int32[N] a, int32[N] b) => (int32[N] y)",
            "fa = Cast <to = 1> (a)\nfb = Cast <to = 1> (b)\nm = Max(fa, fb)\ny = Cast <to = 6> (m)",
        ),
        _model(
            "(int32[N] a, int32[N] b) => (int32[N] y)",
            "fa = Cast <to = 11> (a)\nfb = Cast <to = 11> (b)\nm = Max(fa, fb)\ny = Cast <to = 6> (m)",
        ),
    ),
    "widening_through_float16": (
        _model("(int16[N] a, int16[N] b) => (int16[N] y)", "y = Max(a, b)"),
        _model(
            "(int16[N] a, int16[N] b) => (int16[N] y)",
            "fa = Cast <to = 10> (a)\nfb = Cast <to = 10> (b)\nm = Max(fa, fb)\ny = Cast <to = 5> (m)",
        ),
        _model(
            "(int16[N] a, int16[N] b) => (int16[N] y)",
            "fa = Cast <to = 1> (a)\nfb = Cast <to = 1> (b)\nm = Max(fa, fb)\ny = Cast <to = 5> (m)",
        ),
    ),
    "argmax_form_without_isnan": (
        _model("(float[2, M] x) => (int64[2, 1] y)", "y = ArgMax <axis = 1, keepdims = 1> (x)"),
        _model(
            "(float[2, M] x) => (int64[2, 1] y)",
            "m = ReduceMax <axes = [1], keepdims = 1> (x)\nhit = Equal(x, m)\n"
            "s = Shape(x)\none = Constant <value = int64[1] {1}> ()\ntwo = Constant <value = int64[1] {2}> ()\n"
            "n = Slice(s, one, two)\nz = Constant <value = int64 {0}> ()\nd = Constant <value = int64 {1}> ()\n"
            "n0 = Squeeze(n)\np = Range(z, n0, d)\nbig = Constant <value = int64 {9223372036854775807}> ()\n"
            "c = Where(hit, p, big)\ny = ReduceMin <axes = [1], keepdims = 1> (c)",
        ),
        _model(
            "(float[2, M] x) => (int64[2, 1] y)",
            "m = ReduceMax <axes = [1], keepdims = 1> (x)\nhit0 = Equal(x, m)\nnan = IsNaN(x)\n"
            "hit = Or(hit0, nan)\n"
            "s = Shape(x)\none = Constant <value = int64[1] {1}> ()\ntwo = Constant <value = int64[1] {2}> ()\n"
            "n = Slice(s, one, two)\nz = Constant <value = int64 {0}> ()\nd = Constant <value = int64 {1}> ()\n"
            "n0 = Squeeze(n)\np = Range(z, n0, d)\nbig = Constant <value = int64 {9223372036854775807}> ()\n"
            "c = Where(hit, p, big)\ny = ReduceMin <axes = [1], keepdims = 1> (c)",
        ),
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
