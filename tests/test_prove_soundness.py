"""Issue 26: a PROVED that claims no more than was proved, through `maxlower prove A B`,
`convert --prove` and the library.

- Case splits (class 1): an input that decides a shape is tried at a few values; the
  verdict names them ("for the inputs with r[0] in 0..4 only") and `coverage` in --json and
  ProofReport.to_dict() says the proof is not complete, unless the split tried every value
  (a bool) or every value the reference can run with (an axis).
- A split value where the reference cannot run (class 2) is skipped alone: the binding's
  other values are still tried.
- Definedness per element (class 6): an out-of-range Cast in one output frees only that
  output's element.
- Budgets (class 7): time, tensor elements, unrolled trips, from the command's start;
  inconclusive (exit 5), never exit 4, never past --timeout + 10%.
- `--prove`'s verdict names the dims bound of its full-solver sites (class 10).

Each pair is one that onnx.reference shows to differ (or a pair that must stay proved).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import maxlower

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove import prove
from maxlower.prove.sites import prove_models

HEADER = '<ir_version: 8, opset_import: ["" : 13]>\n'
FOUR = "four = Constant<value = int64[1] {4}>()\n"


def _model(signature: str, body: str, header: str = HEADER) -> onnx.ModelProto:
    model = onnx.parser.parse_model(f"{header}g {signature} {{\n{body}\n}}")
    onnx.checker.check_model(model, full_check=True)
    return model


def _save(tmp_path: pathlib.Path, name: str, model: onnx.ModelProto) -> str:
    path = tmp_path / name
    onnx.save(model, path)
    return str(path)


def _cli(*args: str, cwd=None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "maxlower", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def _pair(tmp_path, ref: onnx.ModelProto, cand: onnx.ModelProto) -> tuple[str, str]:
    return _save(tmp_path, "ref.onnx", ref), _save(tmp_path, "cand.onnx", cand)


def _differ(ref, cand, inputs) -> bool:
    expected = ReferenceEvaluator(ref).run(None, inputs)
    actual = ReferenceEvaluator(cand).run(None, inputs)
    return any(
        e.shape != a.shape or not np.array_equal(e, a, equal_nan=True)
        for e, a in zip(expected, actual)
    )


# --- class 1: split domains ------------------------------------------------------------------
TILE_SIG = "(float[1] x, int64[1] r) => (float[M] y)"
TILE_REF = _model(TILE_SIG, "y = Tile(x, r)")
# differs from the reference only at repeats >= 5
TILE_CAND = _model(TILE_SIG, FOUR + "q = Min(r, four)\ny = Tile(x, q)")

STEP_SIG = "(float[4] x, int64[1] s) => (float[M] y)"
_BOUNDS = (
    "b = Constant<value = int64[1] {0}>()\ne = Constant<value = int64[1] {4}>()\n"
    "a = Constant<value = int64[1] {0}>()\n"
)
STEP_REF = _model(STEP_SIG, _BOUNDS + "y = Slice(x, b, e, a, s)")
# differs only at |step| >= 2 (the step clipped to -1..1)
STEP_CAND = _model(
    STEP_SIG,
    _BOUNDS + "lo = Constant<value = int64[1] {-1}>()\nhi = Constant<value = int64[1] {1}>()\n"
    "t = Max(s, lo)\nu = Min(t, hi)\ny = Slice(x, b, e, a, u)",
)

RANGE_SIG = "(float[1] x, int64 n) => (float[M] y)"
_RANGE_OF = (
    "z = Constant<value = int64 {0}>()\no = Constant<value = int64 {1}>()\n"
    "r = Range(z, {limit}, o)\nf = Cast<to = 1>(r)\ny = Add(f, x)"
)
RANGE_REF = _model(RANGE_SIG, _RANGE_OF.replace("{limit}", "n"))
# differs only at a limit >= 5 (the limit clipped to 4)
RANGE_CAND = _model(
    RANGE_SIG,
    "four = Constant<value = int64 {4}>()\nq = Min(n, four)\n" + _RANGE_OF.replace("{limit}", "q"),
)

SPLIT_PAIRS = {
    "range_limit_5": (RANGE_REF, RANGE_CAND, "n[0] in 0..4", {"n": np.array(5)}),
    "tile_repeats_5": (TILE_REF, TILE_CAND, "r[0] in 0..4", {"r": np.array([5])}),
    "slice_step_2": (STEP_REF, STEP_CAND, "s[0] in {-1, 1}", {"s": np.array([2])}),
}


@pytest.mark.parametrize("case", sorted(SPLIT_PAIRS))
def test_a_split_input_is_proved_only_at_its_values_and_the_verdict_says_so(tmp_path, case):
    ref, cand, bound, witness = SPLIT_PAIRS[case]
    x = np.ones([d.dim_value for d in ref.graph.input[0].type.tensor_type.shape.dim], np.float32)
    assert _differ(ref, cand, {"x": x, **witness})  # the pair differs outside the split
    report_path = tmp_path / "r.json"
    result = _cli("prove", *_pair(tmp_path, ref, cand), "--json", str(report_path))
    assert "PROVED for all inputs" not in result.stdout, result.stdout
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"PROVED for the inputs with {bound} only" in result.stdout
    coverage = json.loads(report_path.read_text())["coverage"]
    assert coverage["complete"] is False
    element = bound.split(" in ")[0]
    assert element in coverage["split"]
    library = prove(ref, cand)
    assert library.to_dict()["coverage"] == coverage
    assert bound in library.summary() and "for all inputs" not in library.summary()


def test_a_split_over_every_value_the_reference_can_run_with_is_complete():
    """Run-time axes of ReduceMax: an axis outside [-rank, rank) is an error in ONNX, so
    the split tried every value where the reference is defined."""
    header = '<ir_version: 8, opset_import: ["" : 18]>\n'
    signature = "(float[2, 3] x, int64[1] axes) => (float[?] y)"
    ref = _model(signature, "y = ReduceMax<keepdims = 0>(x, axes)", header)
    report = prove(ref, ref)
    assert report.ok and report.coverage["complete"] is True
    assert report.summary().startswith("PROVED for all inputs")


def test_a_split_the_candidate_alone_asks_for_is_bounded():
    """Values outside the candidate's axes are errors of the candidate, where the
    reference may run: not covered."""
    header = '<ir_version: 8, opset_import: ["" : 18]>\n'
    signature = "(float[2, 3] x, int64[1] axes) => (float[2, 3] y)"
    ref = _model(signature, "y = Identity(x)", header)
    cand = _model(
        signature,
        "m = ReduceMax<keepdims = 1>(x, axes)\nc = Greater(m, m)\ny = Where(c, m, x)",
        header,
    )
    inputs = {"x": np.zeros((2, 3), np.float32), "axes": np.array([5])}
    ReferenceEvaluator(ref).run(None, inputs)
    with pytest.raises(Exception):  # the candidate alone cannot run at axes 5  # noqa: B017
        ReferenceEvaluator(cand).run(None, inputs)
    report = prove(ref, cand)
    assert report.ok, report.summary()
    assert report.coverage["complete"] is False
    assert report.coverage["split"] == {"axes[0]": [-2, -1, 0, 1]}


# --- class 2: a split value where the reference cannot run ------------------------------------
EXPAND_SIG = "(float[N] x, int64[1] s) => (float[M] y)"
EXPAND_REF = _model(EXPAND_SIG, "y = Expand(x, s)")
# adds 1 at N = 2, s = 1 only: at N = 2 the reference cannot run at s = 0, 3 or 4
EXPAND_CAND = _model(
    EXPAND_SIG,
    "one = Constant<value = int64[1] {1}>()\ntwo = Constant<value = int64 {2}>()\n"
    "n = Size(x)\nw = Expand(x, s)\nc1 = Equal(s, one)\nc2 = Equal(n, two)\n"
    "c = And(c1, c2)\nf = Cast<to = 1>(c)\ny = Add(w, f)",
)


def test_an_undefined_split_value_skips_only_that_value(tmp_path):
    witness = {"x": np.zeros(2, np.float32), "s": np.array([1])}
    assert _differ(EXPAND_REF, EXPAND_CAND, witness)
    result = _cli("prove", *_pair(tmp_path, EXPAND_REF, EXPAND_CAND))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "counterexample at N=2" in result.stdout
    assert "the difference is reproduced" in result.stdout
    assert prove(EXPAND_REF, EXPAND_CAND).status == "counterexample"


def test_a_binding_with_undefined_split_values_is_proved_at_the_others_and_says_so():
    report = prove(EXPAND_REF, EXPAND_REF, dims={"N": 2})
    assert report.ok, report.summary()
    skipped = {tuple(u["values"].items()) for u in report.coverage["undefined"]}
    assert skipped == {(("s[0]", 0),), (("s[0]", 3),), (("s[0]", 4),)}
    assert "skipped s[0]=3 at N=2: the reference cannot run there" in report.summary()


def _if_model(shifted: bool) -> onnx.ModelProto:
    """If(c): then x (or x + [N == 2]), else Expand(x, [3]), which cannot run at N = 2."""
    then_nodes = [helper.make_node("Identity", ["x"], ["t"])]
    if shifted:
        two = onnx.numpy_helper.from_array(np.array(2, np.int64))
        then_nodes = [
            helper.make_node("Size", ["x"], ["n"]),
            helper.make_node("Constant", [], ["two"], value=two),
            helper.make_node("Equal", ["n", "two"], ["e"]),
            helper.make_node("Cast", ["e"], ["f"], to=onnx.TensorProto.FLOAT),
            helper.make_node("Add", ["x", "f"], ["t"]),
        ]
    float_of = lambda name, dim: helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, [dim])  # noqa: E731
    three = onnx.numpy_helper.from_array(np.array([3], np.int64))
    other = [
        helper.make_node("Constant", [], ["s"], value=three),
        helper.make_node("Expand", ["x", "s"], ["u"]),
    ]
    graph = helper.make_graph(
        [
            helper.make_node(
                "If",
                ["c"],
                ["y"],
                then_branch=helper.make_graph(then_nodes, "then", [], [float_of("t", "T")]),
                else_branch=helper.make_graph(other, "else", [], [float_of("u", "U")]),
            )
        ],
        "g",
        [float_of("x", "N"), helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])],
        [float_of("y", "Y")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def test_a_branch_that_cannot_run_splits_the_condition_instead_of_skipping_the_binding():
    ref, cand = _if_model(False), _if_model(True)
    witness = {"x": np.zeros(2, np.float32), "c": np.array(True)}
    assert _differ(ref, cand, witness)
    report = prove(ref, cand)
    assert report.status == "counterexample", report.summary()
    assert report.counterexample.dims == {"N": 2} and report.counterexample.reproduced


GATHER_SIG = "(float[N] x) => (float[1] y)"
GATHER_REF = _model(GATHER_SIG, "i = Constant<value = int64[1] {0}>()\ny = Gather(x, i)")
GATHER_CAND = _model(
    GATHER_SIG,
    "i = Constant<value = int64[1] {0}>()\nj = Constant<value = int64[1] {2}>()\n"
    "a = Gather(x, i)\nb = Gather(x, j)\nz = Mul(b, a)\nc = Sub(z, z)\nd = IsNaN(c)\n"
    "y = Where(d, a, a)",
)


def test_an_index_out_of_range_is_no_run_of_that_binding_only():
    """Gather(x, 2) is an error in ONNX where N <= 2: the candidate cannot run where the
    reference can (refuted, not inconclusive); as the reference, only those sizes are
    skipped."""
    report = prove(GATHER_REF, GATHER_CAND, dims={"N": 2})
    assert report.status == "counterexample", report.summary()
    assert report.counterexample.kind == "cannot run" and report.counterexample.reproduced
    report = prove(GATHER_CAND, GATHER_CAND)
    assert report.ok, report.summary()
    assert report.coverage["dims"] == {"N": [3, 4]}
    assert report.coverage["undefined_bindings"] == [{"N": 0}, {"N": 1}, {"N": 2}]


def test_a_range_step_of_zero_is_skipped_alone_never_an_internal_error(tmp_path):
    signature = "(int64 d) => (int64[M] y)"
    body = "z = Constant<value = int64 {0}>()\nf = Constant<value = int64 {4}>()\n"
    ref = _model(signature, body + "y = Range(z, f, d)")
    result = _cli("prove", *_pair(tmp_path, ref, ref))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "skipped d[0]=0" in result.stdout and "d[0] in 0..4 only" in result.stdout


# --- class 6: definedness per element ---------------------------------------------------------
CAST_SIG = "(float[1] x) => (int8[1] a, float[1] b)"
CAST_REF = _model(CAST_SIG, "a = Cast<to = 3>(x)\nb = Identity(x)")
# b differs where x > 1000, where the Cast in the other output is out of range
CAST_CAND = _model(
    CAST_SIG,
    "a = Cast<to = 3>(x)\nk = Constant<value = float[1] {1000}>()\n"
    "big = Greater(x, k)\nn = Neg(x)\nb = Where(big, n, x)",
)


def test_an_undefined_element_frees_only_itself(tmp_path):
    assert _differ(CAST_REF, CAST_CAND, {"x": np.array([2000.0], np.float32)})
    result = _cli("prove", *_pair(tmp_path, CAST_REF, CAST_CAND))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "output 'b'" in result.stdout and "the difference is reproduced" in result.stdout
    assert prove(CAST_REF, CAST_CAND).status == "counterexample"


def test_a_candidate_free_only_where_the_reference_is_undefined_is_still_proved():
    """(Not a regression: what must stay proved.) The candidate's Cast differs from the
    reference's only where the reference's is out of range."""
    clipped = _model(
        CAST_SIG,
        "lo = Constant<value = float {-128}>()\nhi = Constant<value = float {127}>()\n"
        "c = Clip(x, lo, hi)\na = Cast<to = 3>(c)\nb = Identity(x)",
    )
    report = prove(CAST_REF, clipped)
    assert report.ok, report.summary()


def test_a_select_around_an_undefined_value_is_defined():
    """Where(|x| < 100, Cast(x), 0): the reference is defined everywhere (the select does
    not take the Cast where it is out of range), so a candidate that differs only where
    x > 200 is refuted."""
    signature = "(float[1] x) => (int8[1] a)"
    guarded = (
        "lo = Constant<value = float {-100}>()\nhi = Constant<value = float {100}>()\n"
        "g1 = Greater(x, lo)\ng2 = Less(x, hi)\nok = And(g1, g2)\n"
        "z = Constant<value = int8[1] {0}>()\nc = Cast<to = 3>(x)\n"
    )
    ref = _model(signature, guarded + "a = Where(ok, c, z)")
    far = (
        "o = Constant<value = int8[1] {1}>()\nt = Constant<value = float {200}>()\n"
        "g3 = Greater(x, t)\nw = Where(g3, o, z)\n"
    )
    cand = _model(signature, guarded + far + "a = Where(ok, c, w)")
    assert _differ(ref, cand, {"x": np.array([300.0], np.float32)})
    report = prove(ref, cand)
    assert report.status == "counterexample", report.summary()
    assert report.counterexample.reproduced


# --- class 7: budgets -------------------------------------------------------------------------
def _loop(trips: int, step: float) -> onnx.ModelProto:
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]), helper.make_node("Add", ["v", "k"], ["vo"])],
        "body",
        [
            helper.make_tensor_value_info("i", onnx.TensorProto.INT64, []),
            helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, []),
            helper.make_tensor_value_info("v", onnx.TensorProto.FLOAT, [1]),
        ],
        [
            helper.make_tensor_value_info("co", onnx.TensorProto.BOOL, []),
            helper.make_tensor_value_info("vo", onnx.TensorProto.FLOAT, [1]),
        ],
        initializer=[onnx.numpy_helper.from_array(np.array([step], np.float32), "k")],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "T", "x"], ["y"], body=body)],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
        initializer=[
            onnx.numpy_helper.from_array(np.array(trips, np.int64), "M"),
            onnx.numpy_helper.from_array(np.array(True), "T"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


_EXPAND_BIG = "s = Constant<value = int64[2] {3000, 3000}>()\nw = Expand(x, s)\n"
_RANGE = (
    "a = Constant<value = int64 {0}>()\nb = Constant<value = int64 {100000000}>()\n"
    "c = Constant<value = int64 {1}>()\nr = Range(a, b, c)\n"
)
BUDGET_PAIRS = {
    # 10^8 trips: past the unrolling budget at once
    "loop_of_1e8_trips": (_loop(10**8, 1.0), _loop(10**8, 2.0), 5, "trips"),
    # 90,000 trips (inside the trip budget): the deadline, checked while unrolling
    "loop_past_the_deadline": (_loop(90_000, 1.0), _loop(90_000, 2.0), 6, "timed out"),
    "expand_to_3000x3000": (
        _model("(float[1] x) => (float[3000, 3000] y)", _EXPAND_BIG + "y = Identity(w)"),
        _model("(float[1] x) => (float[3000, 3000] y)", _EXPAND_BIG + "y = Neg(w)"),
        20,  # past the size budget at once; 20 s leaves a loaded machine's start-up room
        "elements",
    ),
    "range_to_1e8": (
        _model("(int64[1] x) => (int64[100000000] y)", _RANGE + "y = Add(r, x)"),
        _model("(int64[1] x) => (int64[100000000] y)", _RANGE + "z = Add(r, x)\ny = Add(z, x)"),
        20,
        "elements",
    ),
}


@pytest.mark.parametrize(
    "case",
    [
        # (the deadline case runs its whole --timeout: slow tier; the others stop at once)
        pytest.param(c, marks=pytest.mark.slow) if c == "loop_past_the_deadline" else c
        for c in sorted(BUDGET_PAIRS)
    ],
)
def test_a_proof_past_its_budget_is_inconclusive_within_the_timeout(tmp_path, case):
    ref, cand, timeout, limit = BUDGET_PAIRS[case]
    paths = _pair(tmp_path, ref, cand)
    start = time.perf_counter()
    result = _cli("prove", *paths, "--timeout", str(timeout), timeout=120)
    elapsed = time.perf_counter() - start
    assert result.returncode == 5, result.stdout + result.stderr
    assert "INCONCLUSIVE" in result.stdout and limit in result.stdout
    assert elapsed < timeout * 1.1, elapsed


def test_the_budget_caps_the_solver_memory():
    import z3

    from maxlower.prove.budget import MEMORY_MB, Budget

    with Budget().active():
        assert int(z3.get_param("memory_max_size")) == MEMORY_MB


def test_the_library_keeps_the_budget_too():
    start = time.perf_counter()
    report = prove(*BUDGET_PAIRS["loop_past_the_deadline"][:2], timeout=2)
    assert time.perf_counter() - start < 2.2
    assert report.status == "inconclusive" and "timed out" in str(report.reason)
    report = prove(*BUDGET_PAIRS["expand_to_3000x3000"][:2])
    assert report.status == "inconclusive" and "9000000 elements" in str(report.reason)


# --- class 10: --prove names the bound --------------------------------------------------------
ARGMAX_LAST = _model(
    "(float[N] x) => (int64[1] y)", "y = ArgMax<axis = 0, select_last_index = 1>(x)"
)


@pytest.mark.parametrize("max_dim", [2, 4])
def test_convert_prove_names_the_dims_bound_of_its_sites(tmp_path, max_dim):
    source = _save(tmp_path, "argmax.onnx", ARGMAX_LAST)
    report_path = tmp_path / "r.json"
    args = ["convert", source, "--opset", "11", "--prove", "--dry-run", "--json", str(report_path)]
    page = tmp_path / "r.html"
    result = _cli(*args, "--prove-max-dim", str(max_dim), "--report", str(page))
    assert result.returncode == 0, result.stdout + result.stderr
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("proof: PROVED")]
    assert f"proof of the whole model for symbolic dims (N) <= {max_dim} only" in line
    coverage = json.loads(report_path.read_text())["proof"]["coverage"]
    # (N = 0 is no run of the reference: ArgMax over an empty axis is an error)
    dims = {"N": list(range(1, max_dim + 1))}
    assert coverage == {"complete": False, "dims": dims, "split": {}, "unproved": []}
    assert f"&lt;= {max_dim} only" in page.read_text()  # the page's Proof row
    assert "for all inputs at N in " in page.read_text()  # and the site's
    _, library = maxlower.convert_with_report(ARGMAX_LAST, 11, prove={"max_dim": max_dim})
    assert library.proof.to_dict()["coverage"] == coverage
    assert f"<= {max_dim} only" in library.proof.headline()


# --- a region's counterexample is the models' only where they differ ------------------------
def _dead_region(keepdims: int) -> onnx.ModelProto:
    """ReduceMax whose value only an If reads whose output nothing reads (and a local
    function, which sends the proof to regions)."""
    return onnx.parser.parse_model(
        '<ir_version: 8, opset_import: ["" : 18, "local" : 1]>\n'
        "g (int32[N] x) => (int32 f) <int32 c = {0}> {\n"
        f"  red = ReduceMax <keepdims: int = {keepdims}> (x)\n"
        "  gre = Greater (red, c)\n"
        "  unused = If (gre) <else_branch: graph = e () => (int32[N] a) { a = Add (x, x) },\n"
        "                     then_branch: graph = t () => (int32[N] b) { b = Add (x, x) }>\n"
        "  f = local.F (c, c)\n}\n"
        '<domain: "local", opset_import: ["" : 18]>\nF (p, q) => (r) { r = Sub (p, q) }'
    )


def test_a_region_that_differs_where_no_output_reads_it_is_not_a_refutation(tmp_path):
    """Found by the soundness fuzz campaign (false refutations, class: a region's
    counterexample reported as the models'): the ReduceMax region differs, but nothing the
    models output reads it, so its counterexample does not reproduce on the models. It is
    inconclusive now, with what the region showed, through the library and the CLI."""
    reference, candidate = _dead_region(0), _dead_region(1)
    feed = {"x": np.zeros([0], np.int32)}
    assert not _differ(reference, candidate, feed)
    report = prove_models(reference, candidate, max_dim=2)
    assert report.status == "inconclusive"
    assert "its difference may not reach an output" in report.summary()
    done = _cli("prove", *_pair(tmp_path, reference, candidate), "--max-dim", "2")
    assert done.returncode == 5, done.stdout + done.stderr


def test_the_deadline_counts_from_the_command_in_a_process_that_ran_other_work(
    tmp_path, monkeypatch
):
    """Found under a loaded test run: `--timeout` counted from the process's start, so
    `prove` called in-process (CliRunner, a test worker that had run for minutes) found its
    deadline already passed and said INCONCLUSIVE "timed out" after 0.00 s."""
    from click.testing import CliRunner

    from maxlower.cli import cli
    from maxlower.prove import budget

    started = time.perf_counter()
    monkeypatch.setattr(budget, "process_start", lambda: started - 1000.0)
    model = _model("(float[N] x) => (float[N] y)", "y = Neg(x)")
    result = CliRunner().invoke(cli, ["prove", *_pair(tmp_path, model, model), "--timeout", "30"])
    assert result.exit_code == 0, result.output


# --- the reference's own declared shapes (red team F2) ---------------------------------------
# onnxruntime and onnx.reference check no value_info and no subgraph output's shape: where
# the reference breaks one, the runtimes run it, so those inputs are not "no obligation".
def _runtimes_differ(ref, cand, inputs) -> bool:
    import onnxruntime

    runs = [
        [
            onnxruntime.InferenceSession(m.SerializeToString()).run(None, inputs)
            for m in (ref, cand)
        ],
        [ReferenceEvaluator(m).run(None, inputs) for m in (ref, cand)],
    ]
    return all(
        any(not np.array_equal(e, a, equal_nan=True) for e, a in zip(*outputs)) for outputs in runs
    )


def _two_ifs(negated: bool) -> onnx.ModelProto:
    """Two Ifs whose branch outputs all declare the dim name 'k': where one takes its then
    branch ([1]) and the other its else branch ([2]), 'k' has two sizes in one run."""
    float_of = lambda name, dims: helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, dims)  # noqa: E731
    nodes = []
    for d in range(2):
        then = helper.make_graph(
            [helper.make_node("Identity", ["x"], [f"t{d}"])],
            f"then{d}",
            [],
            [float_of(f"t{d}", ["k"])],
        )
        made = f"e{d}p" if negated and d == 1 else f"e{d}"
        body = [helper.make_node("Concat", ["x", "x"], [made], axis=0)]
        if made != f"e{d}":  # differs only where c0 holds and c1 does not
            body += [
                helper.make_node("Neg", [made], ["ng"]),
                helper.make_node("Where", ["c0", "ng", made], [f"e{d}"]),
            ]
        other = helper.make_graph(body, f"else{d}", [], [float_of(f"e{d}", ["k"])])
        nodes.append(
            helper.make_node("If", [f"c{d}"], [f"o{d}"], then_branch=then, else_branch=other)
        )
    bools = [helper.make_tensor_value_info(f"c{d}", onnx.TensorProto.BOOL, []) for d in range(2)]
    graph = helper.make_graph(
        nodes, "g", [float_of("x", [1]), *bools], [float_of(f"o{d}", [f"n{d}"]) for d in range(2)]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


WRONG_VI_SIG = "(float[N] x) => (float[1] z)"
WRONG_VI_REF = _model(WRONG_VI_SIG, "c = Concat<axis = 0>(x, x)\nz = ReduceMax<keepdims = 1>(c)")
WRONG_VI_REF.graph.value_info.append(  # wrong: c is [2N]
    helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT, ["N"])
)
WRONG_VI_CAND = _model(
    WRONG_VI_SIG,
    "c = Concat<axis = 0>(x, x)\nn = Size(x)\nzero = Constant<value = int64 {0}>()\n"
    "e = Equal(n, zero)\nhi = ReduceMax<keepdims = 1>(c)\nlo = ReduceMin<keepdims = 1>(c)\n"
    "z = Where(e, hi, lo)",
)


@pytest.mark.parametrize("door", ["cli", "library"])
def test_split_values_where_the_reference_breaks_its_declared_shapes_are_not_claimed(
    tmp_path, door
):
    ref, cand = _two_ifs(False), _two_ifs(True)
    witness = {"x": np.ones(1, np.float32), "c0": np.array(True), "c1": np.array(False)}
    assert _runtimes_differ(ref, cand, witness)  # both runtimes run the reference there
    if door == "cli":
        result = _cli("prove", *_pair(tmp_path, ref, cand), "--json", str(tmp_path / "r.json"))
        assert "for all inputs at" not in result.stdout, result.stdout
        assert "NOT PROVED at c0[0]=1, c1[0]=0" in result.stdout, result.stdout
        coverage = json.loads((tmp_path / "r.json").read_text())["coverage"]
    else:
        coverage = prove_models(ref, cand).to_dict()["coverage"]
    assert coverage["complete"] is False
    assert {"dims": {}, "values": {"c0[0]": 1, "c1[0]": 0}} in coverage["unproved"]


@pytest.mark.parametrize("door", ["cli", "library"])
def test_bindings_where_the_reference_breaks_a_value_info_are_not_claimed(tmp_path, door):
    witness = {"x": np.array([1, 2], np.float32)}
    assert _runtimes_differ(WRONG_VI_REF, WRONG_VI_CAND, witness)
    if door == "cli":
        paths = _pair(tmp_path, WRONG_VI_REF, WRONG_VI_CAND)
        result = _cli("prove", *paths, "--json", str(tmp_path / "r.json"))
        assert "for all inputs at" not in result.stdout, result.stdout
        assert "NOT PROVED at N=2" in result.stdout, result.stdout
        coverage = json.loads((tmp_path / "r.json").read_text())["coverage"]
    else:
        coverage = prove(WRONG_VI_REF, WRONG_VI_CAND).to_dict()["coverage"]
    assert coverage["complete"] is False
    assert coverage["dims"] == {"N": [0]}
    assert coverage["unproved_bindings"] == [{"N": n} for n in range(1, 5)]


def test_a_candidate_that_breaks_its_declared_shapes_is_still_refuted():
    """The rule for the candidate stays: a runtime may rely on its annotations."""
    report = prove(WRONG_VI_CAND, WRONG_VI_REF)
    assert report.status == "counterexample", report.summary()
    assert report.counterexample.kind == "cannot run"


# --- a region's refutation, on the whole models (red team F3) --------------------------------
# Conv is outside the fragment, so these pairs go by regions; each pair is equal for every
# input, in onnx.reference and onnxruntime.
CONV_HEADER = '<ir_version: 8, opset_import: ["" : 18]>\n'
SHAPED_SIG = "(float[1,1,3,3] x, float[1,1,1,1] w, float[1] y) => (float[1,1,3,3] c, float[1] z)"
SHAPED = "c = Conv(x, w)\nm = Constant<value = {}>()\nz = Add(y, m)"
SHAPE_ONLY_SIG = (
    "(float[1,1,3,3] a, float[1,1,1,1] w, float[2] x, float[2] y) => (float[1,1,3,3] k, int64[1] z)"
)
SHAPE_ONLY = "k = Conv(a, w)\nv = {}(x, y)\nz = Shape(v)"
EQUAL_BY_REGIONS = {
    # an inner value shaped [1] in one model and [] in the other, which Add broadcasts alike
    "inner-shape": (
        _model(SHAPED_SIG, SHAPED.format("float[1] {5.0}"), CONV_HEADER),
        _model(SHAPED_SIG, SHAPED.format("float {5.0}"), CONV_HEADER),
    ),
    # a region whose values differ, of which the models output only the shape
    "shape-only": (
        _model(SHAPE_ONLY_SIG, SHAPE_ONLY.format("Max"), CONV_HEADER),
        _model(SHAPE_ONLY_SIG, SHAPE_ONLY.format("Min"), CONV_HEADER),
    ),
}


@pytest.mark.parametrize("case", sorted(EQUAL_BY_REGIONS))
@pytest.mark.parametrize("door", ["cli", "library"])
def test_a_region_difference_that_no_model_input_shows_is_no_refutation(tmp_path, case, door):
    ref, cand = EQUAL_BY_REGIONS[case]
    rng = np.random.default_rng(0)
    feed = {
        v.name: rng.standard_normal([d.dim_value for d in v.type.tensor_type.shape.dim]).astype(
            np.float32
        )
        for v in ref.graph.input
    }
    assert not _differ(ref, cand, feed)
    if door == "cli":
        result = _cli("prove", *_pair(tmp_path, ref, cand), "--json", str(tmp_path / "r.json"))
        assert result.returncode == 5, result.stdout + result.stderr
        assert not (tmp_path / "cand.onnx.counterexample.npz").exists()
        report = json.loads((tmp_path / "r.json").read_text())
    else:
        report = prove_models(ref, cand).to_dict()
    assert report["status"] == "inconclusive"
    site = report["sites"][0]
    assert "the region differs" in site["reason"] and "None" not in site["reason"]
    assert "counterexample" not in site["proof"]


def test_a_region_refutation_names_a_reason_never_none():
    """A region whose candidate is refuted without inputs (its interface) has its reason."""
    sig = "(float[1,1,3,3] x, float[1,1,1,1] w, float[1] y) => (float[1,1,3,3] c, float[1] z)"
    ref = _model(sig, SHAPED.format("float[1] {5.0}"), CONV_HEADER)
    cand = _model(sig, SHAPED.format("float {6.0}"), CONV_HEADER)  # differs: y + 6
    report = prove_models(ref, cand)
    assert report.status == "counterexample", report.summary()
    assert ": None" not in report.summary()
    assert set(report.counterexample.inputs) == {"x", "w", "y"}  # the models' own inputs
    assert report.counterexample.reproduced


# --- a region whose values nothing reads (the final campaign: exit 4) -------------------------
DEAD_SIG = "(int64[N,3] x, int64[N,3] y, int64 k) => (int64 m)"
DEAD_REF = _model(DEAD_SIG, "a = ArgMin<axis = 1, keepdims = 0>(y)\nm = Max(k, k)")
# ArgMin over axis 0 fails at N = 0 (an empty axis), where the reference runs: onnx.reference
# runs every node, read or not
DEAD_CAND = _model(DEAD_SIG, "a = ArgMin<axis = 0, keepdims = 0>(y)\nm = Max(k, k)")


@pytest.mark.parametrize("door", ["cli", "library"])
def test_a_region_nothing_reads_is_proved_or_refuted_never_an_internal_error(tmp_path, door):
    if door == "cli":
        result = _cli("prove", *_pair(tmp_path, DEAD_REF, DEAD_CAND), "--max-dim", "2")
        assert result.returncode == 1, result.stdout + result.stderr
        assert "the candidate cannot run where the reference runs" in result.stdout
        assert "replayed: onnx.reference fails" in result.stdout
    else:
        report = prove_models(DEAD_REF, DEAD_CAND, max_dim=2)
        assert report.status == "counterexample", report.summary()
        assert report.counterexample.dims == {"N": 0} and report.counterexample.reproduced
        assert prove_models(DEAD_REF, DEAD_REF, max_dim=2).ok
