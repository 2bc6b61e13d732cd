"""The command line on a model that holds both families: `inspect` lists every Max- and
Min-family node, `lower --profile primitives` leaves none, `lower --profile onnxruntime`
runs in onnxruntime, and `convert --verify` passes, each with the same outputs."""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

from maxlower.cli import cli
from maxlower.runtime import bit_equal, onnxruntime_session, run_model
from passes.extremum import FAMILY_OPS
from tests.test_lower_conformance import all_op_types

BOTH = """<ir_version: 8, opset_import: ["" : 18]>
both (float[N, 4] x, int64[1] axes, float[N, 4] z) => (int64[N] lo, int64[N] hi,
      float[N, 1] rmin, float[N, 1] rmax, float[N, 4] clamp) {
  lo = ArgMin <axis = 1, keepdims = 0, select_last_index = 1> (x)
  hi = ArgMax <axis = 1, keepdims = 0, select_last_index = 1> (x)
  rmin = ReduceMin <keepdims = 1> (x, axes)
  rmax = ReduceMax <keepdims = 1> (x, axes)
  m = Max (x, z)
  clamp = Min (m, z)
}"""
FEEDS = {
    "x": np.array([[1.0, -2.0, -2.0, 3.0], [np.nan, 0.0, -0.0, 5.0]], np.float32),
    "axes": np.array([1], np.int64),
    "z": np.array([[0.5, 0.5, -3.0, 9.0], [1.0, np.nan, 2.0, 2.0]], np.float32),
}


@pytest.fixture
def both(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "both.onnx"
    onnx.save(onnx.parser.parse_model(BOTH), path)
    return path


def invoke(*args) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_inspect_lists_both_families(both):
    result = invoke("inspect", both, "--opset", "11")
    assert result.exit_code == 0, result.output
    assert "6 Max/Min-family nodes" in result.output
    for op, version in [("ArgMin", 13), ("ArgMax", 13), ("ReduceMin", 18), ("ReduceMax", 18)]:
        assert f"{op}-{version}" in result.output
    assert "Max-13" in result.output and "Min-13" in result.output
    assert "ArgMin 12→11: select_last_index=1 rewritten as reverse + ArgMin" in result.output
    assert "ReduceMin 18→13: run-time axes rewritten exactly" in result.output


@pytest.mark.parametrize("profile", ["primitives", "onnxruntime"])
def test_lower_both_families(both, profile, tmp_path: pathlib.Path):
    output = tmp_path / f"both.{profile}.onnx"
    result = invoke("lower", both, "--profile", profile, "-o", output)
    assert result.exit_code == 0, result.output
    lowered = onnx.load(output)
    onnx.checker.check_model(lowered, full_check=True)
    expected, _ = run_model(onnx.load(both), FEEDS)
    if profile == "primitives":
        assert not set(FAMILY_OPS) & all_op_types(lowered)
        actual, _ = run_model(lowered, FEEDS)
    else:
        actual = onnxruntime_session(lowered).run(None, FEEDS)
    for e, a in zip(expected, actual, strict=True):
        # NaN reaching ArgMin/ArgMax and the reductions is unspecified by ONNX: compare the
        # NaN-free row only there (Max and Min propagate it: compared whole).
        rows = slice(None) if e.dtype != np.int64 and e.shape[-1] == 4 else slice(0, 1)
        assert bit_equal(e[rows], a[rows]), f"{profile}: {e} != {a}"


def test_convert_verify_both_families(both, tmp_path: pathlib.Path):
    for opset in (11, 13):
        output = tmp_path / f"both.{opset}.onnx"
        result = invoke("convert", both, "--opset", opset, "-o", output, "--verify")
        assert result.exit_code == 0, result.output
        assert "verification: EQUIVALENT" in result.output
