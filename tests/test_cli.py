"""The `maxlower` command line: outputs, refusals, exit codes and help text."""

from __future__ import annotations

import json
import pathlib
import shlex
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

from maxlower.cli import cli
from maxlower.runtime import bit_equal, run_model

MODELS = pathlib.Path(__file__).resolve().parents[1] / "examples" / "models"


@pytest.fixture
def example(tmp_path: pathlib.Path) -> pathlib.Path:
    """A private copy of the README's model (the default output is written beside it)."""
    path = tmp_path / "reduce_max_opset18.onnx"
    shutil.copyfile(MODELS / "reduce_max_opset18.onnx", path)
    return path


@pytest.fixture
def bfloat16_max(tmp_path: pathlib.Path) -> pathlib.Path:
    """Max on bfloat16 at opset 13: nothing below opset 13 reads bfloat16."""
    graph = helper.make_graph(
        [helper.make_node("Max", ["a", "b"], ["m"], name="max_bf16")],
        "bf16",
        [helper.make_tensor_value_info(n, TensorProto.BFLOAT16, [3]) for n in "ab"],
        [helper.make_tensor_value_info("m", TensorProto.BFLOAT16, [3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
    path = tmp_path / "bf16.onnx"
    onnx.save(model, path)
    return path


def invoke(*args: str | pathlib.Path):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def run_module(*args: str | pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "maxlower", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def default_opset(model: onnx.ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def assert_one_line_error(stderr: str, *fragments: str) -> None:
    assert stderr.startswith("maxlower: error: "), stderr
    assert stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in stderr


# -- convert ------------------------------------------------------------------------------
def test_convert_writes_default_output_that_checks(example: pathlib.Path):
    result = invoke("convert", example, "--opset", "13")
    assert result.exit_code == 0, result.output
    out = example.with_name("reduce_max_opset18.opset13.onnx")
    converted = onnx.load(out)
    onnx.checker.check_model(converted, full_check=True)
    assert default_opset(converted) == 13
    assert "opset 18 → 13" in result.stdout
    assert (
        "main graph: node 'reduce_const_axes' ReduceMax 18→13: constant axes input moved "
        "to the attribute axes=[1]"
    ) in result.stdout
    assert f"wrote {out}" in result.stdout
    # only the output was added: no temporary file left behind
    assert sorted(p.name for p in example.parent.iterdir()) == sorted([example.name, out.name])


def test_converted_model_gives_the_same_outputs(example: pathlib.Path, tmp_path: pathlib.Path):
    out = tmp_path / "out.onnx"
    assert invoke("convert", example, "--opset", "11", "-o", out).exit_code == 0
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 5  # ties on every axis
    feeds = {
        "x": x,
        "axes": np.array([-1], dtype=np.int64),
        "bias": np.array([[1.5], [-np.inf], [3.0]], dtype=np.float32),
    }
    expected, _ = run_model(onnx.load(example), feeds)
    actual, _ = run_model(onnx.load(out), feeds)
    assert all(bit_equal(e, a) for e, a in zip(expected, actual))


def test_convert_says_when_nothing_needed_rewriting(example: pathlib.Path):
    result = invoke("convert", example, "--opset", "18", "-o", example.with_name("same.onnx"))
    assert result.exit_code == 0, result.output
    assert "no node needed rewriting" in result.stdout
    # 18 → 20 changes no node, but both ReduceMax nodes change version: relabelled, listed
    result = invoke("convert", example, "--opset", "20")
    assert result.exit_code == 0, result.output
    assert "  relabelled: 2 nodes\n    main graph: ReduceMax 18→20 ×2:" in result.stdout
    assert default_opset(onnx.load(example.with_name("reduce_max_opset18.opset20.onnx"))) == 20


@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink"])
def test_convert_refuses_to_overwrite_input(example: pathlib.Path, spelling: str):
    before = example.read_bytes()
    target = {
        "same": example,
        "dotted": example.parent / "." / ".." / example.parent.name / example.name,
        "symlink": example.parent / "link.onnx",
    }[spelling]
    if spelling == "symlink":
        target.symlink_to(example)
    result = invoke("convert", example, "--opset", "13", "-o", target)
    assert result.exit_code == 2
    assert_one_line_error(result.stderr, "--in-place")
    assert example.read_bytes() == before


def test_convert_in_place_replaces_input(example: pathlib.Path):
    result = invoke("convert", example, "--opset", "13", "--in-place")
    assert result.exit_code == 0, result.output
    assert default_opset(onnx.load(example)) == 13
    assert [p.name for p in example.parent.iterdir()] == [example.name]


def test_in_place_with_another_output_is_refused(example: pathlib.Path, tmp_path):
    result = invoke("convert", example, "--opset", "13", "--in-place", "-o", tmp_path / "o.onnx")
    assert result.exit_code == 2
    assert_one_line_error(result.stderr, "--in-place")


def test_dry_run_writes_nothing(example: pathlib.Path):
    result = invoke("convert", example, "--opset", "11", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "ArgMax 12→11" in result.stdout
    assert "not written" in result.stdout
    assert [p.name for p in example.parent.iterdir()] == [example.name]


def test_missing_file_is_exit_2_without_traceback(tmp_path: pathlib.Path):
    result = invoke("convert", tmp_path / "missing.onnx", "--opset", "13")
    assert result.exit_code == 2
    assert_one_line_error(result.stderr, "missing.onnx", "no such file")


@pytest.mark.parametrize(
    "content", [b"\x00\xffnot a protobuf\x12\x34", b""], ids=["garbled", "empty"]
)
def test_unreadable_model_is_exit_2(tmp_path: pathlib.Path, content: bytes):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    result = invoke("convert", path, "--opset", "13")
    assert result.exit_code == 2
    assert_one_line_error(result.stderr, "not an ONNX model")
    assert [p.name for p in tmp_path.iterdir()] == ["bad.onnx"]


def test_directory_is_exit_2(tmp_path: pathlib.Path):
    result = invoke("convert", tmp_path, "--opset", "13")
    assert result.exit_code == 2
    assert_one_line_error(result.stderr, "directory")


def test_invalid_model_is_exit_2(tmp_path: pathlib.Path):
    graph = helper.make_graph(  # Max of float and int64: fails the checker's type inference
        [helper.make_node("Max", ["a", "b"], ["m"])],
        "bad",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("b", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("m", TensorProto.FLOAT, [2])],
    )
    path = tmp_path / "invalid.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    result = invoke("convert", path, "--opset", "12")
    assert result.exit_code == 2
    assert_one_line_error(result.stderr, "not valid ONNX")


@pytest.mark.parametrize("opset", ["0", "999", "-1"])
def test_opset_out_of_range_is_exit_2(example: pathlib.Path, opset: str):
    result = invoke("convert", example, "--opset", opset)
    assert result.exit_code == 2
    assert_one_line_error(result.stderr, f"target opset {opset} is outside")
    assert [p.name for p in example.parent.iterdir()] == [example.name]


def test_usage_errors_are_exit_2(example: pathlib.Path):
    assert invoke("convert", example).exit_code == 2  # --opset is required
    assert invoke("convert", example, "--opset", "thirteen").exit_code == 2
    assert invoke("frobnicate").exit_code == 2


def test_missing_output_directory_is_exit_2(example: pathlib.Path):
    result = invoke("convert", example, "--opset", "13", "-o", example.parent / "no" / "o.onnx")
    assert result.exit_code == 2
    assert_one_line_error(result.stderr, "does not exist")


def test_output_that_is_a_directory_is_exit_2(example: pathlib.Path):
    result = invoke("convert", example, "--opset", "13", "-o", example.parent)
    assert result.exit_code == 2
    assert_one_line_error(result.stderr, "is a directory")


def external_data_model(directory: pathlib.Path) -> pathlib.Path:
    weights = onnx.numpy_helper.from_array(np.arange(1024, dtype=np.float32).reshape(32, 32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("Max", ["x", "w"], ["y"], name="max"),
            helper.make_node("ReduceMax", ["y"], ["r"], name="reduce", axes=[1], keepdims=0),
        ],
        "ext",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 32])],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, [32])],
        initializer=[weights],
    )
    path = directory / "ext.onnx"
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
        path,
        save_as_external_data=True,
        location="weights.bin",
        size_threshold=0,
    )
    return path


def test_external_data_stays_external(tmp_path: pathlib.Path):
    source = external_data_model(tmp_path)
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "ext18.onnx"
    result = invoke("convert", source, "--opset", "18", "-o", out)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "ext18.onnx.data").stat().st_size == 1024 * 4
    assert out.stat().st_size < 1024
    onnx.checker.check_model(str(out), full_check=True)
    initializers = {i.name: i for i in onnx.load(out).graph.initializer}
    weights = onnx.numpy_helper.to_array(initializers["w"])
    assert np.array_equal(weights, np.arange(1024, dtype=np.float32).reshape(32, 32))


def test_missing_external_data_is_exit_2(tmp_path: pathlib.Path):
    source = external_data_model(tmp_path)
    (tmp_path / "weights.bin").unlink()
    result = invoke("convert", source, "--opset", "18")
    assert result.exit_code == 2
    assert_one_line_error(result.stderr, "'weights.bin'", "missing")


def test_no_exact_form_is_exit_3_and_names_node_and_op(bfloat16_max: pathlib.Path):
    result = invoke("convert", bfloat16_max, "--opset", "12")
    assert result.exit_code == 3
    assert_one_line_error(result.stderr, "'max_bf16'", "(Max)", "bfloat16", "To make it possible")
    assert [p.name for p in bfloat16_max.parent.iterdir()] == [bfloat16_max.name]


def test_debug_shows_traceback(bfloat16_max: pathlib.Path):
    plain = run_module("convert", bfloat16_max, "--opset", "12")
    assert plain.returncode == 3
    assert "Traceback" not in plain.stderr
    debug = run_module("convert", bfloat16_max, "--opset", "12", "--debug")
    assert debug.returncode != 0
    assert "Traceback (most recent call last)" in debug.stderr
    assert "ConversionError" in debug.stderr


# -- inspect ------------------------------------------------------------------------------
def test_inspect_lists_family_nodes(example: pathlib.Path):
    result = invoke("inspect", example)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "4 Max/Min-family nodes" in out
    assert "node 'reduce_runtime_axes': ReduceMax-18" in out
    assert "axes: INT64[1] (graph input, known only at run time)" in out
    assert "const_axes: INT64[1] (constant [1])" in out
    assert "node 'argmax_last': ArgMax-13" in out
    assert "select_last_index=1" in out
    assert "node 'max_broadcast': Max-13" in out
    assert "x: FLOAT[2,3,4], bias: FLOAT[3,1]" in out
    assert "at opset" not in out  # no plan without --opset


def test_inspect_shows_functions_and_subgraphs():
    result = invoke("inspect", MODELS / "nested_opset18.onnx")
    assert result.exit_code == 0, result.output
    assert "main graph > If 'pick' > then_branch" in result.stdout
    assert "function example.local::LastArgMax" in result.stdout
    assert "node 'fn_argmax': ArgMax-13" in result.stdout


def test_inspect_with_opset_shows_planned_rewrites(example: pathlib.Path):
    before = example.read_bytes()
    result = invoke("inspect", example, "--opset", "11")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "at opset 11: ArgMax 12→11: select_last_index=1 rewritten" in out
    assert "at opset 11: ReduceMax 18→13: constant axes input moved" in out
    assert "at opset 11: Max-8, no rewrite needed" in out
    assert "conversion to opset 11 would succeed" in out
    assert example.read_bytes() == before
    assert [p.name for p in example.parent.iterdir()] == [example.name]


def test_inspect_with_impossible_opset_is_exit_3(bfloat16_max: pathlib.Path):
    result = invoke("inspect", bfloat16_max, "--opset", "12")
    assert result.exit_code == 3
    assert "at opset 12: no exact form:" in result.stdout
    assert_one_line_error(result.stderr, "'max_bf16'", "(Max)")


def test_inspect_errors(tmp_path: pathlib.Path, example: pathlib.Path):
    assert invoke("inspect", tmp_path / "missing.onnx").exit_code == 2
    assert invoke("inspect", example, "--opset", "0").exit_code == 2


# -- help and entry points ----------------------------------------------------------------
@pytest.mark.parametrize("command", [[], ["convert"], ["inspect"]])
def test_help_documents_exit_codes(command: list[str]):
    result = invoke(*command, "--help")
    assert result.exit_code == 0
    assert "Exit codes:" in result.stdout
    for code in ("0  success", "2  bad invocation", "3  no exact conversion"):
        assert code in result.stdout


def test_convert_help_gives_defaults_and_examples():
    text = invoke("convert", "--help").stdout
    assert "<stem>.opset<N>.onnx" in text
    assert "maxlower convert model.onnx --opset 13" in text
    assert "--in-place" in text and "--dry-run" in text


def test_python_dash_m(example: pathlib.Path):
    result = run_module("convert", example, "--opset", "13", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{example}: opset 18 → 13")
    assert run_module("--help").stdout.startswith("Usage: maxlower")


@pytest.mark.skipif(shutil.which("maxlower") is None, reason="console script not installed")
def test_console_script():
    result = subprocess.run(["maxlower", "--version"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert "maxlower" in result.stdout


def test_a_reader_that_stops_reading_does_not_stop_the_conversion(tmp_path: pathlib.Path):
    """`maxlower convert ... | true`: the reader is gone before the summary is printed.
    The model is still written, the exit code is 0, and there is no error message."""
    out = tmp_path / "out.onnx"
    command = (
        f"{shlex.quote(sys.executable)} -m maxlower convert "
        f"{shlex.quote(str(MODELS / 'reduce_max_opset18.onnx'))} --opset 13 "
        f'-o {shlex.quote(str(out))} | true; echo "status ${{PIPESTATUS[0]}}" >&2'
    )
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300)
    assert result.stderr.strip().splitlines() == ["status 0"], result.stderr
    onnx.checker.check_model(onnx.load(out), full_check=True)


def test_convert_reports_every_kind_with_counts_quiet_and_json(example: pathlib.Path, tmp_path):
    """13 → 11 of the quick start's output: family rewrites and other ops (relabelled,
    adapted: Unsqueeze's axes, passes/version/squeeze.py) are all reported, grouped with
    counts; --quiet prints nothing; --json holds every node."""
    first = invoke("convert", example, "--opset", "13", "-o", tmp_path / "m13.onnx")
    assert first.exit_code == 0, first.output
    result = invoke("convert", tmp_path / "m13.onnx", "--opset", "11", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "  rewritten: 1 node\n" in result.stdout
    # 45: 40 other ops, and 5 family nodes whose steps to 11 change nothing
    assert "  relabelled: 45 nodes\n" in result.stdout
    assert "  adapted: 6 nodes\n" in result.stdout
    assert "Equal 13→11 ×10" in result.stdout

    json_path = tmp_path / "report.json"
    quiet = invoke(
        "convert", tmp_path / "m13.onnx", "--opset", "11", "--quiet", "--json", json_path
    )
    assert quiet.exit_code == 0 and quiet.output == ""
    document = json.loads(json_path.read_text())
    assert document["counts"] == {"rewritten": 1, "relabelled": 45, "adapted": 6}
    assert len(document["changes"]["relabelled"]) == 45
    assert document["verification"] is None
    assert (tmp_path / "m13.opset11.onnx").exists()
