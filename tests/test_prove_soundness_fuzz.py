"""The soundness fuzzer (issue 26; tests/prove_fuzz.py): random pairs of models in the
prover's fragment, each a one-step mutation of the other; every verdict of `maxlower prove`
checked in onnx.reference and onnxruntime. A PROVED pair that differs at a size or value the
verdict covers, an interface the verdict ignores, a counterexample that does not reproduce,
an internal error, or a run past --timeout + 10 % fails the test.

Budgets: tests/budget.py (the default tier runs a derandomised 5 % of the slow tier's);
the timed campaign is benchmarks/prove_soundness_fuzz.py.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given
from onnx import parser

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from tests import budget, tiers
from tests.prove_fuzz import Pair, Record, check_proved, check_refuted, judge, pairs, pick_door

TIMEOUT = 5.0


def _door(pair: Pair) -> str:
    """Which door proves the pair: fixed by the pair, so a rerun takes the same one."""
    digest = hashlib.sha256(pair.reference.SerializeToString()).digest()
    return pick_door(digest[0])


def _verdict(record: Record, pair: Pair) -> str:
    return f"{record.verdict_text}\n{pair.text()}"


@budget.fuzz(300, derandomize=True)
@given(pair=pairs())
def test_no_proof_lies_and_every_counterexample_reproduces(pair):
    record = judge(pair, timeout=TIMEOUT, door=_door(pair))
    assert record.failure is None, f"{record.failure}\n{_verdict(record, pair)}"
    assert record.false_refutation is None, (
        f"a counterexample that does not reproduce: {record.false_refutation}\n"
        f"{_verdict(record, pair)}"
    )


REFERENCE = """<ir_version: 8, opset_import: ["" : 18]>
g (float[N] x, float[N] y) => (float[N] out) { out = Max (x, y) }"""
SAME = """<ir_version: 8, opset_import: ["" : 18]>
g (float[N] x, float[N] y) => (float[N] out) { out = Max (y, x) }"""
OTHER = """<ir_version: 8, opset_import: ["" : 18]>
g (float[N] x, float[N] y) => (float[N] out) { out = Min (x, y) }"""
# Differs only at k = 5, past the values the prover splits k at (class 1 of issue 26).
SHAPE_REFERENCE = """<ir_version: 8, opset_import: ["" : 18]>
g (int64 k) => (int64 out) <int64 zero = {0}, int64 one = {1}> {
    r = Range (zero, k, one)
    out = ReduceSum <keepdims: int = 0> (r)
}"""
SHAPE_CANDIDATE = """<ir_version: 8, opset_import: ["" : 18]>
g (int64 k) => (int64 out) <int64 zero = {0}, int64 one = {1}, int64 five = {5}> {
    r = Range (zero, k, one)
    s = ReduceSum <keepdims: int = 0> (r)
    c = Equal (k, five)
    f = Cast <to: int = 7> (c)
    out = Add (s, f)
}"""


def _pair(reference: str, candidate: str, *, shape_input=None) -> Pair:
    return Pair(
        parser.parse_model(reference), parser.parse_model(candidate), "fixed", None, shape_input
    )


def test_the_judge_refutes_a_proof_of_models_that_differ():
    """The judge is a test that can fail: a planted PROVED verdict on Max against Min, and
    on a pair that differs only at a value past the prover's split values."""
    record = Record("fixed", None, "planted", "proved", 0.0, TIMEOUT)
    report = {"status": "proved", "cases": [{"dims": {"N": n}} for n in range(3)]}
    assert "onnx.reference" in check_proved(_pair(REFERENCE, OTHER), report, "", record, 4)
    assert check_proved(_pair(REFERENCE, SAME), report, "", record, 4) is None
    shape = _pair(SHAPE_REFERENCE, SHAPE_CANDIDATE, shape_input="k")
    found = check_proved(shape, {"status": "proved", "cases": [{"dims": {}}]}, "", record, 4)
    assert found is not None and "k=5" in found
    stated = {"status": "proved", "coverage": {"dims": {}, "split": {"k[0]": [0, 1, 2, 3, 4]}}}
    assert check_proved(shape, stated, "", record, 4) is None  # a verdict that names its values


def test_the_judge_counts_a_counterexample_that_does_not_reproduce():
    pair = _pair(REFERENCE, OTHER)
    record = Record("fixed", None, "planted", "counterexample", 0.0, TIMEOUT)
    ties = {"x": [1.0, 2.0], "y": [1.0, 2.0]}  # Max equals Min here
    check_refuted(pair, {"counterexample": {"inputs": ties, "kind": "values"}}, record, 4)
    assert record.false_refutation is not None
    record.false_refutation = None
    apart = {"x": [1.0, np.inf], "y": [2.0, 0.0]}
    check_refuted(pair, {"counterexample": {"inputs": apart, "kind": "values"}}, record, 4)
    assert record.false_refutation is None


# Two subprocesses each (about 4 s): the default tier keeps the proved case.
@pytest.mark.parametrize(
    ("reference", "candidate", "status"),
    tiers.split(
        [
            pytest.param(REFERENCE, SAME, "proved", id="proved"),
            pytest.param(REFERENCE, OTHER, "counterexample", id="refuted"),
        ],
        keep=lambda case: case[2] == "proved",
    ),
)
def test_the_command_line_exit_code_is_the_librarys_verdict(reference, candidate, status):
    """`maxlower prove` in a subprocess, from an empty directory: its exit code and --json
    give the library's verdict, and the judge accepts it."""
    pair = _pair(reference, candidate)
    # a generous budget: the test is about agreement, and a loaded machine must not turn the
    # subprocess's proof (its imports included) into INCONCLUSIVE on one side only
    library = judge(pair, timeout=60.0, door="prove_models")
    cli = judge(pair, timeout=60.0, door="cli")
    assert library.status == cli.status == status, (library, cli)
    assert cli.exit_code == {"proved": 0, "counterexample": 1}[status]
    assert cli.failure is None and cli.false_refutation is None, cli
