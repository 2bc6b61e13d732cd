"""Silent wrong models (issue 12): names, defaults, attribute references, omitted axes.

Rows of docs/bad-inputs.md, each run with every command (convert, lower, inspect, verify):

- values named like generated ones: the names a conversion makes are fresh in the whole
  model (passes/names.py), on the command line's sparse path too;
- an initializer that is also a graph input is a default, a value known only at run time:
  converted and lowered as such, and the verifier feeds it every valid axes list;
- ReduceMax-18 with axes given as "" converts like one without axes;
- a family node in a function taking an attribute from its call (`@ax`): converted with the
  value where every call gives one, else refused (exit 3) naming the values and a remedy.

Then hypothesis cases of each class (tests/strategies_graph_names.py) through
tests/test_fuzz_pipeline.check_case.
"""

from __future__ import annotations

import json
import pathlib

import onnx
import onnx.inliner
import pytest
from hypothesis import given

import maxlower
from passes.names import Namer, proto_names
from tests import budget
from tests.strategies_graph_names import (
    attribute_reference_cases,
    colliding_names_cases,
    default_input_cases,
)
from tests.test_bad_inputs import assert_one_line_error, invoke, snapshot
from tests.test_fuzz_pipeline import SETTINGS, checked

EXAMPLES = 17  # per strategy, in the slow tier (tests/budget.py)


def parse(text: str, opset: int, functions: str = "") -> onnx.ModelProto:
    imports = f'"" : {opset}' + (', "local" : 1' if functions else "")
    model = onnx.parser.parse_model(
        f"<ir_version: 8, opset_import: [{imports}]>\n{text}\n{functions}"
    )
    onnx.checker.check_model(model, full_check=True)
    return model


# --- the models ---------------------------------------------------------------------------

# Converting the first to 18 makes an initializer ReduceMax__const0 for its axes; the
# input of that name must stay the input (it was read in its place, exit 0, wrong values).
COLLIDING_INPUT = parse(
    """g (float[2,3] x, float[2] ReduceMax__const0) => (float[2,1] y, float[2] z) {
      y = ReduceMax <axes = [1]> (x)
      z = Identity (ReduceMax__const0)
    }""",
    13,
)
# ... an initializer of that name: was registered twice (exit 4).
COLLIDING_INITIALIZER = parse(
    """g (float[2,3] x) => (float[2,1] y, int64[1] z) <int64[1] ReduceMax__const0 = {0}> {
      y = ReduceMax <axes = [1]> (x)
      z = Identity (ReduceMax__const0)
    }""",
    13,
)
# The run-time axes form names its nodes r__size0, r__equal2, ... and their outputs ..._out.
COLLIDING_OUTPUTS = parse(
    """g (float[2,3] x, int64[1] axes, float[3] v) => (float[a,b] y, float[3] r__size0_out,
         float[3] r__equal2_out) {
      [r] y = ReduceMax <keepdims = 1> (x, axes)
      r__size0_out = Neg (v)
      r__equal2_out = Abs (v)
    }""",
    18,
)
COLLIDING = {
    "input": COLLIDING_INPUT,
    "initializer": COLLIDING_INITIALIZER,
    "node-outputs": COLLIDING_OUTPUTS,
}

# axes both an input and an initializer: a default, not a constant.
DEFAULT_AXES = parse(
    """g (float[2,3] x, int64[1] axes) => (float[a,b] y) <int64[1] axes = {1}> {
      y = ReduceMax <keepdims = 1> (x, axes)
    }""",
    18,
)
EMPTY_STRING_AXES = parse(
    """g (float[2,3] x) => (float[1,1] y) { y = ReduceMax <keepdims = 1> (x, "") }""", 18
)

_ARGMAX_FUNCTION = """<domain: "local", opset_import: ["" : 13]>
F <ax, last> (x) => (y) { y = ArgMax <axis: int = @ax, select_last_index: int = @last> (x) }"""
_NESTED_FUNCTIONS = """<domain: "local", opset_import: ["" : 11, "local" : 1]>
Outer <k> (x) => (y) { y = local.Inner <ax: ints = @k> (x) }
<domain: "local", opset_import: ["" : 11]>
Inner <ax> (x) => (y) { y = ReduceMax <axes: ints = @ax> (x) }"""
AGREEING_CALLS = parse(
    """g (float[2,3] x, float[4,3] w) => (int64[2,1] y, int64[4,1] z) {
      y = local.F <ax = -1, last = 1> (x)
      z = local.F <ax = -1, last = 1> (w)
    }""",
    13,
    _ARGMAX_FUNCTION,
)
NESTED_CALLS = parse(
    """g (float[2,3] x) => (float[2,1] y) { y = local.Outer <k = [-1]> (x) }""",
    11,
    _NESTED_FUNCTIONS,
)
DISAGREEING_CALLS = parse(
    """g (float[2,3] x) => (int64[2,1] y, int64[1,3] z) {
      y = local.F <ax = -1, last = 1> (x)
      z = local.F <ax = 0, last = 1> (x)
    }""",
    13,
    _ARGMAX_FUNCTION,
)


# --- running every command ----------------------------------------------------------------

TARGETS = {13: (18, 11, 10), 18: (13, 11, 10), 11: (10, 13)}
PROFILES = ("primitives", "tensorrt", "webnn")


def _opset(model: onnx.ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain == "")


def converts_and_verifies(tmp_path: pathlib.Path, model: onnx.ModelProto) -> list[str]:
    """Every command on `model` succeeds; every result passes the full check, verifies
    against the model, and is what the library gives. Returns the files written."""
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    written = []
    jobs = [(["convert", path, "--opset", t], t, None) for t in TARGETS[_opset(model)]]
    jobs += [(["lower", path, "--profile", p], None, p) for p in PROFILES]
    for k, (args, target, profile) in enumerate(jobs):
        out = tmp_path / f"out{k}.onnx"
        result = invoke(*args, "-o", out)
        assert result.exit_code == 0, result.output
        written.append(out)
        onnx.checker.check_model(onnx.load(out), full_check=True)
        library = maxlower.convert(model, target) if target else maxlower.lower(model, profile)
        assert onnx.load(out) == library, "the command line and the library differ"
        verified = invoke("verify", path, out)
        assert verified.exit_code == 0, verified.output
    inspected = invoke("inspect", path, "--opset", TARGETS[_opset(model)][0])
    assert inspected.exit_code == 0, inspected.output
    return written


@pytest.mark.parametrize("kind", sorted(COLLIDING))
def test_names_like_generated_ones_are_avoided(tmp_path: pathlib.Path, kind: str):
    model = COLLIDING[kind]
    for out in converts_and_verifies(tmp_path, model):
        converted = onnx.load(out)
        initializers = [t.name for t in converted.graph.initializer]
        assert len(initializers) == len(set(initializers))
        made = [o for n in converted.graph.node for o in n.output]
        inputs = {v.name for v in converted.graph.input} | set(initializers)
        assert len(made) == len(set(made)) and not set(made) & inputs


def test_the_namer_sees_the_whole_protobuf():
    """The sparse path's namer: names of the whole protobuf, not only the small model."""
    names = set(proto_names(COLLIDING_INPUT))
    assert {"x", "ReduceMax__const0", "y", "z"} <= names
    namer = Namer(reserved=lambda: names)
    assert namer.fresh("ReduceMax__const") == "ReduceMax__const1"
    assert namer.unique("y") == "y_2" and namer.unique("w") == "w"


def test_a_range_for_an_input_with_a_default_generates_it():
    """Found by the long fuzz run: an input with a default runs with it, but a caller's
    range for it asks for generated values; it was refused as 'no input of that name'."""
    model = onnx.parser.parse_model("""<ir_version: 4, opset_import: ["" : 13]>
        g (float[3] x, float[3] w) => (float[3] y) <float[3] w = {1.5, -2, 7.25}> {
            y = Max (x, w)
        }""")
    with_default = maxlower.verify(model, model)
    in_range = maxlower.verify(model, model, ranges={"w": (10.0, 11.0)})
    assert with_default.ok and in_range.ok and in_range.runs > 0
    swapped = onnx.parser.parse_model("""<ir_version: 4, opset_import: ["" : 13]>
        g (float[3] x, float[3] w) => (float[3] y) <float[3] w = {1.5, -2, 7.25}> {
            y = Min (x, w)
        }""")
    # w is fed (from [10, 11)), and Max and Min of x and w differ on the inputs drawn
    assert not maxlower.verify(model, swapped, ranges={"w": (10.0, 11.0)}).ok
    with pytest.raises(maxlower.InvalidModelError, match="no input of that name"):
        maxlower.verify(model, model, ranges={"nothing": (0.0, 1.0)})


def test_initializer_that_is_an_input_is_a_run_time_value(tmp_path: pathlib.Path):
    converts_and_verifies(tmp_path, DEFAULT_AXES)
    _, report = maxlower.convert_with_report(DEFAULT_AXES, 13)
    assert "run-time axes" in report.rewrites[0].what
    inspected = invoke("inspect", tmp_path / "model.onnx")
    assert "graph input, known only at run time" in inspected.output
    # The verifier feeds the default-valued axes other lists too: it tells the rewrite that
    # took the default for a constant from the model.
    wrong = onnx.load(tmp_path / "model.onnx")
    node = wrong.graph.node[0]
    del node.input[1:]
    node.attribute.append(onnx.helper.make_attribute("axes", [1]))
    wrong.opset_import[0].version = 13
    onnx.save(wrong, tmp_path / "wrong.onnx")
    verdict = invoke("verify", tmp_path / "model.onnx", tmp_path / "wrong.onnx")
    assert verdict.exit_code == 1, verdict.output


def test_reduce_max_with_empty_string_axes_converts(tmp_path: pathlib.Path):
    converts_and_verifies(tmp_path, EMPTY_STRING_AXES)


@pytest.mark.parametrize("model", [AGREEING_CALLS, NESTED_CALLS], ids=["agreeing", "nested"])
def test_attribute_reference_resolved_from_the_calls(tmp_path: pathlib.Path, model):
    converts_and_verifies(tmp_path, model)
    converted = maxlower.convert(model, 10)
    body = [n for f in converted.functions for n in f.node if n.op_type in ("ArgMax", "ReduceMax")]
    assert all(not a.ref_attr_name for n in body for a in n.attribute)


@pytest.mark.parametrize("command", ["convert", "lower", "inspect", "verify"])
def test_attribute_reference_the_calls_disagree_on(tmp_path: pathlib.Path, command: str):
    path = tmp_path / "model.onnx"
    onnx.save(DISAGREEING_CALLS, path)
    out = tmp_path / "out" / ("report.json" if command == "verify" else "out.onnx")
    out.parent.mkdir()
    args = {
        "convert": ["convert", path, "--opset", "11", "-o", out],
        "lower": ["lower", path, "--profile", "webnn", "-o", out],
        "inspect": ["inspect", path, "--opset", "11"],
        "verify": ["verify", path, path, "--json", out],
    }[command]
    before = snapshot(tmp_path)
    result = invoke(*args)
    if command == "verify":  # nothing to convert: the model runs as it is
        assert result.exit_code == 0 and json.loads(out.read_text())["status"] == "equivalent"
        return
    if command == "inspect":  # inspect prints the plan, then the one-line verdict
        assert result.exit_code == 3 and "calls give @ax different values (-1, 0)" in (
            result.output
        )
        return
    assert result.exit_code == 3, result.output
    assert_one_line_error(
        result, "ArgMax", "@ax different values (-1, 0)", "inline_local_functions"
    )
    assert snapshot(tmp_path) == before
    # The remedy works: inlined, the model converts.
    inlined = onnx.inliner.inline_local_functions(DISAGREEING_CALLS)
    onnx.checker.check_model(maxlower.convert(inlined, 11), full_check=True)


# --- fuzzing ------------------------------------------------------------------------------


@budget.fuzz(EXAMPLES, derandomize=True, **SETTINGS)
@given(colliding_names_cases())
def test_fuzz_names_like_generated_ones(case):
    checked(case, "graph-names")


@budget.fuzz(EXAMPLES, derandomize=True, **SETTINGS)
@given(default_input_cases())
def test_fuzz_initializers_that_are_inputs(case):
    checked(case, "default-inputs")


@budget.fuzz(EXAMPLES, derandomize=True, **SETTINGS)
@given(attribute_reference_cases())
def test_fuzz_attribute_references_in_functions(case):
    checked(case, "attribute-references")
