"""`maxlower verify` and `convert --verify` on the command line: output, options, exit codes."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

from maxlower.cli import cli

MODELS = pathlib.Path(__file__).resolve().parents[1] / "examples" / "models"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def save(tmp_path: pathlib.Path, name: str, text: str, opset: int = 13) -> pathlib.Path:
    path = tmp_path / name
    onnx.save(
        onnx.parser.parse_model(f'<ir_version: 8, opset_import: ["" : {opset}]>\nm {text}'), path
    )
    return path


@pytest.fixture
def pair(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path, pathlib.Path]:
    """A ReduceMax model, a wrong rewrite of it (ReduceMin), and one that differs only where
    NaN reaches the ReduceMax (unspecified by ONNX)."""
    signature = "(float[B, 4] x) => (float[B] y)"
    reference = save(
        tmp_path,
        "reference.onnx",
        f"{signature} {{ y = ReduceMax <axes = [1], keepdims = 0> (x) }}",
    )
    wrong = save(
        tmp_path, "wrong.onnx", f"{signature} {{ y = ReduceMin <axes = [1], keepdims = 0> (x) }}"
    )
    nan_only = save(
        tmp_path,
        "nan_only.onnx",
        f"""{signature} {{
        r = ReduceMax <axes = [1], keepdims = 0> (x)
        isnan = IsNaN(r)
        seven = Constant <value = float {{7.0}}> ()
        y = Where(isnan, seven, r) }}""",
    )
    return reference, wrong, nan_only


def test_exit_0_on_equivalent_models(pair):
    reference, _, _ = pair
    result = invoke("verify", reference, reference)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{reference} vs {reference}: EQUIVALENT")
    assert "runners: reference onnxruntime" in result.output


def test_exit_1_and_the_report_on_a_difference(pair, tmp_path):
    reference, wrong, _ = pair
    report_path = tmp_path / "report.json"
    result = invoke("verify", reference, wrong, "--json", report_path)
    assert result.exit_code == 1, result.output
    out = result.output
    assert "DIFFERENT" in out and "output 'y':" in out and "elements differ" in out
    assert "max difference" in out and "first at trial 0" in out and "seed 0" in out
    assert "first diverging value 'y'" in out and "ReduceMin" in out
    data = json.loads(report_path.read_text())
    assert data["status"] == "different" and data["outputs"][0]["mismatches"] > 0


def test_strict_turns_unspecified_nan_differences_into_exit_1(pair, tmp_path):
    reference, _, nan_only = pair
    np.savez(tmp_path / "x.npz", x=np.array([[np.nan, 1, 2, 3], [4, 5, 6, 7]], np.float32))
    lenient = invoke("verify", reference, nan_only, "--inputs", tmp_path / "x.npz")
    assert lenient.exit_code == 0, lenient.output
    assert "unspecified by ONNX" in lenient.output
    strict = invoke("verify", reference, nan_only, "--inputs", tmp_path / "x.npz", "--strict")
    assert strict.exit_code == 1, strict.output


def test_seed_trials_dim_and_range_options(pair):
    reference, wrong, _ = pair
    result = invoke(
        "verify", reference, wrong, "--seed", 7, "--trials", 2, "--dim", "B=5", "--range", "x=-1:1"
    )
    assert result.exit_code == 1
    assert "seed 7, 2 trials" in result.output and "B=5" in result.output


def test_tolerances(tmp_path):
    reference = save(tmp_path, "a.onnx", "(float[N] x) => (float[N] y) { y = Identity(x) }")
    shifted = save(
        tmp_path,
        "b.onnx",
        """(float[N] x) => (float[N] y) {
        eps = Constant <value = float {1e-6}> ()
        y = Add(x, eps) }""",
    )
    assert invoke("verify", reference, shifted, "--range", "x=-1:1").exit_code == 1
    result = invoke("verify", reference, shifted, "--range", "x=-1:1", "--atol", "1e-5")
    assert result.exit_code == 0, result.output
    assert "atol=1e-05" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.onnx", "{ref}"], "no such file"),
        (["{ref}", "{ref}", "--range", "x=5:1"], "LOW < HIGH"),
        (["{ref}", "{ref}", "--range", "nope=0:1"], "no input of that name"),
        (["{ref}", "{ref}", "--dim", "B=-1"], "NAME=SIZE"),
        (["{ref}", "{ref}", "--dim", "Q=1"], "no input has a dim"),
        (["{ref}", "{ref}", "--inputs", "{npz}"], "cannot read it as an .npz"),
        (["{ref}", "{ref}", "--trials", "0"], "--trials"),
    ],
)
def test_exit_2_on_bad_invocation_or_input(pair, tmp_path, args, message):
    reference, _, _ = pair
    (tmp_path / "bad.npz").write_text("not an archive")
    args = [a.format(ref=reference, npz=tmp_path / "bad.npz") for a in args]
    result = invoke("verify", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_exit_2_when_the_reference_runs_on_no_trial(tmp_path):
    model = save(
        tmp_path,
        "reshape.onnx",
        """(float[N] x) => (float[2, 3] y) {
        shape = Constant <value = int64[2] {2, 3}> ()
        zero = Constant <value = int64[2] {0, 0}> ()
        computed = Add(shape, zero)
        y = Reshape(x, computed) }""",
    )  # (computed at run time: a constant shape would give N its size, 6)
    result = invoke("verify", model, model)
    assert result.exit_code == 2 and "INCONCLUSIVE" in result.output
    assert invoke("verify", model, model, "--dim", "N=6").exit_code == 0


def test_convert_verify_writes_and_exits_0_on_the_examples(tmp_path):
    for name in ("reduce_max_opset18.onnx", "nested_opset18.onnx"):
        shutil.copyfile(MODELS / name, tmp_path / name)
        for opset in (11, 13):
            output = tmp_path / f"{opset}.{name}"
            result = invoke(
                "convert",
                tmp_path / name,
                "--opset",
                opset,
                "-o",
                output,
                "--verify",
                "--json",
                tmp_path / "r.json",
            )
            assert result.exit_code == 0, result.output
            assert "verification: EQUIVALENT" in result.output and output.exists()
            document = json.loads((tmp_path / "r.json").read_text())
            assert document["verification"]["ok"] is True
            assert document["target_opset"] == opset and "counts" in document


def test_convert_verify_dry_run_writes_nothing(tmp_path):
    source = tmp_path / "m.onnx"
    shutil.copyfile(MODELS / "reduce_max_opset18.onnx", source)
    result = invoke("convert", source, "--opset", 11, "--verify", "--dry-run")
    assert result.exit_code == 0 and "not written" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


@pytest.mark.parametrize("flags", [["--force"], ["--seed", "3"], ["--strict"], ["--dim", "N=2"]])
def test_convert_verifier_options_need_verify(tmp_path, flags):
    source = tmp_path / "m.onnx"
    shutil.copyfile(MODELS / "reduce_max_opset18.onnx", source)
    result = invoke("convert", source, "--opset", 13, *flags)
    assert result.exit_code == 2
    assert "only apply with --verify" in result.output
    assert not (tmp_path / "m.opset13.onnx").exists()


def test_help_lists_verify_and_its_exit_codes():
    assert "verify" in invoke("--help").output
    text = invoke("verify", "--help").output
    for fragment in (
        "--seed",
        "--trials",
        "--inputs",
        "--range",
        "--dim",
        "--rtol",
        "--atol",
        "--strict",
        "--json",
        "1  a difference was found",
    ):
        assert fragment in text
    assert "--verify" in invoke("convert", "--help").output


def test_python_m_maxlower_verify(pair):
    reference, wrong, _ = pair
    process = subprocess.run(
        [sys.executable, "-m", "maxlower", "verify", str(reference), str(wrong)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 1, process.stderr
    assert "DIFFERENT" in process.stdout and not process.stderr


def test_an_input_whose_type_onnx_ir_cannot_read_is_untyped_in_the_refusal(tmp_path):
    """`maxlower verify` reads the inputs' types off the protobufs; a map input (which onnx_ir
    has no class for) is 'untyped' in the one-line refusal, never an internal error (found by
    a review of the layers refactor, where the check stopped building onnx_ir)."""
    from onnx import TensorProto, helper

    map_type = helper.make_map_type_proto(
        TensorProto.STRING, helper.make_tensor_type_proto(TensorProto.FLOAT, [])
    )
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])
    vectorize = helper.make_node(
        "DictVectorizer", ["x"], ["y"], domain="ai.onnx.ml", string_vocabulary=["a", "b"]
    )
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 3)]
    graph = helper.make_graph([vectorize], "g", [helper.make_value_info("x", map_type)], [y])
    onnx.save(helper.make_model(graph, opset_imports=opsets), tmp_path / "map.onnx")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=opsets[:1]), tmp_path / "plain.onnx")
    result = CliRunner().invoke(
        cli, ["verify", str(tmp_path / "plain.onnx"), str(tmp_path / "map.onnx")]
    )
    assert result.exit_code == 2, result.output
    assert "input 'x' is FLOAT in the reference and untyped in the candidate" in result.output
