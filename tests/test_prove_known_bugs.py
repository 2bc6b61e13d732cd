"""The bugs the fuzz suite found (tests/test_fuzz_pipeline.py), restored: each fixture in
tests/fixtures/known_bugs is what the code before the fix produced (written by
benchmarks/known_bugs_prove.py from git history; manifest.json names the fix commit), and
today's `maxlower prove` refutes it. No git history is needed here.

Five old outputs are invalid ONNX (the old code's own final check then failed, exit 4); the
prover refutes them by the spec of each op's version (a counterexample on which the
candidate cannot run) or, for the function body the checker cannot type, by the full check.
The lowered model whose value_info gave one dim name to two sizes cannot run either (a dim
name is one size in a run: onnx's ShapeAnnotationSemantics.md; onnxruntime fails there).
The stacked ReduceMax that drops NaN is refuted under --strict (ONNX leaves a NaN in
ReduceMax unspecified; onnx.reference keeps it, so by its semantics the model is right).
One bug changed no output (the caller's model renamed in place): its output is proved
equal, which is the truth about its values.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

import maxlower
from maxlower.api import lower
from passes.errors import ConversionError
from tests.test_fuzz_pipeline import KNOWN_BUGS

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove.core import COUNTEREXAMPLE, PROVED, Policy, prove
from maxlower.prove.semantics import Interpreter, NotRunnable

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "known_bugs"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())

# bug -> how prove refutes its old output: a counterexample's kind, or "invalid" (the full
# check's one line), and whether under --strict
REFUTED = {
    "loop_unused_scan_output_dropped": ("cannot run", False),
    "function_body_below_opset_6": ("invalid", False),
    "bfloat16_if_relabelled_below_16": ("cannot run", False),
    "if_branch_shapes_differ_below_11": ("cannot run", False),
    "if_branch_shapes_differ_only_after_conversion": ("cannot run", False),
    "float_max_stacked_into_reduce_max_drops_nan": ("unspecified", True),
    "generated_dim_names_collide": ("cannot run", False),
}
NO_VALUE_CHANGED = {"input_constant_renamed"}


def _pair(bug: str) -> tuple[pathlib.Path, pathlib.Path]:
    return FIXTURES / f"{bug}.reference.onnx", FIXTURES / f"{bug}.buggy.onnx"


def test_every_known_bug_has_a_restored_output_and_a_verdict():
    assert set(KNOWN_BUGS) <= set(MANIFEST)
    assert set(MANIFEST) == set(REFUTED) | NO_VALUE_CHANGED
    for bug, entry in MANIFEST.items():
        assert len(entry["fix"]) >= 7 and entry["parent"], bug
        assert all(path.exists() for path in _pair(bug)), bug


@pytest.mark.parametrize("bug", sorted(REFUTED))
def test_old_output_is_refuted(bug):
    kind, strict = REFUTED[bug]
    reference, buggy = (onnx.load(path) for path in _pair(bug))
    report = prove(reference, buggy, policy=Policy(nan_unspecified=strict))
    assert report.status == COUNTEREXAMPLE, report.summary()
    if kind == "invalid":
        assert report.counterexample is None
        assert report.reason.startswith("the candidate is not a valid model at opset 5: ")
        assert report.summary().startswith("REFUTED: the candidate is not a valid model")
        return
    cex = report.counterexample
    assert cex.kind == kind, report.summary()
    if kind == "cannot run":  # onnx.reference runs some of these; onnxruntime or the checker not
        assert cex.reproduced and (" fails: " in cex.replay or "rejects" in cex.replay)
    else:  # a NaN in the candidate's ReduceMax, where the reference's Max gives NaN
        assert any(np.isnan(v).any() for v in cex.inputs.values()), report.summary()


@pytest.mark.parametrize("bug", sorted(REFUTED))
def test_command_exits_1_on_old_output(bug, tmp_path):
    from maxlower.cli import cli

    kind, strict = REFUTED[bug]
    reference, buggy = _pair(bug)
    args = ["prove", str(reference), str(buggy), "--counterexample", str(tmp_path / "c.npz")]
    result = CliRunner().invoke(cli, args + (["--strict"] if strict else []))
    assert result.exit_code == 1, result.output
    assert ("REFUTED" if kind == "invalid" else "COUNTEREXAMPLE") in result.output


@pytest.mark.parametrize("bug", sorted(NO_VALUE_CHANGED))
def test_old_output_that_changed_no_value_is_proved(bug):
    reference, buggy = (onnx.load(path) for path in _pair(bug))
    report = prove(reference, buggy, max_dim=2)
    assert report.status == PROVED, report.summary()


@pytest.mark.parametrize("bug", sorted(MANIFEST))
def test_todays_conversion_is_proved_or_refused(bug):
    entry = MANIFEST[bug]
    reference = onnx.load(_pair(bug)[0])
    try:
        converted = maxlower.convert(reference, entry["target"])
        if entry["profile"]:
            converted = lower(converted, entry["profile"])
    except ConversionError:
        return
    strict = REFUTED.get(bug, ("", False))[1]
    report = prove(reference, converted, max_dim=2, policy=Policy(nan_unspecified=strict))
    assert report.status == PROVED, report.summary()


# --- differential: the spec checks agree with onnx.checker (onnx.reference runs these) -----
SPEC_CASES = {
    # (model text, whether the spec of its opset accepts it)
    "if1_same_shapes": ("10", "float[2] x, bool c", "float[2]", "a = Max (x)", "b = Neg (x)", True),
    "if1_two_shapes": (
        "10",
        "float[2] x, bool c",
        "float[?]",
        "a = Max (x)",
        "b = ReduceMax <keepdims = 1> (x)",
        False,
    ),
    "if11_two_shapes": (
        "11",
        "float[2] x, bool c",
        "float[?]",
        "a = Max (x)",
        "b = ReduceMax <keepdims = 1> (x)",
        True,
    ),
    "if13_bfloat16": (
        "13",
        "bfloat16[2] x, bool c",
        "bfloat16[2]",
        "a = Max (x)",
        "b = Max (x)",
        False,
    ),
    "if16_bfloat16": (
        "16",
        "bfloat16[2] x, bool c",
        "bfloat16[2]",
        "a = Max (x)",
        "b = Max (x)",
        True,
    ),
}


def _if_model(opset, inputs, out_type, then, other) -> onnx.ModelProto:
    return onnx.parser.parse_model(f"""<ir_version: 8, opset_import: ["" : {opset}]>
        g ({inputs}) => ({out_type} y) {{
            y = If (c) <then_branch = t () => ({out_type} a) {{ {then} }},
                        else_branch = e () => ({out_type} b) {{ {other} }}>
        }}""")


def _loop_model(scan_in_body: bool) -> onnx.ModelProto:
    extra, scan = (", float[2] s", "\n s = Identity (v2)") if scan_in_body else ("", "")
    return onnx.parser.parse_model(f"""<ir_version: 6, opset_import: ["" : 11]>
        g (float[2] x) => (float[2] y) <int64 n = {{2}}> {{
            y = Loop (n, "", x) <body: graph = body (int64 i, bool c, float[2] v)
                => (bool c2, float[2] v2{extra}) {{
                c2 = Identity (c)
                v2 = Max (v, x){scan}
            }}>
        }}""")


def _reduce_model(dtype: str, opset: int) -> onnx.ModelProto:
    return onnx.parser.parse_model(f"""<ir_version: 8, opset_import: ["" : {opset}]>
        g ({dtype}[3] x) => ({dtype}[1] y) {{ y = ReduceMax (x) }}""")


def _spec_models():
    for name, (opset, *rest, accepted) in SPEC_CASES.items():
        yield name, _if_model(opset, *rest), accepted
    yield "loop_body_arity_right", _loop_model(False), True
    yield "loop_body_extra_output", _loop_model(True), False
    yield "reduce_max_int32_at_18", _reduce_model("int32", 18), True
    yield "reduce_max_int16_at_18", _reduce_model("int16", 18), False


@pytest.mark.parametrize("name, model, accepted", list(_spec_models()), ids=lambda v: str(v)[:30])
def test_spec_checks_agree_with_the_checker(name, model, accepted):
    from maxlower.prove.core import _concrete

    feeds = {"x": np.array([1.0, -2.0, 3.0][: _size(model)], _dtype(model))}
    if any(i.name == "c" for i in model.graph.input):
        feeds["c"] = np.array(True)
    try:
        onnx.checker.check_model(model, full_check=True)
        checker = True
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
        checker = False
    assert checker == accepted, name
    try:
        Interpreter().interpret(model, _concrete(feeds))
        interpreter = True
    except NotRunnable:
        interpreter = False
    assert interpreter == accepted, name


def _size(model) -> int:
    return model.graph.input[0].type.tensor_type.shape.dim[0].dim_value


def _dtype(model):
    return onnx.helper.tensor_dtype_to_np_dtype(model.graph.input[0].type.tensor_type.elem_type)


@pytest.mark.parametrize("op", ["ReduceMax", "ArgMax"])
def test_strict_reduction_is_onnx_reference_without_nan_and_open_with_it(op):
    """--strict's semantics, differentially: without NaN the candidate side gives
    onnx.reference's result; with a NaN its result is a fresh term (any value)."""
    from onnx.reference import ReferenceEvaluator

    from maxlower.prove.core import _concrete, _numpy_of

    out = "int64" if op == "ArgMax" else "float"
    model = onnx.parser.parse_model(f"""<ir_version: 8, opset_import: ["" : 13]>
        g (float[4] x) => ({out}[1] y) {{ y = {op} (x) }}""")
    finite = np.array([1.0, -0.0, 3.0, 3.0], np.float32)
    interpreter = Interpreter(nan_in_reduction="any")
    (result,) = interpreter.interpret(model, _concrete({"x": finite})).outputs
    (expected,) = ReferenceEvaluator(model).run(None, {"x": finite})
    np.testing.assert_array_equal(_numpy_of(result), expected)
    with_nan = np.array([1.0, np.nan, 3.0, 3.0], np.float32)
    interpreter = Interpreter(nan_in_reduction="any")
    (result,) = interpreter.interpret(model, _concrete({"x": with_nan})).outputs
    with pytest.raises(ValueError, match="not a constant"):
        _numpy_of(result)


ANNOTATIONS = {
    # value_info of y and z (x is float[N], y = Max(x), z = Concat(x, x)): whether a run
    # at N = 2 satisfies them
    "one_name_one_size": ("float[N] y, float[K] z", True),
    "one_name_two_sizes": ("float[M] y, float[M] z", False),
    "a_wrong_dim_value": ("float[3] y", False),
    "a_wrong_rank": ("float[N, 1] y", False),
    "unnamed_dims": ("float[?] y, float[?] z", True),
}


@pytest.mark.parametrize("name", sorted(ANNOTATIONS))
def test_shape_annotations_are_checked_as_onnx_reference_checks_them(name):
    """Differential: the interpreter's annotation check (NotRunnable) against onnx.reference
    with check_shape_annotations=True, on a run at N = 2."""
    from onnx.reference import ReferenceEvaluator

    from maxlower.prove.core import _concrete

    declared, holds = ANNOTATIONS[name]
    model = onnx.parser.parse_model(f"""<ir_version: 8, opset_import: ["" : 13]>
        g (float[N] x) => (float[?] out) <{declared}> {{
            y = Max (x)
            z = Concat <axis = 0> (x, x)
            out = Concat <axis = 0> (y, z)
        }}""")
    feeds = {"x": np.array([1.0, 2.0], np.float32)}
    try:
        ReferenceEvaluator(model, check_shape_annotations=True).run(None, feeds)
        reference = True
    except Exception:  # its own error class for a violated annotation
        reference = False
    try:
        Interpreter().interpret(model, _concrete(feeds))
        interpreter = True
    except NotRunnable:
        interpreter = False
    assert reference == interpreter == holds
