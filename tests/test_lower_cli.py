"""`maxlower lower`, `maxlower profiles` and `convert --profile` on the command line."""

from __future__ import annotations

import pathlib
import shutil

import numpy as np
import onnx
import onnx.reference
import pytest
from click.testing import CliRunner

from maxlower.cli import cli
from maxlower.runtime import bit_equal
from tests.test_lower_conformance import FAMILY, all_op_types

MODELS = pathlib.Path(__file__).resolve().parents[1] / "examples" / "models"


@pytest.fixture
def nested(tmp_path: pathlib.Path) -> pathlib.Path:
    """The example with a ReduceMax in an If branch and an ArgMax in a function."""
    path = tmp_path / "nested_opset18.onnx"
    shutil.copyfile(MODELS / "nested_opset18.onnx", path)
    return path


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def outputs(model: onnx.ModelProto, pick: bool) -> list:
    x = np.array([[1, 3, 3, 0, -1], [np.nan, 2, 2, np.nan, 0]], np.float32)
    feeds = {"x": x, "pick_max": np.array(pick)}
    return onnx.reference.ReferenceEvaluator(model).run(None, feeds)


def test_lower_writes_the_default_output_and_says_what_it_did(nested):
    result = invoke("lower", nested, "--profile", "primitives")
    assert result.exit_code == 0, result.output
    out = nested.with_name("nested_opset18.primitives.onnx")
    assert f"wrote {out}" in result.output
    assert "node 'fn_argmax' ArgMax (ArgMax is absent): arg_max_to_reduce_max" in result.output
    assert "If 'pick' > then_branch: node 'branch_reduce_max' ReduceMax" in result.output
    lowered, original = onnx.load(out), onnx.load(nested)
    onnx.checker.check_model(lowered, full_check=True)
    assert not FAMILY & all_op_types(lowered)
    for pick in (True, False):
        for e, a in zip(outputs(original, pick), outputs(lowered, pick), strict=True):
            assert bit_equal(e, a)


def test_lower_with_verify_output_and_dry_run(nested, tmp_path):
    target = tmp_path / "out" / "webnn.onnx"
    target.parent.mkdir()
    result = invoke("lower", nested, "-p", "webnn", "-o", target, "--verify")
    assert result.exit_code == 0, result.output
    assert "verification: EQUIVALENT" in result.output and target.exists()
    assert "arg_max_select_last_index_to_reversal" in result.output
    dry = invoke("lower", nested, "-p", "no-argmax", "--dry-run")
    assert dry.exit_code == 0 and "not written" in dry.output
    assert not nested.with_name("nested_opset18.no-argmax.onnx").exists()


def test_lower_refuses_to_overwrite_its_input_and_takes_in_place(nested):
    result = invoke("lower", nested, "-p", "webnn", "-o", nested)
    assert result.exit_code == 2 and "--in-place" in result.output
    before = nested.read_bytes()
    result = invoke("lower", nested, "-p", "webnn", "--in-place")
    assert result.exit_code == 0 and nested.read_bytes() != before


def test_bad_profiles_are_exit_code_2(nested, tmp_path):
    result = invoke("lower", nested, "-p", "tensorflow")
    assert result.exit_code == 2 and "shipped profiles: coreml, ncnn, no-argmax" in result.output
    bad = tmp_path / "bad.toml"
    bad.write_text('description = "x"\n[ops.Max]\nabsnt = true\n')
    result = invoke("lower", nested, "-p", bad)
    assert result.exit_code == 2 and "unknown key 'absnt'" in result.output


def test_no_exact_form_is_exit_code_3(tmp_path):
    model = onnx.parser.parse_model("""
<ir_version: 3, opset_import: ["" : 8]>
g (float[3] a, float[3] b) => (float[3] out) { out = Max(a, b) }""")
    path = tmp_path / "max8.onnx"
    onnx.save(model, path)
    # Opset 8 has no Where, and without either family (Neg(Min(Neg a, Neg b)) would do with
    # Min, a stacked ReduceMin too) nothing is left.
    profile = tmp_path / "no-extrema.toml"
    ops = ("Max", "ReduceMax", "ArgMax", "Min", "ReduceMin", "ArgMin")
    rules = "".join(f"[ops.{op}]\nabsent = true\n" for op in ops)
    profile.write_text(f'description = "neither family"\n{rules}')
    result = invoke("lower", path, "-p", profile)
    assert result.exit_code == 3
    assert "profile 'no-extrema' does not accept it (Max is absent)" in result.output
    assert "To make it possible: a profile that accepts" in result.output
    assert not path.with_name("max8.no-extrema.onnx").exists()


def test_a_profile_file_of_your_own(nested, tmp_path):
    mine = tmp_path / "no_select_last.toml"
    mine.write_text('description = "mine"\n[ops.ArgMax]\nselect_last_index = false\n')
    result = invoke("lower", nested, "--profile", mine)
    assert result.exit_code == 0, result.output
    assert nested.with_name("nested_opset18.no_select_last.onnx").exists()


def test_convert_with_a_profile_does_both(nested):
    result = invoke("convert", nested, "--opset", "13", "--profile", "primitives")
    assert result.exit_code == 0, result.output
    out = nested.with_name("nested_opset18.opset13.primitives.onnx")
    assert "opset 18 → 13" in result.output and "profile 'primitives'" in result.output
    lowered = onnx.load(out)
    assert {o.domain: o.version for o in lowered.opset_import}[""] == 13
    assert not FAMILY & all_op_types(lowered)


def test_profiles_lists_each_with_a_description():
    result = invoke("profiles")
    assert result.exit_code == 0
    lines = [line for line in result.output.strip().splitlines() if not line[0].isspace()]
    assert [line.split()[0] for line in lines] == [
        "coreml",
        "ncnn",
        "no-argmax",
        "onnxruntime",
        "openvino",
        "primitives",
        "qnn-htp",
        "rknn",
        "sentis",
        "tensorrt",
        "tflite",
        "webnn",
    ]
    assert all(len(line.split(None, 1)[1]) > 20 for line in lines)
    # each with the version of the target it describes, on the line below (issue 18)
    assert result.output.count("    target: ") == len(lines)
    assert ".toml" in invoke("profiles", "--paths").output


def test_help_mentions_lowering():
    assert "lower" in invoke("--help").output and "profiles" in invoke("--help").output
    assert "--profile" in invoke("convert", "--help").output
    assert "exit code 3 means" in invoke("lower", "--help").output
