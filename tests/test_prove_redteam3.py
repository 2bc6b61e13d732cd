"""Red team 3 (issue 26): four classes of unsound PROVED, and an overrun, each through
`maxlower prove A B`, the library (`prove_models`) and, where a conversion can make it,
`convert`/`lower --prove` and `prove=`. Every pair differs in onnx.reference (the test
checks that first), so a PROVED here is a lie.

- A ±0 policy applied inside the model: a region equal only with -0.0 and +0.0 counted
  equal, read by a node that tells them apart (Reciprocal, Div: 1/x is -inf or +inf), was
  composed into a proof of the whole model (F1), and `lower --prove` wrote a lowered float16
  Max read by a Div whose outputs differ (F2).
- Axes named twice (Unsqueeze, Slice, ReduceMax-18 axes computed by a Concat) were merged
  or overwritten, where onnx.reference and onnxruntime fail (F3).
- A region typed by the shape a graph output or an If branch declares (neither runtime
  checks it), proved "for all inputs" where the models differ (F4).
- A node only the candidate has, that nothing reads and that cannot run, dropped as dead
  code: the candidate fails where the reference runs (F5).
- `prove --timeout` below the start-up time ended past --timeout + 10 % (F6).
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx.reference import ReferenceEvaluator

import maxlower

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove.core import PROVED
from maxlower.prove.sites import prove_models


def _model(opset: int, signature: str, body: str) -> onnx.ModelProto:
    text = f'<ir_version: 8, opset_import: ["" : {opset}]>\ng {signature} {{\n{body}\n}}'
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model, full_check=True)
    return model


ZERO_SIG = "(float[N] x) => (float[N] y)"
UNSQUEEZE_SIG = "(float[N] x) => (float[1,1,N] y)"
SLICE_SIG = "(float[N] x) => (float[M] y)"
REDUCE_SIG = "(float[3,N] x) => (float[1,N] y)"
OUTPUT_SIG = "(float[N] x) => (float[2] t, float[M] y)"
BRANCH_SIG = "(float[N] x, bool c) => (float[M] y)"


def _ints(name: str, *values: int) -> str:
    listed = ", ".join(map(str, values))
    return f"{name} = Constant<value = int64[{len(values)}] {{{listed}}}>()\n"


_TWICE = _ints("c", 0) + "a = Concat<axis = 0>(c, c)\n"
_SLICE_1_3 = _ints("s", 1) + _ints("e", 3) + _ints("a", 0)
_SLICE_TWICE = (
    _ints("s0", 0) + _ints("s1", 1) + "s = Concat<axis = 0>(s0, s1)\n"
    + _ints("e0", 9) + _ints("e1", 3) + "e = Concat<axis = 0>(e0, e1)\n" + _TWICE
)  # fmt: skip
_SLICE_0_2 = _ints("s", 0) + _ints("e", 2)
_BRANCHES = (
    "t = If(c) <then_branch = g1 () => (float[2] o1) { o1 = Abs(x) }, "
    "else_branch = g2 () => (float[2] o2) { o2 = Neg(x) }>\n"
)
_PLUS_ZERO = "k = Constant<value = float {0.0}>()\nz = Add(x, k)\n"
_DEAD = _ints("c", 5) + "a = Concat<axis = 0>(c)\nd = Unsqueeze(x, a)\n"
_FLOATS = np.float32
WIDE_SIG = "(float[100] x) => (float[100] y, float[1] z)"  # (100 elements: regions)
SQUEEZE_SIG = "(float[1,3] s) => (float[3] z)"
_EMPTY = "k = Constant<value = int64[0] {}>()\n"


def _floats(name: str, *values: float) -> str:
    listed = ", ".join(map(str, values))
    return f"{name} = Constant<value = float[{len(values)}] {{{listed}}}>()\n"


def _squeeze_with_empty_axes() -> onnx.ModelProto:
    """Squeeze-11 with its axes attribute given and empty (the parser writes none)."""
    text = '<ir_version: 8, opset_import: ["" : 11]>\ng (float[1,3] s) => (float[1,3] z) {'
    model = onnx.parser.parse_model(text + " z = Squeeze<axes = [0]>(s) }")
    del model.graph.node[0].attribute[0].ints[:]
    onnx.checker.check_model(model, full_check=True)
    return model


# name: (reference, candidate, inputs on which the models differ or the candidate fails in
# onnx.reference or onnxruntime, what the verdict must say)
PAIRS = {
    "zero_sign_read_by_reciprocal": (
        _model(17, ZERO_SIG, _PLUS_ZERO + "y = Reciprocal(z)"),
        _model(17, ZERO_SIG, "z = Identity(x)\ny = Reciprocal(z)"),
        {"x": np.array([-0.0, 1.0], _FLOATS)},
        "may tell them apart",
    ),
    "unsqueeze_axis_twice": (
        _model(17, UNSQUEEZE_SIG, _ints("a", 0, 1) + "y = Unsqueeze(x, a)"),
        _model(17, UNSQUEEZE_SIG, _TWICE + "y = Unsqueeze(x, a)"),
        {"x": np.array([1.0, 2.0], _FLOATS)},
        "names an axis twice",
    ),
    "slice_axis_twice": (
        _model(17, SLICE_SIG, _SLICE_1_3 + "y = Slice(x, s, e, a)"),
        _model(17, SLICE_SIG, _SLICE_TWICE + "y = Slice(x, s, e, a)"),
        {"x": np.array([1.0, 2.0, 3.0], _FLOATS)},
        "names an axis twice",
    ),
    "reduce_max_axis_twice": (
        _model(18, REDUCE_SIG, _ints("a", 0) + "y = ReduceMax(x, a)"),
        _model(18, REDUCE_SIG, _TWICE + "y = ReduceMax(x, a)"),
        {"x": np.ones((3, 2), _FLOATS)},
        "names an axis twice",
    ),
    "graph_output_declared_shape": (
        _model(17, OUTPUT_SIG, "t = Abs(x)\n" + _SLICE_0_2 + "y = Slice(t, s, e)"),
        _model(17, OUTPUT_SIG, "t = Abs(x)\ny = Identity(t)"),
        {"x": np.array([0.0, 1.0, 2.0], _FLOATS)},
        "counterexample at N=3",
    ),
    "if_branch_declared_shape": (
        _model(17, BRANCH_SIG, _BRANCHES + _SLICE_0_2 + "y = Slice(t, s, e)"),
        _model(17, BRANCH_SIG, _BRANCHES + "y = Identity(t)"),
        {"x": np.array([0.0, 1.0, 2.0], _FLOATS), "c": np.array(True)},
        "counterexample at N=3",
    ),
    # red team 4: the schemas' argument (maxlower/prove/canonical.py) and the axes it
    # left to the interpreter
    "constants_compared_by_value": (
        _model(13, WIDE_SIG, "y = Neg(x)\n" + _floats("c", 1, 2) + "z = ReduceSum<keepdims=1>(c)"),
        _model(18, WIDE_SIG, "y = Neg(x)\n" + _floats("c", 3, 4) + "z = ReduceSum(c)"),
        {"x": np.zeros(100, _FLOATS)},
        "candidate 7.0",
    ),
    "squeeze_empty_axes_list": (
        _squeeze_with_empty_axes(),
        _model(13, "(float[1,3] s) => (float[1,3] z)", _EMPTY + "z = Squeeze(s, k)"),
        {"s": np.ones((1, 3), _FLOATS)},
        "",
    ),
    "squeeze_scalar_axes": (
        _model(11, SQUEEZE_SIG, "z = Squeeze<axes = [0]>(s)"),
        _model(13, SQUEEZE_SIG, "k = Constant<value = int64 {0}>()\nz = Squeeze(s, k)"),
        {"s": np.ones((1, 3), _FLOATS)},
        "cannot run",
    ),
    "unsqueeze_axes_out_of_order": (
        _model(11, "(float[3] s) => (float[M, N, K] z)", "z = Unsqueeze<axes = [1, 0]>(s)"),
        _model(13, "(float[3] s) => (float[M, N, K] z)", _ints("k", 1, 0) + "z = Unsqueeze(s, k)"),
        {"s": np.array([1.0, 2.0, 3.0], _FLOATS)},
        "",
    ),
    "dead_candidate_node_that_cannot_run": (
        _model(17, ZERO_SIG, "y = Reciprocal(x)"),
        _model(17, ZERO_SIG, "y = Reciprocal(x)\n" + _DEAD),
        {"x": np.array([1.0, 2.0], _FLOATS)},
        "nothing reads",
    ),
}


def _differs_or_fails(reference, candidate, inputs) -> bool:
    """Whether onnx.reference gives other outputs, or it or onnxruntime fails on the
    candidate where it runs the reference."""
    expected = ReferenceEvaluator(reference).run(None, inputs)
    try:
        actual = ReferenceEvaluator(candidate).run(None, inputs)
        session = onnxruntime.InferenceSession(
            candidate.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        session.run(None, inputs)
    except Exception:
        return True
    return any(
        e.shape != a.shape or not np.array_equal(e, a, equal_nan=True)
        for e, a in zip(expected, actual)
    )


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_the_pair_differs_in_onnx_reference(name):
    reference, candidate, inputs, _ = PAIRS[name]
    with np.errstate(divide="ignore"):
        assert _differs_or_fails(reference, candidate, inputs)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_prove_a_b_does_not_prove_it(tmp_path, name):
    reference, candidate, _, says = PAIRS[name]
    onnx.save(reference, tmp_path / "a.onnx")
    onnx.save(candidate, tmp_path / "b.onnx")
    result = subprocess.run(
        [sys.executable, "-m", "maxlower", "prove", "a.onnx", "b.onnx", "--timeout", "20"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode in (1, 5), result.stdout + result.stderr
    assert "PROVED" not in result.stdout.splitlines()[0]
    assert says in result.stdout, result.stdout


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_the_library_does_not_prove_it(name):
    reference, candidate, _, _ = PAIRS[name]
    report = prove_models(reference, candidate, timeout=20)
    assert report.status != PROVED, report.headline() if hasattr(report, "headline") else report


# --- F2: lower --prove and prove= on a float16 Max read by a Div ----------------------------
MAX_THEN_DIV = _model(
    17,
    "(float16[N] x, float16[N] y) => (float16[N] z)",
    "t = Max(x, y)\nf = Constant<value = float {1.0}>()\none = Cast<to = 10>(f)\nz = Div(one, t)",
)
MAX_AS_OUTPUT = _model(17, "(float16[N] x, float16[N] y) => (float16[N] z)", "z = Max(x, y)")


def test_the_lowered_max_read_by_a_div_differs_by_the_sign_of_infinity():
    lowered = maxlower.lower(MAX_THEN_DIV, "primitives")
    inputs = {"x": np.array([-0.0, 0.0], np.float16), "y": np.array([0.0, -0.0], np.float16)}
    with np.errstate(divide="ignore"):
        (before,) = ReferenceEvaluator(MAX_THEN_DIV).run(None, inputs)
        (after,) = ReferenceEvaluator(lowered).run(None, inputs)
    assert not np.array_equal(before, after), (before, after)


def test_lower_prove_does_not_write_it(tmp_path):
    onnx.save(MAX_THEN_DIV, tmp_path / "d.onnx")
    result = subprocess.run(
        [sys.executable, "-m", "maxlower", "lower", "d.onnx", "-p", "primitives", "--prove",
         "-o", "d.prim.onnx"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert result.returncode == 5, result.stdout + result.stderr
    assert "may tell them apart" in result.stdout
    assert not (tmp_path / "d.prim.onnx").exists()


def test_the_library_lower_prove_refuses_it():
    with pytest.raises(maxlower.ProofInconclusive, match="may tell them apart"):
        maxlower.lower(MAX_THEN_DIV, "primitives", prove=True)


def test_a_lowered_max_that_is_the_models_output_is_still_proved():
    """The ±0 policy holds at the model's outputs: there the same lowering is proved."""
    maxlower.lower(MAX_AS_OUTPUT, "primitives", prove=True)


# --- F6: a --timeout below the start-up time ---------------------------------------------------
def test_a_timeout_below_the_start_up_is_refused_at_once(tmp_path):
    onnx.save(MAX_AS_OUTPUT, tmp_path / "m.onnx")
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "maxlower", "prove", "m.onnx", "m.onnx", "--timeout", "1"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip()
    assert line.startswith("maxlower: error: --timeout 1: ") and "--timeout 5 or more" in line
    assert len(line.splitlines()) == 1
    assert elapsed < 30


def test_the_prove_help_says_the_least_timeout():
    from click.testing import CliRunner

    from maxlower.cli import cli

    text = CliRunner().invoke(cli, ["prove", "--help"]).output
    assert "at least 5" in " ".join(text.split())


# --- found by the campaign: a max-only site whose outputs differ in shape ----------------------
def test_a_max_only_site_whose_shapes_differ_is_no_internal_error():
    """keepdims flipped on a ReduceMax read only through a broadcasting Greater (the models
    are equal): the sets differ, no element is apart, and onnx.reference was run on the
    site with no inputs fed (RuntimeError, exit 4). The full method decides instead."""
    body = (
        "a = Abs(x)\nm = Max(a, a)\nr = ReduceMax<keepdims={k}>(m)\nz = Constant<value = "
        "double {{0.0}}>()\ng = Greater(r, z)\ny = If(g) <then_branch = t () => (double[2] o) "
        "{{ o = Min(m, a) }}, else_branch = e () => (double[2] p) {{ p = Min(m, a) }}>"
    )
    signature = "(double[2] x) => (double[2] y)"
    reference = _model(13, signature, body.format(k=0))
    candidate = _model(13, signature, body.format(k=1))
    report = prove_models(reference, candidate, max_dim=2, timeout=20)
    assert report.status in (PROVED, "inconclusive"), report
