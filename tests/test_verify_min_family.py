"""The verifier on the Min family: its input schedule gives ReduceMin's run-time axes every
valid axes list, and a difference caused only by NaN reaching ReduceMin or ArgMin is
"unspecified by ONNX" (equivalent, failing under --strict), as for ReduceMax and ArgMax;
Min's own NaN is specified (it propagates), so a difference there is real."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from click.testing import CliRunner

import maxlower
from maxlower.cli import cli
from maxlower.verify.inputs import axes_inputs, axes_variants, generate_trials, input_specs
from passes.extremum import FAMILIES, MIN
from tests.conformance import family_cases


def parse(text: str, opset: int = 18) -> onnx.ModelProto:
    return onnx.parser.parse_model(f'<ir_version: 8, opset_import: ["" : {opset}]>\nm {text}')


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_an_input_reaching_a_family_reduction_gets_every_axes_list(family):
    model = parse(
        "(float[N, M, K] x, int64[A] axes) => (float[N, M, K] y) {"
        f"  y = {family.reduce} <keepdims = 1> (x, axes) }}"
    )
    axes = axes_inputs(ir.serde.deserialize_model(model))
    assert axes == {"axes": 3}
    trials = list(generate_trials(input_specs(model), seed=0, trials=None, axes=axes))
    seen = {tuple(t.feeds["axes"].tolist()) for t in trials}
    assert seen == {tuple(v) for v in axes_variants(3, None)}


def _nan_row_changed(op: str, attributes: str, out: str) -> tuple[onnx.ModelProto, ...]:
    """`op` over axis 1 of a [2, 3] float input, and a candidate that differs from it only
    in the rows whose set holds a NaN (it is 7 there), and one that differs elsewhere."""
    signature = f"(float[2, 3] x) => ({out}[2] y)"
    reference = parse(f"{signature} {{ y = {op} <{attributes}> (x) }}", 13)
    has_nan = (
        "  nan = IsNaN(x)\n  any_nan = Cast <to = 7> (nan)\n"
        "  one = Constant <value = int64[1] {1}> ()\n"
        "  count = ReduceSum <keepdims = 0> (any_nan, one)\n"
        "  zero = Constant <value = int64 {0}> ()\n  hit = Greater(count, zero)\n"
    )
    seven = "float {7.0}" if out == "float" else "int64 {7}"
    only_nan_rows = parse(
        f"{signature} {{ r = {op} <{attributes}> (x)\n{has_nan}"
        f"  seven = Constant <value = {seven}> ()\n  y = Where(hit, seven, r) }}",
        13,
    )
    one = "float[2] {0.0, 1.0}" if out == "float" else "int64[2] {0, 1}"
    other_rows = parse(
        f"{signature} {{ r = {op} <{attributes}> (x)\n"
        f"  delta = Constant <value = {one}> ()\n  y = Add(r, delta) }}",
        13,
    )
    return reference, only_nan_rows, other_rows


@pytest.mark.parametrize(
    ("op", "attributes", "out"),
    [
        ("ReduceMin", "keepdims = 0, axes = [1]", "float"),
        ("ArgMin", "axis = 1, keepdims = 0", "int64"),
    ],
)
def test_nan_only_differences_at_reduce_min_and_arg_min_are_unspecified(op, attributes, out):
    reference, only_nan_rows, other_rows = _nan_row_changed(op, attributes, out)
    feeds = {"x": np.array([[np.nan, 1.0, 0.0], [2.0, 3.0, 4.0]], np.float32)}
    report = maxlower.verify(reference, only_nan_rows, inputs=feeds)
    assert report.ok and report.outputs[0].status == "unspecified", report.summary()
    assert report.unspecified_divergence.unspecified
    strict = maxlower.verify(reference, only_nan_rows, inputs=feeds, strict=True)
    assert strict.status == "equivalent_except_unspecified_nan" and not strict.ok
    real = maxlower.verify(reference, other_rows, inputs=feeds)
    assert real.status == "different" and not real.divergence.unspecified


def test_a_nan_difference_at_min_is_real():
    """ONNX's Min propagates NaN (onnx.reference, numpy): a candidate that drops it is wrong,
    whatever the NaN rule of the reductions says."""
    reference = parse("(float[N] a, float[N] b) => (float[N] y) { y = Min(a, b) }", 13)
    dropped = parse(
        "(float[N] a, float[N] b) => (float[N] y) {  less = Less(a, b)\n  y = Where(less, a, b) }",
        13,
    )
    report = maxlower.verify(reference, dropped)
    assert report.status == "different" and not report.divergence.unspecified


def test_converted_arg_min_with_select_last_index_verifies():
    """ArgMin-13 {select_last_index=1} at 11 is reversed: NaN lands differently, which
    only NaN explains (unspecified), and without NaN it is identical."""
    reference = parse(
        "(float[N, 4] x) => (int64[N] y) {"
        "  y = ArgMin <axis = 1, keepdims = 0, select_last_index = 1> (x) }",
        13,
    )
    converted = maxlower.convert(reference, 11)
    assert maxlower.verify(reference, converted).ok
    nan_free = maxlower.verify(reference, converted, strict=True, ranges={"x": (-2, 2)})
    assert nan_free.ok, nan_free.summary()


MIN_CASES = {case.name: case for case in family_cases(MIN)}
LATEST = onnx.defs.onnx_opset_version()
PER_CASE = 1  # opsets per Min case, rotating: the 40 cases cover every opset 7.. (22)


@pytest.mark.parametrize("name", sorted(MIN_CASES))
def test_convert_verify_passes_min_conversions(name: str, tmp_path):
    """No false alarms on the Min family: `convert --verify` of each Min conformance case to
    a rotating sample of opsets (tests/test_verify_conformance.py runs every opset of the
    Max cases) passes, exit 0, file written."""
    source = tmp_path / "case.onnx"
    onnx.save(MIN_CASES[name].model, source)
    opsets = list(range(7, LATEST + 1))
    start = sorted(MIN_CASES).index(name) * PER_CASE
    for k in range(PER_CASE):
        opset = opsets[(start + k) % len(opsets)]
        output = tmp_path / f"case.{opset}.onnx"
        result = CliRunner().invoke(
            cli,
            ["convert", str(source), "--opset", str(opset), "-o", str(output), "--verify"],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, f"{name}@{opset}:\n{result.output}"
        assert "verification: EQUIVALENT" in result.output and output.exists()
