"""Inputs the model accepts, derived from the model (maxlower.verify.accepts): trials that
run without flags. One test (or family) per class of model the verifier used to skip or
refuse, through the command line and through the library."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, numpy_helper
from onnx import helper as oh

import maxlower
from maxlower.cli import cli
from maxlower.verify.inputs import InputSpec, generate_trials, values

OPSET = [oh.make_opsetid("", 18)]


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = oh.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return oh.make_model(graph, opset_imports=OPSET, ir_version=8)


def tensor(name, array) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def reduce_max(data, out, axis, keepdims=0, name="rmax"):
    """A ReduceMax-18 with constant axes (so that convert --opset 13 rewrites it)."""
    return oh.make_node("ReduceMax", [data, f"{name}_axes"], [out], keepdims=keepdims, name=name)


def axes(axis, name="rmax"):
    return tensor(f"{name}_axes", np.array([axis], np.int64))


def counts(report: dict) -> tuple[int, int]:
    """(trials both models ran in onnxruntime, trials skipped) of a report's dict."""
    ran = sum(
        t["reference_runner"] == "onnxruntime" and t["candidate_runner"] == "onnxruntime"
        for t in report["trials"]
        if t["status"] != "skipped"
    )
    return ran, sum(t["status"] == "skipped" for t in report["trials"])


def convert_verify(tmp_path: pathlib.Path, proto: onnx.ModelProto, *flags):
    """`maxlower convert M --opset 13 --verify FLAGS`: the result and the verification's
    report as a dict."""
    source = tmp_path / "m.onnx"
    onnx.save(proto, source)
    report = tmp_path / "r.json"
    result = invoke(
        "convert", source, "--opset", 13, "--verify", "-o", tmp_path / "out.onnx",
        "--json", report, *flags,
    )  # fmt: skip
    document = json.loads(report.read_text()) if report.exists() else {}
    return result, document.get("verification")


def library_verify(proto: onnx.ModelProto, **options):
    report = maxlower.verify(proto, maxlower.convert(proto, 13), **options)
    return report, report.to_dict()


# -- free dims: -1 and unnamed dims -------------------------------------------------------
def paddle_model() -> onnx.ModelProto:
    """An input whose first dim paddle2onnx declared as -1."""
    x = oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])
    x.type.tensor_type.shape.dim[0].dim_value = -1
    y = oh.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 3])
    return model([reduce_max("x", "y", 2)], [x], [y], [axes(2)])


def test_free_dims_minus_one_is_generated_named_and_given(tmp_path):
    result, report = convert_verify(tmp_path, paddle_model())
    assert result.exit_code == 0, result.output
    ran, skipped = counts(report)
    assert skipped == 0 and ran == len(report["trials"]) >= 8
    result, report = convert_verify(tmp_path, paddle_model(), "--dim", "x[0]=2")
    assert result.exit_code == 0, result.output
    assert all("x[0]=2" in t["label"] for t in report["trials"])
    np.savez(tmp_path / "in.npz", x=np.ones((5, 3, 4), np.float32))
    result, report = convert_verify(tmp_path, paddle_model(), "--inputs", tmp_path / "in.npz")
    assert result.exit_code == 0, result.output
    assert counts(report) == (1, 0)


def test_free_dims_minus_one_through_the_library():
    report, data = library_verify(paddle_model(), dims={"x[0]": 4})
    assert report.ok and counts(data) == (len(data["trials"]), 0)
    report, data = library_verify(paddle_model())
    assert report.ok and counts(data)[1] == 0


# -- 0-d values are arrays, of every dtype -----------------------------------------------
DTYPES = [
    np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t))
    for t in (
        TensorProto.BOOL, TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16,
        TensorProto.UINT16, TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64,
        TensorProto.UINT64, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT,
        TensorProto.DOUBLE,
    )
]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kind", ["ties", "specials", "random", "pow2"])
@pytest.mark.parametrize("shape", [(), (1,), (0,), (2, 3)])
def test_zero_d_values_every_generated_value_is_an_ndarray(dtype, kind, shape):
    value = values(dtype, shape, kind, np.random.default_rng(0))
    assert type(value) is np.ndarray and value.shape == shape and value.dtype == dtype


def test_zero_d_values_in_every_trial_are_arrays():
    specs = [InputSpec(f"i{n}", dtype, ()) for n, dtype in enumerate(DTYPES)]
    for trial in generate_trials(specs, seed=0, trials=None):
        assert all(type(v) is np.ndarray and v.ndim == 0 for v in trial.feeds.values())


def bool0d_model() -> onnx.ModelProto:
    flag = oh.make_tensor_value_info("flag", TensorProto.BOOL, [])
    a = oh.make_tensor_value_info("a", TensorProto.FLOAT, ["n"])
    b = oh.make_tensor_value_info("b", TensorProto.FLOAT, ["n"])
    y = oh.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    nodes = [oh.make_node("Where", ["flag", "a", "b"], ["w"]), reduce_max("w", "y", 0, 1)]
    return model(nodes, [flag, a, b], [y], [axes(0)])


def test_zero_d_values_a_0d_bool_input_runs_in_onnxruntime(tmp_path):
    result, report = convert_verify(tmp_path, bool0d_model())
    assert result.exit_code == 0, result.output
    assert "onnx.reference" not in result.output
    assert counts(report) == (len(report["trials"]), 0)
    _, data = library_verify(bool0d_model())
    assert counts(data) == (len(data["trials"]), 0)
