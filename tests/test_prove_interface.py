"""The prover's one interface check, and inputs with defaults (issue 26, classes 4, 9, 10b).

A candidate a caller cannot use as the reference (outputs swapped, renamed, added or
dropped; inputs reordered or retyped; a default dropped) is refuted by its interface, with
method "interface" and a message naming what differs, on the whole-model path and on the
regions path alike, from the command line and the library. An initializer that is also a
graph input is a value the caller may override: proved for every value, and, where the two
models give it different defaults, with it left unfed too; never an internal error."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

import maxlower.prove
from maxlower.cli import cli
from maxlower.prove.sites import prove_models

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

HEADER = '<ir_version: 8, opset_import: ["" : 13]>\n'


def _model(signature: str, body: str, defaults: dict | None = None) -> onnx.ModelProto:
    model = onnx.parser.parse_model(f"{HEADER}g {signature} {{\n{body}\n}}")
    for name, value in (defaults or {}).items():
        model.graph.initializer.append(numpy_helper.from_array(np.array(value, np.float32), name))
    onnx.checker.check_model(model, full_check=True)
    return model


def _cli_prove(tmp_path, reference: onnx.ModelProto, candidate: onnx.ModelProto, *args: str):
    paths = [tmp_path / "reference.onnx", tmp_path / "candidate.onnx"]
    for model, path in zip((reference, candidate), paths):
        onnx.save(model, path)
    argv = ["prove", *map(str, paths), "--json", str(tmp_path / "r.json"), *args]
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    return result, paths


TWO_OUT = "(float[2] x) => (float[2] y, float[2] z)"
REFERENCE = _model(TWO_OUT, "y = Neg(x)\nz = Relu(x)")
# every candidate computes, position by position, what the reference computes
INTERFACE_PAIRS = {
    "outputs swapped": (
        REFERENCE,
        _model("(float[2] x) => (float[2] z, float[2] y)", "z = Neg(x)\ny = Relu(x)"),
        "the outputs are in another order: reference ['y', 'z'], candidate ['z', 'y']",
    ),
    "outputs renamed": (
        REFERENCE,
        _model("(float[2] x) => (float[2] p, float[2] q)", "p = Neg(x)\nq = Relu(x)"),
        "output 'y' of the reference is not an output of the candidate",
    ),
    "an extra output": (
        REFERENCE,
        _model(
            "(float[2] x) => (float[2] y, float[2] z, float[2] w)",
            "y = Neg(x)\nz = Relu(x)\nw = Relu(x)",
        ),
        "the candidate has an extra output 'w' that the reference does not have",
    ),
    "an output dropped": (
        _model(
            "(float[2] x) => (float[2] y, float[2] z, float[2] w)",
            "y = Neg(x)\nz = Relu(x)\nw = Relu(x)",
        ),
        REFERENCE,
        "output 'w' of the reference is not an output of the candidate",
    ),
    "inputs reordered": (
        _model("(float[2] a, float[2] b) => (float[2] y)", "y = Sub(a, b)"),
        _model("(float[2] b, float[2] a) => (float[2] y)", "y = Sub(a, b)"),
        "the inputs are in another order: reference ['a', 'b'], candidate ['b', 'a']",
    ),
    "an input retyped": (
        _model("(float[2] a, float[2] b) => (float[2] y)", "y = Sub(a, b)"),
        _model("(float[2] a, double[2] b) => (float[2] y)", "c = Cast <to = 1> (b)\ny = Sub(a, c)"),
        "input 'b' is float in the reference and double in the candidate",
    ),
    "an output retyped": (
        _model("(float[2] a, float[2] b) => (float[2] y)", "y = Sub(a, b)"),
        _model(
            "(float[2] a, float[2] b) => (double[2] y)", "s = Sub(a, b)\ny = Cast <to = 11> (s)"
        ),
        "output 'y' is float in the reference and double in the candidate",
    ),
    "a default dropped": (
        _model("(float[2] x, float[2] w) => (float[2] y)", "y = Add(x, w)", {"w": [1, 1]}),
        _model("(float[2] x, float[2] w) => (float[2] y)", "y = Add(x, w)"),
        "input 'w' has a default in the reference, and none in the candidate",
    ),
}


@pytest.mark.parametrize("name", INTERFACE_PAIRS)
def test_a_differing_interface_is_refuted_naming_what_differs(tmp_path, name):
    reference, candidate, message = INTERFACE_PAIRS[name]
    result, _ = _cli_prove(tmp_path, reference, candidate)
    assert result.exit_code == 1, result.output
    assert "REFUTED: the models' interfaces differ: " in result.output
    assert message in result.output and "method interface" in result.output
    assert "index None" not in result.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["status"] == "counterexample" and data["method"] == "interface"
    report = maxlower.prove.prove(reference, candidate)  # the library says the same
    assert report.status == "counterexample" and report.method == "interface"
    assert message in report.reason


# Softmax is outside the prover's fragment: these pairs go the regions way
SOFTMAX_REFERENCE = _model(TWO_OUT, "s = Softmax(x)\ny = Neg(s)\nz = Relu(s)")


@pytest.mark.parametrize(
    ("candidate", "message"),
    [
        (
            _model(
                "(float[2] x) => (float[2] z, float[2] y)",
                "s = Softmax(x)\nz = Neg(s)\ny = Relu(s)",
            ),
            "the outputs are in another order",
        ),
        (
            _model(
                "(float[2] x) => (float[2] y, float[2] z, float[2] w)",
                "s = Softmax(x)\ny = Neg(s)\nz = Relu(s)\nw = Relu(s)",
            ),
            "the candidate has an extra output 'w'",
        ),
    ],
    ids=["outputs swapped", "an extra output"],
)
def test_the_regions_path_refutes_the_same_interfaces(tmp_path, candidate, message):
    result, _ = _cli_prove(tmp_path, SOFTMAX_REFERENCE, candidate)
    assert result.exit_code == 1, result.output
    assert message in result.output and "method interface" in result.output
    report = prove_models(SOFTMAX_REFERENCE, candidate)
    assert report.status == "counterexample" and report.method == "interface"


# --- inputs with defaults (initializers that are graph inputs) ----------------------------
ADD_SIGNATURE = "(float[2] x, float[2] w) => (float[2] y)"
WITH_DEFAULT = _model(ADD_SIGNATURE, "y = Add(x, w)", {"w": [1, 1]})


@pytest.mark.parametrize(
    "candidate",
    [WITH_DEFAULT, _model(ADD_SIGNATURE, "y = Add(w, x)", {"w": [1, 1]})],
    ids=["itself", "operands swapped"],
)
def test_an_input_with_a_default_is_proved_for_every_value(tmp_path, candidate):
    result, _ = _cli_prove(tmp_path, WITH_DEFAULT, candidate)
    assert result.exit_code == 0, result.output
    assert "PROVED for all inputs" in result.output
    assert maxlower.prove.prove(WITH_DEFAULT, candidate).status == "proved"


def test_a_candidate_that_ignores_an_overridable_default_is_refuted_by_a_fed_value(tmp_path):
    """Equal at the default (w = 1), but a caller may feed another w."""
    ignores = _model(
        ADD_SIGNATURE, "one = Constant <value = float[2] {1, 1}> ()\ny = Add(x, one)", {"w": [1, 1]}
    )
    out = tmp_path / "cex.npz"
    result, paths = _cli_prove(tmp_path, WITH_DEFAULT, ignores, "--counterexample", str(out))
    assert result.exit_code == 1, result.output
    inputs = dict(np.load(out))
    assert set(inputs) == {"x", "w"}
    (expected,), (actual,) = (ReferenceEvaluator(str(p)).run(None, inputs) for p in paths)
    assert not np.array_equal(expected, actual, equal_nan=True)
    assert maxlower.prove.prove(WITH_DEFAULT, ignores).status == "counterexample"


def test_different_defaults_are_refuted_by_a_call_that_leaves_them_unfed(tmp_path):
    """Equal for every fed w; a caller who feeds none gets x + 1 and x + 2."""
    other = _model(ADD_SIGNATURE, "y = Add(x, w)", {"w": [2, 2]})
    out = tmp_path / "cex.npz"
    result, paths = _cli_prove(tmp_path, WITH_DEFAULT, other, "--counterexample", str(out))
    assert result.exit_code == 1, result.output
    assert "the models differ when a caller leaves ['w'] unfed" in result.output
    inputs = dict(np.load(out))
    assert set(inputs) == {"x"}  # w left out: each model runs with its own default
    (expected,), (actual,) = (ReferenceEvaluator(str(p)).run(None, inputs) for p in paths)
    assert not np.array_equal(expected, actual, equal_nan=True)
    assert maxlower.prove.prove(WITH_DEFAULT, other).status == "counterexample"


def test_different_defaults_are_never_proved_by_regions(tmp_path):
    """Regions take w as a free input, for all values, never as the two defaults (they
    proved this pair, whose unfed calls give softmax + 1 and softmax + 2)."""
    body = "s = Softmax(x)\ny = Add(s, w)"
    reference = _model(ADD_SIGNATURE, body, {"w": [1, 1]})
    candidate = _model(ADD_SIGNATURE, body, {"w": [2, 2]})
    result, _ = _cli_prove(tmp_path, reference, candidate)
    assert result.exit_code == 5, result.output
    assert "inputs ['w'] have different defaults in the two models" in result.output
    assert prove_models(reference, candidate).status == "inconclusive"


def test_an_input_the_prover_cannot_make_is_inconclusive_not_an_internal_error(tmp_path):
    """A string input (outside the fragment) with a default: named, inconclusive, on the
    whole-model path; the command line then proves the pair by regions (no node differs)."""
    text = (
        f"{HEADER}g (float[2] x, string[1] s) => (float[2] y) "
        '<string[1] s = {"a"}> { y = Neg(x) }'
    )
    model = onnx.parser.parse_model(text)
    report = maxlower.prove.prove(model, model)
    assert report.status == "inconclusive" and "input 's'" in report.reason
    result, _ = _cli_prove(tmp_path, model, model)
    assert result.exit_code == 0, result.output
