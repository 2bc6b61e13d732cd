"""Red team 2 (G1-G4): the proof by regions claims no more than onnx.reference shows.

- G1: a region's free input was typed by the reference's own value_info, which nothing
  checks at run time: a wrong `t: float[1]` made ReduceMax(t) "equal" to t[0].
- G2: shape inference folded an overridable default (an initializer that is also an
  input) into a free input's shape: the region was proved at the default's size only.
- G3: the search for inputs of the whole models showing a region's difference ran
  onnx.reference past --timeout.
- G4: an onnxruntime load failure (no int16 Where kernel) counted as the models
  differing: REFUTED, exit 1, with a counterexample onnx.reference does not reproduce.

Each pair is checked against onnx.reference first, so a test fails if its premise does.
"""

from __future__ import annotations

import time

import numpy as np
import onnx
import onnx.parser
import pytest
from onnx.reference import ReferenceEvaluator

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove.core import COUNTEREXAMPLE, PROVED
from maxlower.prove.sites import prove_models

FIRST = "st = Constant<value=int64[1] {0}>()\n en = Constant<value=int64[1] {1}>()\n"


def _model(text: str) -> onnx.ModelProto:
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model, full_check=True)
    return model


def _differ(reference, candidate, feeds) -> bool:
    a = ReferenceEvaluator(reference).run(None, feeds)
    b = ReferenceEvaluator(candidate).run(None, feeds)
    return any(not np.array_equal(x, y) for x, y in zip(a, b))


def _wrong_value_info(last: str) -> onnx.ModelProto:
    return _model(
        """<ir_version: 8, opset_import: ["" : 18]>
        g (float[2] x, int64[1] s) => (float[1] z) <float[1] t> {
          t = Reshape(x, s)
          """
        + last
        + "}"
    )


def _overridable_default(last: str) -> onnx.ModelProto:
    return _model(
        """<ir_version: 8, opset_import: ["" : 18]>
        g (float[2] x, int64[1] e, float[1] a) => (float[1] z, float[1] k)
          <int64[1] e = {1}, int64[1] b0 = {0}> {
          t = Slice(x, b0, e)
          """
        + last
        + """
          k = Sin(a)
        }"""
    )


@pytest.mark.parametrize("build", [_wrong_value_info, _overridable_default])
def test_a_region_input_is_not_typed_by_what_a_run_does_not_keep(build):
    reference = build("z = ReduceMax<keepdims=1>(t)")
    candidate = build(FIRST + " z = Slice(t, st, en)")
    feeds = {"x": np.array([1, 2], np.float32), "s": np.array([2]), "e": np.array([2])}
    names = {v.name for v in reference.graph.input}
    feeds = {k: v for k, v in feeds.items() if k in names}
    if "a" in names:
        feeds["a"] = np.array([0.5], np.float32)
    assert _differ(reference, candidate, feeds)  # the premise: they differ at t of 2
    report = prove_models(reference, candidate, timeout=60)
    assert report.status != PROVED, report.summary()
    if report.status == COUNTEREXAMPLE:  # its inputs are the models', and reproduce
        found = report.counterexample
        assert found is not None and found.reproduced
        assert _differ(reference, candidate, found.inputs)


def _shape_of_max_or_min(op: str, more: str, outputs: str, inputs: str) -> onnx.ModelProto:
    return _model(
        f"""<ir_version: 8, opset_import: ["" : 18]>
        g (float[2] x, float[2] y{inputs}) => (int64[1] z{outputs}) {{
          v = {op}(x, y)
          z = Shape(v)
          {more}
        }}"""
    )


def test_a_runtime_without_a_kernel_for_the_candidate_is_no_refutation():
    reference = _shape_of_max_or_min(
        "Max",
        "r = Identity(q)\n k = Sin(a)",
        ", int16[2] r, float[1] k",
        ", int16[2] q, float[1] a",
    )
    where = "c = Constant<value=bool[2] {1,1}>()\n r = Where(c, q, q)\n k = Sin(a)"
    candidate = _shape_of_max_or_min(
        "Min", where, ", int16[2] r, float[1] k", ", int16[2] q, float[1] a"
    )
    feeds = {
        "x": np.array([1, 2], np.float32),
        "y": np.array([2, 1], np.float32),
        "q": np.array([3, -4], np.int16),
        "a": np.array([0.5], np.float32),
    }
    assert not _differ(reference, candidate, feeds)
    report = prove_models(reference, candidate, timeout=60)
    assert report.status != COUNTEREXAMPLE, report.summary()


def test_the_search_for_a_region_witness_keeps_the_timeout():
    loop = """M = Constant<value=int64 {4000}>()
          c = Constant<value=bool {1}>()
          out = Loop(M, c, a) <body = b (int64 i, bool cin, float[1] s)
                                     => (bool cout, float[1] s2) {
              cout = Identity(cin)
              s2 = Sin(s)
          }>"""
    reference = _shape_of_max_or_min("Max", loop, ", float[1] out", ", float[1] a")
    candidate = _shape_of_max_or_min("Min", loop, ", float[1] out", ", float[1] a")
    timeout = 2.0
    began = time.perf_counter()
    report = prove_models(reference, candidate, timeout=timeout)
    elapsed = time.perf_counter() - began
    assert report.status != PROVED and report.status != COUNTEREXAMPLE, report.summary()
    assert elapsed <= timeout * 1.1 + 0.5, (elapsed, report.summary())
