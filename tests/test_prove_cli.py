"""`maxlower prove` on the command line: exit codes, the counterexample file replayed in
onnx.reference, the report, and the refusals (one line each)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

BINARY = "(float[N] a, float[N] b) => (float[N] y)"


def _save(path, body: str, signature: str = BINARY) -> str:
    text = f'<ir_version: 8, opset_import: ["" : 13]>\ng {signature} {{\n{body}\n}}'
    onnx.save(onnx.parser.parse_model(text), path)
    return str(path)


def _prove(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "maxlower", "prove", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def models(tmp_path):
    return {
        "max": _save(tmp_path / "max.onnx", "y = Max(a, b)"),
        "select": _save(
            tmp_path / "select.onnx",
            "g1 = Greater(a, b)\nn = IsNaN(a)\nc = Or(g1, n)\ny = Where(c, a, b)",
        ),
        "no_nan": _save(tmp_path / "no_nan.onnx", "c = Greater(a, b)\ny = Where(c, a, b)"),
        "neg": _save(
            tmp_path / "neg.onnx", "y = Neg(a)", "(float[N] a, float[N] b) => (float[N] y)"
        ),
        "sqrt": _save(tmp_path / "sqrt.onnx", "y = Sqrt(a)"),
    }


def test_proved_exits_0_and_says_what_was_proved(models):
    result = _prove(models["max"], models["select"], "--max-dim", "3")
    assert result.returncode == 0, result.stderr
    assert "PROVED for all inputs at 4 shape binding(s)" in result.stdout
    assert "NaN equal to NaN, -0.0 equal to +0.0" in result.stdout
    assert "N in [0, 1, 2, 3]" in result.stdout


def test_counterexample_exits_1_and_its_inputs_replay_in_onnx_reference(models, tmp_path):
    out, report = tmp_path / "cex.npz", tmp_path / "report.json"
    result = _prove(
        models["max"], models["no_nan"], "--counterexample", str(out), "--json", str(report)
    )
    assert result.returncode == 1, result.stderr
    assert "COUNTEREXAMPLE" in result.stdout and "the difference is reproduced" in result.stdout
    inputs = dict(np.load(out))
    (expected,) = ReferenceEvaluator(models["max"]).run(None, inputs)
    (actual,) = ReferenceEvaluator(models["no_nan"]).run(None, inputs)
    assert not np.array_equal(expected, actual, equal_nan=True)
    data = json.loads(report.read_text())
    assert data["status"] == "counterexample" and data["counterexample"]["reproduced"]


def test_signed_zeros_policy_separates_a_tie_rule(tmp_path):
    """Max(a, b) and Max(b, a) differ only on a ±0 tie: equal by default, not with
    --signed-zeros."""
    swapped = _save(tmp_path / "swapped.onnx", "y = Max(b, a)")
    plain = _save(tmp_path / "plain.onnx", "y = Max(a, b)")
    assert _prove(plain, swapped, "--dim", "N=1").returncode == 0
    result = _prove(plain, swapped, "--dim", "N=1", "--signed-zeros")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0.0" in result.stdout


def test_outside_the_fragment_is_inconclusive_and_named(models):
    result = _prove(models["max"], models["sqrt"], "--dim", "N=1")
    assert result.returncode == 5, result.stdout + result.stderr
    assert "INCONCLUSIVE" in result.stdout and "Sqrt" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-dim", "65"], "--max-dim 65: expected an integer from 0 to 64"),
        (["--timeout", "0"], "--timeout 0"),
        (["--dim", "N"], "expected NAME=SIZE"),
        (["--dim", "N=5000"], "--dim N 5000: expected an integer from 0 to 4096"),
        (["--rules"], "--rules proves the shipped rules and takes no models"),
    ],
)
def test_bad_options_are_one_line_refusals(models, args, message):
    result = _prove(models["max"], models["select"], *args)
    assert result.returncode == 2
    assert result.stderr.startswith("maxlower: error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1


def test_prove_without_models_is_refused():
    result = _prove()
    assert result.returncode == 2 and "needs REFERENCE and CANDIDATE" in result.stderr


def test_missing_solver_says_how_to_install(monkeypatch):
    import importlib.util

    from maxlower.errors import InvalidModelError
    from maxlower.prove import require_solver

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "z3" else real(name, *a)
    )
    with pytest.raises(InvalidModelError, match=r"pip install \"maxlower\[prove\]\""):
        require_solver()
